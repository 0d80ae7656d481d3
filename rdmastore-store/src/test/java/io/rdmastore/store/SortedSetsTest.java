package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static io.rdmastore.store.TestSupport.s;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.store.SortedSets.Aggregate;
import io.rdmastore.store.SortedSets.LexBound;
import io.rdmastore.store.SortedSets.Op;
import io.rdmastore.store.SortedSets.Range;
import io.rdmastore.store.SortedSets.Scored;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sorted set values: each command, the layout against a reference model (ranks through block splits and merges),
 * the same sets after log replay, after a snapshot and on a secondary applying the primary's frames.
 */
@Timeout(60)
class SortedSetsTest {
    @TempDir
    Path dir;

    private static List<byte[]> bs(String... xs) {
        List<byte[]> out = new ArrayList<>();
        for (String x : xs) {
            out.add(b(x));
        }
        return out;
    }

    private static String flat(List<Scored> l) {
        StringBuilder sb = new StringBuilder();
        for (Scored x : l) {
            sb.append(s(x.member())).append('=').append(SortedSets.format(x.score())).append(' ');
        }
        return sb.toString().trim();
    }

    @Test
    void formatAndParseAsRedis70() {
        assertEquals("17", SortedSets.format(17.0));
        assertEquals("1.5", SortedSets.format(1.5));
        assertEquals("0.10000000000000001", SortedSets.format(0.1));
        assertEquals("inf", SortedSets.format(Double.POSITIVE_INFINITY));
        assertEquals("-inf", SortedSets.format(Double.NEGATIVE_INFINITY));
        assertEquals("1e+20", SortedSets.format(1e20));
        assertEquals("1.0000000000000001e-05", SortedSets.format(1e-5));
        assertEquals("-2", SortedSets.format(-2.0));
        assertEquals(Double.POSITIVE_INFINITY, SortedSets.parse(b("+inf")));
        assertEquals(Double.NEGATIVE_INFINITY, SortedSets.parse(b("-inf")));
        assertEquals(10.5, SortedSets.parse(b("10.5")));
        assertEquals(16.0, SortedSets.parse(b("0x10")));
        for (String bad : new String[] {"nan", "", " 1", "1 ", "abc", "1e400", "1.5f", "1d"}) {
            assertTrue(Double.isNaN(SortedSets.parse(b(bad))), bad);
        }
    }

    @Test
    void commands() {
        try (Store store = TestSupport.open(dir)) {
            SortedSets z = store.sortedSets();
            assertEquals(3, z.add(b("z"), new double[] {1, 2, 3}, bs("a", "b", "c"), 0));
            assertEquals(ValueType.ZSET, store.type(b("z")));
            assertEquals("zset", store.type(b("z")).redisName());
            assertEquals(0, z.add(b("z"), new double[] {5}, bs("a"), SortedSets.GT | SortedSets.XX));
            assertEquals(1, z.add(b("z"), new double[] {6}, bs("a"), SortedSets.GT | SortedSets.CH));
            assertEquals(0, z.add(b("z"), new double[] {0}, bs("a"), SortedSets.GT | SortedSets.CH));
            assertEquals(0, z.add(b("z"), new double[] {9}, bs("zz"), SortedSets.XX));
            assertEquals(1, z.add(b("z"), new double[] {1, 2}, bs("d", "d"), 0), "a member twice counts once");
            assertEquals(2.0, z.score(b("z"), b("d")));
            assertEquals("b=2 d=2 c=3 a=6", flat(z.range(b("z"), Range.ranks(0, -1, false))));
            assertEquals("a=6 c=3", flat(z.range(b("z"), Range.ranks(0, 1, true))));
            assertEquals(0L, z.rank(b("z"), b("b"), false));
            assertEquals(0L, z.rank(b("z"), b("a"), true));
            assertNull(z.rank(b("z"), b("nope"), false));
            assertEquals(3, z.count(b("z"), Range.scores(2, false, 3, false, false, 0, -1)));
            assertEquals(1, z.count(b("z"), Range.scores(2, true, 3, false, false, 0, -1)));
            assertEquals("c=3 d=2", flat(z.range(b("z"), Range.scores(2, false, 3, false, true, 0, 2))));
            assertEquals(8.5, z.increment(b("z"), 2.5, b("a"), 0));
            assertNull(z.increment(b("z"), 1, b("a"), SortedSets.NX));
            assertThrows(BadRequestException.class, () -> {
                z.add(b("inf"), new double[] {Double.POSITIVE_INFINITY}, bs("x"), 0);
                z.increment(b("inf"), Double.NEGATIVE_INFINITY, b("x"), 0);
            });
            assertArrayEquals(new Double[] {8.5, null}, z.scores(b("z"), bs("a", "x")));
            assertEquals(2, z.remove(b("z"), bs("b", "d", "nope")));
            assertEquals("a=8.5", flat(z.pop(b("z"), 1, true)));
            assertEquals("c=3", flat(z.pop(b("z"), 5, false)));
            assertEquals(0, store.exists(b("z")), "popping the last member deletes the key");

            z.add(b("lex"), new double[] {0, 0, 0, 0, 0}, bs("a", "b", "c", "d", "e"), 0);
            Range bc = Range.lex(LexBound.parse(b("[b")), LexBound.parse(b("(d")), false, 0, -1);
            assertEquals("b=0 c=0", flat(z.range(b("lex"), bc)));
            assertEquals(5, z.count(b("lex"), Range.lex(LexBound.MIN, LexBound.MAX, false, 0, -1)));
            assertEquals("e=0 d=0", flat(z.range(b("lex"), Range.lex(LexBound.MIN, LexBound.MAX, true, 0, 2))));
            assertEquals(2, z.removeRange(b("lex"), bc));
            assertEquals(1, z.removeRange(b("lex"), Range.ranks(-1, -1, false)));
            assertEquals("a=0 d=0", flat(z.all(b("lex"))));

            z.add(b("x"), new double[] {1, 2}, bs("a", "b"), 0);
            z.add(b("y"), new double[] {10, 20}, bs("b", "c"), 0);
            store.sets().add(b("s"), bs("c", "q"));
            assertEquals("a=1 q=1 b=12 c=21", flat(z.combine(Op.UNION, bs("x", "y", "s"), null, Aggregate.SUM)));
            assertEquals("b=10", flat(z.combine(Op.INTER, bs("x", "y"), new double[] {0, 1}, Aggregate.MAX)));
            assertEquals("a=1", flat(z.combine(Op.DIFF, bs("x", "y"), null, Aggregate.SUM)));
            assertEquals(1, z.intersectionSize(bs("x", "y"), 0));
            assertEquals(4, z.combineInto(Op.UNION, b("x"), bs("x", "y", "s"), null, Aggregate.MIN));
            assertEquals("a=1 c=1 q=1 b=2", flat(z.all(b("x"))));
            assertEquals(0, z.combineInto(Op.INTER, b("x"), bs("x", "none"), null, Aggregate.SUM));
            assertEquals(0, store.exists(b("x")));
            assertEquals(1, z.rangeStore(b("dst"), b("y"), Range.scores(15, false, 30, false, false, 0, -1)));
            assertEquals("c=20", flat(z.all(b("dst"))));
            assertEquals(3, z.randomMembers(b("y"), -3).size());
            assertEquals(2, z.randomMembers(b("y"), 9).size());

            store.set(b("str"), b("v"));
            assertThrows(WrongTypeException.class, () -> z.add(b("str"), new double[] {1}, bs("a"), 0));
            assertThrows(WrongTypeException.class, () -> z.combine(Op.UNION, bs("y", "str"), null, Aggregate.SUM));
            assertThrows(WrongTypeException.class, () -> store.sets().size(b("y")));
            assertTrue(store.copy(b("y"), b("y2"), false));
            store.rename(b("y2"), b("y3"), false);
            assertEquals("b=10 c=20", flat(z.all(b("y3"))));
        }
        try (Store store = TestSupport.open(dir)) {
            assertEquals("b=10 c=20", flat(store.sortedSets().all(b("y3"))));
            assertEquals("c=20", flat(store.sortedSets().all(b("dst"))));
        }
    }

    /** A score update moves the member object the set already holds, so no second copy of the member stays. */
    @Test
    void aScoreUpdateKeepsOneMemberObject() {
        ScoreSet z = new ScoreSet();
        Key first = Key.wrap(b("m"));
        assertTrue(z.put(first, 1));
        assertEquals(false, z.put(Key.wrap(b("m")), 2));
        assertTrue(first == z.memberAt(0), "the blocks hold the map's member object");
        assertEquals(2.0, z.score(Key.wrap(b("m"))));
    }

    /** The block layout against a TreeMap: ranks, members at ranks and ranges through many splits and merges. */
    @Test
    void scoreSetAgreesWithASortedModel() {
        Random rnd = new Random(11);
        ScoreSet z = new ScoreSet();
        Map<String, Double> scores = new HashMap<>();
        Comparator<String> order = (x, y) -> ScoreSet.compare(scores.get(x), Key.wrap(b(x)), scores.get(y),
            Key.wrap(b(y)));
        for (int round = 0; round < 40_000; round++) {
            String m = "m" + rnd.nextInt(3000);
            if (rnd.nextInt(3) == 0) {
                assertEquals(scores.remove(m) != null, z.remove(Key.wrap(b(m))));
            } else {
                double sc = rnd.nextInt(50);
                boolean fresh = !scores.containsKey(m);
                scores.put(m, sc);
                assertEquals(fresh, z.put(Key.wrap(b(m)), sc));
            }
            if (round % 4000 == 0 || round == 39_999) {
                List<String> sorted = new ArrayList<>(scores.keySet());
                sorted.sort(order);
                assertEquals(sorted.size(), z.size());
                List<String> seen = new ArrayList<>();
                z.forEach((sc, k) -> seen.add(s(k.bytes)));
                assertEquals(sorted, seen);
                for (int i = 0; i < sorted.size(); i += 37) {
                    assertEquals(i, z.rank(Key.wrap(b(sorted.get(i)))));
                    assertEquals(sorted.get(i), s(z.memberAt(i).bytes));
                    assertEquals(scores.get(sorted.get(i)), z.scoreAt(i));
                }
                List<String> back = new ArrayList<>();
                int from = sorted.size() / 3;
                int to = Math.max(from, sorted.size() - 5);
                z.forRange(from, to, true, (sc, k) -> back.add(s(k.bytes)));
                List<String> want = new ArrayList<>(sorted.subList(from, to + 1));
                java.util.Collections.reverse(want);
                assertEquals(want, back);
                int below = z.count((sc, k) -> sc < 25);
                assertEquals(scores.values().stream().filter(v -> v < 25).count(), below);
            }
        }
    }

    /** Readers share the shard's read lock and fill the lazy rank prefix at once: each must see correct ranks. */
    @Test
    void concurrentReadersAfterWritesAgreeOnRanks() throws Exception {
        try (Store store = TestSupport.open(dir)) {
            SortedSets z = store.sortedSets();
            int n = 20_000;
            double[] sc = new double[n];
            List<byte[]> ms = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                sc[i] = i;
                ms.add(b("m" + i));
            }
            z.add(b("z"), sc, ms, 0);
            java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(4);
            try {
                for (int round = 0; round < 20; round++) {
                    // a write near the front invalidates almost the whole prefix
                    z.remove(b("z"), bs("m" + round));
                    int removed = round + 1;
                    List<java.util.concurrent.Future<Integer>> fs = new ArrayList<>();
                    for (int t = 0; t < 4; t++) {
                        int seed = t;
                        fs.add(pool.submit(() -> {
                            Random r = new Random(seed);
                            int bad = 0;
                            for (int i = 0; i < 2000; i++) {
                                int m = removed + r.nextInt(n - removed);
                                Long rank = z.rank(b("z"), b("m" + m), false);
                                if (rank == null || rank != m - removed) {
                                    bad++;
                                }
                            }
                            return bad;
                        }));
                    }
                    for (java.util.concurrent.Future<Integer> f : fs) {
                        assertEquals(0, f.get(), "round " + round);
                    }
                }
            } finally {
                pool.shutdownNow();
            }
        }
    }

    /** Random commands against a model; the store must agree after each run, after recovery and a snapshot. */
    @Test
    void modelBasedWithRecoveryAndSnapshot() {
        Random rnd = new Random(7);
        Map<String, Map<String, Double>> model = new HashMap<>();
        try (Store store = TestSupport.open(dir)) {
            SortedSets z = store.sortedSets();
            for (int i = 0; i < 6000; i++) {
                String k = "k" + rnd.nextInt(6);
                String m = "m" + rnd.nextInt(40);
                double sc = rnd.nextInt(20) - 5;
                switch (rnd.nextInt(6)) {
                    case 0, 1 -> {
                        boolean fresh = model.computeIfAbsent(k, x -> new HashMap<>()).put(m, sc) == null;
                        assertEquals(fresh ? 1 : 0, z.add(b(k), new double[] {sc}, bs(m), 0));
                    }
                    case 2 -> {
                        Map<String, Double> cur = model.get(k);
                        boolean had = cur != null && cur.remove(m) != null;
                        if (cur != null && cur.isEmpty()) {
                            model.remove(k);
                        }
                        assertEquals(had ? 1 : 0, z.remove(b(k), bs(m)));
                    }
                    case 3 -> {
                        Map<String, Double> cur = model.computeIfAbsent(k, x -> new HashMap<>());
                        double now = cur.getOrDefault(m, 0.0) + sc;
                        cur.put(m, now);
                        assertEquals(now, z.increment(b(k), sc, b(m), 0));
                    }
                    case 4 -> {
                        List<Scored> p = z.pop(b(k), 2, rnd.nextBoolean());
                        Map<String, Double> cur = model.get(k);
                        for (Scored x : p) {
                            assertEquals(cur.remove(s(x.member())), x.score());
                        }
                        if (cur != null && cur.isEmpty()) {
                            model.remove(k);
                        }
                    }
                    default -> {
                        String dest = "k" + rnd.nextInt(6);
                        Map<String, Double> r = new HashMap<>(model.getOrDefault(k, Map.of()));
                        model.getOrDefault("k0", Map.of()).forEach((mm, v) -> r.merge(mm, v, Double::sum));
                        if (r.isEmpty()) {
                            model.remove(dest);
                        } else {
                            model.put(dest, r);
                        }
                        assertEquals(r.size(), z.combineInto(Op.UNION, b(dest), bs(k, "k0"), null, Aggregate.SUM));
                    }
                }
                if (i == 3000) {
                    store.snapshot();
                }
            }
            assertAgrees(store, model);
        }
        try (Store store = TestSupport.open(dir)) {
            assertAgrees(store, model);
            store.snapshot();
        }
        try (Store store = TestSupport.open(dir)) {
            assertAgrees(store, model);
        }
    }

    private static void assertAgrees(Store store, Map<String, Map<String, Double>> model) {
        for (int i = 0; i < 6; i++) {
            String k = "k" + i;
            TreeMap<String, Double> want = new TreeMap<>(model.getOrDefault(k, Map.of()));
            TreeMap<String, Double> got = new TreeMap<>();
            for (Scored x : store.sortedSets().all(b(k))) {
                got.put(s(x.member()), x.score());
            }
            assertEquals(want, got, k);
        }
    }

    /** A large sorted set goes into a snapshot in several frames and comes back whole, with its TTL. */
    @Test
    void aLargeSortedSetSurvivesASnapshotInChunks() {
        int n = 50_000;
        try (Store store = Store.open(TestSupport.config(dir))) {
            double[] sc = new double[n];
            List<byte[]> ms = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                sc[i] = i % 1000;
                ms.add(b("member-" + i));
            }
            store.sortedSets().add(b("big"), sc, ms, 0);
            store.expireAt(b("big"), System.currentTimeMillis() + 3_600_000);
            store.snapshot();
        }
        try (Store store = TestSupport.open(dir)) {
            assertEquals(n, store.sortedSets().size(b("big")));
            assertTrue(store.pttl(b("big")) > 0);
            assertEquals(0L, store.sortedSets().rank(b("big"), b("member-0"), false));
            assertEquals((long) n - 1, store.sortedSets().rank(b("big"), b("member-9999"), false));
        }
    }

    /** FrameKeys names the shard of every sorted-set op, so a secondary locks only that key's shard. */
    @Test
    void frameKeysNameTheShardOfEachSortedSetOp() {
        Key k = Key.wrap(b("zkey"));
        for (byte op : new byte[] {LogDescriptor.OP_ZSET_ADD, LogDescriptor.OP_ZSET_REM,
            LogDescriptor.OP_ZSET_REPLACE}) {
            FrameBuilder f = new FrameBuilder();
            f.op(op).putBytes(k.bytes);
            if (op == LogDescriptor.OP_ZSET_REPLACE) {
                f.putLong(-1);
            }
            f.putInt(2);
            for (String m : new String[] {"a", "bb"}) {
                if (op != LogDescriptor.OP_ZSET_REM) {
                    f.putDouble(1.5);
                }
                f.putBytes(b(m));
            }
            f.op(LogDescriptor.OP_DELETE).putBytes(b("other"));
            ByteBuffer p = f.payload();
            FrameKeys.Touched t = FrameKeys.touched(p);
            int[] want = new int[] {Keyspace.shardIndex(k), Keyspace.shardIndex(Key.wrap(b("other")))};
            Arrays.sort(want);
            assertArrayEquals(want, t.shards(), "op " + op);
        }
    }

    /** A secondary applying the primary's frames (FrameKeys, applyReplicated) holds the same sorted sets. */
    @Test
    void aSecondaryApplyingThePrimarysFramesHoldsTheSameSortedSets() {
        Path p = dir.resolve("p");
        Path q = dir.resolve("q");
        Random rnd = new Random(3);
        try (Store primary = Store.open(TestSupport.config(p).oplogWindowBytes(64L * 1024 * 1024));
             Store secondary = Store.open(TestSupport.config(q).replicaSetMember(true))) {
            primary.term(1);
            long applied = 0;
            for (int round = 0; round < 10; round++) {
                SortedSets z = primary.sortedSets();
                for (int i = 0; i < 100; i++) {
                    String k = "z" + rnd.nextInt(5);
                    switch (rnd.nextInt(5)) {
                        case 0, 1 -> z.add(b(k), new double[] {rnd.nextInt(9)}, bs("m" + rnd.nextInt(20)), 0);
                        case 2 -> z.remove(b(k), bs("m" + rnd.nextInt(20)));
                        case 3 -> z.pop(b(k), 1, rnd.nextBoolean());
                        default -> z.combineInto(Op.UNION, b("z" + rnd.nextInt(5)), bs(k, "z0"), null,
                            Aggregate.MAX);
                    }
                }
                List<Oplog.Entry> batch = new ArrayList<>();
                long from = applied + 1;
                while (true) {
                    List<Oplog.Entry> part = new ArrayList<>();
                    int n = primary.oplog().read(from, 64 * 1024, part);
                    assertTrue(n >= 0);
                    if (n == 0) {
                        break;
                    }
                    batch.addAll(part);
                    from = part.getLast().index() + 1;
                }
                applied = secondary.applyReplicated(batch);
                assertEquals(primary.lastPosition()[1], applied);
                for (int i = 0; i < 5; i++) {
                    byte[] k = b("z" + i);
                    assertEquals(flat(primary.sortedSets().all(k)), flat(secondary.sortedSets().all(k)), "z" + i);
                }
            }
        }
    }
}
