package io.rdmastore.bench;

import io.rdmastore.client.RdmaStoreClient;
import java.nio.ByteBuffer;
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
    /**
     * The caller's-buffer cells, from {@link #BUFFERS_FROM} bytes, for rdmastore over ucx and Redis: GET into and SET
     * from a direct buffer reused across calls (rdmastore's {@code get(key, dst)} and {@code set(key, src)}, which lend
     * and read one-sided with no copy on the client; Redis's client over a {@code SocketChannel},
     * {@link E2RespBuffers}).
     */
    static final String[] BUFFER_OPS = {"get-buf", "put-buf"};
    static final int BUFFERS_FROM = 256 << 10;
    static final List<String> ALL_OPS = List.of("get", "put", "get-buf", "put-buf");
    static final String[] METRICS = {"p50_us", "p99_us", "p999_us", "mean_us", "source_us", "process_us", "sink_us",
        "other_us", "server_cpu_us_per_op", "server_copies", "over30_per_s"};

    @Override
    public String id() {
        return "E2";
    }

    @Override
    public String title() {
        return "Put/Get latency 1 KiB..1 MiB, p50/p99/p99.9 and Source/Process/Sink/Other: ucx vs tcp, redis over tcp";
    }

    /** One measurement's figures: one repeat of one op and size, in one CPU mode and persistence pairing. */
    record Result(String system, String persistence, String cpuMode, String op, int size, long count, double p50,
                  double p99, double p999, double mean, double source, double process, double sink,
                  double serverCpuUsPerOp, double serverCopies, double over30PerS) {
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
                case "server_cpu_us_per_op" -> serverCpuUsPerOp;
                case "server_copies" -> serverCopies;
                case "over30_per_s" -> over30PerS;
                default -> throw new IllegalArgumentException(m);
            };
        }

        /** The cell this is a repeat of. */
        String cell() {
            return key(system, persistence, cpuMode, op, size);
        }
    }

    /**
     * Calls slower than 30 us per second spent calling (the calls run back to back, so their summed latency is the
     * phase's time): a count of stalls, which unlike a percentile does not depend on how many fast calls surround
     * them. On this VM every spinning vCPU is taken away for 30-100 us about a thousand times a second
     * (docs/decisions.md, "E2's 1 KiB p99.9 is the host's stalls counted against the call rate").
     */
    static double over30PerS(Histogram h) {
        double seconds = h.getMean() * h.getTotalCount() / 1e9;
        long over = h.getTotalCount() - h.getCountBetweenValues(0, 30_000);
        return seconds > 0 ? over / seconds : Double.NaN;
    }

    static String key(String system, String persistence, String cpuMode, String op, int size) {
        return system + "/" + persistence + "/" + cpuMode + "/" + op + "/" + size;
    }

    /** One call of a benchmark (E2's timed ones, E5's warm-up); throws on a wrong answer. */
    @FunctionalInterface
    interface Call {
        void run() throws Exception;
    }

    /** What one system's run needs: the phase lengths, the modes and the repeats. */
    record Plan(int[] sizes, long warmNanos, long measureNanos, List<CpuState.Mode> modes, int repeats) {
    }

    @Override
    public void run(boolean quick, Report report) throws Exception {
        run(BenchOptions.defaults(quick), report);
    }

    @Override
    public void run(BenchOptions options, Report report) throws Exception {
        int[] sizes = E3Zipf.ints("rdmastore.bench.e2.sizes", options.quick() ? QUICK_SIZES : SIZES);
        Plan plan = new Plan(sizes, options.warmNanos(250_000_000L, 50_000_000L),
            options.measureNanos(600_000_000L, 150_000_000L), options.cpuModes(), options.repeats());
        boolean redis = RedisServer.ensureInstalled();
        // -Drdmastore.bench.e2.systems=rdmastore-ucx,... and -Drdmastore.bench.e2.sizes=1048576 narrow a run while
        // looking into one system or size
        List<String> wanted = List.of(System.getProperty("rdmastore.bench.e2.systems",
            "rdmastore-ucx,rdmastore-tcp,redis").split(","));
        List<String> systems = new ArrayList<>();
        for (String s : List.of("rdmastore-ucx", "rdmastore-tcp", "redis")) {
            if (wanted.contains(s) && (redis || !s.equals("redis"))) {
                systems.add(s);
            }
        }
        List<Result> results = new ArrayList<>();
        Map<String, String> mechanisms = new LinkedHashMap<>();
        int calls = 0;
        for (String system : systems) {
            for (int size : sizes) {
                calls += ops(system, size).size();
            }
        }
        Progress progress = new Progress("E2", options.persistence().size() * plan.modes().size() * plan.repeats()
            * calls);
        for (BenchOptions.Persistence pairing : options.persistence()) {
            if (systems.contains("rdmastore-ucx") && Arrays.stream(sizes).anyMatch(s -> s == FLOOR_SIZE)) {
                floor(pairing, plan, results, mechanisms);
            }
            // the copy floor brackets the systems, measured before and after them: the host's state moves within a
            // run (docs/decisions.md, "The slow state is the vCPUs'"), and a floor taken once only shows one state
            boolean copyFloor = systems.contains("rdmastore-ucx") && CopyFloor.available();
            if (copyFloor) {
                copyFloor(pairing, plan, results, mechanisms);
            }
            for (String system : systems) {
                List<String> args = new ArrayList<>(system.equals("rdmastore-ucx")
                    ? List.of("--transport", "auto", "--ucx-idle", "spin") : List.of("--transport", "tcp"));
                args.addAll(pairing.serverArgs());
                args.add("--timing");
                switch (system) {
                    case "rdmastore-ucx", "rdmastore-tcp" -> {
                        try (ServerProcess server = ServerProcess.start(args.toArray(new String[0]))) {
                            rdmastore(server, system.substring("rdmastore-".length()), pairing, plan, results,
                                mechanisms, progress);
                        }
                    }
                    default -> {
                        try (RedisServer server = RedisServer.start(pairing, "--proto-max-bulk-len", "64mb")) {
                            redis(server, pairing, plan, results, mechanisms, progress);
                        }
                    }
                }
            }
            if (copyFloor) {
                copyFloor(pairing, plan, results, mechanisms);
            }
        }
        progress.done();
        report(results, options, plan, redis, mechanisms, report);
    }

    /** The ops measured for {@code system} at {@code size}: GET, PUT, and the caller's-buffer ones from their size. */
    static List<String> ops(String system, int size) {
        List<String> ops = new ArrayList<>(List.of(OPS));
        if (size >= BUFFERS_FROM && (system.equals("rdmastore-ucx") || system.equals("redis"))) {
            ops.addAll(List.of(BUFFER_OPS));
        }
        return ops;
    }

    /** The size at which E2 also measures the host's floor (raw JUCX put ping-pong). */
    static final int FLOOR_SIZE = 1 << 10;

    /**
     * The host's floor for the 1 KiB cells: raw JUCX one-sided put ping-pong of 1 KiB between two processes (the E1
     * limit; no protocol, no store, no checks), timed per round trip like a GET, in every CPU mode and repeat. Its rows
     * are system {@code limit}: what any UCX request-reply on this host costs, tail included. A GET moves less (a small
     * request, a 1 KiB reply), so the floor is slightly conservative.
     */
    private static void floor(BenchOptions.Persistence pairing, Plan plan, List<Result> out,
                              Map<String, String> mechanisms) throws Exception {
        try (Child raw = Child.start(RawPutPingPong.class)) {
            for (CpuState.Mode mode : plan.modes()) {
                for (int r = 0; r < plan.repeats(); r++) {
                    Histogram h;
                    try (CpuState.Guard g = CpuState.enter(mode, plan.warmNanos() + 2 * plan.measureNanos()
                        + 60_000_000_000L)) {
                        mechanisms.put(mode.label(), g.mechanism());
                        h = RawPutPingPong.latency(raw.port, FLOOR_SIZE, plan.warmNanos(), plan.measureNanos());
                    }
                    out.add(floorRow("limit", pairing, mode, "get", FLOOR_SIZE, h));
                }
            }
        }
    }

    /** A floor's row: latencies from its histogram (nanoseconds), no server phases, CPU or copies. */
    private static Result floorRow(String system, BenchOptions.Persistence pairing, CpuState.Mode mode, String op,
                                   int size, Histogram h) {
        return new Result(system, pairing.label(), mode.label(), op, size, h.getTotalCount(),
            us(h.getValueAtPercentile(50)), us(h.getValueAtPercentile(99)), us(h.getValueAtPercentile(99.9)),
            h.getMean() / 1000.0, Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN, over30PerS(h));
    }

    /**
     * The host's floor for the cells from {@link CopyFloor#FROM} bytes: a GET's one cross-process copy of the value
     * into a new array; a PUT's copy out of its array and, on the other core, one appended {@code write(2)}; no
     * protocol or store ({@link CopyFloor}); rows of system {@code floor}.
     */
    private static void copyFloor(BenchOptions.Persistence pairing, Plan plan, List<Result> out,
                                  Map<String, String> mechanisms) throws Exception {
        int largest = Arrays.stream(plan.sizes()).max().orElse(0);
        if (largest < CopyFloor.FROM) {
            return;
        }
        try (Child peer = Child.start(CopyFloor.class, Integer.toString(largest))) {
            for (CpuState.Mode mode : plan.modes()) {
                for (int r = 0; r < plan.repeats(); r++) {
                    for (String op : OPS) {
                        for (int size : plan.sizes()) {
                            if (size < CopyFloor.FROM) {
                                continue;
                            }
                            Histogram h;
                            try (CpuState.Guard g = CpuState.enter(mode, plan.warmNanos() + plan.measureNanos()
                                + 60_000_000_000L)) {
                                mechanisms.put(mode.label(), g.mechanism());
                                h = CopyFloor.measure(peer, op, size, plan.warmNanos(), plan.measureNanos());
                            }
                            out.add(floorRow("floor", pairing, mode, op, size, h));
                        }
                    }
                }
            }
        }
    }

    private static void rdmastore(ServerProcess server, String transport, BenchOptions.Persistence pairing, Plan plan,
                                  List<Result> out, Map<String, String> mechanisms, Progress progress)
        throws Exception {
        try (RdmaStoreClient client = RdmaStoreClient.connect(server.uri(transport))) {
            if (!client.transport().equals(transport)) {
                throw new IllegalStateException("E2: asked for " + transport + " but the client runs on "
                    + client.transport() + " (" + client.transportReason() + ")");
            }
            String system = "rdmastore-" + transport;
            for (int size : plan.sizes()) {
                // one untimed lap over every cell first: otherwise the first cell measured pays for the JIT
                byte[] key = ("e2:" + size).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
                byte[] value = value(size);
                client.set(key, value);
                for (String op : ops(system, size)) {
                    warm(call(client, system, op, key, value), plan.warmNanos());
                }
            }
            for (CpuState.Mode mode : plan.modes()) {
                for (int r = 0; r < plan.repeats(); r++) {
                    for (int size : plan.sizes()) {
                        byte[] key = ("e2:" + size).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
                        byte[] value = value(size);
                        if (!client.set(key, value) || !Arrays.equals(client.get(key), value)) {
                            throw new IllegalStateException("E2: " + system + " did not return the " + size
                                + "-byte value it stored");
                        }
                        for (String op : ops(system, size)) {
                            Call call = call(client, system, op, key, value);
                            Histogram h;
                            Map<String, Long> before;
                            Map<String, Long> after;
                            String infoBefore;
                            String infoAfter;
                            double cpu;
                            try (CpuState.Guard g = CpuState.enter(mode, plan.warmNanos() + plan.measureNanos()
                                + 60_000_000_000L)) {
                                mechanisms.put(mode.label(), g.mechanism());
                                warm(call, plan.warmNanos());
                                infoBefore = client.info();
                                before = timingSums(infoBefore);
                                double cpu0 = server.cpuSeconds();
                                h = measure(call, Integer.MAX_VALUE, plan.measureNanos());
                                cpu = server.cpuSeconds() - cpu0;
                                infoAfter = client.info();
                                after = timingSums(infoAfter);
                            }
                            String opcode = op.startsWith("get") ? "get" : "set";
                            long n = after.getOrDefault(opcode + "_count", 0L)
                                - before.getOrDefault(opcode + "_count", 0L);
                            if (n != h.getTotalCount()) {
                                throw new IllegalStateException("E2: the server timed " + n + " " + opcode
                                    + " requests but the client made " + h.getTotalCount() + " (is --timing on?)");
                            }
                            out.add(new Result(system, pairing.label(), mode.label(), op, size, h.getTotalCount(),
                                us(h.getValueAtPercentile(50)), us(h.getValueAtPercentile(99)),
                                us(h.getValueAtPercentile(99.9)), h.getMean() / 1000.0,
                                phase(before, after, opcode, "source", n), phase(before, after, opcode, "process", n),
                                phase(before, after, opcode, "sink", n), cpu * 1e6 / h.getTotalCount(),
                                serverCopies(infoBefore, infoAfter, n, size), over30PerS(h)));
                            progress.step(system + " " + mode.label() + " " + op + " " + Sizes.human(size));
                        }
                    }
                }
            }
        }
    }

    private static void redis(RedisServer server, BenchOptions.Persistence pairing, Plan plan, List<Result> out,
                              Map<String, String> mechanisms, Progress progress) throws Exception {
        try (E2Resp client = new E2Resp(server.port()); E2RespBuffers buffers = new E2RespBuffers(server.port())) {
            for (int size : plan.sizes()) {
                // the same untimed lap over every cell as rdmastore gets
                byte[] key = ("e2:" + size).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
                byte[] value = value(size);
                client.set(key, value);
                for (String op : ops("redis", size)) {
                    warm(call(client, buffers, op, key, value), plan.warmNanos());
                }
            }
            for (CpuState.Mode mode : plan.modes()) {
                for (int r = 0; r < plan.repeats(); r++) {
                    for (int size : plan.sizes()) {
                        byte[] key = ("e2:" + size).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
                        byte[] value = value(size);
                        client.set(key, value);
                        if (!Arrays.equals(client.getValue(key), value)) {
                            throw new IllegalStateException("E2: redis did not return the " + size
                                + "-byte value it stored");
                        }
                        for (String op : ops("redis", size)) {
                            Call call = call(client, buffers, op, key, value);
                            Histogram h;
                            double cpu;
                            try (CpuState.Guard g = CpuState.enter(mode, plan.warmNanos() + plan.measureNanos()
                                + 60_000_000_000L)) {
                                mechanisms.put(mode.label(), g.mechanism());
                                warm(call, plan.warmNanos());
                                double cpu0 = server.cpuSeconds();
                                h = measure(call, Integer.MAX_VALUE, plan.measureNanos());
                                cpu = server.cpuSeconds() - cpu0;
                            }
                            out.add(new Result("redis", pairing.label(), mode.label(), op, size, h.getTotalCount(),
                                us(h.getValueAtPercentile(50)), us(h.getValueAtPercentile(99)),
                                us(h.getValueAtPercentile(99.9)), h.getMean() / 1000.0, Double.NaN, Double.NaN,
                                Double.NaN, cpu * 1e6 / h.getTotalCount(), Double.NaN, over30PerS(h)));
                            progress.step("redis " + mode.label() + " " + op + " " + Sizes.human(size));
                        }
                    }
                }
            }
        }
    }

    /** One GET or SET of {@code key} on rdmastore (of {@code op}: OPS or BUFFER_OPS), checking the answer. */
    private static Call call(RdmaStoreClient client, String system, String op, byte[] key, byte[] value)
        throws Exception {
        int size = value.length;
        // the client's best buffer to put from: one it lends as it is (in huge pages), where any other is copied
        ByteBuffer buf = op.equals("put-buf")
            ? RdmaStoreClient.allocateLendable(value.length).put(value).flip() : buffer(op, value);
        return switch (op) {
            case "get" -> () -> checkLength(system, client.get(key), size);
            case "get-buf" -> checked(system, () -> checkLength(system, client.get(key, buf.clear()), size), buf,
                value);
            case "put" -> () -> checkWritten(system, client.set(key, value));
            case "put-buf" -> () -> checkWritten(system, client.set(key, buf.clear()));
            default -> throw new IllegalArgumentException(op);
        };
    }

    /**
     * One GET or SET of {@code key} on Redis: GET reads each value into a new array, as rdmastore's client does; the
     * BUFFER_OPS go through {@code buffers} from and into a reused direct buffer.
     */
    private static Call call(E2Resp client, E2RespBuffers buffers, String op, byte[] key, byte[] value)
        throws Exception {
        int size = value.length;
        ByteBuffer buf = buffer(op, value);
        return switch (op) {
            case "get" -> () -> checkLength("redis", client.getValue(key), size);
            case "get-buf" -> checked("redis", () -> checkLength("redis", buffers.get(key, buf.clear()), size), buf,
                value);
            case "put" -> () -> client.set(key, value);
            case "put-buf" -> () -> buffers.set(key, buf.clear());
            default -> throw new IllegalArgumentException(op);
        };
    }

    /** The direct buffer a caller's-buffer op reuses: empty for get-buf, holding the value for put-buf; else null. */
    private static ByteBuffer buffer(String op, byte[] value) {
        return switch (op) {
            case "get-buf" -> ByteBuffer.allocateDirect(value.length);
            case "put-buf" -> ByteBuffer.allocateDirect(value.length).put(value).flip();
            default -> null;
        };
    }

    /**
     * {@code get}, once run here untimed: it must leave the key's value, {@code value}, in {@code buf} (the timed calls
     * check only the length).
     */
    private static Call checked(String system, Call get, ByteBuffer buf, byte[] value) throws Exception {
        get.run();
        if (!buf.clear().equals(ByteBuffer.wrap(value))) {
            throw new IllegalStateException("E2: " + system + " GET into a buffer did not return the "
                + value.length + "-byte value stored");
        }
        return get;
    }

    private static void checkLength(String system, byte[] v, int size) {
        checkLength(system, v == null ? -1 : v.length, size);
    }

    private static void checkLength(String system, int length, int size) {
        if (length != size) {
            throw new IllegalStateException("E2: " + system + " GET returned "
                + (length < 0 ? "null" : length + " bytes") + " for a " + size + "-byte value");
        }
    }

    private static void checkWritten(String system, boolean written) {
        if (!written) {
            throw new IllegalStateException("E2: " + system + " SET was not written");
        }
    }

    static byte[] value(int size) {
        byte[] v = new byte[size];
        for (int i = 0; i < size; i++) {
            v[i] = (byte) ('a' + i % 26);
        }
        return v;
    }

    /** Runs calls untimed for {@code warmNanos} (at least one), so the JIT and the caches are warm. */
    private static void warm(Call call, long warmNanos) throws Exception {
        long end = System.nanoTime() + warmNanos;
        do {
            call.run();
        } while (System.nanoTime() - end < 0);
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
        // a GET over ucx is a GET_LARGE and a large SET a SET_LARGE (docs/protocol.md, "Large values"): count both
        for (String phase : new String[] {"count", "source_ns", "process_ns", "sink_ns"}) {
            for (String op : new String[] {"get", "set"}) {
                Long large = out.get(op + "_large_" + phase);
                if (large != null) {
                    out.merge(op + "_" + phase, large, Long::sum);
                }
            }
        }
        return out;
    }

    /** The repeats of every cell, in the order measured. */
    static Map<String, List<Result>> cells(List<Result> results) {
        Map<String, List<Result>> by = new LinkedHashMap<>();
        for (Result r : results) {
            by.computeIfAbsent(r.cell(), k -> new ArrayList<>()).add(r);
        }
        return by;
    }

    /** The spread of one metric over a cell's repeats (n = 0 when the cell is missing). */
    static Spread spread(Map<String, List<Result>> cells, String cell, String metric) {
        List<Result> rs = cells.get(cell);
        if (rs == null) {
            return Spread.of();
        }
        return Spread.of(rs.stream().mapToDouble(r -> r.metric(metric)).toArray());
    }

    private static void report(List<Result> results, BenchOptions options, Plan plan, boolean redis,
                               Map<String, String> mechanisms, Report report) {
        Map<String, List<Result>> cells = cells(results);
        List<String> header = List.of("persistence", "cpu", "op", "size", "system", "p50 us", "p99 us", "p99.9 us",
            "mean us", "source us", "process us", "sink us", "other us", "server CPU us/op", "server copies",
            "calls");
        List<List<String>> body = new ArrayList<>();
        List<String> rheader = List.of("persistence", "cpu", "size", "get p50 tcp/ucx", "put p50 tcp/ucx",
            "get p50 redis/ucx", "put p50 redis/ucx", "get-buf p50 redis/ucx", "put-buf p50 redis/ucx");
        List<List<String>> rbody = new ArrayList<>();
        for (BenchOptions.Persistence pairing : options.persistence()) {
            String pl = pairing.label();
            for (CpuState.Mode mode : plan.modes()) {
                String ml = mode.label();
                for (String op : ALL_OPS) {
                    for (int size : plan.sizes()) {
                        for (String system : List.of("rdmastore-ucx", "rdmastore-tcp", "redis", "limit", "floor")) {
                            String c = key(system, pl, ml, op, size);
                            if (!cells.containsKey(c)) {
                                continue;
                            }
                            body.add(List.of(pl, ml, op, Sizes.human(size), system,
                                spread(cells, c, "p50_us").format(E2Latency::f),
                                spread(cells, c, "p99_us").format(E2Latency::f),
                                spread(cells, c, "p999_us").format(E2Latency::f),
                                f(spread(cells, c, "mean_us").median()), f(spread(cells, c, "source_us").median()),
                                f(spread(cells, c, "process_us").median()), f(spread(cells, c, "sink_us").median()),
                                f(spread(cells, c, "other_us").median()),
                                f(spread(cells, c, "server_cpu_us_per_op").median()),
                                f(spread(cells, c, "server_copies").median()),
                                Long.toString(Math.round(Spread.of(cells.get(c).stream()
                                    .mapToDouble(r -> r.count()).toArray()).median()))));
                        }
                    }
                }
                for (int size : plan.sizes()) {
                    rbody.add(List.of(pl, ml, Sizes.human(size), ratio(cells, "rdmastore-tcp", pl, ml, "get", size),
                        ratio(cells, "rdmastore-tcp", pl, ml, "put", size), ratio(cells, "redis", pl, ml, "get", size),
                        ratio(cells, "redis", pl, ml, "put", size), ratio(cells, "redis", pl, ml, "get-buf", size),
                        ratio(cells, "redis", pl, ml, "put-buf", size)));
                }
            }
        }
        // p50 rows first so the chart (first metric) shows p50 per size and system
        List<Row> rows = new ArrayList<>();
        for (String m : METRICS) {
            for (Map.Entry<String, List<Result>> e : cells.entrySet()) {
                Result r = e.getValue().getFirst();
                Spread sp = spread(cells, e.getKey(), m);
                if (sp.n() > 0) {
                    rows.add(sp.row("E2", r.system(), r.op(), r.size(), 1, m,
                        Row.Tags.of(r.cpuMode(), r.persistence(), null)));
                }
            }
        }
        String notes = notes(cells, options, plan, redis, mechanisms);
        System.out.println();
        System.out.println("E2: latency, one client thread, unpipelined (median (min-max) of " + plan.repeats()
            + " repeats)");
        System.out.print(Report.plain(header, body));
        System.out.println();
        System.out.print(Report.plain(rheader, rbody));
        System.out.println(notes);
        report.add("E2", "Put/Get latency and Source/Process/Sink/Other breakdown",
            Report.table(header, body) + "\n" + Report.table(rheader, rbody), notes, rows);
    }

    private static String notes(Map<String, List<Result>> cells, BenchOptions options, Plan plan, boolean redis,
                                Map<String, String> mechanisms) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "One client thread, one request in flight. Each system first runs "
                + "every cell once untimed (the JIT's warm-up); then each cell: %.2f s warm-up, "
                + "then %.2f s measured, on the same connection to the same server process, repeated %d time(s); "
                + "figures are the median with the range (min-max) of the repeats in brackets, ratios are of medians. "
                + "CPU modes: %s. Persistence pairings: %s. Both clients read values the same way: every GET "
                + "returns a new array of the value's length (rdmastore's get(byte[]); the Redis client allocates "
                + "likewise, no reused buffer). get-buf and put-buf rows (from " + Sizes.human(BUFFERS_FROM) + ", ucx "
                + "and Redis): the value read into and written from a direct buffer the caller reuses, each client's "
                + "best way with one (rdmastore's get(key, dst) and set(key, src), read and lent one-sided with no "
                + "copy on the client, src from RdmaStoreClient.allocateLendable, in huge pages, as a set lends only "
                + "such a buffer as it is and copies any other; Redis's client over a SocketChannel, one kernel copy "
                + "each way). "
                + "Server CPU us/op is the server process's CPU over the measured phase only, per call. ",
            plan.warmNanos() / 1e9, plan.measureNanos() / 1e9, plan.repeats(), describe(plan.modes(), mechanisms),
            String.join("; ", options.persistence().stream().map(p -> p.label() + " = " + p.describe()).toList())));
        sb.append("rdmastore-ucx: server with --ucx-idle spin (one core), "
            + "client driving its worker while it waits; rdmastore-tcp: a tcp-only server; each server runs alone so "
            + "a spinning worker never takes the other's core. Source / Process / Sink are means measured in the "
            + "server (--timing; INFO's Timing section, docs/protocol.md): decoding, the store operation (GET's "
            + "includes copying the value into the reply), handing the reply to the transport. Other = client mean "
            + "minus the three: wire, client encode/decode and waiting. Server copies: copies of the value the "
            + "server's ucx transport made per operation beyond the one into its ring (INFO's ucx_copied_*_bytes; "
            + "a value gathered from ring fragments counts 1, a reply copied before it is sent 1 more; "
            + "docs/transport-ucx.md). floor rows (from " + Sizes.human(CopyFloor.FROM) + "): the host's floor for "
            + "moving the value between two processes with no protocol or store: get = one process_vm_readv of the "
            + "value from another process (its memory in huge pages, as the store keeps large values) plus the "
            + "copy into a new array, as every byte[] GET returns one (the JVM zeroes it first; the one kernel copy "
            + "into a heap array, pread of /proc/<pid>/mem, measured slower); put = the value copied out of a byte[] "
            + "into memory shared with a thread on the other core (as every byte[] PUT copies its array once, ours "
            + "into the server's ring or lent buffer, Redis's client into its socket), which appends it from there "
            + "to a file as a log record with one write(2) (a " + CopyFloor.RECORD_HEAD + "-byte head and a "
            + CopyFloor.RECORD_TAIL + "-byte tail around the value, so appends start part-way into a page, as "
            + "any log's do), the file's blocks reserved ahead and forced to disk once a second (what a log under "
            + "everysec pays before it acknowledges, as Redis's AOF does); both threads spin while they wait. A 3x "
            + "line (Redis p50 / 3) below the floor cannot be met by any design that moves a byte[] value across. "
            + "The floor rows are measured before the systems and again after them (twice the repeats), since the "
            + "host's state moves within a run.");
        if (!redis) {
            sb.append(" redis-server is not installed here, so its rows are missing (apt-get install redis-server).");
        }
        String pl = options.persistence().getFirst().label();
        for (CpuState.Mode mode : plan.modes()) {
            String ml = mode.label();
            Spread g = spread(cells, key("rdmastore-ucx", pl, ml, "get", 1024), "p50_us");
            Spread g999 = spread(cells, key("rdmastore-ucx", pl, ml, "get", 1024), "p999_us");
            Spread gt = spread(cells, key("rdmastore-tcp", pl, ml, "get", 1024), "p50_us");
            Spread f999 = spread(cells, key("limit", pl, ml, "get", FLOOR_SIZE), "p999_us");
            Spread f50 = spread(cells, key("limit", pl, ml, "get", FLOOR_SIZE), "p50_us");
            Spread p = spread(cells, key("rdmastore-ucx", pl, ml, "put", 1024), "p50_us");
            Spread pt = spread(cells, key("rdmastore-tcp", pl, ml, "put", 1024), "p50_us");
            if (g.n() > 0 && gt.n() > 0 && p.n() > 0 && pt.n() > 0) {
                sb.append(String.format(Locale.ROOT, "%n%nTargets (%s, %s, 1 KiB): ucx GET p50 %.2f us (target <= 3 "
                        + "us): %s; p99.9 %.1f us (target <= 30 us): %s; GET p50 tcp/ucx %.1fx (target >= 10x): %s; "
                        + "PUT p50 tcp/ucx %.1fx (target >= 10x): %s.", ml, pl, g.median(),
                    g.median() <= 3 ? "met" : "missed", g999.median(), g999.median() <= 30 ? "met" : "missed",
                    gt.median() / g.median(), gt.median() >= 10 * g.median() ? "met" : "missed",
                    pt.median() / p.median(), pt.median() >= 10 * p.median() ? "met" : "missed"));
                if (f999.n() > 0) {
                    sb.append(String.format(Locale.ROOT, " The host's floor (limit: raw JUCX put ping-pong of 1 KiB "
                            + "between two processes, no protocol or store): p50 %.2f us, p99.9 %.1f us%s.",
                        f50.median(), f999.median(), f999.median() > 30
                            ? ": above the p99.9 target itself, so on this host no UCX request-reply meets it" : ""));
                    Spread gs = spread(cells, key("rdmastore-ucx", pl, ml, "get", 1024), "over30_per_s");
                    Spread fs = spread(cells, key("limit", pl, ml, "get", FLOOR_SIZE), "over30_per_s");
                    double gm = spread(cells, key("rdmastore-ucx", pl, ml, "get", 1024), "mean_us").median();
                    double fm = spread(cells, key("limit", pl, ml, "get", FLOOR_SIZE), "mean_us").median();
                    sb.append(String.format(Locale.ROOT, " Calls over 30 us per second of calls: ucx GET %.0f, limit "
                            + "%.0f. A p99.9 under 30 us allows at most one call in a thousand over it: %.0f a "
                            + "second at the GET's mean of %.2f us, %.0f at the limit's %.2f us.", gs.median(),
                        fs.median(), 1e3 / gm, gm, 1e3 / fm, fm));
                }
            }
            threeTimes(cells, plan, pl, ml, OPS, "GET and PUT at every size", sb);
            threeTimes(cells, plan, pl, ml, BUFFER_OPS, "with the caller's buffers (get-buf and put-buf, from "
                + Sizes.human(BUFFERS_FROM) + ")", sb);
        }
        return sb.toString();
    }

    /** Appends the 3x-below-Redis verdict of {@code ops} in one CPU mode and pairing. */
    private static void threeTimes(Map<String, List<Result>> cells, Plan plan, String pl, String ml, String[] ops,
                                   String what, StringBuilder sb) {
        List<String> missed = new ArrayList<>();
        int compared = 0;
        for (String op : ops) {
            for (int size : plan.sizes()) {
                Spread u = spread(cells, key("rdmastore-ucx", pl, ml, op, size), "p50_us");
                Spread r = spread(cells, key("redis", pl, ml, op, size), "p50_us");
                if (u.n() > 0 && r.n() > 0) {
                    compared++;
                    if (r.median() < 3 * u.median()) {
                        Spread f = spread(cells, key("floor", pl, ml, op, size), "p50_us");
                        String floor = f.n() == 0 ? "" : String.format(Locale.ROOT, "; floor %s us %s the 3x line "
                            + "%s us", f(f.median()), f.median() > r.median() / 3 ? "above" : "below",
                            f(r.median() / 3));
                        missed.add(op + " " + Sizes.human(size) + String.format(Locale.ROOT, " %.1fx",
                            r.median() / u.median()) + floor);
                    }
                }
            }
        }
        if (compared > 0) {
            sb.append(String.format(Locale.ROOT, " Issue 13 (%s, %s): ucx p50 at least 3x below Redis %s: %s.",
                ml, pl, what, missed.isEmpty() ? "met in all " + compared + " cells"
                : "missed in " + missed.size() + " of " + compared + " (" + String.join(", ", missed) + ")"));
        }
    }

    /** The CPU modes with how the awake one was held, for the notes. */
    static String describe(List<CpuState.Mode> modes, Map<String, String> mechanisms) {
        List<String> parts = new ArrayList<>();
        for (CpuState.Mode m : modes) {
            parts.add(m.label() + (m == CpuState.Mode.AWAKE ? " (cores kept out of deep idle by "
                + mechanisms.getOrDefault(m.label(), "-") + ")" : " (nothing extra)"));
        }
        return String.join(", ", parts);
    }

    private static String ratio(Map<String, List<Result>> cells, String system, String persistence, String mode,
                                String op, int size) {
        Spread a = spread(cells, key(system, persistence, mode, op, size), "p50_us");
        Spread b = spread(cells, key("rdmastore-ucx", persistence, mode, op, size), "p50_us");
        return a.n() == 0 || b.n() == 0 ? "-" : String.format(Locale.ROOT, "%.1fx", a.median() / b.median());
    }

    static String f(double v) {
        if (Double.isNaN(v)) {
            return "-";
        }
        return String.format(Locale.ROOT, v < 10 ? "%.2f" : v < 1000 ? "%.1f" : "%,.0f", v);
    }
}
