package io.rdmastore.bench;

import io.rdmastore.client.RdmaStoreClient;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.HdrHistogram.Histogram;

/**
 * E2 (paper 000): Put and Get latency, one client thread, unpipelined, for 1 KiB to 1 MiB values, p50 / p99 / p99.9 from
 * HdrHistogram, and paper 000's breakdown: Source / Process / Sink measured in the server (its {@code --timing} flag,
 * read from INFO before and after each measurement) and Other = the client's mean latency minus those three (wire,
 * client, waiting). Systems, one at a time so a spinning server never steals the other's core: rdmastore over ucx
 * (server worker spinning), rdmastore over tcp (a tcp-only server), and redis-server over TCP (SET/GET on one
 * connection).
 *
 * <p>Threads: the experiment runs on the calling thread; each client is used by that thread only.
 */
public final class E2Latency implements Experiment {
    static final int[] SIZES = {1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20};
    static final int[] QUICK_SIZES = {1 << 10, 64 << 10};
    static final String[] OPS = {"get", "put"};
    static final String[] METRICS = {"p50_us", "p99_us", "p999_us", "mean_us", "source_us", "process_us", "sink_us",
        "other_us", "server_copies"};

    @Override
    public String id() {
        return "E2";
    }

    @Override
    public String title() {
        return "Put/Get latency 1 KiB..1 MiB, p50/p99/p99.9 and Source/Process/Sink/Other: ucx vs tcp, redis over tcp";
    }

    /** One measurement's figures. */
    record Result(String system, String op, int size, long count, double p50, double p99, double p999, double mean,
                  double source, double process, double sink, double serverCopies) {
        double other() {
            return Double.isNaN(source) ? Double.NaN : mean - source - process - sink;
        }

        double metric(String m) {
            return switch (m) {
                case "p50_us" -> p50;
                case "p99_us" -> p99;
                case "p999_us" -> p999;
                case "mean_us" -> mean;
                case "source_us" -> source;
                case "process_us" -> process;
                case "sink_us" -> sink;
                case "other_us" -> other();
                case "server_copies" -> serverCopies;
                default -> throw new IllegalArgumentException(m);
            };
        }
    }

    /** One timed call; throws on a wrong answer. */
    @FunctionalInterface
    interface Call {
        void run() throws Exception;
    }

    @Override
    public void run(boolean quick, Report report) throws Exception {
        int[] sizes = quick ? QUICK_SIZES : SIZES;
        int count = quick ? 300 : 50_000;
        long budgetNanos = quick ? 200_000_000L : 2_000_000_000L;
        boolean redis = RedisServer.ensureInstalled();
        // -Drdmastore.bench.e2.systems=rdmastore-ucx,... narrows a run while looking into one system
        List<String> wanted = List.of(System.getProperty("rdmastore.bench.e2.systems",
            "rdmastore-ucx,rdmastore-tcp,redis").split(","));
        List<String> systems = new ArrayList<>();
        for (String s : List.of("rdmastore-ucx", "rdmastore-tcp", "redis")) {
            if (wanted.contains(s) && (redis || !s.equals("redis"))) {
                systems.add(s);
            }
        }
        List<Result> results = new ArrayList<>();
        Progress progress = new Progress("E2", systems.size() * sizes.length * OPS.length);
        for (String system : systems) {
            switch (system) {
                case "rdmastore-ucx" -> {
                    try (ServerProcess server = ServerProcess.start("--transport", "auto", "--ucx-idle", "spin",
                        "--fsync", "everysec", "--timing")) {
                        rdmastore(server, "ucx", sizes, count, budgetNanos, results, progress);
                    }
                }
                case "rdmastore-tcp" -> {
                    try (ServerProcess server = ServerProcess.start("--transport", "tcp", "--fsync", "everysec",
                        "--timing")) {
                        rdmastore(server, "tcp", sizes, count, budgetNanos, results, progress);
                    }
                }
                default -> {
                    try (RedisServer server = RedisServer.start("--proto-max-bulk-len", "64mb")) {
                        redis(server, sizes, count, budgetNanos, results, progress);
                    }
                }
            }
        }
        progress.done();
        report(results, sizes, redis, report);
    }

    private static void rdmastore(ServerProcess server, String transport, int[] sizes, int count, long budgetNanos,
                                  List<Result> out, Progress progress) throws Exception {
        try (RdmaStoreClient client = RdmaStoreClient.connect(server.uri(transport))) {
            if (!client.transport().equals(transport)) {
                throw new IllegalStateException("E2: asked for " + transport + " but the client runs on "
                    + client.transport() + " (" + client.transportReason() + ")");
            }
            String system = "rdmastore-" + transport;
            for (int size : sizes) {
                byte[] key = ("e2:" + size).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
                byte[] value = value(size);
                if (!client.set(key, value) || !Arrays.equals(client.get(key), value)) {
                    throw new IllegalStateException("E2: " + system + " did not return the " + size
                        + "-byte value it stored");
                }
                for (String op : OPS) {
                    Call call = op.equals("get") ? () -> {
                        byte[] v = client.get(key);
                        if (v == null || v.length != size) {
                            throw new IllegalStateException("E2: " + system + " GET returned "
                                + (v == null ? "null" : v.length + " bytes") + " for a " + size + "-byte value");
                        }
                    } : () -> {
                        if (!client.set(key, value)) {
                            throw new IllegalStateException("E2: " + system + " SET was not written");
                        }
                    };
                    warm(call, count, budgetNanos);
                    String infoBefore = client.info();
                    Histogram h = measure(call, count, budgetNanos);
                    String infoAfter = client.info();
                    Map<String, Long> before = timingSums(infoBefore);
                    Map<String, Long> after = timingSums(infoAfter);
                    String opcode = op.equals("get") ? "get" : "set";
                    long n = after.getOrDefault(opcode + "_count", 0L) - before.getOrDefault(opcode + "_count", 0L);
                    if (n != h.getTotalCount()) {
                        throw new IllegalStateException("E2: the server timed " + n + " " + opcode
                            + " requests but the client made " + h.getTotalCount() + " (is --timing on?)");
                    }
                    out.add(new Result(system, op, size, h.getTotalCount(), us(h.getValueAtPercentile(50)),
                        us(h.getValueAtPercentile(99)), us(h.getValueAtPercentile(99.9)), h.getMean() / 1000.0,
                        phase(before, after, opcode, "source", n), phase(before, after, opcode, "process", n),
                        phase(before, after, opcode, "sink", n), serverCopies(infoBefore, infoAfter, n, size)));
                    progress.step(system + " " + op + " " + Sizes.human(size));
                }
            }
        }
    }

    private static void redis(RedisServer server, int[] sizes, int count, long budgetNanos, List<Result> out,
                              Progress progress) throws Exception {
        try (E2Resp client = new E2Resp(server.port())) {
            for (int size : sizes) {
                byte[] key = ("e2:" + size).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
                byte[] value = value(size);
                client.set(key, value);
                if (client.get(key) != size
                    || !Arrays.equals(Arrays.copyOf(client.value(), size), value)) {
                    throw new IllegalStateException("E2: redis did not return the " + size + "-byte value it stored");
                }
                for (String op : OPS) {
                    Call call = op.equals("get") ? () -> {
                        if (client.get(key) != size) {
                            throw new IllegalStateException("E2: redis GET returned " + client.valueLength()
                                + " bytes for a " + size + "-byte value");
                        }
                    } : () -> client.set(key, value);
                    warm(call, count, budgetNanos);
                    Histogram h = measure(call, count, budgetNanos);
                    out.add(new Result("redis", op, size, h.getTotalCount(), us(h.getValueAtPercentile(50)),
                        us(h.getValueAtPercentile(99)), us(h.getValueAtPercentile(99.9)), h.getMean() / 1000.0,
                        Double.NaN, Double.NaN, Double.NaN, Double.NaN));
                    progress.step("redis " + op + " " + Sizes.human(size));
                }
            }
        }
    }

    static byte[] value(int size) {
        byte[] v = new byte[size];
        for (int i = 0; i < size; i++) {
            v[i] = (byte) ('a' + i % 26);
        }
        return v;
    }

    /** Runs a quarter of the count or budget untimed, so the JIT and the caches are warm. */
    private static void warm(Call call, int count, long budgetNanos) throws Exception {
        long end = System.nanoTime() + budgetNanos / 4;
        for (int i = 0; i < count / 4 && System.nanoTime() - end < 0; i++) {
            call.run();
        }
    }

    /** Times up to {@code count} calls, stopping early when the budget is spent (at least 10 calls). */
    static Histogram measure(Call call, int count, long budgetNanos) throws Exception {
        Histogram h = new Histogram(60_000_000_000L, 3);
        long start = System.nanoTime();
        long end = start + budgetNanos;
        long last = start;
        for (int i = 0; i < count; i++) {
            call.run();
            long now = System.nanoTime();
            h.recordValue(now - last);
            last = now;
            if (i >= 10 && now - end > 0) {
                break;
            }
        }
        return h;
    }

    private static double us(long nanos) {
        return nanos / 1000.0;
    }

    private static double phase(Map<String, Long> before, Map<String, Long> after, String opcode, String phase,
                                long n) {
        String k = opcode + "_" + phase + "_ns";
        return n == 0 ? Double.NaN : (after.getOrDefault(k, 0L) - before.getOrDefault(k, 0L)) / 1000.0 / n;
    }

    /**
     * Copies of the value the server made per operation beyond the one into its ring (INFO's
     * {@code ucx_copied_sent_bytes} and {@code ucx_copied_received_bytes}, docs/transport-ucx.md): the bytes copied
     * over the measurement, divided by the operations and the value size; NaN without ucx counters (a tcp server).
     */
    static double serverCopies(String before, String after, long n, int size) {
        long b = ucxCopied(before);
        long a = ucxCopied(after);
        return b < 0 || a < 0 || n == 0 ? Double.NaN : (double) (a - b) / n / size;
    }

    /** The sum of INFO's ucx copy counters, or -1 when the server shows none. */
    private static long ucxCopied(String info) {
        long sum = -1;
        for (String line : info.split("\r\n")) {
            if (line.startsWith("ucx_copied_") && line.indexOf(':') > 0) {
                sum = Math.max(sum, 0) + Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        return sum;
    }

    /**
     * The numeric lines of INFO's {@code Timing} section (see docs/protocol.md).
     *
     * @throws IllegalStateException when the server's timing is off
     */
    static Map<String, Long> timingSums(String info) {
        int at = info.indexOf("# Timing");
        if (at < 0 || !info.contains("timing:on")) {
            throw new IllegalStateException("E2: the server does not report Timing (start it with --timing)");
        }
        Map<String, Long> out = new HashMap<>();
        for (String line : info.substring(at).split("\r\n")) {
            int colon = line.indexOf(':');
            if (colon > 0 && !line.startsWith("timing:")) {
                out.put(line.substring(0, colon), Long.parseLong(line.substring(colon + 1).trim()));
            } else if (line.isEmpty() && out.size() > 0) {
                break;
            }
        }
        return out;
    }

    private static void report(List<Result> results, int[] sizes, boolean redis, Report report) {
        Map<String, Result> by = new LinkedHashMap<>();
        for (Result r : results) {
            by.put(r.system() + "/" + r.op() + "/" + r.size(), r);
        }
        List<String> header = List.of("op", "size", "system", "p50 us", "p99 us", "p99.9 us", "mean us", "source us",
            "process us", "sink us", "other us", "server copies", "calls");
        List<List<String>> body = new ArrayList<>();
        for (String op : OPS) {
            for (int size : sizes) {
                for (String system : List.of("rdmastore-ucx", "rdmastore-tcp", "redis")) {
                    Result r = by.get(system + "/" + op + "/" + size);
                    if (r == null) {
                        continue;
                    }
                    body.add(List.of(op, Sizes.human(size), system, f(r.p50()), f(r.p99()), f(r.p999()), f(r.mean()),
                        f(r.source()), f(r.process()), f(r.sink()), f(r.other()), f(r.serverCopies()),
                        Long.toString(r.count())));
                }
            }
        }
        List<String> rheader = List.of("size", "get p50 tcp/ucx", "put p50 tcp/ucx", "get p50 redis/ucx",
            "put p50 redis/ucx");
        List<List<String>> rbody = new ArrayList<>();
        for (int size : sizes) {
            rbody.add(List.of(Sizes.human(size), ratio(by, "rdmastore-tcp", "get", size),
                ratio(by, "rdmastore-tcp", "put", size), ratio(by, "redis", "get", size),
                ratio(by, "redis", "put", size)));
        }
        // p50 rows first so the chart (first metric) shows p50 per size and system
        List<Row> rows = new ArrayList<>();
        for (String m : METRICS) {
            for (Result r : results) {
                double v = r.metric(m);
                if (!Double.isNaN(v)) {
                    rows.add(new Row("E2", r.system(), r.op(), r.size(), 1, m, v));
                }
            }
        }
        String notes = notes(by, redis);
        System.out.println();
        System.out.println("E2: latency, one client thread, unpipelined");
        System.out.print(Report.plain(header, body));
        System.out.println();
        System.out.print(Report.plain(rheader, rbody));
        System.out.println(notes);
        report.add("E2", "Put/Get latency and Source/Process/Sink/Other breakdown",
            Report.table(header, body) + "\n" + Report.table(rheader, rbody), notes, rows);
    }

    private static String notes(Map<String, Result> by, boolean redis) {
        StringBuilder sb = new StringBuilder();
        sb.append("One client thread, one request in flight. rdmastore-ucx: server with --ucx-idle spin (one core), "
            + "client driving its worker while it waits; rdmastore-tcp: a tcp-only server; each server runs alone so "
            + "a spinning worker never takes the other's core. Source / Process / Sink are means measured in the "
            + "server (--timing; INFO's Timing section, docs/protocol.md): decoding, the store operation (GET's "
            + "includes copying the value into the reply), handing the reply to the transport. Other = client mean "
            + "minus the three: wire, client encode/decode and waiting. Server copies: copies of the value the "
            + "server's ucx transport made per operation beyond the one into its ring (INFO's ucx_copied_*_bytes; "
            + "a value gathered from ring fragments counts 1, a reply copied before it is sent 1 more; "
            + "docs/transport-ucx.md).");
        if (!redis) {
            sb.append(" redis-server is not installed here, so its rows are missing (apt-get install redis-server).");
        }
        Result g = by.get("rdmastore-ucx/get/1024");
        Result gt = by.get("rdmastore-tcp/get/1024");
        Result p = by.get("rdmastore-ucx/put/1024");
        Result pt = by.get("rdmastore-tcp/put/1024");
        if (g != null && gt != null && p != null && pt != null) {
            sb.append(String.format(Locale.ROOT, "%n%nTargets (1 KiB): ucx GET p50 %.2f us (target <= 3 us): %s; "
                    + "p99.9 %.1f us (target <= 30 us): %s; GET p50 tcp/ucx %.1fx (target >= 10x): %s; PUT p50 "
                    + "tcp/ucx %.1fx (target >= 10x): %s.", g.p50(), g.p50() <= 3 ? "met" : "missed", g.p999(),
                g.p999() <= 30 ? "met" : "missed", gt.p50() / g.p50(), gt.p50() >= 10 * g.p50() ? "met" : "missed",
                pt.p50() / p.p50(), pt.p50() >= 10 * p.p50() ? "met" : "missed"));
        }
        return sb.toString();
    }

    private static String ratio(Map<String, Result> by, String system, String op, int size) {
        Result a = by.get(system + "/" + op + "/" + size);
        Result b = by.get("rdmastore-ucx/" + op + "/" + size);
        return a == null || b == null ? "-" : String.format(Locale.ROOT, "%.1fx", a.p50() / b.p50());
    }

    static String f(double v) {
        if (Double.isNaN(v)) {
            return "-";
        }
        return String.format(Locale.ROOT, v < 10 ? "%.2f" : v < 1000 ? "%.1f" : "%,.0f", v);
    }
}
