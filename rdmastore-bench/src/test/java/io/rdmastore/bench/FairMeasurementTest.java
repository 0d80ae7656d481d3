package io.rdmastore.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The pieces of fair measurement that need no timing: median and spread, the options, the rows' new fields, the
 * summary's per-CPU-mode lines, and that spinners and burners stop by themselves.
 */
class FairMeasurementTest {

    @Test
    void e1JudgesTheRingByItsRepeatsPairedWithRawPut() {
        // a median of the ring's repeats over a median of raw put's, taken in other host states, read 250% once
        String slowAndFast = E1RoundTrips.notes(4_900_000.0, Spread.of(0.62, 0.87, 0.88), 50_000.0);
        assertTrue(slowAndFast.contains("87% of raw put") && slowAndFast.contains("62-88%): met"), slowAndFast);
        String fast = E1RoundTrips.notes(7_000_000.0, Spread.of(0.61, 0.63, 0.88), 50_000.0);
        assertTrue(fast.contains("63% of raw put") && fast.contains("61-88%): missed"), fast);
        assertEquals("", E1RoundTrips.notes(7_000_000.0, Spread.of(), 50_000.0));
    }

    @Test
    @Timeout(10)
    void spreadIsTheMedianAndRangeOfTheRepeats() {
        Spread odd = Spread.of(30, 10, 20);
        assertEquals(20, odd.median());
        assertEquals(10, odd.min());
        assertEquals(30, odd.max());
        assertEquals(3, odd.n());
        assertEquals(1.0, odd.relativeRange());
        Spread even = Spread.of(4, 1, 2, 3);
        assertEquals(2.5, even.median());
        Spread withNaN = Spread.of(5, Double.NaN, 7);
        assertEquals(2, withNaN.n(), "a repeat that measured nothing is left out");
        assertEquals(6, withNaN.median());
        Spread none = Spread.of();
        assertEquals(0, none.n());
        assertTrue(Double.isNaN(none.median()));
        assertEquals("-", none.format(v -> "x"));
        assertEquals("20 (10-30)", odd.format(v -> String.format("%.0f", v)));
        assertEquals("5", Spread.of(5).format(v -> String.format("%.0f", v)), "one repeat: no range");
        assertEquals(2.0, Spread.median(List.of(3.0, 1.0, 2.0)));
    }

    @Test
    @Timeout(10)
    void optionsDefaultToThreeRepeatsInBothModesAndQuickToOneIdle() {
        List<String> rest = new ArrayList<>();
        BenchOptions full = BenchOptions.parse(List.of("E3", "--out", "x"), rest);
        assertEquals(List.of("E3", "--out", "x"), rest, "what the options do not know is passed on in order");
        assertFalse(full.quick());
        assertEquals(3, full.repeats());
        assertEquals(List.of(CpuState.Mode.AWAKE, CpuState.Mode.IDLE), full.cpuModes());
        assertEquals(List.of(BenchOptions.Persistence.EVERYSEC), full.persistence());
        assertEquals(1_000, full.measureNanos(1_000, 10));
        assertEquals(7, full.warmNanos(7, 1));

        BenchOptions quick = BenchOptions.parse(List.of("--quick", "E2"), new ArrayList<>());
        assertTrue(quick.quick());
        assertEquals(1, quick.repeats());
        assertEquals(List.of(CpuState.Mode.IDLE), quick.cpuModes());
        assertEquals(10, quick.measureNanos(1_000, 10));

        BenchOptions set = BenchOptions.parse(List.of("--quick", "--repeats", "5", "--cpu-mode", "both",
            "--persistence", "both", "--warmup", "0", "--measure", "0.25"), new ArrayList<>());
        assertEquals(5, set.repeats());
        assertEquals(List.of(CpuState.Mode.AWAKE, CpuState.Mode.IDLE), set.cpuModes());
        assertEquals(List.of(BenchOptions.Persistence.EVERYSEC, BenchOptions.Persistence.NONE), set.persistence());
        assertEquals(0, set.warmNanos(7, 1));
        assertEquals(250_000_000L, set.measureNanos(7, 1));
        assertTrue(set.describe().contains("repeats 5"), set.describe());
        assertEquals(List.of(CpuState.Mode.AWAKE),
            BenchOptions.parse(List.of("--cpu-mode", "awake"), new ArrayList<>()).cpuModes());
        assertEquals(List.of(BenchOptions.Persistence.NONE),
            BenchOptions.parse(List.of("--persistence", "none"), new ArrayList<>()).persistence());
    }

    @Test
    @Timeout(10)
    void malformedOptionsAreRefused() {
        for (List<String> bad : List.of(List.of("--repeats", "0"), List.of("--repeats", "x"), List.of("--repeats"),
            List.of("--cpu-mode", "asleep"), List.of("--persistence", "always"), List.of("--measure", "0"),
            List.of("--warmup", "-1"))) {
            assertThrows(IllegalArgumentException.class, () -> BenchOptions.parse(bad, new ArrayList<>()),
                bad.toString());
        }
    }

    @Test
    @Timeout(120)
    void e3sServersRunRaisedTheOthersOrdinaryAndTheReportSaysWhich() throws Exception {
        List<String> prefix = ServerPriority.RAISED.prefix();
        // CI runs as root, where raising priority is allowed: raised servers must then run at nice -10
        boolean allowed = !prefix.isEmpty();
        int own = niceOf(ProcessHandle.current().pid());
        int raised = allowed ? -10 : own;
        assertEquals(allowed ? List.of("nice", "-n", "-10") : List.of(), prefix);
        assertEquals(allowed ? "nice -10" : "nice 0", ServerPriority.RAISED.describe().split(":")[0]);
        assertEquals(List.of(), ServerPriority.ORDINARY.prefix());
        List<String> wrapped = new ArrayList<>(prefix);
        wrapped.add("java");
        assertEquals(wrapped, ServerPriority.RAISED.wrap(List.of("java")));
        try (ServerProcess s = ServerProcess.startRaised("--transport", "tcp");
             ServerProcess o = ServerProcess.start("--transport", "tcp")) {
            assertEquals(raised, niceOf(s.pid()), "a raised rdmastore server's niceness");
            assertEquals(own, niceOf(o.pid()), "an ordinary rdmastore server's niceness");
        }
        if (RedisServer.ensureInstalled()) {
            try (RedisServer r = RedisServer.start(ServerPriority.RAISED, BenchOptions.Persistence.NONE);
                 RedisServer o = RedisServer.start(BenchOptions.Persistence.NONE)) {
                assertEquals(raised, niceOf(r.pid()), "a raised redis-server's niceness");
                assertEquals(own, niceOf(o.pid()), "an ordinary redis-server's niceness");
            }
        }
    }

    @Test
    @Timeout(30)
    void theHostsCoreToCoreRoundTripIsMeasuredAndReportedPerExperiment(@org.junit.jupiter.api.io.TempDir
                                                                        java.nio.file.Path dir) throws Exception {
        Spread s = CoreProbe.measure();
        if (Runtime.getRuntime().availableProcessors() >= 2) {
            assertTrue(s != null, "two cores: measured");
            assertEquals(CoreProbe.SLICES, s.n());
            // a round trip costs tens of nanoseconds at least and far less than a millisecond
            assertTrue(s.min() > 5 && s.min() <= s.median() && s.median() <= s.max() && s.max() < 1e6, s.toString());
        }
        Report r = new Report(dir, "rdmastore bench E1 E2", null);
        r.hostState("E1", s);
        r.hostState("E2", null);
        String md = java.nio.file.Files.readString(r.finish());
        assertTrue(md.contains("core-to-core round trip in ns"), md);
        assertTrue(md.contains(": E1 " + (s == null ? "not measured" : CoreProbe.format(s)) + ", E2 not measured."),
            md);
    }

    /** Field 19 of /proc/pid/stat: the process's niceness. */
    private static int niceOf(long pid) throws java.io.IOException {
        String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + pid + "/stat"));
        return Integer.parseInt(stat.substring(stat.lastIndexOf(')') + 2).split(" ")[16]);
    }

    @Test
    @Timeout(60)
    void persistencePairingsStartBothServersAlike() {
        assertEquals(List.of("--fsync", "everysec"), BenchOptions.Persistence.EVERYSEC.serverArgs());
        assertEquals(List.of("--appendonly", "yes", "--appendfsync", "everysec"),
            BenchOptions.Persistence.EVERYSEC.redisArgs());
        assertEquals(List.of("--fsync", "no"), BenchOptions.Persistence.NONE.serverArgs());
        assertEquals(List.of("--appendonly", "no"), BenchOptions.Persistence.NONE.redisArgs());
    }

    @Test
    @Timeout(30)
    void burnersStopByThemselvesAtTheirDeadline() throws Exception {
        try (Spinners burn = Spinners.burners(2, 300_000_000L)) {
            assertEquals(2, burn.running());
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (burn.running() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(0, burn.running(), "burners still running 10 s after their 0.3 s bound");
            assertTrue(burn.cpuSeconds() > 0, "burners used no CPU");
        }
    }

    @Test
    @Timeout(30)
    void spinnersStopWhenClosedLongBeforeTheirBound() {
        Spinners keep = Spinners.keepAlive(1, 600_000_000_000L);
        assertEquals(1, keep.running());
        keep.close();
        assertEquals(0, keep.running(), "a keep-alive spinner outlived close()");
        Spinners none = Spinners.burners(0, 1_000_000L);
        assertEquals(0, none.running());
        none.close();
    }

    @Test
    @Timeout(30)
    void awakeModeKeepsOneCoreFreeOfSpinnersAndIdleAddsNothing() {
        assertEquals(1, CpuState.spinnerCount(1));
        assertEquals(1, CpuState.spinnerCount(2));
        assertEquals(7, CpuState.spinnerCount(8));
        try (CpuState.Guard idle = CpuState.enter(CpuState.Mode.IDLE, 1_000_000_000L)) {
            assertEquals("none", idle.mechanism());
            assertEquals(0, idle.spinnersRunning());
        }
        String before = System.getProperty("rdmastore.bench.awake");
        System.setProperty("rdmastore.bench.awake", "spinner");
        try {
            CpuState.Guard awake = CpuState.enter(CpuState.Mode.AWAKE, 600_000_000_000L);
            assertEquals(CpuState.spinnerCount(Runtime.getRuntime().availableProcessors()), awake.spinnersRunning());
            assertTrue(awake.mechanism().contains("keep-alive spinner"), awake.mechanism());
            awake.close();
            assertEquals(0, awake.spinnersRunning(), "spinners outlived the phase");
        } finally {
            if (before == null) {
                System.clearProperty("rdmastore.bench.awake");
            } else {
                System.setProperty("rdmastore.bench.awake", before);
            }
        }
    }

    @Test
    @Timeout(10)
    void rowsCarryModePersistenceContentionAndSpreadWithoutMovingTheOldFields() {
        Row r = Spread.of(1, 3, 2).row("E3", "redis", "zipf-95/5", 32, 4, "ops_per_s",
            Row.Tags.of("awake", "everysec", true));
        String json = r.toJson();
        assertEquals(2.0, r.value(), "the row's value is the median");
        assertTrue(json.contains("\"cpu_mode\":\"awake\", \"persistence\":\"everysec\", \"contention\":true, "
            + "\"repeats\":3, \"value_min\":1.0, \"value_max\":3.0, "), json);
        assertTrue(json.contains("\"system\":\"redis\", \"variant\":\"zipf-95/5\", \"size_bytes\":32, \"clients\":4, "
            + "\"metric\":\"ops_per_s\", \"value\":2.0}"), json);
        assertEquals("{\"experiment\":\"E5\", \"system\":\"limit\", \"variant\":\"memcpy\", \"size_bytes\":1, "
            + "\"clients\":1, \"metric\":\"mb_per_s\", \"value\":5.0}",
            new Row("E5", "limit", "memcpy", 1, 1, "mb_per_s", 5).toJson(), "untagged rows are as before");
    }

    @Test
    @Timeout(10)
    void summaryHasALinePerCpuModeAndLeavesContentionOut() {
        Map<String, List<Row>> results = new LinkedHashMap<>();
        Row.Tags awake = Row.Tags.of("awake", "everysec", false);
        Row.Tags idle = Row.Tags.of("idle", "everysec", false);
        Row.Tags busy = Row.Tags.of("idle", "everysec", true);
        results.put("E3", List.of(new Row("E3", "rdmastore-ucx", "z", 32, 1, "ops_per_s", 400).with(awake),
            new Row("E3", "redis", "z", 32, 1, "ops_per_s", 100).with(awake),
            new Row("E3", "rdmastore-ucx", "z", 32, 1, "ops_per_s", 300).with(idle),
            new Row("E3", "redis", "z", 32, 1, "ops_per_s", 100).with(idle),
            new Row("E3", "rdmastore-ucx", "z", 32, 1, "ops_per_s", 1).with(busy),
            new Row("E3", "redis", "z", 32, 1, "ops_per_s", 1000).with(busy)));
        String t = Summary.table(results);
        assertTrue(t.contains("| E3 (awake) | ops_per_s | - | 4.00x (1 cells) |"), t);
        assertTrue(t.contains("| E3 (idle) | ops_per_s | - | 3.00x (1 cells) |"), t);
    }

    @Test
    @Timeout(30)
    void benchRefusesABadOptionWithUsage() throws Exception {
        assertEquals(2, BenchMain.run(new String[] {"E3", "--cpu-mode", "sleepy"}));
        assertEquals(2, BenchMain.run(new String[] {"E3", "--repeats"}));
    }

    @Test
    void e5WarmsEachSystemUpTwiceAtLeastAndForItsTime() throws Exception {
        // E5's first timed puts were once a client's first puts: cold code on both ends at half the warm rate
        long far = System.nanoTime() + 60_000_000_000L;
        int[] calls = new int[1];
        E5Blobs.warmUp(0, far, () -> calls[0]++);
        assertEquals(2, calls[0], "no time asked: still two calls");
        calls[0] = 0;
        long start = System.nanoTime();
        E5Blobs.warmUp(50_000_000L, far, () -> {
            calls[0]++;
            Thread.sleep(5);
        });
        long took = System.nanoTime() - start;
        assertTrue(took >= 50_000_000L, "warmed up for " + took + " ns, asked 50 ms");
        assertTrue(calls[0] >= 9, calls[0] + " calls of 5 ms in 50 ms");
        assertThrows(IllegalStateException.class, () -> E5Blobs.warmUp(1_000_000_000L, System.nanoTime() - 1,
            () -> { }), "past E5's deadline the warm-up stops");
    }
}
