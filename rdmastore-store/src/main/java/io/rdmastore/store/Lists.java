package io.rdmastore.store;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * List values (Redis's LPUSH, LRANGE, LMOVE, ...; not the blocking forms) in the store's keyspace: same shards,
 * locks, log and snapshots as the other types. Log ops {@link LogDescriptor#OP_LIST_PUSH} and {@link
 * LogDescriptor#OP_LIST_POP} at either end, {@link LogDescriptor#OP_LIST_SET} and {@link LogDescriptor#OP_LIST_TRIM};
 * LREM and LINSERT log the whole resulting list ({@link LogDescriptor#OP_LIST_REPLACE}), O(length).
 *
 * <p>Threads: thread-safe, like {@link Store}. Memory: every argument is copied; every returned array is a fresh copy.
 * Errors: {@link WrongTypeException} on a key of another type, as Redis.
 */
public final class Lists {
    private final Store store;

    Lists(Store store) {
        this.store = store;
    }

    // ---- replay and encoding ----

    /** Applies one list op from a frame; the caller holds the shard's write lock or is recovery. */
    static void apply(Keyspace ks, byte op, ByteBuffer p) {
        Key k = Key.wrap(Keyspace.readBytes(p));
        Keyspace.Shard s = ks.shard(k);
        Keyspace.Entry e = s.map.get(k);
        if (e != null && e.type != Keyspace.LIST) {
            // only in replay over a snapshot taken while writing: a later op fixes the key
            ks.remove(s, k);
            e = null;
        }
        switch (op) {
            case LogDescriptor.OP_LIST_PUSH -> {
                boolean left = p.get() != 0;
                int n = p.getInt();
                if (e == null) {
                    e = ks.create(s, k, Keyspace.LIST, -1);
                }
                for (int i = 0; i < n; i++) {
                    byte[] v = Keyspace.readBytes(p);
                    if (left) {
                        e.list.addFirst(v);
                    } else {
                        e.list.addLast(v);
                    }
                }
            }
            case LogDescriptor.OP_LIST_POP -> {
                boolean left = p.get() != 0;
                int n = p.getInt();
                for (int i = 0; e != null && i < n && !e.list.isEmpty(); i++) {
                    if (left) {
                        e.list.removeFirst();
                    } else {
                        e.list.removeLast();
                    }
                }
            }
            case LogDescriptor.OP_LIST_REPLACE -> {
                long expireAt = p.getLong();
                int n = p.getInt();
                if (e != null) {
                    ks.remove(s, k);
                }
                e = ks.create(s, k, Keyspace.LIST, expireAt);
                for (int i = 0; i < n; i++) {
                    e.list.addLast(Keyspace.readBytes(p));
                }
            }
            case LogDescriptor.OP_LIST_SET -> {
                long index = p.getLong();
                byte[] v = Keyspace.readBytes(p);
                if (e != null && index >= 0 && index < e.list.size()) {
                    e.list.set((int) index, v);
                }
            }
            default -> {
                long from = p.getLong();
                long to = p.getLong();
                if (e != null) {
                    int size = e.list.size();
                    int keepFrom = (int) Math.min(from, size);
                    int keepTo = (int) Math.min(to, size - 1L);
                    for (int i = size - 1; i > keepTo; i--) {
                        e.list.removeLast();
                    }
                    for (int i = 0; i < keepFrom && !e.list.isEmpty(); i++) {
                        e.list.removeFirst();
                    }
                }
            }
        }
        if (e != null && e.list.isEmpty()) {
            ks.remove(s, k);
        }
    }

    /** The op that recreates a list entry (RENAME, COPY, snapshots). */
    static void encode(FrameBuilder f, Key k, Keyspace.Entry e) {
        f.op(LogDescriptor.OP_LIST_REPLACE).putBytes(k.bytes).putLong(e.expireAt).putInt(e.list.size());
        for (int i = 0; i < e.list.size(); i++) {
            f.putBytes(e.list.get(i));
        }
    }

    /** A snapshot's view of a list: a replace and then right pushes, flushing past {@code chunkBytes}. */
    static void encodeChunked(FrameBuilder f, Key k, Keyspace.Entry e, long chunkBytes, Runnable flush) {
        int size = e.list.size();
        int i = 0;
        boolean first = true;
        while (first || i < size) {
            if (!first && f.payloadLength() >= chunkBytes) {
                flush.run();
            }
            int from = i;
            long bytes = 0;
            while (i < size && bytes < chunkBytes) {
                bytes += e.list.lengthAt(i++) + 4;
            }
            if (first) {
                f.op(LogDescriptor.OP_LIST_REPLACE).putBytes(k.bytes).putLong(e.expireAt);
                first = false;
            } else {
                f.op(LogDescriptor.OP_LIST_PUSH).putBytes(k.bytes).put((byte) 0);
            }
            f.putInt(i - from);
            for (int j = from; j < i; j++) {
                f.putBytes(e.list.get(j));
            }
        }
    }

    // ---- commands ----

    private static void requireList(Keyspace.Entry e) {
        if (e != null && e.type != Keyspace.LIST) {
            throw new WrongTypeException();
        }
    }

    /**
     * LPUSH/RPUSH (and the X forms, {@code onlyIfExists}): pushes in argument order at one end.
     *
     * @return the new length; 0 when {@code onlyIfExists} and the key is missing
     */
    public long push(byte[] key, List<byte[]> items, boolean left, boolean onlyIfExists) {
        for (byte[] v : items) {
            store.checkValue(v.length);
        }
        return store.writeKey(key, (k, e, f, now) -> {
            requireList(e);
            if (e == null && onlyIfExists) {
                return 0L;
            }
            f.op(LogDescriptor.OP_LIST_PUSH).putBytes(k.bytes).put((byte) (left ? 1 : 0)).putInt(items.size());
            for (byte[] v : items) {
                f.putBytes(v);
            }
            return (long) (e == null ? 0 : e.list.size()) + items.size();
        });
    }

    /** LPOP/RPOP: up to {@code count} elements from one end; null when the key is missing. */
    public List<byte[]> pop(byte[] key, boolean left, long count) {
        return store.writeKey(key, (k, e, f, now) -> {
            requireList(e);
            if (e == null) {
                return null;
            }
            int n = (int) Math.min(count, e.list.size());
            List<byte[]> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                out.add(e.list.get(left ? i : e.list.size() - 1 - i));
            }
            if (n > 0) {
                f.op(LogDescriptor.OP_LIST_POP).putBytes(k.bytes).put((byte) (left ? 1 : 0)).putInt(n);
            }
            return out;
        });
    }

    /** LLEN. */
    public long length(byte[] key) {
        return store.readKey(key, e -> {
            requireList(e);
            return e == null ? 0L : e.list.size();
        });
    }

    /** Normalised inclusive range over a list of {@code len}, or null when empty (Redis's LRANGE rules). */
    private static int[] normalise(long start, long stop, int len) {
        if (start < 0) {
            start = Math.max(0, len + start);
        }
        if (stop < 0) {
            stop = len + stop;
        }
        if (start > stop || start >= len) {
            return null;
        }
        return new int[] {(int) start, (int) Math.min(stop, len - 1L)};
    }

    /** LRANGE. */
    public List<byte[]> range(byte[] key, long start, long stop) {
        return store.readKey(key, e -> {
            requireList(e);
            int[] r = e == null ? null : normalise(start, stop, e.list.size());
            if (r == null) {
                return new ArrayList<>(0);
            }
            List<byte[]> out = new ArrayList<>(r[1] - r[0] + 1);
            for (int i = r[0]; i <= r[1]; i++) {
                out.add(e.list.get(i));
            }
            return out;
        });
    }

    /** LINDEX: null when out of range or missing. */
    public byte[] index(byte[] key, long index) {
        return store.readKey(key, e -> {
            requireList(e);
            if (e == null) {
                return null;
            }
            long i = index < 0 ? e.list.size() + index : index;
            return i < 0 || i >= e.list.size() ? null : e.list.get((int) i);
        });
    }

    /** LSET. @throws NoSuchKeyException when missing; BadRequestException "index out of range" */
    public void set(byte[] key, long index, byte[] value) {
        store.checkValue(value.length);
        store.writeKey(key, (k, e, f, now) -> {
            requireList(e);
            if (e == null) {
                throw new NoSuchKeyException();
            }
            long i = index < 0 ? e.list.size() + index : index;
            if (i < 0 || i >= e.list.size()) {
                throw new BadRequestException("index out of range");
            }
            f.op(LogDescriptor.OP_LIST_SET).putBytes(k.bytes).putLong(i).putBytes(value);
            return null;
        });
    }

    /** LTRIM: keeps {@code start..stop}; an empty range deletes the key. */
    public void trim(byte[] key, long start, long stop) {
        store.writeKey(key, (k, e, f, now) -> {
            requireList(e);
            if (e == null) {
                return null;
            }
            int[] r = normalise(start, stop, e.list.size());
            if (r == null) {
                f.op(LogDescriptor.OP_DELETE).putBytes(k.bytes);
            } else if (r[0] > 0 || r[1] < e.list.size() - 1) {
                f.op(LogDescriptor.OP_LIST_TRIM).putBytes(k.bytes).putLong(r[0]).putLong(r[1]);
            }
            return null;
        });
    }

    private static void replace(FrameBuilder f, Key k, Keyspace.Entry e, List<byte[]> items) {
        if (items.isEmpty()) {
            f.op(LogDescriptor.OP_DELETE).putBytes(k.bytes);
            return;
        }
        f.op(LogDescriptor.OP_LIST_REPLACE).putBytes(k.bytes).putLong(e.expireAt).putInt(items.size());
        for (byte[] v : items) {
            f.putBytes(v);
        }
    }

    /** LREM: removes up to |count| elements equal to {@code value} (from the tail when negative, all when 0). */
    public long remove(byte[] key, long count, byte[] value) {
        return store.writeKey(key, (k, e, f, now) -> {
            requireList(e);
            if (e == null) {
                return 0L;
            }
            int size = e.list.size();
            boolean[] drop = new boolean[size];
            long removed = 0;
            long limit = count == 0 ? Long.MAX_VALUE : Math.abs(count);
            for (int n = 0; n < size && removed < limit; n++) {
                int i = count < 0 ? size - 1 - n : n;
                if (e.list.equalsAt(i, value)) {
                    drop[i] = true;
                    removed++;
                }
            }
            if (removed > 0) {
                List<byte[]> kept = new ArrayList<>(size);
                for (int i = 0; i < size; i++) {
                    if (!drop[i]) {
                        kept.add(e.list.get(i));
                    }
                }
                replace(f, k, e, kept);
            }
            return removed;
        });
    }

    /** LINSERT: the new length, -1 when the pivot is not there, 0 when the key is missing. */
    public long insert(byte[] key, boolean before, byte[] pivot, byte[] value) {
        store.checkValue(value.length);
        return store.writeKey(key, (k, e, f, now) -> {
            requireList(e);
            if (e == null) {
                return 0L;
            }
            int size = e.list.size();
            for (int i = 0; i < size; i++) {
                if (e.list.equalsAt(i, pivot)) {
                    List<byte[]> items = new ArrayList<>(e.list.range(0, size - 1));
                    items.add(before ? i : i + 1, value);
                    replace(f, k, e, items);
                    return size + 1L;
                }
            }
            return -1L;
        });
    }

    /**
     * LPOS: indexes of elements equal to {@code value}, the {@code rank}-th match first (negative: from the tail),
     * at most {@code count} of them (0: all), looking at no more than {@code maxLen} elements (0: all).
     */
    public List<Long> positions(byte[] key, byte[] value, long rank, long count, long maxLen) {
        return store.readKey(key, e -> {
            requireList(e);
            List<Long> out = new ArrayList<>();
            if (e == null) {
                return out;
            }
            int size = e.list.size();
            long skip = Math.abs(rank) - 1;
            long limit = count == 0 ? Long.MAX_VALUE : count;
            for (int n = 0; n < size && (maxLen == 0 || n < maxLen) && out.size() < limit; n++) {
                int i = rank < 0 ? size - 1 - n : n;
                if (e.list.equalsAt(i, value)) {
                    if (skip > 0) {
                        skip--;
                    } else {
                        out.add((long) i);
                    }
                }
            }
            return out;
        });
    }

    /**
     * Replaces whatever {@code key} holds (any type) by a list of {@code items}, without a time to live, or deletes it
     * when {@code items} is empty (SORT ... STORE). Returns the list's length.
     */
    public long store(byte[] key, List<byte[]> items) {
        for (byte[] v : items) {
            store.checkValue(v.length);
        }
        return store.writeKey(key, (k, e, f, now) -> {
            if (e != null && (items.isEmpty() || e.type != Keyspace.LIST)) {
                f.op(LogDescriptor.OP_DELETE).putBytes(k.bytes);
            }
            if (!items.isEmpty()) {
                f.op(LogDescriptor.OP_LIST_REPLACE).putBytes(k.bytes).putLong(-1).putInt(items.size());
                for (byte[] v : items) {
                    f.putBytes(v);
                }
            }
            return (long) items.size();
        });
    }

    /** LMOVE (and RPOPLPUSH): the element moved, or null when {@code from} is missing. */
    public byte[] move(byte[] from, byte[] to, boolean fromLeft, boolean toLeft) {
        return store.withKeys(new byte[][] {from, to}, true, (ks, live, f, now) -> {
            requireList(live[0]);
            if (live[0] == null) {
                return null;
            }
            requireList(live[1]);
            Keyspace.Entry src = live[0];
            byte[] v = src.list.get(fromLeft ? 0 : src.list.size() - 1);
            f.op(LogDescriptor.OP_LIST_POP).putBytes(ks[0].bytes).put((byte) (fromLeft ? 1 : 0)).putInt(1);
            f.op(LogDescriptor.OP_LIST_PUSH).putBytes(ks[1].bytes).put((byte) (toLeft ? 1 : 0)).putInt(1)
                .putBytes(v);
            return v;
        });
    }
}
