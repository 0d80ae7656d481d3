package io.rdmastore.bench;

import io.rdmastore.client.RdmaStoreClient;
import org.HdrHistogram.Histogram;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import redis.clients.jedis.Jedis;
import site.ycsb.generator.ScrambledZipfianGenerator;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;

/**
 * E3 (paper 001): a YCSB-style workload (scrambled Zipf keys from YCSB's own generator, 95% GET / 5% SET) with values of
 * 32 B to 4 KiB and 1 to 32 client connections, each connection its own client and thread, for rdmastore over ucx,
 * rdmastore over tcp and redis-server, one system at a time on its own fresh server. Reports throughput, p50 and p99
 * latency, one chart per value size (throughput against clients), and the CPU seconds of server and clients.
 *
 * <p>Idle behaviour: on 2 cores, 32 spinning client threads would starve the server, so waiting client threads spin
 * briefly, then yield, then park (the client's own wait policy); the ucx server spins ({@code --ucx-idle spin}, or
 * {@code -Drdmastore.bench.e3.ucxIdle=backoff}), which is the price shown in the CPU table. The driver is
 * single-threaded; worker threads each own one connection and one histogram.
 */
public final class E3Zipf implements Experiment {
    static final int[] SIZES = {32, 128, 512, 1024, 4096};
    static final int[] CLIENTS = {1, 2, 4, 8, 16, 32};
    static final String[] SYSTEMS = {"rdmastore-ucx", "rdmastore-tcp", "redis"};
    static final double READ_FRACTION = 0.95;

    @Override
    public String id() {
        return "E3";
    }

    @Override
    public String title() {
        return "YCSB-style Zipf 95/5 GET/SET, values 32 B..4 KiB, 1..32 clients: rdmastore ucx, tcp, Redis";
    }

    /** One connection as the workload sees it. Called by one worker thread. */
    interface Kv extends AutoCloseable {
        byte[] get(byte[] key);

        void set(byte[] key, byte[] value);

        /** Loads many pairs at once (alternating key, value). */
        void load(List<byte[]> keysAndValues);

        @Override
        void close();
    }

    record Cell(double opsPerS, double p50Us, double p99Us, long ops) {
    }

    @Override
    public void run(boolean quick, Report report) throws Exception {
        int[] sizes = ints("rdmastore.bench.e3.sizes", quick ? new int[] {32, 4096} : SIZES);
        int[] clients = ints("rdmastore.bench.e3.clients", quick ? new int[] {1, 4} : CLIENTS);
        int records = quick ? 500 : 10_000;
        long warmNanos = quick ? 50_000_000L : 300_000_000L;
        long windowNanos = quick ? 150_000_000L : 1_000_000_000L;
        String ucxIdle = System.getProperty("rdmastore.bench.e3.ucxIdle", "spin");
        int maxClients = clients[clients.length - 1];
        Map<String, Cell> cells = new LinkedHashMap<>();
        Map<String, double[]> cpu = new LinkedHashMap<>();
        List<String> failures = new ArrayList<>();
        Progress progress = new Progress("E3", SYSTEMS.length * sizes.length * clients.length);
        for (String system : SYSTEMS) {
            List<Kv> conns = new ArrayList<>();
            AutoCloseable server;
            java.util.function.DoubleSupplier serverCpu;
            if (system.equals("redis")) {
                RedisServer r = RedisServer.start();
                server = r;
                serverCpu = r::cpuSeconds;
            } else {
                ServerProcess p = system.equals("rdmastore-ucx")
                    ? ServerProcess.start("--transport", "auto", "--ucx-idle", ucxIdle, "--fsync", "everysec")
                    : ServerProcess.start("--transport", "tcp", "--fsync", "everysec");
                server = p;
                serverCpu = p::cpuSeconds;
            }
            try (server) {
                for (int i = 0; i < maxClients; i++) {
                    conns.add(open(system, server));
                }
                double server0 = serverCpu.getAsDouble();
                double client0 = Cpu.selfSeconds();
                long ops = 0;
                cells:
                for (int size : sizes) {
                    byte[][] keys = keys(size, records);
                    load(conns.getFirst(), keys, size);
                    for (int n : clients) {
                        try {
                            Cell c = cell(conns.subList(0, n), keys, size, warmNanos, windowNanos);
                            ops += c.ops();
                            cells.put(system + "/" + size + "/" + n, c);
                        } catch (IllegalStateException e) {
                            // keep what was measured; the experiment still fails at the end, naming the cell
                            failures.add(system + " " + Sizes.human(size) + " x" + n + ": " + e.getMessage()
                                + " (its remaining cells skipped)");
                            System.err.println("E3: " + failures.getLast());
                            break cells;
                        }
                        progress.step(system + " " + Sizes.human(size) + " x" + n);
                    }
                }
                cpu.put(system, new double[] {serverCpu.getAsDouble() - server0, Cpu.selfSeconds() - client0, ops});
            } finally {
                for (Kv k : conns) {
                    k.close();
                }
            }
        }
        progress.done();
        report(quick, report, sizes, clients, records, windowNanos, ucxIdle, cells, cpu, failures);
        if (!failures.isEmpty()) {
            throw new IllegalStateException("E3: cells failed: " + String.join("; ", failures));
        }
    }

    /** A comma-separated list of positive numbers from a system property, for looking into a few cells. */
    private static int[] ints(String property, int[] defaults) {
        String v = System.getProperty(property);
        if (v == null || v.isBlank()) {
            return defaults;
        }
        int[] out = java.util.Arrays.stream(v.split(",")).map(String::trim).mapToInt(Integer::parseInt).sorted()
            .toArray();
        if (out.length == 0 || out[0] <= 0) {
            throw new IllegalArgumentException(property + " must list positive numbers, got '" + v + "'");
        }
        return out;
    }

    private static void report(boolean quick, Report report, int[] sizes, int[] clients, int records, long windowNanos,
                               String ucxIdle, Map<String, Cell> cells, Map<String, double[]> cpu, List<String> failures)
        throws Exception {
        List<Row> rows = new ArrayList<>();
        for (String metric : List.of("ops_per_s", "p50_us", "p99_us")) {
            for (int size : sizes) {
                for (int n : clients) {
                    for (String system : SYSTEMS) {
                        Cell c = cells.get(system + "/" + size + "/" + n);
                        if (c != null) {
                            double v = switch (metric) {
                                case "ops_per_s" -> c.opsPerS();
                                case "p50_us" -> c.p50Us();
                                default -> c.p99Us();
                            };
                            rows.add(new Row("E3", system, "zipf-95/5", size, n, metric, v));
                        }
                    }
                }
            }
        }
        for (Map.Entry<String, double[]> e : cpu.entrySet()) {
            double[] c = e.getValue();
            rows.add(new Row("E3", e.getKey(), "all", 0, 0, "server_cpu_s", c[0]));
            rows.add(new Row("E3", e.getKey(), "all", 0, 0, "client_cpu_s", c[1]));
            rows.add(new Row("E3", e.getKey(), "all", 0, 0, "server_cpu_s_per_mop", c[0] / c[2] * 1e6));
            rows.add(new Row("E3", e.getKey(), "all", 0, 0, "client_cpu_s_per_mop", c[1] / c[2] * 1e6));
        }
        List<String> header = List.of("value", "clients", "ucx ops/s", "tcp ops/s", "redis ops/s", "ucx/redis",
            "tcp/redis", "ucx p50/p99 us", "tcp p50/p99 us", "redis p50/p99 us");
        List<List<String>> body = new ArrayList<>();
        for (int size : sizes) {
            for (int n : clients) {
                Cell u = cells.get("rdmastore-ucx/" + size + "/" + n);
                Cell t = cells.get("rdmastore-tcp/" + size + "/" + n);
                Cell r = cells.get("redis/" + size + "/" + n);
                body.add(List.of(Sizes.human(size), Integer.toString(n), ops(u), ops(t), ops(r), ratio(u, r),
                    ratio(t, r), lat(u), lat(t), lat(r)));
            }
        }
        List<String> cpuHeader = List.of("system", "server CPU s", "client CPU s", "operations", "server CPU s / M ops",
            "client CPU s / M ops");
        List<List<String>> cpuBody = new ArrayList<>();
        for (Map.Entry<String, double[]> e : cpu.entrySet()) {
            double[] c = e.getValue();
            cpuBody.add(List.of(e.getKey(), YcsbWorkloads.num(c[0]), YcsbWorkloads.num(c[1]),
                String.format(Locale.ROOT, "%.0f", c[2]), YcsbWorkloads.num(c[0] / c[2] * 1e6),
                YcsbWorkloads.num(c[1] / c[2] * 1e6)));
        }
        StringBuilder charts = new StringBuilder();
        for (int size : sizes) {
            String file = "E3-" + size + "B.png";
            chart(report.directory().resolve(file), size, clients, cells);
            charts.append("![E3 ").append(Sizes.human(size)).append("](").append(file).append(") ");
        }
        String notes = String.format(Locale.ROOT, "%d records per value size, keys drawn by YCSB's"
                + " ScrambledZipfianGenerator, 95%% GET / 5%% SET, %.1f s per cell after warm-up%s. Each client is its own"
                + " connection and thread. Waiting client threads spin, then yield, then park (2 cores: 32 spinning"
                + " threads would starve the server); the ucx server runs --ucx-idle %s, the tcp server --transport tcp,"
                + " Redis without persistence; rdmastore with --fsync everysec. Targets (32 B): ucx >= 10x Redis at 1"
                + " client: %s; >= 3x at 32 clients: %s; tcp >= 1.0x Redis at 32 clients: %s.%n%nCPU cost (client CPU"
                + " is this JVM: the client threads):%n%n%s%nThroughput against clients, one chart per value size:%n%n%s%n",
            records, windowNanos / 1e9, quick ? " (--quick: a subset of sizes and clients)" : "", ucxIdle,
            target(cells, "rdmastore-ucx", 1, 10), target(cells, "rdmastore-ucx", 32, 3),
            target(cells, "rdmastore-tcp", 32, 1), Report.table(cpuHeader, cpuBody), charts)
            + (failures.isEmpty() ? "" : "\nFailed cells: " + String.join("; ", failures) + "\n");
        System.out.println();
        System.out.print(Report.plain(header, body));
        System.out.print(Report.plain(cpuHeader, cpuBody));
        report.add("E3", "YCSB-style Zipf 95/5 throughput and latency", Report.table(header, body), notes, rows);
    }

    private static String target(Map<String, Cell> cells, String system, int clients, double factor) {
        Cell a = cells.get(system + "/32/" + clients);
        Cell r = cells.get("redis/32/" + clients);
        if (a == null || r == null) {
            return "not measured";
        }
        double x = a.opsPerS() / r.opsPerS();
        return String.format(Locale.ROOT, "%.2fx, %s", x, x >= factor ? "met" : "missed");
    }

    private static String ops(Cell c) {
        return c == null ? "-" : E1RoundTrips.fmt(c.opsPerS());
    }

    private static String lat(Cell c) {
        return c == null ? "-" : YcsbWorkloads.num(c.p50Us()) + " / " + YcsbWorkloads.num(c.p99Us());
    }

    private static String ratio(Cell a, Cell b) {
        return a == null || b == null ? "-" : String.format(Locale.ROOT, "%.2fx", a.opsPerS() / b.opsPerS());
    }

    private static void chart(java.nio.file.Path file, int size, int[] clients, Map<String, Cell> cells)
        throws java.io.IOException {
        XYChart chart = new XYChartBuilder().width(800).height(500)
            .title("E3: " + Sizes.human(size) + " values, Zipf 95/5").xAxisTitle("clients").yAxisTitle("ops/s").build();
        chart.getStyler().setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.InsideNW);
        for (String system : SYSTEMS) {
            List<Double> x = new ArrayList<>();
            List<Double> y = new ArrayList<>();
            for (int n : clients) {
                Cell c = cells.get(system + "/" + size + "/" + n);
                if (c != null) {
                    x.add((double) n);
                    y.add(c.opsPerS());
                }
            }
            if (!x.isEmpty()) {
                chart.addSeries(system, x, y);
            }
        }
        BitmapEncoder.saveBitmap(chart, file.toString(), BitmapEncoder.BitmapFormat.PNG);
    }

    static byte[][] keys(int size, int records) {
        byte[][] keys = new byte[records][];
        for (int i = 0; i < records; i++) {
            keys[i] = ("e3:" + size + ":user" + i).getBytes(StandardCharsets.UTF_8);
        }
        return keys;
    }

    private static void load(Kv kv, byte[][] keys, int size) {
        byte[] value = new byte[size];
        Arrays.fill(value, (byte) 'v');
        List<byte[]> batch = new ArrayList<>(200);
        for (byte[] k : keys) {
            batch.add(k);
            batch.add(value);
            if (batch.size() == 200) {
                kv.load(batch);
                batch.clear();
            }
        }
        if (!batch.isEmpty()) {
            kv.load(batch);
        }
    }

    private static Kv open(String system, AutoCloseable server) {
        if (server instanceof RedisServer r) {
            Jedis j = new Jedis("127.0.0.1", r.port(), 30_000);
            return new Kv() {
                @Override
                public byte[] get(byte[] key) {
                    return j.get(key);
                }

                @Override
                public void set(byte[] key, byte[] value) {
                    j.set(key, value);
                }

                @Override
                public void load(List<byte[]> kv) {
                    j.mset(kv.toArray(new byte[0][]));
                }

                @Override
                public void close() {
                    j.close();
                }
            };
        }
        ServerProcess p = (ServerProcess) server;
        String transport = system.equals("rdmastore-ucx") ? "ucx" : "tcp";
        RdmaStoreClient c = RdmaStoreClient.connect(p.uri(transport));
        if (!c.transport().equals(transport)) {
            String why = c.transport() + " (" + c.transportReason() + ")";
            c.close();
            throw new IllegalStateException("E3: asked for " + transport + " but the connection runs on " + why);
        }
        return new Kv() {
            @Override
            public byte[] get(byte[] key) {
                return c.get(key);
            }

            @Override
            public void set(byte[] key, byte[] value) {
                c.set(key, value);
            }

            @Override
            public void load(List<byte[]> kv) {
                c.mset(kv);
            }

            @Override
            public void close() {
                c.close();
            }
        };
    }

    /** Runs one cell: every connection in its own thread, warm-up then a measured window; merged latency. */
    static Cell cell(List<Kv> conns, byte[][] keys, int size, long warmNanos, long windowNanos)
        throws InterruptedException {
        int n = conns.size();
        long start = System.nanoTime() + 20_000_000L;
        long measureFrom = start + warmNanos;
        long end = measureFrom + windowNanos;
        Histogram[] hist = new Histogram[n];
        long[] counts = new long[n];
        AtomicReference<Throwable> error = new AtomicReference<>();
        Thread[] threads = new Thread[n];
        for (int i = 0; i < n; i++) {
            Kv kv = conns.get(i);
            Histogram h = new Histogram(60_000_000_000L, 2);
            hist[i] = h;
            int slot = i;
            threads[i] = new Thread(() -> {
                try {
                    counts[slot] = work(kv, keys, size, h, start, measureFrom, end);
                } catch (Throwable t) {
                    error.compareAndSet(null, t);
                }
            }, "e3-client-" + i);
            threads[i].start();
        }
        long joinDeadline = end + 60_000_000_000L;
        for (Thread t : threads) {
            long left = (joinDeadline - System.nanoTime()) / 1_000_000L;
            t.join(Math.max(1, left));
            if (t.isAlive()) {
                throw new IllegalStateException("E3: client thread " + t.getName() + " still busy 60 s after its window");
            }
        }
        if (error.get() != null) {
            throw new IllegalStateException("E3: a client failed: " + error.get(), error.get());
        }
        Histogram all = new Histogram(60_000_000_000L, 2);
        long total = 0;
        for (int i = 0; i < n; i++) {
            all.add(hist[i]);
            total += counts[i];
        }
        if (total == 0) {
            throw new IllegalStateException("E3: no operation completed in the window");
        }
        return new Cell(total / (windowNanos / 1e9), all.getValueAtPercentile(50) / 1e3,
            all.getValueAtPercentile(99) / 1e3, total);
    }

    /** One client's loop; returns operations completed inside the measured window. */
    private static long work(Kv kv, byte[][] keys, int size, Histogram h, long start, long measureFrom, long end) {
        ScrambledZipfianGenerator zipf = new ScrambledZipfianGenerator(keys.length);
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        byte[] value = new byte[size];
        Arrays.fill(value, (byte) 'u');
        while (System.nanoTime() < start) {
            Thread.onSpinWait();
        }
        long n = 0;
        long now = System.nanoTime();
        while (now < end) {
            byte[] key = keys[(int) (long) zipf.nextValue()];
            long t0 = now;
            if (rnd.nextDouble() < READ_FRACTION) {
                if (kv.get(key) == null) {
                    throw new IllegalStateException("E3: key " + new String(key, StandardCharsets.UTF_8) + " missing");
                }
            } else {
                kv.set(key, value);
            }
            now = System.nanoTime();
            if (t0 >= measureFrom) {
                h.recordValue(Math.min(now - t0, 60_000_000_000L));
                n++;
            }
        }
        return n;
    }
}
