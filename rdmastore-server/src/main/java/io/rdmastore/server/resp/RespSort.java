package io.rdmastore.server.resp;

import io.rdmastore.store.SortedSets;
import io.rdmastore.store.Store;
import io.rdmastore.store.ValueType;
import io.rdmastore.store.WrongTypeException;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * SORT and SORT_RO with Redis 7.0's semantics: {@code SORT key [BY pattern] [LIMIT offset count] [GET pattern ...]
 * [ASC|DESC] [ALPHA] [STORE destination]} over a list, a set or a sorted set. Numbers sort by value
 * (ties by their bytes, so the order is deterministic), ALPHA by bytes; {@code BY} and {@code GET} patterns replace the
 * first {@code *} by the element and read a string key, or a hash field after {@code ->}; {@code GET #} is the element;
 * a BY pattern without {@code *} skips sorting (a sorted set then keeps its score order, reversed by DESC, as Redis). STORE replaces the destination by a list (deleting it when empty),
 * in one store write. The elements are read in one call and sorted on the connection's event loop, as Redis sorts on
 * its one thread; the BY/GET look-ups are separate reads, so a concurrent writer of those keys can interleave (outside
 * EXEC).
 *
 * <p>Threads: stateless apart from the face; any event loop may call it.
 */
final class RespSort {
    private static final String SYNTAX = "ERR syntax error";
    private static final String NOT_INTEGER = "ERR value is not an integer or out of range";

    private final Store store;

    RespSort(RespFace face) {
        this.store = face.store;
    }

    private static final class Item {
        final byte[] value;
        double score;
        byte[] by;

        Item(byte[] value) {
            this.value = value;
        }
    }

    void execute(RespConnection c, RespWriter w, RespCommand cmd, byte[][] argv, int argc) {
        boolean desc = false;
        boolean alpha = false;
        boolean dontSort = false;
        long offset = 0;
        long count = -1;
        byte[] by = null;
        byte[] dest = null;
        List<byte[]> gets = new ArrayList<>();
        for (int i = 2; i < argc; i++) {
            int left = argc - i - 1;
            if (RespCommand.is(argv[i], "ASC")) {
                desc = false;
            } else if (RespCommand.is(argv[i], "DESC")) {
                desc = true;
            } else if (RespCommand.is(argv[i], "ALPHA")) {
                alpha = true;
            } else if (RespCommand.is(argv[i], "LIMIT") && left >= 2) {
                if (!RespCommands.parseLong(c, argv[i + 1])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                offset = c.num;
                if (!RespCommands.parseLong(c, argv[i + 2])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                count = c.num;
                i += 2;
            } else if (RespCommand.is(argv[i], "STORE") && left >= 1 && cmd == RespCommand.SORT) {
                dest = argv[++i];
            } else if (RespCommand.is(argv[i], "BY") && left >= 1) {
                by = argv[++i];
                if (indexOf(by, (byte) '*') < 0) {
                    dontSort = true;
                }
            } else if (RespCommand.is(argv[i], "GET") && left >= 1) {
                gets.add(argv[++i]);
            } else {
                w.error(SYNTAX);
                return;
            }
        }
        byte[] key = argv[1];
        ValueType type = store.type(key);
        List<byte[]> elements;
        switch (type) {
            case LIST -> elements = store.lists().range(key, 0, -1);
            case SET -> {
                elements = store.sets().members(key);
                if (dest != null) {
                    // a set's order is arbitrary: stored results are sorted so that they are deterministic (Redis)
                    dontSort = false;
                    alpha = true;
                    by = null;
                }
            }
            case ZSET -> {
                List<SortedSets.Scored> members = store.sortedSets().range(key, SortedSets.Range.ranks(0, -1,
                    dontSort && desc));
                elements = new ArrayList<>(members.size());
                for (SortedSets.Scored m : members) {
                    elements.add(m.member());
                }
            }
            case NONE -> elements = List.of();
            default -> throw new WrongTypeException();
        }
        List<Item> items = new ArrayList<>(elements.size());
        for (byte[] e : elements) {
            items.add(new Item(e));
        }
        if (!dontSort) {
            for (Item it : items) {
                byte[] v = by == null ? it.value : lookup(by, it.value);
                if (alpha) {
                    it.by = by == null ? null : v;
                } else if (v != null) {
                    try {
                        String s = new String(v, StandardCharsets.US_ASCII).trim();
                        if (s.isEmpty() || s.endsWith("d") || s.endsWith("D") || s.endsWith("f") || s.endsWith("F")) {
                            throw new NumberFormatException(s);
                        }
                        String l = s.toLowerCase(java.util.Locale.ROOT);
                        it.score = l.equals("inf") || l.equals("+inf") ? Double.POSITIVE_INFINITY
                            : l.equals("-inf") ? Double.NEGATIVE_INFINITY : Double.parseDouble(s);
                        if (Double.isNaN(it.score)) {
                            throw new NumberFormatException(s);
                        }
                    } catch (NumberFormatException e) {
                        w.error("ERR One or more scores can't be converted into double");
                        return;
                    }
                }
            }
            Comparator<Item> order;
            if (!alpha) {
                order = (a, b) -> {
                    int x = Double.compare(a.score, b.score);
                    return x != 0 ? x : Arrays.compareUnsigned(a.value, b.value);
                };
            } else if (by != null) {
                order = (a, b) -> a.by == null ? (b.by == null ? 0 : -1)
                    : b.by == null ? 1 : Arrays.compareUnsigned(a.by, b.by);
            } else {
                order = (a, b) -> Arrays.compareUnsigned(a.value, b.value);
            }
            items.sort(desc ? order.reversed() : order);
        }
        int n = items.size();
        long start = offset < 0 ? 0 : offset;
        long end = count < 0 ? n - 1 : start + count - 1;
        if (start >= n) {
            start = n - 1;
            end = n - 2;
        }
        if (end >= n) {
            end = n - 1;
        }
        List<byte[]> out = new ArrayList<>();
        for (long i = start; i <= end; i++) {
            Item it = items.get((int) i);
            if (gets.isEmpty()) {
                out.add(it.value);
            } else {
                for (byte[] g : gets) {
                    out.add(lookup(g, it.value));
                }
            }
        }
        if (dest != null) {
            List<byte[]> stored = new ArrayList<>(out.size());
            for (byte[] b : out) {
                stored.add(b == null ? new byte[0] : b);
            }
            w.integer(store.lists().store(dest, stored));
            return;
        }
        w.arrayHeader(out.size());
        for (byte[] b : out) {
            w.bulk(b);
        }
    }

    /**
     * Redis's lookupKeyByPattern: {@code #} is the element itself; otherwise the first {@code *} is replaced by it and
     * the key read as a string, or as a hash field when {@code ->field} follows. Null when missing or of another type.
     */
    private byte[] lookup(byte[] pattern, byte[] subst) {
        if (pattern.length == 1 && pattern[0] == '#') {
            return subst;
        }
        int star = indexOf(pattern, (byte) '*');
        if (star < 0) {
            return null;
        }
        int arrow = -1;
        for (int i = star + 1; i + 2 < pattern.length; i++) {
            if (pattern[i] == '-' && pattern[i + 1] == '>') {
                arrow = i;
                break;
            }
        }
        int keyEnd = arrow < 0 ? pattern.length : arrow;
        byte[] k = new byte[star + subst.length + (keyEnd - star - 1)];
        System.arraycopy(pattern, 0, k, 0, star);
        System.arraycopy(subst, 0, k, star, subst.length);
        System.arraycopy(pattern, star + 1, k, star + subst.length, keyEnd - star - 1);
        try {
            if (arrow < 0) {
                return store.get(k);
            }
            return store.hget(k, Arrays.copyOfRange(pattern, arrow + 2, pattern.length));
        } catch (WrongTypeException e) {
            return null;
        }
    }

    private static int indexOf(byte[] b, byte x) {
        for (int i = 0; i < b.length; i++) {
            if (b[i] == x) {
                return i;
            }
        }
        return -1;
    }
}
