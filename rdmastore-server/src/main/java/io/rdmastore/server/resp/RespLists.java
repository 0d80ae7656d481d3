package io.rdmastore.server.resp;

import io.rdmastore.store.Lists;
import io.rdmastore.store.NoSuchKeyException;

import java.util.Arrays;
import java.util.List;

/**
 * The list commands (LPUSH ... LMOVE; not the blocking forms nor LMPOP) with Redis's semantics and error texts, on
 * the store's {@link Lists}.
 *
 * <p>Threads: stateless apart from the face; any event loop may call {@link #execute} at once for different
 * connections. Buffers: {@code argv} belongs to the connection.
 */
final class RespLists {
    private static final String NOT_INTEGER = "ERR value is not an integer or out of range";
    private static final String SYNTAX = "ERR syntax error";

    private final Lists lists;

    RespLists(RespFace face) {
        this.lists = face.store.lists();
    }

    void execute(RespConnection c, RespWriter w, RespCommand cmd, byte[][] argv, int argc) {
        switch (cmd) {
            case LPUSH, RPUSH, LPUSHX, RPUSHX -> w.integer(lists.push(argv[1], Arrays.asList(argv).subList(2, argc),
                cmd == RespCommand.LPUSH || cmd == RespCommand.LPUSHX,
                cmd == RespCommand.LPUSHX || cmd == RespCommand.RPUSHX));
            case LPOP, RPOP -> pop(c, w, argv, argc, cmd == RespCommand.LPOP);
            case LLEN -> w.integer(lists.length(argv[1]));
            case LRANGE -> {
                long[] r = new long[2];
                if (!parse(c, argv[2], r, 0) || !parse(c, argv[3], r, 1)) {
                    w.error(NOT_INTEGER);
                    return;
                }
                array(w, lists.range(argv[1], r[0], r[1]));
            }
            case LINDEX -> {
                if (!RespCommands.parseLong(c, argv[2])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                w.bulk(lists.index(argv[1], c.num));
            }
            case LSET -> {
                if (!RespCommands.parseLong(c, argv[2])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                try {
                    lists.set(argv[1], c.num, argv[3]);
                    w.ok();
                } catch (NoSuchKeyException e) {
                    w.error("ERR no such key");
                }
            }
            case LTRIM -> {
                long[] r = new long[2];
                if (!parse(c, argv[2], r, 0) || !parse(c, argv[3], r, 1)) {
                    w.error(NOT_INTEGER);
                    return;
                }
                lists.trim(argv[1], r[0], r[1]);
                w.ok();
            }
            case LREM -> {
                if (!RespCommands.parseLong(c, argv[2])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                w.integer(lists.remove(argv[1], c.num, argv[3]));
            }
            case LINSERT -> {
                boolean before = RespCommand.is(argv[2], "BEFORE");
                if (!before && !RespCommand.is(argv[2], "AFTER")) {
                    w.error(SYNTAX);
                    return;
                }
                w.integer(lists.insert(argv[1], before, argv[3], argv[4]));
            }
            case LPOS -> lpos(c, w, argv, argc);
            case LMOVE -> {
                Boolean from = side(argv[3]);
                Boolean to = side(argv[4]);
                if (from == null || to == null) {
                    w.error(SYNTAX);
                    return;
                }
                w.bulk(lists.move(argv[1], argv[2], from, to));
            }
            case RPOPLPUSH -> w.bulk(lists.move(argv[1], argv[2], false, true));
            default -> w.error("ERR internal error: no handler for '" + cmd.lowerName + "'");
        }
    }

    private static Boolean side(byte[] a) {
        return RespCommand.is(a, "LEFT") ? Boolean.TRUE : RespCommand.is(a, "RIGHT") ? Boolean.FALSE : null;
    }

    private static boolean parse(RespConnection c, byte[] a, long[] out, int slot) {
        if (!RespCommands.parseLong(c, a)) {
            return false;
        }
        out[slot] = c.num;
        return true;
    }

    private static void array(RespWriter w, List<byte[]> items) {
        w.arrayHeader(items.size());
        for (byte[] b : items) {
            w.bulk(b);
        }
    }

    private void pop(RespConnection c, RespWriter w, byte[][] argv, int argc, boolean left) {
        if (argc > 3) {
            w.error(RespCommands.wrongArgs(left ? "lpop" : "rpop"));
            return;
        }
        if (argc == 2) {
            List<byte[]> one = lists.pop(argv[1], left, 1);
            w.bulk(one == null || one.isEmpty() ? null : one.getFirst());
            return;
        }
        if (!RespCommands.parseLong(c, argv[2]) || c.num < 0) {
            w.error("ERR value is out of range, must be positive");
            return;
        }
        List<byte[]> got = lists.pop(argv[1], left, c.num);
        if (got == null) {
            w.nullArray();
        } else {
            array(w, got);
        }
    }

    private void lpos(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        long rank = 1;
        long count = -1;
        long maxLen = 0;
        for (int i = 3; i < argc; i++) {
            boolean more = i + 1 < argc;
            if (RespCommand.is(argv[i], "RANK") && more) {
                if (!RespCommands.parseLong(c, argv[++i]) || c.num == Long.MIN_VALUE) {
                    w.error(NOT_INTEGER);
                    return;
                }
                if (c.num == 0) {
                    w.error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or "
                        + "use negative to start from the end of the list");
                    return;
                }
                rank = c.num;
            } else if (RespCommand.is(argv[i], "COUNT") && more) {
                if (!RespCommands.parseLong(c, argv[++i])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                if (c.num < 0) {
                    w.error("ERR COUNT can't be negative");
                    return;
                }
                count = c.num;
            } else if (RespCommand.is(argv[i], "MAXLEN") && more) {
                if (!RespCommands.parseLong(c, argv[++i])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                if (c.num < 0) {
                    w.error("ERR MAXLEN can't be negative");
                    return;
                }
                maxLen = c.num;
            } else {
                w.error(SYNTAX);
                return;
            }
        }
        List<Long> at = lists.positions(argv[1], argv[2], rank, count < 0 ? 1 : count, maxLen);
        if (count < 0) {
            if (at.isEmpty()) {
                w.nullBulk();
            } else {
                w.integer(at.getFirst());
            }
            return;
        }
        w.arrayHeader(at.size());
        for (long i : at) {
            w.integer(i);
        }
    }
}
