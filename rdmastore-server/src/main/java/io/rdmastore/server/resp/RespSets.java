package io.rdmastore.server.resp;

import io.rdmastore.store.ScanResult;
import io.rdmastore.store.Sets;

import java.util.Arrays;
import java.util.List;

/**
 * The set commands (SADD ... SSCAN) with Redis's semantics and error texts, on the store's {@link Sets}. Set replies
 * are RESP3 sets ({@code ~}) and RESP2 arrays, as Redis sends them.
 *
 * <p>Threads: stateless apart from the face; any event loop may call {@link #execute} at once for different
 * connections. Buffers: {@code argv} belongs to the connection.
 */
final class RespSets {
    private static final String NOT_INTEGER = "ERR value is not an integer or out of range";
    private static final String SYNTAX = "ERR syntax error";

    private final Sets sets;
    private final RespLists lists;

    RespSets(RespFace face) {
        this.sets = face.store.sets();
        this.lists = new RespLists(face);
    }

    void execute(RespConnection c, RespWriter w, RespCommand cmd, byte[][] argv, int argc) {
        switch (cmd) {
            case SADD -> w.integer(sets.add(argv[1], args(argv, 2, argc)));
            case SREM -> w.integer(sets.remove(argv[1], args(argv, 2, argc)));
            case SMEMBERS -> set(w, sets.members(argv[1]));
            case SISMEMBER -> w.integer(sets.isMember(argv[1], argv[2]) ? 1 : 0);
            case SMISMEMBER -> {
                boolean[] in = sets.areMembers(argv[1], args(argv, 2, argc));
                w.arrayHeader(in.length);
                for (boolean b : in) {
                    w.integer(b ? 1 : 0);
                }
            }
            case SCARD -> w.integer(sets.size(argv[1]));
            case SPOP -> spop(c, w, argv, argc);
            case SRANDMEMBER -> srandmember(c, w, argv, argc);
            case SMOVE -> w.integer(sets.move(argv[1], argv[2], argv[3]) ? 1 : 0);
            case SINTER -> set(w, sets.combine(Sets.Op.INTER, args(argv, 1, argc)));
            case SUNION -> set(w, sets.combine(Sets.Op.UNION, args(argv, 1, argc)));
            case SDIFF -> set(w, sets.combine(Sets.Op.DIFF, args(argv, 1, argc)));
            case SINTERSTORE -> w.integer(sets.combineInto(Sets.Op.INTER, argv[1], args(argv, 2, argc)));
            case SUNIONSTORE -> w.integer(sets.combineInto(Sets.Op.UNION, argv[1], args(argv, 2, argc)));
            case SDIFFSTORE -> w.integer(sets.combineInto(Sets.Op.DIFF, argv[1], args(argv, 2, argc)));
            case SINTERCARD -> sintercard(c, w, argv, argc);
            case SSCAN -> sscan(c, w, argv, argc);
            default -> lists.execute(c, w, cmd, argv, argc);
        }
    }

    private static List<byte[]> args(byte[][] argv, int from, int argc) {
        return Arrays.asList(argv).subList(from, argc);
    }

    private static void set(RespWriter w, List<byte[]> members) {
        w.setHeader(members.size());
        for (byte[] m : members) {
            w.bulk(m);
        }
    }

    private void spop(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        if (argc == 2) {
            List<byte[]> one = sets.pop(argv[1], 1);
            w.bulk(one.isEmpty() ? null : one.getFirst());
            return;
        }
        if (argc != 3) {
            w.error(SYNTAX);
            return;
        }
        if (!RespCommands.parseLong(c, argv[2])) {
            w.error(NOT_INTEGER);
            return;
        }
        if (c.num < 0) {
            w.error("ERR value is out of range, must be positive");
            return;
        }
        set(w, sets.pop(argv[1], c.num));
    }

    private void srandmember(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        if (argc == 2) {
            List<byte[]> one = sets.randomMembers(argv[1], 1);
            w.bulk(one.isEmpty() ? null : one.getFirst());
            return;
        }
        if (argc != 3) {
            w.error(SYNTAX);
            return;
        }
        if (!RespCommands.parseLong(c, argv[2])) {
            w.error(NOT_INTEGER);
            return;
        }
        if (c.num == Long.MIN_VALUE || c.num < -(Integer.MAX_VALUE - 8L)) {
            w.error("ERR value is out of range");
            return;
        }
        List<byte[]> picked = sets.randomMembers(argv[1], c.num);
        // with repeats the reply is an array even in RESP3, as in Redis
        if (c.num < 0) {
            w.arrayHeader(picked.size());
            for (byte[] m : picked) {
                w.bulk(m);
            }
        } else {
            set(w, picked);
        }
    }

    private void sintercard(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        if (!RespCommands.parseLong(c, argv[1]) || c.num <= 0) {
            w.error("ERR numkeys should be greater than 0");
            return;
        }
        long numKeys = c.num;
        if (numKeys > argc - 2) {
            w.error("ERR Number of keys can't be greater than number of args");
            return;
        }
        int first = 2;
        int end = first + (int) numKeys;
        long limit = 0;
        for (int i = end; i < argc; i++) {
            if (RespCommand.is(argv[i], "LIMIT") && i + 1 < argc) {
                if (!RespCommands.parseLong(c, argv[++i]) || c.num < 0) {
                    w.error("ERR LIMIT can't be negative");
                    return;
                }
                limit = c.num;
            } else {
                w.error(SYNTAX);
                return;
            }
        }
        w.integer(sets.intersectionSize(args(argv, first, end), limit));
    }

    private void sscan(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        ScanArgs a = scanArgs(c, w, argv, argc);
        if (a != null) {
            scanReply(w, sets.scan(argv[1], a.cursor(), a.match(), a.count()));
        }
    }

    /** SSCAN's and ZSCAN's arguments after the key: cursor [MATCH pattern] [COUNT n]; a null match is "*". */
    record ScanArgs(long cursor, String match, int count) {
    }

    /** Parses {@code key cursor [MATCH p] [COUNT n]}; null after writing the error reply. */
    static ScanArgs scanArgs(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        if (!RespCommands.parseUnsigned(c, argv[2])) {
            w.error("ERR invalid cursor");
            return null;
        }
        long cursor = c.num;
        String match = null;
        int count = 10;
        for (int i = 3; i < argc; i++) {
            boolean next = i + 1 < argc;
            if (RespCommand.is(argv[i], "MATCH") && next) {
                match = RespCommands.utf8(argv[++i]);
                if (match.equals("*")) {
                    match = null;
                }
            } else if (RespCommand.is(argv[i], "COUNT") && next) {
                if (!RespCommands.parseLong(c, argv[++i])) {
                    w.error(NOT_INTEGER);
                    return null;
                }
                if (c.num < 1) {
                    w.error(SYNTAX);
                    return null;
                }
                count = (int) Math.min(c.num, 1_000_000);
            } else {
                w.error(SYNTAX);
                return null;
            }
        }
        return new ScanArgs(cursor, match, count);
    }

    /** The reply of a *SCAN: the next cursor and the elements. */
    static void scanReply(RespWriter w, ScanResult r) {
        w.arrayHeader(2);
        w.bulk(Long.toUnsignedString(r.nextCursor()));
        w.arrayHeader(r.keys().size());
        for (byte[] m : r.keys()) {
            w.bulk(m);
        }
    }
}
