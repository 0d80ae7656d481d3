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
 * and report.md carries the summary and every experiment. Asserts no timing.
 */
class BenchQuickSmokeTest {

    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
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
        assertTrue(md.contains("## Summary"), "report.md has the summary table");
        assertTrue(md.contains("- versions: "), "report.md names the versions");
        assertEquals(0, code, "every experiment succeeded:\n" + md);
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
    void summaryRatiosFavourTheFasterSystemAndMarkFailures() {
        java.util.Map<String, List<Row>> results = new java.util.LinkedHashMap<>();
        results.put("EX", List.of(new Row("EX", "rdmastore-ucx", "ring", 32, 1, "ops_per_s", 400),
            new Row("EX", "rdmastore-ucx", "am", 32, 1, "ops_per_s", 300),
            new Row("EX", "rdmastore-tcp", "tcp", 32, 1, "ops_per_s", 100),
            new Row("EX", "redis", "resp", 32, 1, "ops_per_s", 200)));
        results.put("EL", List.of(new Row("EL", "rdmastore-ucx", "x", 32, 1, "p50_us", 10),
            new Row("EL", "redis", "x", 32, 1, "p50_us", 50)));
        results.put("EF", null);
        String t = Summary.table(results);
        assertTrue(t.contains("| EX | ops_per_s | 4.00x (1 cells) | 2.00x (1 cells) | 0.50x (1 cells) | - |"), t);
        assertTrue(t.contains("| EL | p50_us | - | 5.00x (1 cells) |"), t);
        assertTrue(t.contains("| EF | FAILED"), t);
    }
}
