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
 * 32 B and 4 KiB (the ends of the paper's range: {@code -Drdmastore.bench.e3.sizes=32,128,512,1024,4096} for all of it;
 * the default keeps {@code bench all} under 30 minutes) and 1 to 32 client connections, each connection its own
 * client and thread, for rdmastore over ucx, rdmastore over tcp and redis-server, one system at a time on its own
 * fresh server. Reports throughput, p50 and p99 latency, one chart per value size (throughput against clients), and
 * the CPU seconds of server and clients.
 *
 * <p>Idle behaviour: on 2 cores, 32 spinning client threads would starve the server, so waiting client threads spin
 * briefly, then yield, then park (the client's own wait policy); the ucx server spins ({@code --ucx-idle spin}, or
 * {@code -Drdmastore.bench.e3.ucxIdle=backoff}), which is the price shown in the CPU table. The driver is
 * single-threaded; worker threads each own one connection and one histogram.
 */
public final class E3Zipf implements Experiment {
    static final int[] SIZES = {32, 4096};
    static final int[] CLIENTS = {1, 2, 4, 8, 16, 32};
    static final String[] SYSTEMS = {"rdmastore-ucx", "rdmastore-tcp", "redis"};
    static final double READ_FRACTION = 0.95;

    @Override
    public String id() {
        return "E3";
    }

    @Override
    public String title() {
        return "YCSB-style Zipf 95/5 GET/SET, values 32 B and 4 KiB, 1..32 clients: rdmastore ucx, tcp, Redis";
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

    /**
     * One repeat of one cell. CPU seconds are over the measured window only: the server process's, and this JVM's
     * without the keep-alive spinners and burners.
     */
    record Cell(double opsPerS, double p50Us, double p99Us, long ops, double serverCpuS, double clientCpuS) {
        Cell(double opsPerS, double p50Us, double p99Us, long ops) {
            this(opsPerS, p50Us, p99Us, ops, Double.NaN, Double.NaN);
        }
    }

    /** A cell's key: system, persistence pairing, CPU mode, contention, value size, clients. */
    static String key(String system, String persistence, String mode, boolean contention, int size, int clients) {
        return system + "/" + persistence + "/" + mode + "/" + (contention ? "contention" : "quiet") + "/" + size
            + "/" + clients;
    }

    /** Background CPU burners in the contention variant. */
    static final int BURNERS = 2;

    @Override
    public void run(boolean quick, Report report) throws Exception {
        run(BenchOptions.defaults(quick), report);
    }

    @Override
    public void run(BenchOptions options, Report report) throws Exception {
        boolean quick = options.quick();
        int[] sizes = ints("rdmastore.bench.e3.sizes", quick ? new int[] {32, 4096} : SIZES);
        int[] clients = ints("rdmastore.bench.e3.clients", quick ? new int[] {1, 4} : CLIENTS);
        int records = quick ? 500 : 10_000;
        long warmNanos = options.warmNanos(200_000_000L, 50_000_000L);
        long windowNanos = options.measureNanos(500_000_000L, 150_000_000L);
        String ucxIdle = System.getProperty("rdmastore.bench.e3.ucxIdle", "spin");
        // the contention variant: the smallest value size at every client count, with two burners running
        int contentionSize = sizes[0];
        int maxClients = clients[clients.length - 1];
        Map<String, List<Cell>> cells = new LinkedHashMap<>();
        Map<String, String> mechanisms = new LinkedHashMap<>();
        List<String> failures = new ArrayList<>();
        int perRepeat = (sizes.length + 1) * clients.length;
        // -Drdmastore.bench.e3.systems=rdmastore-tcp,redis narrows a run while looking into one system
        List<String> systems = new ArrayList<>(List.of(SYSTEMS));
        systems.retainAll(List.of(System.getProperty("rdmastore.bench.e3.systems", String.join(",", SYSTEMS))
            .split(",")));
        Progress progress = new Progress("E3", options.persistence().size() * systems.size()
            * options.cpuModes().size() * options.repeats() * perRepeat);
        for (BenchOptions.Persistence pairing : options.persistence()) {
            for (String system : systems) {
                List<Kv> conns = new ArrayList<>();
                AutoCloseable server;
                java.util.function.DoubleSupplier serverCpu;
                if (system.equals("redis")) {
                    RedisServer r = RedisServer.start(ServerPriority.RAISED, pairing);
                    server = r;
                    serverCpu = r::cpuSeconds;
                } else {
                    List<String> args = new ArrayList<>(system.equals("rdmastore-ucx")
                        ? List.of("--transport", "auto", "--ucx-idle", ucxIdle) : List.of("--transport", "tcp"));
                    args.addAll(pairing.serverArgs());
                    ServerProcess p = ServerProcess.startRaised(args.toArray(new String[0]));
                    server = p;
                    serverCpu = p::cpuSeconds;
                }
                try (server) {
                    for (int i = 0; i < maxClients; i++) {
                        conns.add(open(system, server));
                    }
                    Map<Integer, byte[][]> keys = new LinkedHashMap<>();
                    for (int size : sizes) {
                        keys.put(size, keys(size, records));
                        load(conns.getFirst(), keys.get(size), size);
                    }
                    // An untimed lap first, one client and all of them on every size: the first cells measured would
                    // otherwise pay for the JIT (of the server and of this client) within their short warm-up.
                    for (int size : sizes) {
                        for (int n : new int[] {1, maxClients}) {
                            cell(conns.subList(0, n), keys.get(size), size, warmNanos, windowNanos);
                        }
                    }
                    cells:
                    for (CpuState.Mode mode : options.cpuModes()) {
                        for (int r = 0; r < options.repeats(); r++) {
                            for (int v = 0; v <= sizes.length; v++) {
                                boolean contention = v == sizes.length;
                                int size = contention ? contentionSize : sizes[v];
                                for (int n : clients) {
                                    String label = system + " " + mode.label() + (contention ? " contention " : " ")
                                        + Sizes.human(size) + " x" + n;
                                    try {
                                        Cell c = cell(conns.subList(0, n), keys.get(size), size, warmNanos,
                                            windowNanos, mode, contention ? BURNERS : 0, serverCpu, mechanisms);
                                        cells.computeIfAbsent(key(system, pairing.label(), mode.label(), contention,
                                            size, n), k -> new ArrayList<>()).add(c);
                                    } catch (IllegalStateException e) {
                                        // keep what was measured; the experiment still fails at the end
                                        failures.add(label + ": " + e.getMessage() + " (its remaining cells skipped)");
                                        System.err.println("E3: " + failures.getLast());
                                        break cells;
                                    }
                                    progress.step(label);
                                }
                            }
                        }
                    }
                } finally {
                    for (Kv k : conns) {
                        k.close();
                    }
                }
            }
        }
        progress.done();
        report(options, report, sizes, clients, contentionSize, records, warmNanos, windowNanos, ucxIdle, cells,
            mechanisms, failures);
        if (!failures.isEmpty()) {
            throw new IllegalStateException("E3: cells failed: " + String.join("; ", failures));
        }
    }

    /** A comma-separated list of positive numbers from a system property, for looking into a few cells. */
    static int[] ints(String property, int[] defaults) {
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

    /** The spread of one figure over a cell's repeats. */
    static Spread spread(Map<String, List<Cell>> cells, String key, java.util.function.ToDoubleFunction<Cell> f) {
        List<Cell> cs = cells.get(key);
        return cs == null ? Spread.of() : Spread.of(cs.stream().mapToDouble(f).toArray());
    }

    private static void report(BenchOptions options, Report report, int[] sizes, int[] clients, int contentionSize,
                               int records, long warmNanos, long windowNanos, String ucxIdle,
                               Map<String, List<Cell>> cells, Map<String, String> mechanisms, List<String> failures)
        throws Exception {
        List<Row> rows = new ArrayList<>();
        List<String> header = List.of("persistence", "cpu", "contention", "value", "clients", "ucx ops/s",
            "tcp ops/s", "redis ops/s", "ucx/redis", "tcp/redis", "ucx/tcp", "ucx p50/p99 us", "tcp p50/p99 us",
            "redis p50/p99 us");
        List<List<String>> body = new ArrayList<>();
        List<String> cpuHeader = List.of("persistence", "cpu", "system", "server CPU s", "client CPU s",
            "operations", "server CPU s / M ops", "client CPU s / M ops");
        List<List<String>> cpuBody = new ArrayList<>();
        StringBuilder targets = new StringBuilder();
        for (String metric : List.of("ops_per_s", "p50_us", "p99_us")) {
            for (Map.Entry<String, List<Cell>> e : cells.entrySet()) {
                String[] k = e.getKey().split("/");
                java.util.function.ToDoubleFunction<Cell> f = switch (metric) {
                    case "ops_per_s" -> Cell::opsPerS;
                    case "p50_us" -> Cell::p50Us;
                    default -> Cell::p99Us;
                };
                rows.add(spread(cells, e.getKey(), f).row("E3", k[0], "zipf-95/5", Integer.parseInt(k[4]),
                    Integer.parseInt(k[5]), metric, Row.Tags.of(k[2], k[1], k[3].equals("contention"))));
            }
        }
        for (BenchOptions.Persistence pairing : options.persistence()) {
            String pl = pairing.label();
            for (CpuState.Mode mode : options.cpuModes()) {
                String ml = mode.label();
                for (int v = 0; v <= sizes.length; v++) {
                    boolean contention = v == sizes.length;
                    int size = contention ? contentionSize : sizes[v];
                    for (int n : clients) {
                        String u = key("rdmastore-ucx", pl, ml, contention, size, n);
                        String t = key("rdmastore-tcp", pl, ml, contention, size, n);
                        String r = key("redis", pl, ml, contention, size, n);
                        body.add(List.of(pl, ml, contention ? "yes" : "no", Sizes.human(size), Integer.toString(n),
                            ops(cells, u), ops(cells, t), ops(cells, r), ratio(cells, u, r), ratio(cells, t, r),
                            ratio(cells, u, t), lat(cells, u), lat(cells, t), lat(cells, r)));
                    }
                }
                for (String system : SYSTEMS) {
                    double server = 0;
                    double client = 0;
                    long ops = 0;
                    String prefix = system + "/" + pl + "/" + ml + "/quiet/";
                    for (Map.Entry<String, List<Cell>> e : cells.entrySet()) {
                        if (e.getKey().startsWith(prefix)) {
                            for (Cell c : e.getValue()) {
                                server += c.serverCpuS();
                                client += c.clientCpuS();
                                ops += c.ops();
                            }
                        }
                    }
                    if (ops == 0) {
                        continue;
                    }
                    Row.Tags tags = Row.Tags.of(ml, pl, false);
                    rows.add(new Row("E3", system, "all", 0, 0, "server_cpu_s", server).with(tags));
                    rows.add(new Row("E3", system, "all", 0, 0, "client_cpu_s", client).with(tags));
                    rows.add(new Row("E3", system, "all", 0, 0, "server_cpu_s_per_mop", server / ops * 1e6)
                        .with(tags));
                    rows.add(new Row("E3", system, "all", 0, 0, "client_cpu_s_per_mop", client / ops * 1e6)
                        .with(tags));
                    cpuBody.add(List.of(pl, ml, system, YcsbWorkloads.num(server), YcsbWorkloads.num(client),
                        Long.toString(ops), YcsbWorkloads.num(server / ops * 1e6),
                        YcsbWorkloads.num(client / ops * 1e6)));
                }
                targets.append(String.format(Locale.ROOT, "%n- %s, %s: ucx >= 10x Redis at 1 client (32 B): %s; "
                        + ">= 3x at 32 clients: %s; tcp >= 1.0x Redis at 32 clients: %s; ucx p99 <= Redis p99 at 32 "
                        + "clients: %s; under contention ucx >= tcp (32 B, every client count): %s.", ml, pl,
                    target(cells, "rdmastore-ucx", pl, ml, 1, 10), target(cells, "rdmastore-ucx", pl, ml, 32, 3),
                    target(cells, "rdmastore-tcp", pl, ml, 32, 1), p99Target(cells, pl, ml),
                    contentionTarget(cells, pl, ml, clients)));
            }
        }
        // the chart: throughput against clients per value size, first persistence pairing, no contention
        String pl = options.persistence().getFirst().label();
        StringBuilder charts = new StringBuilder();
        for (int size : sizes) {
            String file = "E3-" + size + "B.png";
            chart(report.directory().resolve(file), size, clients, cells, pl, options.cpuModes());
            charts.append("![E3 ").append(Sizes.human(size)).append("](").append(file).append(") ");
        }
        String notes = String.format(Locale.ROOT, "%d records per value size, keys drawn by YCSB's"
                + " ScrambledZipfianGenerator, 95%% GET / 5%% SET. Each system first runs an untimed lap (one client"
                + " and all of them on every size: the JIT's warm-up); then each cell: %.2f s warm-up, then %.2f s"
                + " measured, "
                + "on the same connections to the same server process, repeated %d time(s); figures are medians with "
                + "the range (min-max) of the repeats in brackets, ratios are of medians%s. CPU modes: %s. "
                + "Persistence pairings: %s. Contention rows: the %s cells again with %d burner threads in this JVM "
                + "spinning at ordinary priority for the phase (warm-up and window), stopped with it. Each client is "
                + "its own connection and thread. Waiting client threads spin, then yield, then park (2 cores: 32 "
                + "spinning threads would starve the server); the ucx server runs --ucx-idle %s, the tcp server "
                + "--transport tcp; every server (Redis too) runs at " + ServerPriority.RAISED.describe()
                + ": up to " + clients[clients.length - 1] + " client threads on "
                + Runtime.getRuntime().availableProcessors() + " cores would otherwise take the server's core in "
                + "scheduler slices (docs/bench/README.md, \"Servers at one priority\"). Both clients (rdmastore's "
                + "and Jedis) return each value in a new array.%n%n"
                + "Targets (issue 13):%s%n%nCPU cost over the measured windows only (client CPU is this JVM without "
                + "the keep-alive spinners and burners; contention cells left out):%n%n%s%nThroughput against "
                + "clients, one chart per value size (%s persistence, no contention):%n%n%s%n",
            records, warmNanos / 1e9, windowNanos / 1e9, options.repeats(),
            options.quick() ? " (--quick: a subset of sizes and clients)" : "",
            E2Latency.describe(options.cpuModes(), mechanisms),
            String.join("; ", options.persistence().stream().map(p -> p.label() + " = " + p.describe()).toList()),
            Sizes.human(contentionSize), BURNERS, ucxIdle, targets, Report.table(cpuHeader, cpuBody), pl, charts)
            + (empty(cells).isEmpty() ? "" : "\nRepeats in which no operation completed inside the window (counted as "
            + "0 ops/s, latency unknown; a loaded host): " + String.join(", ", empty(cells)) + "\n")
            + (failures.isEmpty() ? "" : "\nFailed cells: " + String.join("; ", failures) + "\n");
        System.out.println();
        System.out.print(Report.plain(header, body));
        System.out.print(Report.plain(cpuHeader, cpuBody));
        report.add("E3", "YCSB-style Zipf 95/5 throughput and latency", Report.table(header, body), notes, rows);
    }

    /** The cells with a repeat that completed no operation. */
    private static List<String> empty(Map<String, List<Cell>> cells) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, List<Cell>> e : cells.entrySet()) {
            if (e.getValue().stream().anyMatch(c -> c.ops() == 0)) {
                out.add(e.getKey());
            }
        }
        return out;
    }

    private static String target(Map<String, List<Cell>> cells, String system, String pl, String ml, int clients,
                                 double factor) {
        Spread a = spread(cells, key(system, pl, ml, false, 32, clients), Cell::opsPerS);
        Spread r = spread(cells, key("redis", pl, ml, false, 32, clients), Cell::opsPerS);
        if (a.n() == 0 || r.n() == 0 || !(r.median() > 0)) {
            return "not measured";
        }
        double x = a.median() / r.median();
        return String.format(Locale.ROOT, "%.2fx, %s", x, x >= factor ? "met" : "missed");
    }

    private static String p99Target(Map<String, List<Cell>> cells, String pl, String ml) {
        Spread u = spread(cells, key("rdmastore-ucx", pl, ml, false, 32, 32), Cell::p99Us);
        Spread r = spread(cells, key("redis", pl, ml, false, 32, 32), Cell::p99Us);
        if (u.n() == 0 || r.n() == 0) {
            return "not measured";
        }
        return String.format(Locale.ROOT, "%s vs %s us, %s", YcsbWorkloads.num(u.median()),
            YcsbWorkloads.num(r.median()), u.median() <= r.median() ? "met" : "missed");
    }

    private static String contentionTarget(Map<String, List<Cell>> cells, String pl, String ml, int[] clients) {
        List<String> parts = new ArrayList<>();
        boolean all = true;
        for (int n : clients) {
            Spread u = spread(cells, key("rdmastore-ucx", pl, ml, true, 32, n), Cell::opsPerS);
            Spread t = spread(cells, key("rdmastore-tcp", pl, ml, true, 32, n), Cell::opsPerS);
            if (u.n() > 0 && t.n() > 0 && t.median() > 0) {
                parts.add(String.format(Locale.ROOT, "x%d %.2fx", n, u.median() / t.median()));
                all &= u.median() >= t.median();
            }
        }
        return parts.isEmpty() ? "not measured" : String.join(", ", parts) + ", " + (all ? "met" : "missed");
    }

    private static String ops(Map<String, List<Cell>> cells, String key) {
        return spread(cells, key, Cell::opsPerS).format(E1RoundTrips::fmt);
    }

    private static String lat(Map<String, List<Cell>> cells, String key) {
        Spread p50 = spread(cells, key, Cell::p50Us);
        return p50.n() == 0 ? "-" : YcsbWorkloads.num(p50.median()) + " / "
            + YcsbWorkloads.num(spread(cells, key, Cell::p99Us).median());
    }

    private static String ratio(Map<String, List<Cell>> cells, String a, String b) {
        Spread x = spread(cells, a, Cell::opsPerS);
        Spread y = spread(cells, b, Cell::opsPerS);
        // a repeat set whose median is 0 ops/s (nothing completed in the windows) has no ratio
        return x.n() == 0 || y.n() == 0 || !(y.median() > 0) ? "-"
            : String.format(Locale.ROOT, "%.2fx", x.median() / y.median());
    }

    private static void chart(java.nio.file.Path file, int size, int[] clients, Map<String, List<Cell>> cells,
                              String pl, List<CpuState.Mode> modes) throws java.io.IOException {
        XYChart chart = new XYChartBuilder().width(800).height(500)
            .title("E3: " + Sizes.human(size) + " values, Zipf 95/5").xAxisTitle("clients").yAxisTitle("ops/s").build();
        chart.getStyler().setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.InsideNW);
        for (CpuState.Mode mode : modes) {
            for (String system : SYSTEMS) {
                List<Double> x = new ArrayList<>();
                List<Double> y = new ArrayList<>();
                for (int n : clients) {
                    Spread c = spread(cells, key(system, pl, mode.label(), false, size, n), Cell::opsPerS);
                    if (c.n() > 0) {
                        x.add((double) n);
                        y.add(c.median());
                    }
                }
                if (!x.isEmpty()) {
                    chart.addSeries(modes.size() > 1 ? system + " " + mode.label() : system, x, y);
                }
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

    /**
     * Runs one cell in the idle CPU mode without burners; the CPU figures are NaN.
     *
     * @throws IllegalStateException also when no operation completed in the window
     */
    static Cell cell(List<Kv> conns, byte[][] keys, int size, long warmNanos, long windowNanos)
        throws InterruptedException {
        Cell c = cell(conns, keys, size, warmNanos, windowNanos, CpuState.Mode.IDLE, 0, () -> Double.NaN,
            new LinkedHashMap<>());
        if (c.ops() == 0) {
            throw new IllegalStateException("E3: no operation completed in the window");
        }
        return c;
    }

    /**
     * Runs one cell: every connection in its own thread, warm-up then a measured window; merged latency. The CPU
     * state is held and the burners run from before the warm-up to the end of the window; this (driver) thread reads
     * the server's and this JVM's CPU at the window's start and end.
     */
    static Cell cell(List<Kv> conns, byte[][] keys, int size, long warmNanos, long windowNanos, CpuState.Mode mode,
                     int burners, java.util.function.DoubleSupplier serverCpu, Map<String, String> mechanisms)
        throws InterruptedException {
        long bound = warmNanos + windowNanos + 120_000_000_000L;
        try (CpuState.Guard guard = CpuState.enter(mode, bound);
             Spinners burn = Spinners.burners(burners, bound)) {
            mechanisms.put(mode.label(), guard.mechanism());
            return measureCell(conns, keys, size, warmNanos, windowNanos, serverCpu, guard, burn);
        }
    }

    private static Cell measureCell(List<Kv> conns, byte[][] keys, int size, long warmNanos, long windowNanos,
                                    java.util.function.DoubleSupplier serverCpu, CpuState.Guard guard,
                                    Spinners burn) throws InterruptedException {
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
        sleepUntil(measureFrom);
        double server0 = serverCpu.getAsDouble();
        double self0 = Cpu.selfSeconds() - guard.cpuSeconds() - burn.cpuSeconds();
        sleepUntil(end);
        double serverS = serverCpu.getAsDouble() - server0;
        double selfS = Cpu.selfSeconds() - guard.cpuSeconds() - burn.cpuSeconds() - self0;
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
            // a measurement, not a failure: on a loaded host every operation can straddle a short window (a hung
            // client is caught by the join above); throughput 0, latency unknown
            return new Cell(0, Double.NaN, Double.NaN, 0, serverS, selfS);
        }
        return new Cell(total / (windowNanos / 1e9), all.getValueAtPercentile(50) / 1e3,
            all.getValueAtPercentile(99) / 1e3, total, serverS, selfS);
    }

    private static void sleepUntil(long nanoTime) throws InterruptedException {
        long left;
        while ((left = nanoTime - System.nanoTime()) > 0) {
            Thread.sleep(left / 1_000_000, (int) (left % 1_000_000));
        }
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
