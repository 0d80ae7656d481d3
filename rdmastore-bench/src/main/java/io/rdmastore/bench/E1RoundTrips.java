package io.rdmastore.bench;

import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.Transport;
import io.rdmastore.transport.TransportStatus;
import io.rdmastore.transport.tcp.TcpTransport;
import io.rdmastore.transport.ucx.UcxTransport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * E1 (paper 003): round trips per second on one connection, 64 B and 4 KiB, two JVM processes, for the tcp provider,
 * UCX active messages, the UCX ring (on one host its frames are ordered frames composed in the peer's mapped ring;
 * {@code ring-flush}: the flush footer, put), and raw JUCX put ping-pong as the limit. The client drives its UCX worker
 * from the measuring thread (invoker mode); each server echoes from its transport thread.
 */
public final class E1RoundTrips implements Experiment {
    static final int[] SIZES = {64, 4096};
    static final String[] VARIANTS = {"tcp", "am", "ring", "ring-flush", "raw-put"};
    /** The untimed lap on each fresh echo server, per size, before its cells. */
    static final long LAP_NANOS = 1_000_000_000L;
    /**
     * The variants a run measures unless {@code -Drdmastore.bench.e1.variants} names others: ring-flush (the flush
     * footer instead of ordered or CRC frames) is left out to keep {@code bench all} under 30 minutes.
     */
    static final String[] DEFAULT_VARIANTS = {"tcp", "am", "ring", "raw-put"};

    @Override
    public String id() {
        return "E1";
    }

    @Override
    public String title() {
        return "round trips/s on one connection, 64 B and 4 KiB: tcp, ucx active messages, ucx ring (ordered frames"
            + " in the peer's mapped ring on one host), raw JUCX put ping-pong (the limit)";
    }

    static UcxTransport.Context ucxContext(String variant, boolean invoker) {
        return new UcxTransport.Context().messaging(variant.equals("am") ? "am" : "ring")
            .footer(variant.equals("ring-flush") ? "flush" : "crc").invoker(invoker).idleStrategy("noop")
            .memoryBudget(16 << 20).maxConnections(4).ringCapacity(1 << 20);
    }

    static String system(String variant) {
        return switch (variant) {
            case "tcp" -> "rdmastore-tcp";
            case "raw-put" -> "limit";
            default -> "rdmastore-ucx";
        };
    }

    @Override
    public void run(boolean quick, Report report) throws Exception {
        run(BenchOptions.defaults(quick), report);
    }

    /** A sample's key: variant, size, CPU mode, contention. */
    static String key(String variant, int size, String mode, boolean contention) {
        return variant + "/" + size + "/" + mode + "/" + (contention ? "contention" : "quiet");
    }

    @Override
    public void run(BenchOptions options, Report report) throws Exception {
        int repeats = options.repeats();
        long warmNanos = options.warmNanos(200_000_000L, 50_000_000L);
        long windowNanos = options.measureNanos(600_000_000L, 200_000_000L);
        boolean ucx = new UcxProbe().available;
        List<String> variants = new ArrayList<>();
        List<String> wanted = List.of(System.getProperty("rdmastore.bench.e1.variants",
            String.join(",", DEFAULT_VARIANTS))
            .split(","));
        for (String v : VARIANTS) {
            if (wanted.contains(v) && (v.equals("tcp") || ucx)) {
                variants.add(v);
            }
        }
        if (!ucx) {
            System.out.println("E1: UCX unavailable here; measuring tcp only (apt-get install libucx0)");
        }
        List<CpuState.Mode> modes = options.cpuModes();
        Map<String, List<Double>> samples = new LinkedHashMap<>();
        Map<String, String> mechanisms = new LinkedHashMap<>();
        Progress progress = new Progress("E1", repeats * (variants.size() * 2 - (variants.contains("raw-put") ? 1 : 0))
            * modes.size() * SIZES.length);
        // Each repeat and CPU mode measures every variant on a fresh server, the ring's 64 B cell last and raw put's
        // 64 B cell right after it: the host flips between a fast and a slow state within seconds (docs/decisions.md,
        // "The slow state is the vCPUs'"), so the ring is compared with the raw put of the same moment, repeat by
        // repeat, not with a median of raw puts taken in other states.
        Map<String, List<Double>> paired = new LinkedHashMap<>();
        for (int r = 0; r < repeats; r++) {
            for (CpuState.Mode mode : modes) {
                Double ring64 = null;
                for (String v : variants) {
                    boolean raw = v.equals("raw-put");
                    // one server at a time: each spins on a core while it runs, as the raw limit does
                    try (Child server = raw ? Child.start(RawPutPingPong.class) : Child.start(EchoServer.class, v)) {
                        if (!raw) {
                            // an untimed lap on the fresh server first: its JIT would otherwise be compiling the
                            // ring's path during the first cells' short warm-ups (a 0.6 s cell read 231k round
                            // trips/s where a 5 s one read 881k)
                            for (int size : SIZES) {
                                measure(v, server.port, size, options.quick() ? 100_000_000L : LAP_NANOS,
                                    50_000_000L);
                            }
                        }
                        // the limit is counted in iterations (at least 6,000), which burners on a small host stretch
                        // to tens of seconds; the contention variant compares the transports
                        for (boolean contention : raw ? new boolean[] {false} : new boolean[] {true, false}) {
                            for (int size : raw ? SIZES : new int[] {SIZES[1], SIZES[0]}) {
                                double rate = cell(v, server.port, size, mode, contention, warmNanos, windowNanos,
                                    mechanisms);
                                samples.computeIfAbsent(key(v, size, mode.label(), contention),
                                    k -> new ArrayList<>()).add(rate);
                                if (!contention && size == 64 && v.equals("ring")) {
                                    ring64 = rate;
                                } else if (raw && size == 64 && ring64 != null) {
                                    paired.computeIfAbsent(mode.label(), k -> new ArrayList<>()).add(ring64 / rate);
                                }
                                progress.step(v + " " + mode.label() + (contention ? " contention " : " ")
                                    + Sizes.human(size));
                            }
                        }
                    }
                }
            }
        }
        progress.done();
        List<Row> rows = new ArrayList<>();
        Map<String, Spread> spread = new LinkedHashMap<>();
        for (Map.Entry<String, List<Double>> e : samples.entrySet()) {
            Spread sp = Spread.of(e.getValue());
            spread.put(e.getKey(), sp);
            String[] k = e.getKey().split("/");
            rows.add(sp.row("E1", system(k[0]), k[0], Long.parseLong(k[1]), 1, "round_trips_per_s",
                Row.Tags.of(k[2], null, k[3].equals("contention"))));
        }
        List<String> header = List.of("cpu", "contention", "system", "variant", "64 B rt/s", "4 KiB rt/s",
            "64 B vs tcp", "64 B vs raw put", "4 KiB vs tcp");
        List<List<String>> body = new ArrayList<>();
        StringBuilder notes = new StringBuilder(String.format(Locale.ROOT, "Each figure: %.2f s warm-up on a new "
                + "client (after an untimed lap of each size on each fresh server, for its JIT), then %.2f s measured, "
                + "repeated %d time(s) (each repeat and CPU mode against a new server process); the median with the "
                + "range (min-max) of the repeats in brackets; ratios are of medians, except the ring's 64 B against "
                + "raw put: each repeat measures the ring's 64 B cell last on its server and raw put's 64 B cell right "
                + "after it (the host moves between a fast and a slow state within seconds), and the column gives the "
                + "median (min-max) of those pairs' ratios. CPU modes: %s. "
                + "Contention rows: the same cells with %d burner threads in this JVM spinning at ordinary priority "
                + "during the phase, stopped with it (raw put, counted in iterations, is not run under contention).",
            warmNanos / 1e9, windowNanos / 1e9, repeats,
            E2Latency.describe(modes, mechanisms), E3Zipf.BURNERS));
        for (CpuState.Mode mode : modes) {
            for (boolean contention : new boolean[] {false, true}) {
                String ml = mode.label();
                Spread pairs = Spread.of(paired.getOrDefault(ml, List.of()));
                for (String v : variants) {
                    Spread a = spread.getOrDefault(key(v, 64, ml, contention), Spread.of());
                    Spread b = spread.getOrDefault(key(v, 4096, ml, contention), Spread.of());
                    String vsRaw = v.equals("ring") && !contention && pairs.n() > 0
                        ? pairs.format(x -> String.format(Locale.ROOT, "%.0f%%", 100 * x))
                        : pct(a.median(), median(spread, key("raw-put", 64, ml, contention)));
                    body.add(List.of(ml, contention ? "yes" : "no", system(v), v, a.format(E1RoundTrips::fmt),
                        b.format(E1RoundTrips::fmt), ratio(a.median(), median(spread, key("tcp", 64, ml, contention))),
                        vsRaw, ratio(b.median(), median(spread, key("tcp", 4096, ml, contention)))));
                }
                String t = contention ? "" : notes(median(spread, key("ring", 64, ml, false)), pairs,
                    median(spread, key("tcp", 64, ml, false)));
                if (!t.isEmpty()) {
                    notes.append(String.format(Locale.ROOT, "%n%n%s%s: %s", ml, contention ? ", contention" : "", t));
                }
            }
        }
        System.out.println();
        System.out.println("E1: round trips per second, one connection, two processes (median (min-max) of " + repeats
            + ")");
        System.out.print(Report.plain(header, body));
        System.out.println(notes);
        report.add("E1", "round trips per second on one connection", Report.table(header, body), notes.toString(),
            rows);
    }

    /** One measured cell: {@code variant} at {@code size} in {@code mode}, with the burners when {@code contention}. */
    private static double cell(String variant, int port, int size, CpuState.Mode mode, boolean contention,
                               long warmNanos, long windowNanos, Map<String, String> mechanisms) throws Exception {
        long bound = warmNanos + windowNanos + 120_000_000_000L;
        try (CpuState.Guard g = CpuState.enter(mode, bound);
             Spinners burn = Spinners.burners(contention ? E3Zipf.BURNERS : 0, bound)) {
            mechanisms.put(mode.label(), g.mechanism());
            return variant.equals("raw-put") ? raw(port, size, windowNanos)
                : measure(variant, port, size, warmNanos, windowNanos);
        }
    }

    private static Double median(Map<String, Spread> spread, String key) {
        Spread s = spread.get(key);
        return s == null || s.n() == 0 ? null : s.median();
    }

    /** The targets' lines; {@code pairs}: each repeat's ring 64 B against the raw put measured right after it. */
    static String notes(Double ring, Spread pairs, Double tcp) {
        if (ring == null || pairs.n() == 0 || tcp == null) {
            return "";
        }
        return String.format(Locale.ROOT, "Targets (64 B, shared memory): ucx ring %s rt/s (target >= 1,000,000): %s; "
                + "%.0f%% of raw put (target >= 80%%; median of the repeats' pairs, %.0f-%.0f%%): %s; %.1fx tcp "
                + "(target >= 25x): %s.", fmt(ring), ring >= 1_000_000 ? "met" : "missed", 100 * pairs.median(),
            100 * pairs.min(), 100 * pairs.max(), pairs.median() >= 0.8 ? "met" : "missed", ring / tcp,
            ring >= 25 * tcp ? "met" : "missed");
    }

    static String fmt(double v) {
        return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%,.0f", v);
    }

    static String ratio(double v, Double base) {
        return base == null || Double.isNaN(v) || !(base > 0) ? "-" : String.format(Locale.ROOT, "%.2fx", v / base);
    }

    static String pct(double v, Double base) {
        return base == null || Double.isNaN(v) || !(base > 0) ? "-"
            : String.format(Locale.ROOT, "%.0f%%", 100 * v / base);
    }

    /** Counts round trips of one message kept in flight. */
    private static final class Pong implements MessageHandler {
        volatile long received;

        @Override
        public void onMessage(Connection connection, MemorySegment message) {
            received++;
        }
    }

    private static double measure(String variant, int port, int size, long warmNanos, long windowNanos) {
        TcpTransport tcp = new TcpTransport();
        Network.Context ctx = new Network.Context().carrier(tcp);
        UcxTransport ucx = null;
        if (!variant.equals("tcp")) {
            ucx = new UcxTransport(ucxContext(variant, true));
            ctx.upgrade(ucx);
        }
        try (Network network = new Network(ctx)) {
            Pong pong = new Pong();
            Connection c = network.connect(new InetSocketAddress("127.0.0.1", port), pong,
                ConnectOptions.DEFAULT.withTransport(variant.equals("tcp") ? "tcp" : "ucx"));
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment msg = arena.allocate(size);
                Transport driver = ucx != null ? ucx : tcp;
                run(c, pong, driver, msg, warmNanos);
                long start = System.nanoTime();
                long n = run(c, pong, driver, msg, windowNanos);
                double rate = n / ((System.nanoTime() - start) / 1e9);
                c.close();
                return rate;
            }
        } finally {
            if (ucx != null) {
                ucx.close();
            }
            tcp.close();
        }
    }

    private static long run(Connection c, Pong pong, Transport driver, MemorySegment msg, long windowNanos) {
        long end = System.nanoTime() + windowNanos;
        long n = 0;
        long expected = pong.received;
        do {
            long stall = System.nanoTime() + STALL_NANOS;
            for (int i = 0; i < 64; i++) {
                int status;
                while ((status = c.offer(msg)) == TransportStatus.BACK_PRESSURED) {
                    driver.doWork();
                    check(stall, c, "offer");
                }
                if (status < 0) {
                    throw new IllegalStateException("E1: offer failed with " + TransportStatus.describe(status)
                        + " on " + c.describe());
                }
                expected++;
                int spins = 0;
                while (pong.received != expected) {
                    // no PAUSE between polls, as the raw limit does not pause either
                    if (driver.doWork() == 0 && (++spins & 0xFFFF) == 0) {
                        check(stall, c, "reply " + expected);
                    }
                }
                n++;
            }
        } while (System.nanoTime() < end);
        return n;
    }

    private static final long STALL_NANOS = 10_000_000_000L;

    private static void check(long deadline, Connection c, String what) {
        if (System.nanoTime() - deadline > 0) {
            throw new IllegalStateException("E1: no progress for 10 s waiting for " + what + " on " + c.describe());
        }
    }

    private static double raw(int port, int size, long windowNanos) throws Exception {
        double estimate = RawPutPingPong.measure(port, size, 1000, 5000);
        long iterations = Math.max(5000, (long) (estimate * windowNanos / 1e9));
        return RawPutPingPong.measure(port, size, iterations / 4, iterations);
    }

    /** Whether UCX can be used in this process. */
    static final class UcxProbe {
        final boolean available;

        UcxProbe() {
            boolean ok;
            try (UcxTransport t = new UcxTransport(new UcxTransport.Context().invoker(true).memoryBudget(1 << 20)
                .maxConnections(1).ringCapacity(64 << 10))) {
                ok = t.isAvailable();
            } catch (Throwable t) {
                ok = false;
            }
            available = ok;
        }
    }
}
