package io.rdmastore.server.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.server.replication.LinearizabilityChecker.KeyResult;
import io.rdmastore.server.replication.LinearizabilityChecker.Result;
import io.rdmastore.server.replication.LinearizabilityChecker.Verdict;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The checker on hand-written histories with known verdicts, and on random histories of a simulated register. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LinearizabilityCheckerTest {
    private static final LinearizabilityChecker CHECKER = LinearizabilityChecker.create();

    // Times in the hand-written histories are in milliseconds.
    private static Op w(int client, String value, long from, long to) {
        return Op.write(client, "k", value, ms(from), ms(to));
    }

    private static Op w(int client, String value, long from, long to, Op.Outcome outcome) {
        return Op.write(client, "k", value, ms(from), ms(to), outcome);
    }

    private static Op r(int client, String value, long from, long to) {
        return Op.read(client, "k", value, ms(from), ms(to));
    }

    private static long ms(long t) {
        return TimeUnit.MILLISECONDS.toNanos(t);
    }

    private static KeyResult check(Op... ops) {
        Result result = CHECKER.check(List.of(ops));
        System.out.print(result.report());
        return result.keys().get("k");
    }

    private static void assertOk(Op... ops) {
        KeyResult k = check(ops);
        assertEquals(Verdict.OK, k.verdict(), k.explanation());
    }

    private static KeyResult assertViolation(Op... ops) {
        KeyResult k = check(ops);
        assertEquals(Verdict.VIOLATION, k.verdict(), "a violation went unnoticed");
        assertTrue(k.explanation().contains(">>"), k.explanation());
        return k;
    }

    @Test
    void sequentialHistoryIsLinearizable() {
        assertOk(r(1, null, 0, 1), w(1, "a", 2, 3), r(2, "a", 4, 5), w(2, "b", 6, 7), r(1, "b", 8, 9),
            w(1, null, 10, 11), r(2, null, 12, 13));
    }

    @Test
    void overlappingWritesMayTakeEffectInEitherOrder() {
        assertOk(w(1, "a", 0, 10), w(2, "b", 5, 15), r(3, "a", 20, 21));
        assertOk(w(1, "a", 0, 10), w(2, "b", 5, 15), r(3, "b", 20, 21));
        // reads overlapping both writes, in either order
        assertOk(w(1, "a", 0, 10), w(2, "b", 0, 10), r(3, "b", 1, 9), r(4, "a", 2, 8));
    }

    @Test
    void readOverlappingAWriteSeesOldOrNew() {
        assertOk(w(1, "a", 0, 1), w(1, "b", 5, 15), r(2, "a", 6, 8));
        assertOk(w(1, "a", 0, 1), w(1, "b", 5, 15), r(2, "b", 6, 8));
        // once a read saw the new value, a later read may not see the old one, even while the write is in flight
        assertViolation(w(1, "a", 0, 1), w(1, "b", 5, 50), r(2, "b", 6, 8), r(3, "a", 10, 12));
    }

    @Test
    void staleReadIsCaught() {
        KeyResult k = assertViolation(w(1, "a", 0, 1), w(2, "b", 2, 3), r(3, "a", 4, 5));
        assertTrue(k.explanation().contains("READ  -> \"a\""), k.explanation());
        assertTrue(k.explanation().contains("+4.000"), "times are relative to the history start: "
            + k.explanation());
    }

    @Test
    void readOfAValueNeverWrittenIsCaught() {
        KeyResult k = assertViolation(w(1, "a", 0, 1), r(2, "zz", 2, 3));
        assertTrue(k.explanation().contains("\"zz\""), k.explanation());
    }

    @Test
    void lostAcknowledgedWriteIsCaught() {
        assertViolation(w(1, "a", 0, 1), w(2, "b", 2, 3), r(1, "a", 10, 11), r(2, "a", 20, 21), r(3, "a", 30, 31));
    }

    @Test
    void readersSeeingConcurrentWritesInOppositeOrdersAreCaught() {
        Op wa = w(1, "a", 0, 100);
        Op wb = w(2, "b", 0, 100);
        // each reader alone is plausible
        assertOk(wa, wb, r(3, "a", 10, 20), r(3, "b", 30, 40));
        assertOk(wa, wb, r(4, "b", 10, 20), r(4, "a", 30, 40));
        assertViolation(wa, wb, r(3, "a", 10, 20), r(3, "b", 30, 40), r(4, "b", 10, 20), r(4, "a", 30, 40));
    }

    @Test
    void readOfAFailedWritesValueIsCaught() {
        KeyResult k = assertViolation(w(1, "a", 0, 1), w(2, "b", 2, 3, Op.Outcome.FAIL), r(3, "b", 4, 5));
        assertTrue(k.explanation().contains("did not take effect"), k.explanation());
        // even when the read overlaps the failed write
        assertViolation(w(1, "a", 0, 1), w(2, "b", 2, 30, Op.Outcome.FAIL), r(3, "b", 4, 5));
    }

    @Test
    void unknownWriteMayBeSeenOrNotButOnceSeenStays() {
        Op wa = w(1, "a", 0, 1);
        Op wb = w(2, "b", 2, 3, Op.Outcome.UNKNOWN);
        assertOk(wa, wb, r(3, "a", 10, 11), r(3, "a", 20, 21));
        assertOk(wa, wb, r(3, "a", 10, 11), r(3, "b", 20, 21));
        assertOk(wa, wb, r(3, "b", 1000, 1001)); // long after its client gave up
        assertViolation(wa, wb, r(3, "a", 10, 11), r(3, "b", 20, 21), r(3, "a", 30, 31));
        // it cannot take effect before it was invoked
        assertViolation(wa, w(2, "b", 50, 51, Op.Outcome.UNKNOWN), r(3, "b", 10, 11));
        // two unknown writes of the same value: no bound from the first read, still no going back
        assertViolation(wa, wb, w(4, "b", 5, 6, Op.Outcome.UNKNOWN), r(3, "b", 20, 21), r(3, "a", 30, 31));
        // an unknown read tells nothing
        assertOk(wa, new Op(3, "k", Op.Kind.READ, "junk", ms(5), ms(6), Op.Outcome.UNKNOWN));
    }

    @Test
    void initialValueIsHonoured() {
        List<Op> h = List.of(r(1, "x", 0, 1));
        assertEquals(Verdict.VIOLATION, CHECKER.check(h).verdict());
        assertEquals(Verdict.OK, LinearizabilityChecker.builder().initialValues(Map.of("k", "x")).build()
            .check(h).verdict());
    }

    @Test
    void keysAreJudgedApart() {
        List<Op> h = List.of(Op.write(1, "x", "a", 0, 10), Op.write(1, "y", "b", 20, 30),
            Op.write(2, "x", "c", 40, 50), Op.read(2, "x", "a", 60, 70), Op.read(3, "y", "b", 80, 90));
        Result result = CHECKER.check(h);
        assertEquals(Verdict.VIOLATION, result.verdict());
        assertEquals(Verdict.VIOLATION, result.keys().get("x").verdict());
        assertEquals(Verdict.OK, result.keys().get("y").verdict());
    }

    @Test
    void exhaustedBudgetIsUndecidedNotAViolation() {
        List<Op> h = simulate(new Random(1), 8, List.of("k"), 200, 0.0, 0.0);
        LinearizabilityChecker tiny = LinearizabilityChecker.builder().maxStepsPerKey(10).build();
        Result result = tiny.check(h);
        assertEquals(Verdict.UNDECIDED, result.verdict(), result.report());
        Result small = LinearizabilityChecker.builder().memoBytesPerKey(1000).build().check(h);
        assertEquals(Verdict.UNDECIDED, small.verdict(), small.report());
        assertTrue(small.report().contains("memoized"), small.report());
        assertEquals(Verdict.OK, CHECKER.check(h).verdict());
    }

    @Test
    void randomHistoriesOfAnAtomicRegisterPassAndOneStaleReadIsCaught() {
        int checked = 0;
        for (int seed = 0; seed < 40; seed++) {
            Random random = new Random(seed);
            List<String> keys = List.of("k0", "k1", "k2");
            List<Op> h = simulate(random, 8, keys, 150, 0.05, 0.05);
            Result result = CHECKER.check(h);
            assertEquals(Verdict.OK, result.verdict(), "seed " + seed + ": " + result.report());
            StaleRead stale = injectStaleRead(random, h);
            if (stale == null) {
                continue;
            }
            checked++;
            Result bad = CHECKER.check(stale.history());
            assertEquals(Verdict.VIOLATION, bad.keys().get(stale.key()).verdict(),
                "seed " + seed + ": stale read #" + stale.index() + " not caught: " + bad.report());
            for (String other : keys) {
                if (!other.equals(stale.key())) {
                    assertEquals(Verdict.OK, bad.keys().get(other).verdict(), "seed " + seed);
                }
            }
        }
        assertTrue(checked >= 30, "too few histories had a read to make stale: " + checked);
    }

    @Test
    void thousandsOfOpsWithEightClientsCheckQuickly() {
        CHECKER.check(simulate(new Random(99), 8, List.of("k"), 100, 0.02, 0.02)); // compiles the search first
        for (int seed = 100; seed < 103; seed++) {
            List<Op> h = simulate(new Random(seed), 8, List.of("k"), 500, 0.02, 0.02);
            long t0 = System.nanoTime();
            Result result = CHECKER.check(h);
            long millis = (System.nanoTime() - t0) / 1_000_000;
            System.out.printf("%d ops of 8 clients on one key: %s in %d ms, %d steps%n", h.size(),
                result.verdict(), millis, result.keys().get("k").steps());
            assertEquals(Verdict.OK, result.verdict(), result.report());
            // The work is bounded exactly by steps (about 100 per op: each scans the ops in flight); the time, well
            // under a second on an idle machine, only loosely, as other builds share the machine.
            assertTrue(result.keys().get("k").steps() < 150L * h.size(), "steps: " + result.report());
            assertTrue(millis < 5000, "checking took " + millis + " ms");

            // a violation needs the whole search space ruled out, which the memoization keeps small
            StaleRead stale = injectStaleRead(new Random(seed), h);
            t0 = System.nanoTime();
            Result bad = CHECKER.check(stale.history());
            millis = (System.nanoTime() - t0) / 1_000_000;
            System.out.printf("  with a stale read (#%d): %s in %d ms, %d steps%n", stale.index(), bad.verdict(),
                millis, bad.keys().get("k").steps());
            assertEquals(Verdict.VIOLATION, bad.verdict(), bad.report());
            assertTrue(bad.keys().get("k").explanation().contains("#" + stale.index() + " "),
                "the explanation does not name the stale read: " + bad.report());
        }
    }

    @Test
    void memoryFollowsTheOpsInFlightNotTheHistoryLength() {
        List<Op> h = simulate(new Random(5), 8, List.of("k"), 2500, 0.0, 0.02);
        LinearizabilityChecker checker = LinearizabilityChecker.builder().memoBytesPerKey(64L << 20).build();
        long t0 = System.nanoTime();
        Result result = checker.check(h);
        System.out.printf("%d ops on one key in 64 MB of memo: %s in %d ms, %d steps%n", h.size(), result.verdict(),
            (System.nanoTime() - t0) / 1_000_000, result.keys().get("k").steps());
        assertEquals(Verdict.OK, result.verdict(), result.report());
    }

    /**
     * Runs {@code clients} sequential clients against a simulated atomic register per key: each operation takes effect
     * at a random instant between its invocation and completion (an UNKNOWN write, if at all, up to three times its
     * duration later), so the history is linearizable by construction. Times are in microseconds.
     */
    static List<Op> simulate(Random random, int clients, List<String> keys, int opsPerClient, double unknownRate,
                             double failRate) {
        record Planned(int client, String key, Op.Kind kind, String value, long invoke, long complete, long effect,
                       Op.Outcome outcome, int seq) {
        }
        List<Planned> plan = new ArrayList<>();
        int seq = 0;
        for (int c = 0; c < clients; c++) {
            long t = random.nextInt(50);
            for (int j = 0; j < opsPerClient; j++) {
                long invoke = t + random.nextInt(20);
                long duration = 1 + random.nextInt(200);
                long complete = invoke + duration;
                double roll = random.nextDouble();
                Op.Outcome outcome = roll < unknownRate ? Op.Outcome.UNKNOWN
                    : roll < unknownRate + failRate ? Op.Outcome.FAIL : Op.Outcome.OK;
                long effect = invoke + (long) (random.nextDouble()
                    * (outcome == Op.Outcome.UNKNOWN ? 3 * duration : duration));
                boolean read = random.nextBoolean();
                String key = keys.get(random.nextInt(keys.size()));
                plan.add(new Planned(c, key, read ? Op.Kind.READ : Op.Kind.WRITE, read ? null : "c" + c + "-" + j,
                    invoke * 1000, complete * 1000, effect * 1000, outcome, seq++));
                t = complete;
            }
        }
        plan.sort(Comparator.comparingLong(Planned::effect).thenComparingInt(Planned::seq));
        Map<String, String> register = new HashMap<>();
        List<Op> out = new ArrayList<>();
        for (Planned p : plan) {
            String value = p.value();
            if (p.kind() == Op.Kind.READ) {
                value = p.outcome() == Op.Outcome.OK ? register.get(p.key()) : "junk";
            } else if (p.outcome() == Op.Outcome.OK
                || p.outcome() == Op.Outcome.UNKNOWN && random.nextBoolean()) {
                register.put(p.key(), value);
            }
            out.add(new Op(p.client(), p.key(), p.kind(), value, p.invoke(), p.complete(), p.outcome()));
        }
        out.sort(Comparator.comparingLong(Op::invokeNanos));
        return out;
    }

    private record StaleRead(List<Op> history, String key, int index) {
    }

    /**
     * Makes one OK read return the value of an OK write that an OK write overwrote entirely before the read began;
     * null if the history has no such read.
     */
    private static StaleRead injectStaleRead(Random random, List<Op> h) {
        List<Integer> reads = new ArrayList<>();
        for (int i = 0; i < h.size(); i++) {
            if (h.get(i).kind() == Op.Kind.READ && h.get(i).outcome() == Op.Outcome.OK) {
                reads.add(i);
            }
        }
        java.util.Collections.shuffle(reads, random);
        for (int ri : reads) {
            Op read = h.get(ri);
            for (Op older : h) {
                if (!isOkWrite(older, read.key()) || older.completeNanos() >= read.invokeNanos()) {
                    continue;
                }
                for (Op newer : h) {
                    if (isOkWrite(newer, read.key()) && newer.invokeNanos() > older.completeNanos()
                        && newer.completeNanos() < read.invokeNanos()) {
                        List<Op> copy = new ArrayList<>(h);
                        copy.set(ri, new Op(read.client(), read.key(), read.kind(), older.value(),
                            read.invokeNanos(), read.completeNanos(), read.outcome()));
                        return new StaleRead(copy, read.key(), ri);
                    }
                }
            }
        }
        return null;
    }

    private static boolean isOkWrite(Op op, String key) {
        return op.kind() == Op.Kind.WRITE && op.outcome() == Op.Outcome.OK && op.key().equals(key);
    }

    @Test
    void historyRecordsConcurrentClientsAndPendingOpsAsUnknown() throws Exception {
        History history = new History();
        Thread[] threads = new Thread[4];
        for (int c = 0; c < threads.length; c++) {
            int client = c;
            threads[c] = new Thread(() -> {
                for (int i = 0; i < 100; i++) {
                    history.invoke(client, "k", Op.Kind.WRITE, "c" + client + "-" + i).ok();
                }
            });
            threads[c].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        History.Handle pending = history.invoke(9, "k", Op.Kind.WRITE, "p");
        List<Op> ops = history.ops();
        assertEquals(401, ops.size());
        assertEquals(400, ops.stream().filter(o -> o.outcome() == Op.Outcome.OK).count());
        assertEquals(Op.Outcome.UNKNOWN, ops.stream().filter(o -> o.client() == 9).findFirst().orElseThrow()
            .outcome());
        pending.fail();
        assertEquals(Op.Outcome.FAIL, history.ops().stream().filter(o -> o.client() == 9).findFirst().orElseThrow()
            .outcome());
        assertEquals(Verdict.OK, CHECKER.check(history.ops()).verdict());
        try {
            pending.ok();
            throw new AssertionError("a handle completed twice");
        } catch (IllegalStateException expected) {
            // completing twice is refused
        }
        assertTrue(Duration.ofNanos(ops.get(0).completeNanos() - ops.get(0).invokeNanos()).toSeconds() < 10);
    }
}
