package io.rdmastore.bench.ycsb;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;

/**
 * Runs YCSB in this JVM and prints, next to YCSB's summary, this JVM's CPU time ({@code CPU_SECONDS <s>}), so the
 * benchmark can charge the clients' CPU next to the server's. Started by the benchmark as a child process.
 *
 * <p>Without {@code --windows}, YCSB's own {@code site.ycsb.Client} runs once with the given arguments (loads), after
 * {@code MEASURE_START}. {@code --windows N} (with {@code -t}) instead makes N measured runs one after the other in
 * this JVM, each as YCSB's client makes one (its client threads on fresh connections, a fresh workload and fresh
 * measurements, {@code maxexecutiontime} seconds, its text summary), each between {@code MEASURE_START} and
 * {@code CPU_SECONDS}.
 *
 * <p>{@code --warmup-seconds S} (with {@code --windows}) first runs the same workload's transactions in this JVM on a
 * connection of its own, through the measuring wrapper YCSB's client uses, unmeasured (the measurements are reset
 * afterwards), for S seconds and on while the JIT is still busy: until {@value #QUIET_WINDOWS} quarter seconds in a
 * row in which the JVM's compilers worked less than 2% of the time, or {@code --warmup-max-seconds} (default four
 * times S). It prints {@code WARM_SECONDS <s> JIT_MS <ms>}.
 */
public final class YcsbChildMain {
    private YcsbChildMain() {
    }

    /** A warm-up window counts as quiet when the compilers worked less than this share of it. */
    static final double QUIET_JIT_SHARE = 0.02;
    /** How many quiet quarter seconds in a row end the warm-up. */
    static final int QUIET_WINDOWS = 2;
    private static final long WINDOW_NS = 250_000_000L;

    public static void main(String[] args) throws Exception {
        double warm = 0;
        double warmMax = -1;
        int windows = 0;
        while (args.length >= 2 && args[0].startsWith("--") && !args[0].equals("--")) {
            switch (args[0]) {
                case "--warmup-seconds" -> warm = Double.parseDouble(args[1]);
                case "--warmup-max-seconds" -> warmMax = Double.parseDouble(args[1]);
                case "--windows" -> windows = Integer.parseInt(args[1]);
                default -> throw new IllegalArgumentException("unknown option " + args[0]
                    + " (known: --warmup-seconds S, --warmup-max-seconds S, --windows N)");
            }
            args = Arrays.copyOfRange(args, 2, args.length);
        }
        Args a = Args.parse(args);
        if (windows == 0) {
            if (warm > 0) {
                throw new IllegalArgumentException("--warmup-seconds goes with --windows N");
            }
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                // stderr: YCSB's text exporter closes System.out when it finishes
                System.err.println("CPU_SECONDS " + cpuSeconds());
                System.err.flush();
            }, "ycsb-cpu"));
            System.err.println("MEASURE_START");
            System.err.flush();
            site.ycsb.Client.main(args);
            return;
        }
        if (!a.transactions) {
            throw new IllegalArgumentException("--windows measures transactions: give -t");
        }
        if (warm > 0) {
            warmUp(a, warm, warmMax < 0 ? 4 * warm : Math.max(warm, warmMax));
        }
        for (int i = 0; i < windows; i++) {
            measureWindow(a);
        }
        System.out.flush();
        System.exit(0);
    }

    /** What this class reads of YCSB's arguments: the binding, the {@code -p} properties, threads, {@code -t}. */
    record Args(String db, Properties props, int threads, boolean transactions) {
        static Args parse(String[] args) {
            Properties p = new Properties();
            String db = null;
            int threads = 1;
            boolean transactions = false;
            for (int i = 0; i < args.length; i++) {
                if (args[i].matches("-p|-db|-threads") && i + 1 == args.length) {
                    throw new IllegalArgumentException(args[i] + " wants a value");
                }
                switch (args[i]) {
                    case "-p" -> {
                        String kv = args[++i];
                        int eq = kv.indexOf('=');
                        if (eq < 0) {
                            throw new IllegalArgumentException("-p wants name=value, got " + kv);
                        }
                        p.setProperty(kv.substring(0, eq), kv.substring(eq + 1));
                    }
                    case "-db" -> db = args[++i];
                    case "-threads" -> threads = Integer.parseInt(args[++i]);
                    case "-t" -> transactions = true;
                    default -> {
                        // YCSB's own options (-load, -s, ...) are YCSB's client's business
                    }
                }
            }
            if (db == null) {
                throw new IllegalArgumentException("-db is required");
            }
            return new Args(db, p, threads, transactions);
        }
    }

    /**
     * One measured run as YCSB's client makes it (its client threads, its workload, its measurements, its text
     * summary), in this JVM: fresh measurements, a fresh workload and connections, {@code maxexecutiontime} seconds.
     * Prints {@code MEASURE_START}, {@code WARM_CPU_SECONDS} (this JVM's CPU so far), YCSB's summary of the run and
     * {@code CPU_SECONDS}, so the benchmark reads each window as it reads a whole YCSB run.
     */
    static void measureWindow(Args a) throws Exception {
        resetMeasurements();
        Properties p = a.props;
        site.ycsb.measurements.Measurements.setProperties(p);
        site.ycsb.Workload w = (site.ycsb.Workload) Class.forName(p.getProperty("workload"))
            .getDeclaredConstructor().newInstance();
        w.init(p);
        org.apache.htrace.core.Tracer tracer = tracer();
        int opcount = Integer.parseInt(p.getProperty("operationcount", "0"));
        long maxSeconds = Long.parseLong(p.getProperty("maxexecutiontime", "0"));
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(a.threads);
        List<Thread> threads = new ArrayList<>();
        List<site.ycsb.ClientThread> clients = new ArrayList<>();
        for (int t = 0; t < a.threads; t++) {
            site.ycsb.DB d = newDb(a, tracer);
            int ops = opcount / a.threads + (t < opcount % a.threads ? 1 : 0);
            site.ycsb.ClientThread c = new site.ycsb.ClientThread(d, true, w, p, ops, -1, done);
            c.setThreadId(t);
            c.setThreadCount(a.threads);
            clients.add(c);
            threads.add(new Thread(c, "ycsb-client-" + t));
        }
        System.err.println("MEASURE_START");
        System.err.println("WARM_CPU_SECONDS " + cpuSeconds());
        System.err.flush();
        long start = System.currentTimeMillis();
        threads.forEach(Thread::start);
        Thread terminator = null;
        if (maxSeconds > 0) {
            terminator = new site.ycsb.TerminatorThread(maxSeconds, threads, w);
            terminator.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        long runtime = System.currentTimeMillis() - start;
        if (terminator != null) {
            terminator.interrupt();
        }
        w.cleanup();
        long opsDone = clients.stream().mapToLong(site.ycsb.ClientThread::getOpsDone).sum();
        // YCSB's exporter closes its stream: hand it one that leaves System.out open
        java.io.OutputStream out = new java.io.FilterOutputStream(System.out) {
            @Override
            public void close() throws java.io.IOException {
                flush();
            }
        };
        site.ycsb.measurements.exporter.TextMeasurementsExporter e =
            new site.ycsb.measurements.exporter.TextMeasurementsExporter(out);
        e.write("OVERALL", "RunTime(ms)", runtime);
        e.write("OVERALL", "Throughput(ops/sec)", runtime > 0 ? 1000.0 * opsDone / runtime : 0);
        site.ycsb.measurements.Measurements.getMeasurements().exportMeasurements(e);
        e.close();
        System.out.flush();
        System.err.println("CPU_SECONDS " + cpuSeconds());
        System.err.flush();
    }

    /** The binding inside YCSB's measuring wrapper, as YCSB's client makes it. */
    private static site.ycsb.DB newDb(Args a, org.apache.htrace.core.Tracer tracer)
        throws site.ycsb.UnknownDBException {
        site.ycsb.DB d = site.ycsb.DBFactory.newDB(a.db, a.props, tracer);
        if (d == null) {
            throw new IllegalArgumentException("cannot load the YCSB binding " + a.db);
        }
        return d;
    }

    private static org.apache.htrace.core.Tracer tracer() {
        return new org.apache.htrace.core.Tracer.Builder("YCSB " + YcsbChildMain.class.getSimpleName())
            .conf(org.apache.htrace.core.HTraceConfiguration.EMPTY).build();
    }

    /** Drops YCSB's measurements singleton, so the next run records into new histograms. */
    private static void resetMeasurements() throws ReflectiveOperationException {
        java.lang.reflect.Field singleton = site.ycsb.measurements.Measurements.class.getDeclaredField("singleton");
        singleton.setAccessible(true);
        singleton.set(null, null);
    }

    private static double cpuSeconds() {
        if (java.lang.management.ManagementFactory.getOperatingSystemMXBean()
            instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getProcessCpuTime() / 1e9;
        }
        return Double.NaN;
    }

    /**
     * Runs the workload's transactions (YCSB's {@code -t}) on one thread, unmeasured, for at least {@code seconds} and
     * then until the JIT is quiet or {@code maxSeconds} have passed.
     */
    static void warmUp(Args a, double seconds, double maxSeconds) throws Exception {
        Properties p = a.props;
        site.ycsb.measurements.Measurements.setProperties(p);
        // the wrapper YCSB's client puts around the binding: its timing and recording are on the measured path too
        site.ycsb.DB d = newDb(a, tracer());
        d.init();
        site.ycsb.Workload w = (site.ycsb.Workload) Class.forName(p.getProperty("workload"))
            .getDeclaredConstructor().newInstance();
        w.init(p);
        Object state = w.initThread(p, 0, 1);
        java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory.getCompilationMXBean();
        boolean jitTimed = jit != null && jit.isCompilationTimeMonitoringSupported();
        long start = System.nanoTime();
        long minEnd = start + (long) (seconds * 1e9);
        long maxEnd = start + (long) (maxSeconds * 1e9);
        long windowStart = start;
        long windowJitMs = jitTimed ? jit.getTotalCompilationTime() : 0;
        long startJitMs = windowJitMs;
        int quietWindows = 0;
        long now = start;
        while (now - maxEnd < 0 && w.doTransaction(d, state)) {
            now = System.nanoTime();
            if (now - windowStart >= WINDOW_NS) {
                long jitMs = jitTimed ? jit.getTotalCompilationTime() : windowJitMs;
                boolean quiet = (jitMs - windowJitMs) * 1e6 < QUIET_JIT_SHARE * (now - windowStart);
                quietWindows = quiet ? quietWindows + 1 : 0;
                if (now - minEnd >= 0 && (quietWindows >= QUIET_WINDOWS || !jitTimed)) {
                    break;
                }
                windowStart = now;
                windowJitMs = jitMs;
            }
        }
        System.err.printf("WARM_SECONDS %.2f JIT_MS %d%n", (System.nanoTime() - start) / 1e9,
            (jitTimed ? jit.getTotalCompilationTime() : startJitMs) - startJitMs);
        w.cleanup();
        d.cleanup();
        // what the warm-up recorded must not reach the measured run's summary
        resetMeasurements();
    }
}
