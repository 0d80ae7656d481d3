package io.rdmastore.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * CI smoke test: {@code bench all --quick} runs every registered experiment and each writes its JSON and Markdown,
 * and report.md carries the summary and every experiment; E6's rows are named as DESIGN.md section 6 says. Asserts no
 * timing.
 */
class BenchQuickSmokeTest {

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void everyExperimentWritesItsFiles(@TempDir Path tmp) throws Exception {
        long start = System.nanoTime();
        int code = BenchMain.run(new String[] {"all", "--quick", "--out", tmp.toString()});
        System.out.printf("bench all --quick took %.1f s%n", (System.nanoTime() - start) / 1e9);
        Path run;
        try (Stream<Path> s = Files.list(tmp)) {
            List<Path> dirs = s.toList();
            assertEquals(1, dirs.size(), "one run directory: " + dirs);
            run = dirs.getFirst();
        }
        Path report = run.resolve("report.md");
        assertTrue(Files.isRegularFile(report), "report.md written");
        String md = Files.readString(report);
        List<String> missing = new ArrayList<>();
        for (String id : BenchMain.EXPERIMENTS.keySet()) {
            for (String f : List.of(id + ".json", id + ".md")) {
                if (!Files.isRegularFile(run.resolve(f)) || Files.size(run.resolve(f)) == 0) {
                    missing.add(f);
                }
            }
            assertTrue(md.contains("## " + id + ":"), "report.md has a section for " + id);
        }
        assertTrue(missing.isEmpty(), "files missing: " + missing + "\n" + md);
        assertE6Rows(Files.readString(run.resolve("E6.json")));
        assertTrue(md.contains("## Summary"), "report.md has the summary table");
        assertTrue(md.contains("- versions: "), "report.md names the versions");
        assertEquals(0, code, "every experiment succeeded:\n" + md);
    }

    /** E6 --quick: latency rows for every system and variant, throughput fractions, and both failover figures. */
    private static void assertE6Rows(String json) {
        List<String> rows = new ArrayList<>();
        for (String system : List.of("rdmastore-ucx", "rdmastore-tcp")) {
            for (String variant : List.of("none", "w1", "wmajority")) {
                for (int clients : E6Replication.QUICK_CLIENTS) {
                    rows.add(row(system, variant, 1024, clients, "p50_us"));
                    rows.add(row(system, variant, 1024, clients, "p999_us"));
                }
                rows.add(row(system, variant, 1024, 4, "ops_per_s"));
            }
            rows.add(row(system, "wmajority", 1024, 4, "fraction_of_none"));
        }
        for (String variant : List.of("w1", "wmajority")) {
            rows.add(row("redis", variant, 1024, 1, "p50_us"));
        }
        rows.add(row("rdmastore-ucx", "failover", 1024, 1, "failover_ms"));
        rows.add(row("rdmastore-ucx", "failover", 1024, 1, "failover_p50_ms"));
        List<String> absent = rows.stream().filter(r -> !json.contains(r)).toList();
        assertTrue(absent.isEmpty(), "E6.json lacks " + absent + ":\n" + json);
    }

    private static String row(String system, String variant, int size, int clients, String metric) {
        return "\"system\":\"" + system + "\", \"variant\":\"" + variant + "\", \"size_bytes\":" + size
            + ", \"clients\":" + clients + ", \"metric\":\"" + metric + "\"";
    }

    @Test
    @Timeout(10)
    void e6TargetsCompareTheRightCells() {
        java.util.Map<String, E6Replication.Cell> by = new java.util.LinkedHashMap<>();
        for (E6Replication.Cell c : List.of(cell("rdmastore-ucx", "none", 10), cell("rdmastore-ucx", "w1", 10.5),
            cell("rdmastore-ucx", "wmajority", 25), cell("rdmastore-tcp", "wmajority", 150),
            cell("redis", "wmajority", 100))) {
            by.put(E6Replication.key(c.system(), c.variant(), c.size(), c.clients()), c);
        }
        java.util.Map<String, E6Replication.Cell> tp = new java.util.LinkedHashMap<>();
        tp.put("rdmastore-ucx/none", cell("rdmastore-ucx", "none", 1000));
        tp.put("rdmastore-ucx/w1", cell("rdmastore-ucx", "w1", 950));
        tp.put("rdmastore-ucx/wmajority", cell("rdmastore-ucx", "wmajority", 600));
        List<List<String>> t = E6Replication.targets(by, tp,
            java.util.Map.of("rdmastore-ucx", List.of(900.0, 2500.0, 800.0)));
        String all = t.toString();
        assertTrue(all.contains("[w:majority p50 redis+WAIT / ucx, 4.00x (100.0 / 25.0 us), >= 5x, missed]"), all);
        assertTrue(all.contains("[w:majority p50 tcp / ucx, 6.00x (150.0 / 25.0 us), >= 5x, met]"), all);
        assertTrue(all.contains("[w:majority p50 ucx / none ucx, 2.50x (25.0 / 10.0 us), <= 3x, met]"), all);
        assertTrue(all.contains("[w:1 p50 overhead over none, ucx, +5.0 %, < 10 %, met]"), all);
        assertTrue(all.contains("[throughput w1 / none, ucx, 95 %, >= 90 %, met]"), all);
        assertTrue(all.contains("[throughput wmajority / none, ucx, 60 %, >= 70 %, missed]"), all);
        assertTrue(all.contains("[failover p50, rdmastore-ucx, 900 ms, < 1000 ms, met]"), all);
        assertTrue(all.contains("[failover max, rdmastore-ucx, 2500 ms, < 2000 ms, missed]"), all);
    }

    private static E6Replication.Cell cell(String system, String variant, double value) {
        return new E6Replication.Cell(system, variant, 1024, 1, value, value, value, value, 1, 0);
    }

    @Test
    @Timeout(10)
    void e6ChecksThatEveryMemberLinkRunsOnTheTransport() {
        String info = "# replication\r\nrole:master\r\nslave0:id=n2,ip=127.0.0.1,port=1,state=online,offset=3,"
            + "lag=0,lag_records=0,transport=ucx\r\nslave1:id=n3,ip=127.0.0.1,port=2,state=online,offset=3,lag=0,"
            + "lag_records=0,transport=tcp\r\n";
        assertEquals("n2 ucx, n3 ucx", E6Replication.memberLinks(info.replace("transport=tcp", "transport=ucx"),
            "ucx"));
        IllegalStateException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
            () -> E6Replication.memberLinks(info, "ucx"));
        assertTrue(e.getMessage().contains("n3 pulls over tcp"), e.getMessage());
    }

    @Test
    @Timeout(10)
    void ycsbSummaryParsesFailuresAndPercentiles() {
        YcsbWorkloads.Phase p = YcsbWorkloads.parse(List.of("[OVERALL], RunTime(ms), 100",
            "[OVERALL], Throughput(ops/sec), 1234.5", "[READ], Operations, 10", "[READ], 50thPercentileLatency(us), 42",
            "[READ], 99thPercentileLatency(us), 99", "[READ], Return=OK, 9", "[READ], Return=ERROR, 1",
            "[UPDATE], Return=OK, 5", "CPU_SECONDS 1.5"), "READ");
        assertEquals(1234.5, p.opsPerS());
        assertEquals(42, p.p50Us());
        assertEquals(99, p.p99Us());
        assertEquals(15, p.operations());
        assertEquals(1, p.failed());
        assertEquals(1.5, p.clientCpuS());
    }

    @Test
    @Timeout(10)
    void ycsbWindowsOfOneChildAreParsedEachOnItsOwn() {
        List<String> out = List.of("WARM_SECONDS 3.10 JIT_MS 900", "[READ], Return=OK, 7", "MEASURE_START",
            "WARM_CPU_SECONDS 4.0", "[OVERALL], Throughput(ops/sec), 100", "[READ], Return=OK, 200",
            "CPU_SECONDS 5.5", "MEASURE_START", "WARM_CPU_SECONDS 5.5", "[OVERALL], Throughput(ops/sec), 300",
            "[READ], Return=OK, 600", "[READ], Return=ERROR, 2", "CPU_SECONDS 6.0");
        List<List<String>> runs = YcsbWorkloads.splitRuns(out, 2);
        assertEquals(2, runs.size());
        YcsbWorkloads.Phase first = YcsbWorkloads.parse(runs.get(0), "READ");
        YcsbWorkloads.Phase second = YcsbWorkloads.parse(runs.get(1), "READ");
        // the warm-up's operations count in neither; each run's CPU is its own
        assertEquals(200, first.operations());
        assertEquals(100, first.opsPerS());
        assertEquals(1.5, first.clientCpuS(), 1e-9);
        assertEquals(602, second.operations());
        assertEquals(2, second.failed());
        assertEquals(0.5, second.clientCpuS(), 1e-9);
        // a child that printed fewer runs than asked for is an error, not a shorter median
        IllegalStateException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
            () -> YcsbWorkloads.splitRuns(out, 3));
        assertTrue(e.getMessage().contains("2 measured runs, not 3"), e.getMessage());
        assertEquals(List.of(out), YcsbWorkloads.splitRuns(out, 0));
    }

    @Test
    @Timeout(10)
    void summaryRatiosFavourTheFasterSystemAndMarkFailures() {
        java.util.Map<String, List<Row>> results = new java.util.LinkedHashMap<>();
        results.put("EX", List.of(new Row("EX", "rdmastore-ucx", "ring", 32, 1, "ops_per_s", 400),
            new Row("EX", "rdmastore-ucx", "am", 32, 1, "ops_per_s", 300),
            new Row("EX", "rdmastore-tcp", "tcp", 32, 1, "ops_per_s", 100),
            new Row("EX", "redis", "resp", 32, 1, "ops_per_s", 200)));
        results.put("EL", List.of(new Row("EL", "rdmastore-ucx", "x", 32, 1, "p50_us", 10),
            new Row("EL", "redis", "x", 32, 1, "p50_us", 50)));
        results.put("EF", null);
        // E6's headline is the replicated variant, not each system's best (which would be the unreplicated server)
        results.put("E6", List.of(new Row("E6", "rdmastore-ucx", "none", 1024, 1, "p50_us", 5),
            new Row("E6", "rdmastore-ucx", "wmajority", 1024, 1, "p50_us", 20),
            new Row("E6", "rdmastore-tcp", "none", 1024, 1, "p50_us", 30),
            new Row("E6", "rdmastore-tcp", "wmajority", 1024, 1, "p50_us", 100),
            new Row("E6", "redis", "wmajority", 1024, 1, "p50_us", 200)));
        String t = Summary.table(results);
        assertTrue(t.contains("| E6 | p50_us (wmajority) | 5.00x (1 cells) | 10.00x (1 cells) | 2.00x (1 cells) |"), t);
        assertTrue(t.contains("| EX | ops_per_s | 4.00x (1 cells) | 2.00x (1 cells) | 0.50x (1 cells) | - |"), t);
        assertTrue(t.contains("| EL | p50_us | - | 5.00x (1 cells) |"), t);
        assertTrue(t.contains("| EF | FAILED"), t);
    }
}
