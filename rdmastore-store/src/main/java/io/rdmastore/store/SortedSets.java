package io.rdmastore.store;

import java.math.BigDecimal;
import java.math.MathContext;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Sorted set values (Redis's ZADD, ZRANGE, ZUNIONSTORE, ...) in the store's keyspace: same shards, locks, log and
 * snapshots as the other types. Members are binary-safe byte strings up to the value limit, scores are doubles (never
 * NaN). Log ops: {@link LogDescriptor#OP_ZSET_ADD}, {@link LogDescriptor#OP_ZSET_REM} and {@link
 * LogDescriptor#OP_ZSET_REPLACE}, physical and idempotent like the others: ZADD/ZINCRBY log the members whose score
 * changed with their new score, removals and pops log the members removed, the *STORE commands the resulting set.
 * The layout in memory is a {@link ScoreSet}.
 *
 * <p>Threads: thread-safe, like {@link Store}. Memory: every argument is copied; every returned array is a fresh copy.
 * Errors: {@link WrongTypeException} on a key of another type, as Redis.
 */
public final class SortedSets {
    /** ZADD only adds new members (NX). */
    public static final int NX = 1;
    /** ZADD only updates existing members (XX). */
    public static final int XX = 2;
    /** ZADD updates only when the new score is greater (GT). */
    public static final int GT = 4;
    /** ZADD updates only when the new score is less (LT). */
    public static final int LT = 8;
    /** ZADD counts changed members too (CH). */
    public static final int CH = 16;

    private static final MathContext SEVENTEEN = new MathContext(17);

    /** A member and its score. */
    public record Scored(byte[] member, double score) {
    }

    /** What ranges select: ranks, scores or members (lexicographic). */
    public enum By { RANK, SCORE, LEX }

    /**
     * One end of a lexicographic range: {@code -} (below everything), {@code +} (above everything), or a member,
     * inclusive ({@code [m}) or exclusive ({@code (m}).
     */
    public record LexBound(int infinity, byte[] value, boolean exclusive) {
        /** {@code -}. */
        public static final LexBound MIN = new LexBound(-1, null, false);
        /** {@code +}. */
        public static final LexBound MAX = new LexBound(1, null, false);

        /** Parses Redis's syntax ({@code -}, {@code +}, {@code [m}, {@code (m}); null when malformed. */
        public static LexBound parse(byte[] a) {
            if (a.length == 1 && a[0] == '-') {
                return MIN;
            }
            if (a.length == 1 && a[0] == '+') {
                return MAX;
            }
            if (a.length >= 1 && (a[0] == '[' || a[0] == '(')) {
                return new LexBound(0, Arrays.copyOfRange(a, 1, a.length), a[0] == '(');
            }
            return null;
        }
    }

    /**
     * A range: by rank ({@code start..stop}, negative counts from the end), by score ({@code min..max}, either end
     * exclusive) or by member ({@code lexMin..lexMax}); {@code reverse} walks from the high end (ranks count from the
     * high end too); then {@code offset} members are skipped and at most {@code limit} returned (negative: all).
     */
    public record Range(By by, long start, long stop, double min, boolean minExclusive, double max,
                        boolean maxExclusive, LexBound lexMin, LexBound lexMax, boolean reverse, long offset,
                        long limit) {
        /** Ranks {@code start..stop}. */
        public static Range ranks(long start, long stop, boolean reverse) {
            return new Range(By.RANK, start, stop, 0, false, 0, false, null, null, reverse, 0, -1);
        }

        /** Scores {@code min..max}. */
        public static Range scores(double min, boolean minEx, double max, boolean maxEx, boolean reverse,
                                   long offset, long limit) {
            return new Range(By.SCORE, 0, 0, min, minEx, max, maxEx, null, null, reverse, offset, limit);
        }

        /** Members {@code min..max}. */
        public static Range lex(LexBound min, LexBound max, boolean reverse, long offset, long limit) {
            return new Range(By.LEX, 0, 0, 0, false, 0, false, min, max, reverse, offset, limit);
        }
    }

    /** How ZUNION/ZINTER combine the scores of a member found in several inputs. */
    public enum Aggregate { SUM, MIN, MAX }

    /** The algebra of ZUNION, ZINTER and ZDIFF. */
    public enum Op { UNION, INTER, DIFF }

    private final Store store;

    SortedSets(Store store) {
        this.store = store;
    }

    // ---- formatting ----

    /**
     * A score as Redis 7.0 prints it ({@code %.17g}; {@code inf}, {@code -inf}): 17 significant digits, trailing
     * zeros dropped, an exponent ({@code 1e+20}) below 1e-4 and from 1e17 on.
     */
    public static String format(double d) {
        if (Double.isInfinite(d)) {
            return d > 0 ? "inf" : "-inf";
        }
        if (d == 0) {
            return (Double.doubleToRawLongBits(d) < 0) ? "-0" : "0";
        }
        if (d == Math.rint(d) && Math.abs(d) < 1e15) {
            return Long.toString((long) d);
        }
        BigDecimal b = new BigDecimal(d).round(SEVENTEEN);
        int exp = b.precision() - b.scale() - 1;
        if (exp < -4 || exp >= 17) {
            BigDecimal mant = b.movePointLeft(exp).stripTrailingZeros();
            String m = mant.toPlainString();
            String e = Integer.toString(Math.abs(exp));
            return m + (exp < 0 ? "e-" : "e+") + (e.length() < 2 ? "0" + e : e);
        }
        String s = b.stripTrailingZeros().toPlainString();
        return s;
    }

    /**
     * A score argument as Redis reads it ({@code strtod}: decimal, hex, {@code inf}, {@code -inf}, surrounding
     * spaces refused); NaN when it is not a valid float or is "nan".
     */
    public static double parse(byte[] a) {
        int n = a.length;
        if (n == 0 || n > 5000 || Character.isWhitespace(a[0]) || Character.isWhitespace(a[n - 1])) {
            return Double.NaN;
        }
        String s = new String(a, StandardCharsets.ISO_8859_1);
        String low = s.toLowerCase(java.util.Locale.ROOT);
        String body = low.startsWith("+") || low.startsWith("-") ? low.substring(1) : low;
        if (body.equals("inf") || body.equals("infinity")) {
            return low.startsWith("-") ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
        }
        if (body.isEmpty() || body.startsWith("+") || body.startsWith("-")) {
            return Double.NaN;
        }
        for (int i = 0; i < body.length(); i++) {
            char c = body.charAt(i);
            boolean ok = (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == '+' || c == '-' || c == 'x'
                || (c >= 'a' && c <= 'f') || c == 'p';
            if (!ok) {
                return Double.NaN;
            }
        }
        try {
            if (body.startsWith("0x")) {
                String hex = body.contains("p") ? s : s + "p0";
                return Double.parseDouble(hex);
            }
            if (body.indexOf('x') >= 0 || body.indexOf('p') >= 0 || (body.chars().anyMatch(c -> c >= 'a'
                && c <= 'f' && c != 'e'))) {
                return Double.NaN;
            }
            double d = Double.parseDouble(s);
            if (Double.isInfinite(d)) {
                return Double.NaN; // out of range (strtod's ERANGE), as Redis refuses it
            }
            if (d == 0) {
                int e = body.indexOf('e');
                String mant = e < 0 ? body : body.substring(0, e);
                if (mant.chars().anyMatch(c -> c >= '1' && c <= '9')) {
                    return Double.NaN; // underflow to zero: ERANGE too
                }
            }
            return d;
        } catch (NumberFormatException e) {
            return Double.NaN;
        }
    }

    // ---- replay and encoding ----

    /** Applies one sorted-set op from a frame; the caller holds the shard's write lock or is recovery. */
    static void apply(Keyspace ks, byte op, ByteBuffer p) {
        Key k = Key.wrap(Keyspace.readBytes(p));
        Keyspace.Shard s = ks.shard(k);
        long expireAt = op == LogDescriptor.OP_ZSET_REPLACE ? p.getLong() : -1;
        Keyspace.Entry e = s.map.get(k);
        if (op == LogDescriptor.OP_ZSET_REPLACE || (op == LogDescriptor.OP_ZSET_ADD && e != null
            && e.type != Keyspace.ZSET)) {
            ks.remove(s, k);
            e = null;
        }
        int n = p.getInt();
        if (op == LogDescriptor.OP_ZSET_REM) {
            for (int i = 0; i < n; i++) {
                byte[] m = Keyspace.readBytes(p);
                if (e != null && e.type == Keyspace.ZSET) {
                    e.zset.remove(Key.wrap(m));
                }
            }
        } else {
            if (e == null) {
                e = ks.create(s, k, Keyspace.ZSET, expireAt);
            }
            for (int i = 0; i < n; i++) {
                double score = p.getDouble();
                e.zset.put(Key.wrap(Keyspace.readBytes(p)), score);
            }
        }
        if (e != null && e.type == Keyspace.ZSET && e.zset.isEmpty()) {
            ks.remove(s, k);
        }
    }

    /** The op that recreates a sorted set entry (RENAME, COPY). */
    static void encode(FrameBuilder f, Key k, Keyspace.Entry e) {
        f.op(LogDescriptor.OP_ZSET_REPLACE).putBytes(k.bytes).putLong(e.expireAt).putInt(e.zset.size());
        e.zset.forEach((s, m) -> f.putDouble(s).putBytes(m.bytes));
    }

    /** A snapshot's view of a sorted set: a replace and then adds, flushing whenever the frame passes chunkBytes. */
    static void encodeChunked(FrameBuilder f, Key k, Keyspace.Entry e, long chunkBytes, Runnable flush) {
        int size = e.zset.size();
        int i = 0;
        boolean first = true;
        while (first || i < size) {
            if (!first && f.payloadLength() >= chunkBytes) {
                flush.run();
            }
            int from = i;
            long bytes = 0;
            while (i < size && bytes < chunkBytes) {
                bytes += e.zset.memberAt(i++).bytes.length + 12;
            }
            if (first) {
                f.op(LogDescriptor.OP_ZSET_REPLACE).putBytes(k.bytes).putLong(e.expireAt);
                first = false;
            } else {
                f.op(LogDescriptor.OP_ZSET_ADD).putBytes(k.bytes);
            }
            f.putInt(i - from);
            if (i > from) {
                e.zset.forRange(from, i - 1, false, (s, m) -> f.putDouble(s).putBytes(m.bytes));
            }
        }
    }

    // ---- commands ----

    private static void require(Keyspace.Entry e) {
        if (e != null && e.type != Keyspace.ZSET) {
            throw new WrongTypeException();
        }
    }

    /** A sorted set or (for the ZUNION family, as Redis) a set, whose members all score 1. */
    private static void requireSetLike(Keyspace.Entry e) {
        if (e != null && e.type != Keyspace.ZSET && e.type != Keyspace.SET) {
            throw new WrongTypeException();
        }
    }

    private static Scored scored(double s, Key m) {
        return new Scored(m.bytes.clone(), s);
    }

    /**
     * ZADD with flags ({@link #NX} ...): sets the scores of {@code members}; returns the members added (with
     * {@link #CH}: added or changed).
     */
    public long add(byte[] key, double[] scores, List<byte[]> members, int flags) {
        List<Key> ms = new ArrayList<>(members.size());
        for (byte[] m : members) {
            store.checkValue(m.length);
            ms.add(Key.copyOf(m));
        }
        return store.writeKey(key, (k, e, f, now) -> {
            require(e);
            if (e == null && (flags & XX) != 0) {
                return 0L;
            }
            LinkedHashMap<Key, Double> changes = new LinkedHashMap<>();
            long added = 0;
            long changed = 0;
            for (int i = 0; i < ms.size(); i++) {
                Key m = ms.get(i);
                double ns = scores[i];
                Double pending = changes.get(m);
                double cur = pending != null ? pending : e == null ? Double.NaN : e.zset.score(m);
                if (Double.isNaN(cur)) {
                    if ((flags & XX) != 0) {
                        continue;
                    }
                    changes.put(m, ns);
                    added++;
                } else {
                    if ((flags & NX) != 0 || ((flags & GT) != 0 && !(ns > cur)) || ((flags & LT) != 0 && !(ns < cur))) {
                        continue;
                    }
                    if (ns != cur) {
                        changes.put(m, ns);
                        changed++;
                    }
                }
            }
            logAdd(f, k, changes);
            return (flags & CH) != 0 ? added + changed : added;
        });
    }

    private static void logAdd(FrameBuilder f, Key k, Map<Key, Double> changes) {
        if (changes.isEmpty()) {
            return;
        }
        f.op(LogDescriptor.OP_ZSET_ADD).putBytes(k.bytes).putInt(changes.size());
        for (Map.Entry<Key, Double> c : changes.entrySet()) {
            f.putDouble(c.getValue()).putBytes(c.getKey().bytes);
        }
    }

    /**
     * ZINCRBY and ZADD INCR: adds {@code by} to the member's score (0 when absent); null when a flag stopped it.
     *
     * @throws BadRequestException when the result would be NaN
     */
    public Double increment(byte[] key, double by, byte[] member, int flags) {
        store.checkValue(member.length);
        Key m = Key.copyOf(member);
        return store.writeKey(key, (k, e, f, now) -> {
            require(e);
            double cur = e == null ? Double.NaN : e.zset.score(m);
            boolean exists = !Double.isNaN(cur);
            if ((exists && (flags & NX) != 0) || (!exists && (flags & XX) != 0)) {
                return null;
            }
            double ns = (exists ? cur : 0) + by;
            if (Double.isNaN(ns)) {
                throw new BadRequestException("resulting score is not a number (NaN)");
            }
            if (exists && (((flags & GT) != 0 && !(ns > cur)) || ((flags & LT) != 0 && !(ns < cur)))) {
                return null;
            }
            if (!exists || ns != cur) {
                logAdd(f, k, Map.of(m, ns));
            }
            return ns;
        });
    }

    /** ZREM: returns how many members were there; removing the last deletes the key. */
    public long remove(byte[] key, List<byte[]> members) {
        return store.writeKey(key, (k, e, f, now) -> {
            require(e);
            Set<Key> gone = new HashSet<>();
            if (e != null) {
                for (byte[] m : members) {
                    Key mk = Key.wrap(m);
                    if (e.zset.contains(mk)) {
                        gone.add(mk);
                    }
                }
            }
            logRemove(f, k, e, gone);
            return (long) gone.size();
        });
    }

    private static void logRemove(FrameBuilder f, Key k, Keyspace.Entry e, java.util.Collection<Key> gone) {
        if (gone.isEmpty()) {
            return;
        }
        if (e != null && gone.size() == e.zset.size()) {
            f.op(LogDescriptor.OP_DELETE).putBytes(k.bytes);
            return;
        }
        f.op(LogDescriptor.OP_ZSET_REM).putBytes(k.bytes).putInt(gone.size());
        for (Key m : gone) {
            f.putBytes(m.bytes);
        }
    }

    /** Throws {@link WrongTypeException} unless the key is missing, a sorted set or a set (ZUNION's inputs). */
    public void checkSetLike(byte[] key) {
        store.readKey(key, e -> {
            requireSetLike(e);
            return null;
        });
    }

    /** ZCARD: 0 when missing. */
    public long size(byte[] key) {
        return store.readKey(key, e -> {
            require(e);
            return e == null ? 0L : e.zset.size();
        });
    }

    /** ZSCORE: null when the key or member is missing. */
    public Double score(byte[] key, byte[] member) {
        return store.readKey(key, e -> {
            require(e);
            if (e == null) {
                return null;
            }
            double s = e.zset.score(Key.wrap(member));
            return Double.isNaN(s) ? null : s;
        });
    }

    /** ZMSCORE: one answer per member, null when missing. */
    public Double[] scores(byte[] key, List<byte[]> members) {
        return store.readKey(key, e -> {
            require(e);
            Double[] out = new Double[members.size()];
            for (int i = 0; i < out.length && e != null; i++) {
                double s = e.zset.score(Key.wrap(members.get(i)));
                out[i] = Double.isNaN(s) ? null : s;
            }
            return out;
        });
    }

    /** ZRANK / ZREVRANK: null when the key or member is missing. */
    public Long rank(byte[] key, byte[] member, boolean reverse) {
        return store.readKey(key, e -> {
            require(e);
            if (e == null) {
                return null;
            }
            int r = e.zset.rank(Key.wrap(member));
            if (r < 0) {
                return null;
            }
            return reverse ? (long) e.zset.size() - 1 - r : (long) r;
        });
    }

    /** ZCOUNT / ZLEXCOUNT (the range's reverse, offset and limit are ignored). */
    public long count(byte[] key, Range range) {
        return store.readKey(key, e -> {
            require(e);
            if (e == null) {
                return 0L;
            }
            int[] r = ranks(e.zset, range);
            return (long) Math.max(0, r[1] - r[0] + 1);
        });
    }

    /** ZRANGE and its older forms: the members (and scores) in the range, in the range's order. */
    public List<Scored> range(byte[] key, Range range) {
        return store.readKey(key, e -> {
            require(e);
            List<Scored> out = new ArrayList<>();
            if (e != null) {
                select(e.zset, range, (s, m) -> out.add(scored(s, m)));
            }
            return out;
        });
    }

    /** ZRANGESTORE: replaces {@code dest} with the range of {@code src} (deletes it when empty); returns its size. */
    public long rangeStore(byte[] dest, byte[] src, Range range) {
        return store.withKeys(new byte[][] {dest, src}, true, (ks, live, f, now) -> {
            require(live[1]);
            List<double[]> scores = new ArrayList<>();
            List<Key> members = new ArrayList<>();
            if (live[1] != null) {
                select(live[1].zset, range, (s, m) -> {
                    scores.add(new double[] {s});
                    members.add(m);
                });
            }
            Map<Key, Double> result = new LinkedHashMap<>();
            for (int i = 0; i < members.size(); i++) {
                result.put(members.get(i), scores.get(i)[0]);
            }
            return store(f, ks[0], live[0], result);
        });
    }

    private static long store(FrameBuilder f, Key dest, Keyspace.Entry old, Map<Key, Double> result) {
        if (result.isEmpty()) {
            if (old != null) {
                f.op(LogDescriptor.OP_DELETE).putBytes(dest.bytes);
            }
            return 0L;
        }
        f.op(LogDescriptor.OP_ZSET_REPLACE).putBytes(dest.bytes).putLong(-1).putInt(result.size());
        for (Map.Entry<Key, Double> r : result.entrySet()) {
            f.putDouble(r.getValue()).putBytes(r.getKey().bytes);
        }
        return result.size();
    }

    /** ZREMRANGEBYRANK / BYSCORE / BYLEX: removes the range; returns how many went. */
    public long removeRange(byte[] key, Range range) {
        return store.writeKey(key, (k, e, f, now) -> {
            require(e);
            if (e == null) {
                return 0L;
            }
            List<Key> gone = new ArrayList<>();
            select(e.zset, range, (s, m) -> gone.add(m));
            logRemove(f, k, e, gone);
            return (long) gone.size();
        });
    }

    /** ZPOPMIN / ZPOPMAX: removes and returns up to {@code count} members from the low (or high) end. */
    public List<Scored> pop(byte[] key, long count, boolean max) {
        if (count < 0) {
            throw new BadRequestException("value is out of range, must be positive");
        }
        return store.writeKey(key, (k, e, f, now) -> {
            require(e);
            List<Scored> out = new ArrayList<>();
            if (e == null || count == 0) {
                return out;
            }
            int n = (int) Math.min(count, e.zset.size());
            List<Key> gone = new ArrayList<>(n);
            int size = e.zset.size();
            if (max) {
                e.zset.forRange(size - n, size - 1, true, (s, m) -> {
                    out.add(scored(s, m));
                    gone.add(m);
                });
            } else {
                e.zset.forRange(0, n - 1, false, (s, m) -> {
                    out.add(scored(s, m));
                    gone.add(m);
                });
            }
            logRemove(f, k, e, gone);
            return out;
        });
    }

    /**
     * ZRANDMEMBER: {@code count >= 0} gives up to count distinct members, a negative count gives {@code -count}
     * members that may repeat. Empty when missing.
     */
    public List<Scored> randomMembers(byte[] key, long count) {
        return store.readKey(key, e -> {
            require(e);
            List<Scored> out = new ArrayList<>();
            if (e == null || count == 0) {
                return out;
            }
            ThreadLocalRandom rnd = ThreadLocalRandom.current();
            int size = e.zset.size();
            if (count < 0) {
                for (long i = 0; i < -count; i++) {
                    int r = rnd.nextInt(size);
                    out.add(scored(e.zset.scoreAt(r), e.zset.memberAt(r)));
                }
                return out;
            }
            if (count >= size) {
                e.zset.forEach((s, m) -> out.add(scored(s, m)));
                return out;
            }
            int n = (int) count;
            int[] picked;
            if (n * 2L <= size) {
                Set<Integer> seen = new HashSet<>();
                picked = new int[n];
                int j = 0;
                while (j < n) {
                    int r = rnd.nextInt(size);
                    if (seen.add(r)) {
                        picked[j++] = r;
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
                }
                picked = Arrays.copyOf(order, n);
            }
            for (int r : picked) {
                out.add(scored(e.zset.scoreAt(r), e.zset.memberAt(r)));
            }
            return out;
        });
    }

    /** Combines the inputs (sorted sets, or sets scoring 1) with weights (null: all 1) and an aggregate. */
    private static Map<Key, Double> combine(Op op, Keyspace.Entry[] in, int from, double[] weights, Aggregate agg,
                                            long limit) {
        for (int i = from; i < in.length; i++) {
            requireSetLike(in[i]);
        }
        int n = in.length - from;
        Map<Key, Double> out = new HashMap<>();
        switch (op) {
            case UNION -> {
                for (int i = 0; i < n; i++) {
                    double w = weights == null ? 1 : weights[i];
                    forEachOf(in[from + i], (s, m) -> {
                        double v = weighted(s, w);
                        Double cur = out.get(m);
                        out.put(m, cur == null ? v : aggregate(agg, cur, v));
                    });
                }
            }
            case INTER -> {
                int smallest = -1;
                for (int i = 0; i < n; i++) {
                    Keyspace.Entry e = in[from + i];
                    if (e == null) {
                        return out;
                    }
                    if (smallest < 0 || sizeOf(e) < sizeOf(in[from + smallest])) {
                        smallest = i;
                    }
                }
                int first = smallest;
                double w0 = weights == null ? 1 : weights[first];
                forEachOf(in[from + first], (s, m) -> {
                    if (limit > 0 && out.size() >= limit) {
                        return;
                    }
                    double v = weighted(s, w0);
                    for (int i = 0; i < n; i++) {
                        if (i == first) {
                            continue;
                        }
                        double other = scoreIn(in[from + i], m);
                        if (Double.isNaN(other)) {
                            return;
                        }
                        v = aggregate(agg, v, weighted(other, weights == null ? 1 : weights[i]));
                    }
                    out.put(m, v);
                });
            }
            case DIFF -> {
                forEachOf(in[from], (s, m) -> {
                    for (int i = 1; i < n; i++) {
                        if (!Double.isNaN(scoreIn(in[from + i], m))) {
                            return;
                        }
                    }
                    out.put(m, s);
                });
            }
        }
        return out;
    }

    private static double weighted(double s, double w) {
        double v = s * w;
        return Double.isNaN(v) ? 0 : v;
    }

    private static double aggregate(Aggregate agg, double a, double b) {
        return switch (agg) {
            case SUM -> {
                double v = a + b;
                yield Double.isNaN(v) ? 0 : v;
            }
            case MIN -> Math.min(a, b);
            case MAX -> Math.max(a, b);
        };
    }

    private static int sizeOf(Keyspace.Entry e) {
        return e.type == Keyspace.ZSET ? e.zset.size() : e.set.size();
    }

    private static double scoreIn(Keyspace.Entry e, Key m) {
        if (e == null) {
            return Double.NaN;
        }
        if (e.type == Keyspace.ZSET) {
            return e.zset.score(m);
        }
        return e.set.contains(m) ? 1 : Double.NaN;
    }

    private static void forEachOf(Keyspace.Entry e, ScoreSet.Visitor v) {
        if (e == null) {
            return;
        }
        if (e.type == Keyspace.ZSET) {
            e.zset.forEach(v);
        } else {
            for (Key m : e.set.members()) {
                v.visit(1, m);
            }
        }
    }

    private static List<Scored> sorted(Map<Key, Double> m) {
        List<Map.Entry<Key, Double>> es = new ArrayList<>(m.entrySet());
        es.sort((a, b) -> ScoreSet.compare(a.getValue(), a.getKey(), b.getValue(), b.getKey()));
        List<Scored> out = new ArrayList<>(es.size());
        for (Map.Entry<Key, Double> x : es) {
            out.add(new Scored(x.getKey().bytes.clone(), x.getValue()));
        }
        return out;
    }

    /** ZUNION, ZINTER, ZDIFF: the result in ascending order. {@code weights} null: all 1. */
    public List<Scored> combine(Op op, List<byte[]> keys, double[] weights, Aggregate agg) {
        return store.withKeys(keys.toArray(new byte[0][]), false,
            (ks, live, f, now) -> sorted(combine(op, live, 0, weights, agg, 0)));
    }

    /** ZINTERCARD: the size of the intersection, counting at most {@code limit} (0: no limit). */
    public long intersectionSize(List<byte[]> keys, long limit) {
        return store.withKeys(keys.toArray(new byte[0][]), false,
            (ks, live, f, now) -> (long) combine(Op.INTER, live, 0, null, Aggregate.SUM, limit).size());
    }

    /** ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE: replaces {@code dest} with the result (deletes it when empty). */
    public long combineInto(Op op, byte[] dest, List<byte[]> keys, double[] weights, Aggregate agg) {
        byte[][] all = new byte[keys.size() + 1][];
        all[0] = dest;
        for (int i = 0; i < keys.size(); i++) {
            all[i + 1] = keys.get(i);
        }
        return store.withKeys(all, true, (ks, live, f, now) -> {
            // the destination's old value is an input when it is also named as a source
            Keyspace.Entry[] in = live.clone();
            for (int i = 1; i < ks.length; i++) {
                if (ks[i].equals(ks[0])) {
                    in[i] = live[0];
                }
            }
            return store(f, ks[0], live[0], combine(op, in, 1, weights, agg, 0));
        });
    }

    /**
     * One step of a ZSCAN iteration; {@code keys()} alternates member and score (formatted as {@link #format}).
     * Members in the order of their hash codes, so every member present for the whole iteration is returned.
     */
    public ScanResult scan(byte[] key, long cursor, String globOrNull, int count) {
        if (count < 1) {
            throw new BadRequestException("syntax error: COUNT must be at least 1");
        }
        byte[] pattern = globOrNull == null ? null : globOrNull.getBytes(StandardCharsets.UTF_8);
        return store.readKey(key, e -> {
            require(e);
            List<byte[]> out = new ArrayList<>();
            if (e == null || cursor < 0 || cursor > 0xffffffffL) {
                return new ScanResult(0, out);
            }
            List<Key> members = new ArrayList<>();
            e.zset.forEach((s, m) -> {
                if (Integer.toUnsignedLong(m.hashCode()) >= cursor) {
                    members.add(m);
                }
            });
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
                    out.add(format(e.zset.score(m)).getBytes(StandardCharsets.US_ASCII));
                }
            }
            return new ScanResult(next, out);
        });
    }

    /** Every member and score in ascending order (DUMP, OBJECT ENCODING, MEMORY USAGE); empty when missing. */
    public List<Scored> all(byte[] key) {
        return range(key, Range.ranks(0, -1, false));
    }

    // ---- ranges ----

    /** The inclusive ranks [lo, hi] a range selects before its reverse, offset and limit (hi < lo: none). */
    private static int[] ranks(ScoreSet z, Range r) {
        int size = z.size();
        switch (r.by()) {
            case RANK -> {
                long start = r.start();
                long stop = r.stop();
                if (start < 0) {
                    start += size;
                }
                if (stop < 0) {
                    stop += size;
                }
                if (start < 0) {
                    start = 0;
                }
                if (start > stop || start >= size) {
                    return new int[] {0, -1};
                }
                if (stop >= size) {
                    stop = size - 1;
                }
                if (r.reverse()) {
                    return new int[] {(int) (size - 1 - stop), (int) (size - 1 - start)};
                }
                return new int[] {(int) start, (int) stop};
            }
            case SCORE -> {
                double min = r.min();
                double max = r.max();
                if (min > max || (min == max && (r.minExclusive() || r.maxExclusive()))) {
                    return new int[] {0, -1};
                }
                boolean minEx = r.minExclusive();
                boolean maxEx = r.maxExclusive();
                int lo = z.count((s, m) -> minEx ? s <= min : s < min);
                int hi = z.count((s, m) -> maxEx ? s < max : s <= max) - 1;
                return new int[] {lo, hi};
            }
            default -> {
                LexBound min = r.lexMin();
                LexBound max = r.lexMax();
                if (min.infinity() > 0 || max.infinity() < 0) {
                    return new int[] {0, -1};
                }
                if (min.infinity() == 0 && max.infinity() == 0) {
                    int c = Arrays.compareUnsigned(min.value(), max.value());
                    if (c > 0 || (c == 0 && (min.exclusive() || max.exclusive()))) {
                        return new int[] {0, -1};
                    }
                }
                int lo = min.infinity() < 0 ? 0 : z.count((s, m) -> {
                    int c = Arrays.compareUnsigned(m.bytes, min.value());
                    return min.exclusive() ? c <= 0 : c < 0;
                });
                int hi = max.infinity() > 0 ? size - 1 : z.count((s, m) -> {
                    int c = Arrays.compareUnsigned(m.bytes, max.value());
                    return max.exclusive() ? c < 0 : c <= 0;
                }) - 1;
                return new int[] {lo, hi};
            }
        }
    }

    /** Visits the range's members in its order, after its offset and up to its limit. */
    private static void select(ScoreSet z, Range r, ScoreSet.Visitor v) {
        int[] lh = ranks(z, r);
        long lo = lh[0];
        long hi = lh[1];
        if (hi < lo || r.offset() < 0) {
            return;
        }
        long n = hi - lo + 1;
        long skip = r.by() == By.RANK ? 0 : r.offset();
        if (skip >= n) {
            return;
        }
        n -= skip;
        if (r.by() != By.RANK && r.limit() >= 0) {
            n = Math.min(n, r.limit());
        }
        if (n <= 0) {
            return;
        }
        if (r.reverse()) {
            long top = hi - skip;
            z.forRange((int) (top - n + 1), (int) top, true, v);
        } else {
            long bottom = lo + skip;
            z.forRange((int) bottom, (int) (bottom + n - 1), false, v);
        }
    }
}
