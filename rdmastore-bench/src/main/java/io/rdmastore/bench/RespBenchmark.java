package io.rdmastore.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * RESP: the Redis-compatible face against redis-server itself, both driven by the same {@code redis-benchmark}
 * ({@code -c 32 -t set,get}, pipeline 1 and 16) in one run, in alternating order, several repetitions, medians.
 * The targets of the RESP issue are checked and printed: rdmastore at least 1.0x redis-server's requests/s at
 * {@code -P 1} and at least 0.8x at {@code -P 16}, for SET and for GET. The rdmastore server runs in its own JVM on the
 * tcp transport (RESP shares its one port) with {@code --fsync everysec}; redis-server runs without persistence, as
 * {@link RedisServer} starts it. Single-threaded: called by {@link BenchMain}.
 */
public final class RespBenchmark implements Experiment {
    static final String BENCHMARK = "/usr/bin/redis-benchmark";
    static final int CLIENTS = 32;
    static final int[] PIPELINES = {1, 16};
    static final String[] TESTS = {"SET", "GET"};
    /** redis-benchmark's default value size (-d). */
    static final int VALUE_BYTES = 3;
    private static final long RUN_DEADLINE_SECONDS = 120;

    @Override
    public String id() {
        return "RESP";
    }

    @Override
    public String title() {
        return "redis-benchmark -c 32 SET/GET, -P 1 and -P 16: rdmastore's RESP face vs redis-server";
    }

    static double target(int pipeline) {
        return pipeline == 1 ? 1.0 : 0.8;
    }

    static int requests(boolean quick, int pipeline) {
        if (quick) {
            return 2_000;
        }
        return pipeline == 1 ? 100_000 : 600_000;
    }

    @Override
    public void run(boolean quick, Report report) throws Exception {
        if (!Files.isExecutable(Path.of(BENCHMARK))) {
            throw new IOException(BENCHMARK + " is missing (apt-get install redis-tools)");
        }
        int repeats = quick ? 1 : 5;
        // results.get("SET|16|rdmastore") = requests/s of each repetition
        Map<String, List<Double>> rps = new LinkedHashMap<>();
        Map<String, List<Double>> p50 = new LinkedHashMap<>();
        Map<String, List<Double>> cpu = new LinkedHashMap<>();
        String[] systems = {"rdmastore", "redis"};
        Progress progress = new Progress("RESP", repeats * PIPELINES.length * systems.length);
        try (ServerProcess rdma = ServerProcess.start("--transport", "tcp", "--fsync", "everysec");
             RedisServer redis = RedisServer.start()) {
            // JIT warm-up of the server (and a first touch of redis-server), not recorded.
            run(rdma.port(), 1, quick ? 1_000 : 50_000);
            run(rdma.port(), 16, quick ? 1_000 : 200_000);
            run(redis.port(), 1, 1_000);
            for (int rep = 0; rep < repeats; rep++) {
                for (int pipeline : PIPELINES) {
                    for (int s = 0; s < systems.length; s++) {
                        // Alternate who goes first, so neither always gets the quieter half of a noisy minute.
                        String system = systems[(s + rep) % systems.length];
                        boolean ours = system.equals("rdmastore");
                        int port = ours ? rdma.port() : redis.port();
                        int n = requests(quick, pipeline);
                        double cpu0 = ours ? rdma.cpuSeconds() : redis.cpuSeconds();
                        Map<String, double[]> r = run(port, pipeline, n);
                        double cpuUsed = (ours ? rdma.cpuSeconds() : redis.cpuSeconds()) - cpu0;
                        for (String t : TESTS) {
                            double[] v = r.get(t);
                            if (v == null) {
                                throw new IOException("redis-benchmark gave no " + t + " line against " + system);
                            }
                            String key = t + "|" + pipeline + "|" + system;
                            rps.computeIfAbsent(key, x -> new ArrayList<>()).add(v[0]);
                            p50.computeIfAbsent(key, x -> new ArrayList<>()).add(v[1]);
                        }
                        // Both tests ran n requests each; CPU is split evenly as the per-op cost of the pair.
                        cpu.computeIfAbsent(pipeline + "|" + system, x -> new ArrayList<>())
                            .add(cpuUsed * 1e6 / (2.0 * n));
                        progress.step(system + " -P" + pipeline);
                    }
                }
            }
        } finally {
            progress.done();
        }

        List<String> header = List.of("test", "pipeline", "redis req/s", "rdmastore req/s", "ratio", "target",
            "met", "redis p50 ms", "rdmastore p50 ms", "redis cpu us/op", "rdmastore cpu us/op");
        List<List<String>> body = new ArrayList<>();
        List<Row> rows = new ArrayList<>();
        List<String> missed = new ArrayList<>();
        for (String t : TESTS) {
            for (int pipeline : PIPELINES) {
                double ours = median(rps.get(t + "|" + pipeline + "|rdmastore"));
                double theirs = median(rps.get(t + "|" + pipeline + "|redis"));
                double ratio = ours / theirs;
                boolean met = ratio >= target(pipeline);
                if (!met) {
                    missed.add(t + " -P" + pipeline);
                }
                body.add(List.of(t, Integer.toString(pipeline), fmt0(theirs), fmt0(ours),
                    String.format(Locale.ROOT, "%.2fx", ratio), String.format(Locale.ROOT, ">= %.1fx", target(pipeline)),
                    quick ? "(quick)" : met ? "yes" : "NO",
                    fmt3(median(p50.get(t + "|" + pipeline + "|redis"))),
                    fmt3(median(p50.get(t + "|" + pipeline + "|rdmastore"))),
                    fmt2(median(cpu.get(pipeline + "|redis"))), fmt2(median(cpu.get(pipeline + "|rdmastore")))));
                String variant = t.toLowerCase(Locale.ROOT) + "-p" + pipeline;
                rows.add(new Row("RESP", "rdmastore-tcp", variant, VALUE_BYTES, CLIENTS, "ops_per_s", ours));
                rows.add(new Row("RESP", "redis", variant, VALUE_BYTES, CLIENTS, "ops_per_s", theirs));
            }
        }
        for (String t : TESTS) {
            for (int pipeline : PIPELINES) {
                String variant = t.toLowerCase(Locale.ROOT) + "-p" + pipeline;
                rows.add(new Row("RESP", "rdmastore-tcp", variant, VALUE_BYTES, CLIENTS, "p50_us",
                    median(p50.get(t + "|" + pipeline + "|rdmastore")) * 1000));
                rows.add(new Row("RESP", "redis", variant, VALUE_BYTES, CLIENTS, "p50_us",
                    median(p50.get(t + "|" + pipeline + "|redis")) * 1000));
            }
        }
        System.out.print(Report.plain(header, body));
        String verdict = quick ? "Quick run: counts too small for the targets to mean anything; none is judged."
            : missed.isEmpty() ? "All targets met." : "Targets missed: " + String.join(", ", missed) + ".";
        System.out.println(verdict);
        String notes = String.format(Locale.ROOT, """
            `redis-benchmark -h 127.0.0.1 -p PORT -c %d -n N -t set,get -P 1|16 --csv -q` against both servers in the \
            same run: %d repetition(s), the two servers alternating which goes first, medians shown; N = %d at -P 1, \
            %d at -P 16 (each test). redis-server %s without persistence; rdmastore in its own JVM, tcp transport \
            (RESP on the same port), `--fsync everysec` (log written to the OS in ~1 ms batches, fsync each second). \
            Values are %d bytes and every request uses the same key (redis-benchmark without -r). CPU us/op is the \
            server process's CPU time over the SET+GET run divided by its 2N requests. %s""", CLIENTS, repeats,
            requests(quick, 1), requests(quick, 16), RedisServer.version(), VALUE_BYTES, verdict);
        report.add("RESP", "redis-benchmark, rdmastore vs redis-server (requests/s)", Report.table(header, body), notes,
            rows);
    }

    /** Runs redis-benchmark once; returns test name to {requests/s, p50 ms}. */
    static Map<String, double[]> run(int port, int pipeline, int requests) throws IOException, InterruptedException {
        List<String> cmd = List.of(BENCHMARK, "-h", "127.0.0.1", "-p", Integer.toString(port), "-c",
            Integer.toString(CLIENTS), "-n", Integer.toString(requests), "-t", "set,get", "-P",
            Integer.toString(pipeline), "--csv", "-q");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[][] out = new byte[1][];
        // Read the output on the side so a chatty failure cannot fill the pipe and stall the process.
        Thread reader = Thread.ofPlatform().daemon().name("redis-benchmark-out").start(() -> {
            try {
                out[0] = p.getInputStream().readAllBytes();
            } catch (IOException e) {
                out[0] = ("reading its output failed: " + e).getBytes(StandardCharsets.UTF_8);
            }
        });
        try {
            if (!p.waitFor(RUN_DEADLINE_SECONDS, TimeUnit.SECONDS)) {
                throw new IOException("redis-benchmark did not finish in " + RUN_DEADLINE_SECONDS + " s: "
                    + String.join(" ", cmd));
            }
            reader.join(TimeUnit.SECONDS.toMillis(10));
        } finally {
            p.destroyForcibly();
        }
        if (out[0] == null) {
            throw new IOException("redis-benchmark's output was not readable: " + String.join(" ", cmd));
        }
        String text = new String(out[0], StandardCharsets.UTF_8);
        if (p.exitValue() != 0) {
            throw new IOException("redis-benchmark failed (exit " + p.exitValue() + "): " + text.strip());
        }
        return parseCsv(text);
    }

    /** Parses redis-benchmark 7's --csv output: a header line, then {@code "SET","12345.67","avg","min","p50",...}. */
    static Map<String, double[]> parseCsv(String text) throws IOException {
        Map<String, double[]> m = new LinkedHashMap<>();
        for (String line : text.split("\r?\n")) {
            String[] f = line.replace("\"", "").split(",");
            if (f.length < 2 || f[0].equals("test")) {
                continue;
            }
            try {
                double r = Double.parseDouble(f[1]);
                double median = f.length >= 5 ? Double.parseDouble(f[4]) : Double.NaN;
                m.put(f[0].toUpperCase(Locale.ROOT), new double[] {r, median});
            } catch (NumberFormatException e) {
                throw new IOException("unexpected redis-benchmark output line: " + line, e);
            }
        }
        return m;
    }

    static double median(List<Double> v) {
        if (v == null || v.isEmpty()) {
            return Double.NaN;
        }
        double[] a = v.stream().mapToDouble(Double::doubleValue).toArray();
        Arrays.sort(a);
        return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    }

    private static String fmt0(double v) {
        return String.format(Locale.ROOT, "%.0f", v);
    }

    private static String fmt2(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }

    private static String fmt3(double v) {
        return String.format(Locale.ROOT, "%.3f", v);
    }
}
