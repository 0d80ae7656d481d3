package io.rdmastore.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * {@code rdmastore bench <id...|all> [--quick] [--repeats N] [--cpu-mode awake|idle|both] [--persistence
 * everysec|none|both] [--warmup S] [--measure S] [--out dir]}: runs experiments side by side and writes
 * {@code bench-results/<date-time>/} with report.md, one JSON, Markdown and PNG per experiment. The measurement options
 * are parsed by {@link BenchOptions}.
 */
public final class BenchMain {
    /** Every experiment, in report order. Add one line per new experiment. */
    static final Map<String, Supplier<Experiment>> EXPERIMENTS = new LinkedHashMap<>();

    static {
        EXPERIMENTS.put("E1", E1RoundTrips::new);
        EXPERIMENTS.put("E2", E2Latency::new);
        EXPERIMENTS.put("E4", E4Crud::new);
        EXPERIMENTS.put("E5", E5Blobs::new);
        EXPERIMENTS.put("E3", E3Zipf::new);
        EXPERIMENTS.put("YCSB", YcsbWorkloads::new);
        EXPERIMENTS.put("RESP", RespBenchmark::new);
        EXPERIMENTS.put("E6", E6Replication::new);
        EXPERIMENTS.put("E7", E7Distribution::new);
        EXPERIMENTS.put("E8", E8Cluster::new);
    }

    private BenchMain() {
    }

    public static void main(String[] args) throws Exception {
        System.exit(run(args));
    }

    /** Runs and returns an exit code (0 ok, 1 an experiment failed, 2 usage). */
    public static int run(String[] args) throws Exception {
        List<String> which = new ArrayList<>();
        Path out = Path.of("bench-results");
        List<String> rest = new ArrayList<>();
        BenchOptions options;
        try {
            options = BenchOptions.parse(List.of(args), rest);
        } catch (IllegalArgumentException e) {
            return usage(e.getMessage());
        }
        for (int i = 0; i < rest.size(); i++) {
            String a = rest.get(i);
            switch (a) {
                case "--out" -> {
                    if (i + 1 >= rest.size()) {
                        return usage("--out needs a directory");
                    }
                    out = Path.of(rest.get(++i));
                }
                case "-h", "--help" -> {
                    usage(null);
                    return 0;
                }
                default -> {
                    String id = a.toUpperCase(Locale.ROOT);
                    if (id.equals("ALL")) {
                        which.addAll(EXPERIMENTS.keySet());
                    } else if (EXPERIMENTS.containsKey(id)) {
                        which.add(id);
                    } else {
                        return usage("unknown experiment '" + a + "'");
                    }
                }
            }
        }
        if (which.isEmpty()) {
            return usage("name an experiment");
        }
        Report report = new Report(out, "rdmastore bench " + String.join(" ", args), options);
        List<String> failed = new ArrayList<>();
        for (String id : which) {
            Experiment e = EXPERIMENTS.get(id).get();
            System.out.println("== " + id + ": " + e.title());
            try {
                report.hostState(id, CoreProbe.measure());
            } catch (InterruptedException x) {
                Thread.currentThread().interrupt();
                return 1;
            }
            long started = System.nanoTime();
            try {
                e.run(options, report);
            } catch (Exception | Error x) {
                failed.add(id);
                System.err.println(id + " failed: " + x);
                x.printStackTrace();
                report.failed(id, x);
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            report.duration(id, seconds);
            System.out.printf(Locale.ROOT, "== %s took %.1f min%n", id, seconds / 60);
        }
        System.out.println("report: " + report.finish());
        if (!failed.isEmpty()) {
            System.err.println("failed experiments: " + failed);
            return 1;
        }
        return 0;
    }

    private static int usage(String error) {
        if (error != null) {
            System.err.println("rdmastore bench: " + error);
        }
        System.err.println("usage: rdmastore bench <" + String.join("|", EXPERIMENTS.keySet())
            + "|all>... [--quick] [--repeats N] [--cpu-mode awake|idle|both] [--persistence everysec|none|both]"
            + " [--warmup S] [--measure S] [--out DIR]");
        for (Map.Entry<String, Supplier<Experiment>> e : EXPERIMENTS.entrySet()) {
            System.err.println("  " + e.getKey() + "  " + e.getValue().get().title());
        }
        System.err.println("  --quick        a short smoke run (asserts nothing about timings): short phases, 1 repeat,"
            + " idle CPU mode");
        System.err.println("  --repeats N    measure each cell N times and report the median and min-max (default 3;"
            + " --quick 1); E1, E2, E3, E4, YCSB");
        System.err.println("  --cpu-mode M   awake: cores kept out of deep idle during each phase (cpu_dma_latency=0,"
            + " else low-priority spinners); idle: nothing extra; both (default; --quick: idle)");
        System.err.println("  --persistence P  everysec: rdmastore --fsync everysec vs Redis AOF everysec (default);"
            + " none: --fsync no vs Redis without persistence; both (E2, E3, YCSB)");
        System.err.println("  --warmup S, --measure S  seconds of warm-up and of measurement per phase (default: each"
            + " experiment's own; see docs/bench/README.md)");
        System.err.println("  --out DIR      results directory (default bench-results); each run writes <date-time>/");
        return error == null ? 0 : 2;
    }
}
