package io.rdmastore.store;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Set values (Redis's SADD, SREM, SINTER, ...) in the store's keyspace: same shards, locks, log and snapshots as
 * strings and hashes. Members are binary-safe byte strings up to the value limit. Log ops: {@link
 * LogDescriptor#OP_SET_ADD}, {@link LogDescriptor#OP_SET_REM} and {@link LogDescriptor#OP_SET_REPLACE}, each physical
 * and idempotent like the others; SPOP logs the members it removed, the *STORE commands log the resulting set.
 *
 * <p>Threads: thread-safe, like {@link Store}. Memory: every argument is copied; every returned array is a fresh copy.
 * Errors: {@link WrongTypeException} on a key of another type, as Redis.
 */
public final class Sets {
    private final Store store;

    Sets(Store store) {
        this.store = store;
    }

    // ---- replay and encoding ----

    /** Applies one set op from a frame; the caller holds the shard's write lock or is recovery. */
    static void apply(Keyspace ks, byte op, ByteBuffer p) {
        Key k = Key.wrap(Keyspace.readBytes(p));
        Keyspace.Shard s = ks.shard(k);
        long expireAt = op == LogDescriptor.OP_SET_REPLACE ? p.getLong() : -1;
        Keyspace.Entry e = s.map.get(k);
        if (op == LogDescriptor.OP_SET_REPLACE || (op == LogDescriptor.OP_SET_ADD && e != null
            && e.type != Keyspace.SET)) {
            ks.remove(s, k);
            e = null;
        }
        int n = p.getInt();
        if (op == LogDescriptor.OP_SET_REM) {
            for (int i = 0; i < n; i++) {
                byte[] m = Keyspace.readBytes(p);
                if (e != null && e.type == Keyspace.SET) {
                    e.set.remove(Key.wrap(m));
                }
            }
        } else {
            if (e == null) {
                e = ks.create(s, k, Keyspace.SET, expireAt);
            }
            for (int i = 0; i < n; i++) {
                e.set.add(Key.wrap(Keyspace.readBytes(p)));
            }
        }
        if (e != null && e.type == Keyspace.SET && e.set.isEmpty()) {
            ks.remove(s, k);
        }
    }

    /** The op that recreates a set entry (RENAME, COPY). */
    static void encode(FrameBuilder f, Key k, Keyspace.Entry e) {
        f.op(LogDescriptor.OP_SET_REPLACE).putBytes(k.bytes).putLong(e.expireAt).putInt(e.set.size());
        for (Key m : e.set.members()) {
            f.putBytes(m.bytes);
        }
    }

    /** A snapshot's view of a set: a replace and then adds, flushing whenever the frame passes {@code chunkBytes}. */
    static void encodeChunked(FrameBuilder f, Key k, Keyspace.Entry e, long chunkBytes, Runnable flush) {
        List<Key> all = e.set.members();
        int i = 0;
        boolean first = true;
        while (first || i < all.size()) {
            if (!first && f.payloadLength() >= chunkBytes) {
                flush.run();
            }
            int from = i;
            long bytes = 0;
            while (i < all.size() && bytes < chunkBytes) {
                bytes += all.get(i++).bytes.length + 4;
            }
            if (first) {
                f.op(LogDescriptor.OP_SET_REPLACE).putBytes(k.bytes).putLong(e.expireAt);
                first = false;
            } else {
                f.op(LogDescriptor.OP_SET_ADD).putBytes(k.bytes);
            }
            f.putInt(i - from);
            for (int j = from; j < i; j++) {
                f.putBytes(all.get(j).bytes);
            }
        }
    }

    // ---- commands ----

    private Key member(byte[] m) {
        store.checkValue(m.length);
        return Key.copyOf(m);
    }

    private static void requireSet(Keyspace.Entry e) {
        if (e != null && e.type != Keyspace.SET) {
            throw new WrongTypeException();
        }
    }

    private static List<byte[]> copies(Iterable<Key> keys) {
        List<byte[]> out = new ArrayList<>();
        for (Key k : keys) {
            out.add(k.bytes.clone());
        }
        return out;
    }

    /** SADD: returns how many members were new. */
    public long add(byte[] key, List<byte[]> members) {
        List<Key> ms = new ArrayList<>(members.size());
        for (byte[] m : members) {
            ms.add(member(m));
        }
        return store.writeKey(key, (k, e, f, now) -> {
            requireSet(e);
            Set<Key> fresh = new HashSet<>();
            for (Key m : ms) {
                if (e == null || !e.set.contains(m)) {
                    fresh.add(m);
                }
            }
            if (!fresh.isEmpty()) {
                f.op(LogDescriptor.OP_SET_ADD).putBytes(k.bytes).putInt(fresh.size());
                for (Key m : fresh) {
                    f.putBytes(m.bytes);
                }
            }
            return (long) fresh.size();
        });
    }

    /** SREM: returns how many members were there; removing the last deletes the key. */
    public long remove(byte[] key, List<byte[]> members) {
        return store.writeKey(key, (k, e, f, now) -> {
            requireSet(e);
            Set<Key> gone = new HashSet<>();
            if (e != null) {
                for (byte[] m : members) {
                    Key mk = Key.wrap(m);
                    if (e.set.contains(mk)) {
                        gone.add(mk);
                    }
                }
            }
            logRemove(f, k, gone);
            return (long) gone.size();
        });
    }

    private static void logRemove(FrameBuilder f, Key k, Iterable<Key> gone) {
        List<Key> list = new ArrayList<>();
        gone.forEach(list::add);
        if (!list.isEmpty()) {
            f.op(LogDescriptor.OP_SET_REM).putBytes(k.bytes).putInt(list.size());
            for (Key m : list) {
                f.putBytes(m.bytes);
            }
        }
    }

    /** SMEMBERS: empty when missing. */
    public List<byte[]> members(byte[] key) {
        return store.readKey(key, e -> {
            requireSet(e);
            return e == null ? new ArrayList<>() : copies(e.set.members());
        });
    }

    /** SISMEMBER. */
    public boolean isMember(byte[] key, byte[] member) {
        return store.readKey(key, e -> {
            requireSet(e);
            return e != null && e.set.contains(Key.wrap(member));
        });
    }

    /** SMISMEMBER: one answer per member. */
    public boolean[] areMembers(byte[] key, List<byte[]> members) {
        return store.readKey(key, e -> {
            requireSet(e);
            boolean[] out = new boolean[members.size()];
            for (int i = 0; i < out.length; i++) {
                out[i] = e != null && e.set.contains(Key.wrap(members.get(i)));
            }
            return out;
        });
    }

    /** SCARD: 0 when missing. */
    public long size(byte[] key) {
        return store.readKey(key, e -> {
            requireSet(e);
            return e == null ? 0L : e.set.size();
        });
    }

    /** SPOP: removes and returns up to {@code count} random members (all of them when count >= size). */
    public List<byte[]> pop(byte[] key, long count) {
        if (count < 0) {
            throw new BadRequestException("value is out of range, must be positive");
        }
        return store.writeKey(key, (k, e, f, now) -> {
            requireSet(e);
            List<Key> picked = new ArrayList<>();
            if (e == null || count == 0) {
                return new ArrayList<>();
            }
            if (count >= e.set.size()) {
                picked.addAll(e.set.members());
                f.op(LogDescriptor.OP_DELETE).putBytes(k.bytes);
                return copies(picked);
            }
            picked.addAll(sample(e.set, (int) count));
            logRemove(f, k, picked);
            return copies(picked);
        });
    }

    /** {@code n} distinct members chosen uniformly (n below the set's size). */
    private static List<Key> sample(MemberSet set, int n) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        int size = set.size();
        List<Key> out = new ArrayList<>(n);
        if (n * 2L <= size) {
            Set<Integer> seen = new HashSet<>();
            while (out.size() < n) {
                int i = rnd.nextInt(size);
                if (seen.add(i)) {
                    out.add(set.get(i));
                }
            }
        } else {
            int[] order = new int[size];
            for (int i = 0; i < size; i++) {
                order[i] = i;
            }
            for (int i = 0; i < n; i++) {
                int j = i + rnd.nextInt(size - i);
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
                out.add(set.get(order[i]));
            }
        }
        return out;
    }

    /**
     * SRANDMEMBER with a count: {@code count >= 0} gives up to count distinct members, a negative count gives
     * {@code -count} members that may repeat. Empty when missing.
     */
    public List<byte[]> randomMembers(byte[] key, long count) {
        return store.readKey(key, e -> {
            requireSet(e);
            if (e == null || count == 0) {
                return new ArrayList<>();
            }
            if (count < 0) {
                ThreadLocalRandom rnd = ThreadLocalRandom.current();
                List<byte[]> out = new ArrayList<>();
                for (long i = 0; i < -count; i++) {
                    out.add(e.set.get(rnd.nextInt(e.set.size())).bytes.clone());
                }
                return out;
            }
            if (count >= e.set.size()) {
                return copies(e.set.members());
            }
            return copies(sample(e.set, (int) count));
        });
    }

    /** SMOVE: moves a member from {@code from} to {@code to}; false when it was not in {@code from}. */
    public boolean move(byte[] from, byte[] to, byte[] member) {
        Key m = member(member);
        return store.withKeys(new byte[][] {from, to}, true, (ks, live, f, now) -> {
            requireSet(live[0]);
            requireSet(live[1]);
            if (live[0] == null || !live[0].set.contains(m)) {
                return false;
            }
            if (ks[0].equals(ks[1])) {
                return true;
            }
            f.op(LogDescriptor.OP_SET_REM).putBytes(ks[0].bytes).putInt(1).putBytes(m.bytes);
            if (live[1] == null || !live[1].set.contains(m)) {
                // a member already in the destination leaves it untouched (no write seen by WATCH, as in Redis)
                f.op(LogDescriptor.OP_SET_ADD).putBytes(ks[1].bytes).putInt(1).putBytes(m.bytes);
            }
            return true;
        });
    }

    /** The set algebra of SINTER, SUNION and SDIFF. */
    public enum Op { INTER, UNION, DIFF }

    private static Set<Key> combine(Op op, Keyspace.Entry[] sets, int from, long limit) {
        for (int i = from; i < sets.length; i++) {
            requireSet(sets[i]);
        }
        Set<Key> out = new HashSet<>();
        switch (op) {
            case UNION -> {
                for (int i = from; i < sets.length; i++) {
                    if (sets[i] != null) {
                        out.addAll(sets[i].set.members());
                    }
                }
            }
            case DIFF -> {
                if (sets[from] != null) {
                    out.addAll(sets[from].set.members());
                    for (int i = from + 1; i < sets.length && !out.isEmpty(); i++) {
                        if (sets[i] != null) {
                            out.removeIf(sets[i].set::contains);
                        }
                    }
                }
            }
            case INTER -> {
                Keyspace.Entry smallest = null;
                for (int i = from; i < sets.length; i++) {
                    if (sets[i] == null) {
                        return out;
                    }
                    if (smallest == null || sets[i].set.size() < smallest.set.size()) {
                        smallest = sets[i];
                    }
                }
                for (Key m : smallest.set.members()) {
                    boolean all = true;
                    for (int i = from; i < sets.length && all; i++) {
                        all = sets[i].set.contains(m);
                    }
                    if (all) {
                        out.add(m);
                        if (limit > 0 && out.size() >= limit) {
                            break;
                        }
                    }
                }
            }
        }
        return out;
    }

    /** SINTER, SUNION, SDIFF over {@code keys}; a missing key is an empty set. */
    public List<byte[]> combine(Op op, List<byte[]> keys) {
        return store.withKeys(keys.toArray(new byte[0][]), false,
            (ks, live, f, now) -> copies(combine(op, live, 0, 0)));
    }

    /** SINTERCARD: the size of the intersection, counting at most {@code limit} (0: no limit). */
    public long intersectionSize(List<byte[]> keys, long limit) {
        return store.withKeys(keys.toArray(new byte[0][]), false,
            (ks, live, f, now) -> (long) combine(Op.INTER, live, 0, limit).size());
    }

    /** SINTERSTORE, SUNIONSTORE, SDIFFSTORE: replaces {@code dest} with the result (deletes it when empty). */
    public long combineInto(Op op, byte[] dest, List<byte[]> keys) {
        byte[][] all = new byte[keys.size() + 1][];
        all[0] = dest;
        for (int i = 0; i < keys.size(); i++) {
            all[i + 1] = keys.get(i);
        }
        return store.withKeys(all, true, (ks, live, f, now) -> {
            Set<Key> result = combine(op, live, 1, 0);
            if (result.isEmpty()) {
                if (live[0] != null) {
                    f.op(LogDescriptor.OP_DELETE).putBytes(ks[0].bytes);
                }
                return 0L;
            }
            f.op(LogDescriptor.OP_SET_REPLACE).putBytes(ks[0].bytes).putLong(-1).putInt(result.size());
            for (Key m : result) {
                f.putBytes(m.bytes);
            }
            return (long) result.size();
        });
    }

    /**
     * One step of an SSCAN iteration: members in the order of their hash codes, so every member present for the
     * whole iteration is returned.
     */
    public ScanResult scan(byte[] key, long cursor, String globOrNull, int count) {
        if (count < 1) {
            throw new BadRequestException("syntax error: COUNT must be at least 1");
        }
        byte[] pattern = globOrNull == null ? null : globOrNull.getBytes(StandardCharsets.UTF_8);
        return store.readKey(key, e -> {
            requireSet(e);
            List<byte[]> out = new ArrayList<>();
            if (e == null || cursor < 0 || cursor > 0xffffffffL) {
                return new ScanResult(0, out);
            }
            List<Key> members = new ArrayList<>();
            for (Key m : e.set.members()) {
                if (Integer.toUnsignedLong(m.hashCode()) >= cursor) {
                    members.add(m);
                }
            }
            members.sort((a, b) -> Integer.compareUnsigned(a.hashCode(), b.hashCode()));
            int taken = 0;
            long next = 0;
            for (int i = 0; i < members.size(); i++) {
                Key m = members.get(i);
                long h = Integer.toUnsignedLong(m.hashCode());
                if (taken >= count && h != Integer.toUnsignedLong(members.get(i - 1).hashCode())) {
                    next = h;
                    break;
                }
                taken++;
                if (pattern == null || Glob.matches(pattern, m.bytes)) {
                    out.add(m.bytes.clone());
                }
            }
            return new ScanResult(next, out);
        });
    }
}
