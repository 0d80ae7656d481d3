package io.rdmastore.bench;

import io.rdmastore.bench.ycsb.YcsbChildMain;
import io.rdmastore.bench.ycsb.YcsbRdmaStoreDb;
import io.rdmastore.bench.ycsb.YcsbRedisDb;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * YCSB core workloads A, B, C, D and F, run by YCSB's own {@code site.ycsb.Client} (one child JVM per phase, through
 * {@link YcsbChildMain}) against rdmastore over ucx, rdmastore over tcp, and redis-server, each on its own fresh server.
 * Per system: one load phase, then A, B, C, F and D (D last: it inserts). Workload E (scans) is skipped with the reason
 * printed: rdmastore has no ordered ranges. Any failed operation fails the experiment. Single-threaded driver.
 */
public final class YcsbWorkloads implements Experiment {
    /** YCSB's core workload files, as properties (the files are not in site.ycsb:core). */
    static final Map<String, String> WORKLOADS = new LinkedHashMap<>();

    static {
        WORKLOADS.put("A", "readproportion=0.5 updateproportion=0.5 requestdistribution=zipfian");
        WORKLOADS.put("B", "readproportion=0.95 updateproportion=0.05 requestdistribution=zipfian");
        WORKLOADS.put("C", "readproportion=1.0 updateproportion=0 requestdistribution=zipfian");
        WORKLOADS.put("F", "readproportion=0.5 updateproportion=0 readmodifywriteproportion=0.5"
            + " requestdistribution=zipfian");
        WORKLOADS.put("D", "readproportion=0.95 updateproportion=0 insertproportion=0.05 requestdistribution=latest");
    }

    static final String[] SYSTEMS = {"rdmastore-ucx", "rdmastore-tcp", "redis"};
    private static final long PHASE_TIMEOUT_S = 120;
    private static final long RUN_SECONDS = 8;
    /** A child's warm-up goes on while its JIT is busy, up to this many times the minimum (YcsbChildMain). */
    private static final double WARM_MAX_FACTOR = 5;

    @Override
    public String id() {
        return "YCSB";
    }

    @Override
    public String title() {
        return "YCSB core workloads A, B, C, D, F (site.ycsb.Client) on rdmastore ucx, tcp and Redis; E unsupported";
    }

    /**
     * Parsed summary of one YCSB phase. {@code clientCpuS} is the child JVM's CPU over the measured run (its whole life
     * when it had no warm-up); {@code serverCpuS} the server's over the measured run (NaN where not taken).
     */
    record Phase(double opsPerS, double p50Us, double p99Us, long operations, long failed, double clientCpuS,
                 String failures, double serverCpuS) {
        Phase(double opsPerS, double p50Us, double p99Us, long operations, long failed, double clientCpuS,
              String failures) {
            this(opsPerS, p50Us, p99Us, operations, failed, clientCpuS, failures, Double.NaN);
        }

        Phase withServerCpu(double s) {
            return new Phase(opsPerS, p50Us, p99Us, operations, failed, clientCpuS, failures, s);
        }
    }

    @Override
    public void run(boolean quick, Report report) throws Exception {
        run(BenchOptions.defaults(quick), report);
    }

    /** A cell's key: system, persistence pairing, CPU mode, workload. */
    static String key(String system, String persistence, String mode, String workload) {
        return system + "/" + persistence + "/" + mode + "/" + workload;
    }

    @Override
    public void run(BenchOptions options, Report report) throws Exception {
        boolean quick = options.quick();
        int records = quick ? 200 : 5_000;
        // YCSB's maxexecutiontime is whole seconds
        int measureS = (int) Math.max(1, Math.round(options.measureNanos(2_000_000_000L, 1_000_000_000L) / 1e9));
        double warmS = options.warmNanos(1_000_000_000L, 500_000_000L) / 1e9;
        double warmMaxS = WARM_MAX_FACTOR * warmS;
        int threads = Integer.getInteger("rdmastore.bench.ycsb.threads", 1);
        System.out.println("YCSB: workload E skipped: " + YcsbRdmaStoreDb.SCAN_UNSUPPORTED);
        // --quick: read, update and insert paths only (A and D), to keep the CI smoke run short
        List<String> workloads = quick ? List.of("A", "D") : new ArrayList<>(WORKLOADS.keySet());
        String only = System.getProperty("rdmastore.bench.ycsb.workloads", "").trim();
        if (!only.isEmpty()) {
            workloads = new ArrayList<>();
            for (String w : only.split(",")) {
                if (!WORKLOADS.containsKey(w.trim())) {
                    throw new IllegalArgumentException("rdmastore.bench.ycsb.workloads: unknown workload " + w
                        + " (known: " + String.join(", ", WORKLOADS.keySet()) + ")");
                }
                workloads.add(w.trim());
            }
        }
        List<String> systems = List.of(System.getProperty("rdmastore.bench.ycsb.systems", String.join(",", SYSTEMS))
            .split(","));
        for (String s : systems) {
            if (!List.of(SYSTEMS).contains(s)) {
                throw new IllegalArgumentException("rdmastore.bench.ycsb.systems: unknown system " + s + " (known: "
                    + String.join(", ", SYSTEMS) + ")");
            }
        }
        // One unmeasured pass of every workload per fresh server before the measured ones: on two cores a spinning
        // server and client starve the server's JIT, and its first repeats read 3-10x lower (A: 11k, 36k, 34k, 112k,
        // 92k ops/s in five repeats on one server). 0 skips it.
        int serverWarmS = quick ? 0 : Integer.getInteger("rdmastore.bench.ycsb.serverWarmup", measureS);
        Progress progress = new Progress("YCSB", options.persistence().size() * systems.size()
            * (1 + (serverWarmS > 0 ? workloads.size() : 0) + options.cpuModes().size() * options.repeats()
            * workloads.size()));
        Map<String, List<Phase>> results = new LinkedHashMap<>();
        Map<String, String> mechanisms = new LinkedHashMap<>();
        List<String> errors = new ArrayList<>();
        for (BenchOptions.Persistence pairing : options.persistence()) {
            for (String system : systems) {
                AutoCloseable server;
                List<String> dbArgs = new ArrayList<>();
                java.util.function.DoubleSupplier serverCpu;
                if (system.equals("redis")) {
                    RedisServer redis = RedisServer.start(pairing);
                    server = redis;
                    serverCpu = redis::cpuSeconds;
                    dbArgs.addAll(List.of("-db", YcsbRedisDb.class.getName(), "-p", "redis.port=" + redis.port()));
                } else {
                    String transport = system.equals("rdmastore-ucx") ? "ucx" : "tcp";
                    List<String> args = new ArrayList<>(transport.equals("ucx")
                        ? List.of("--transport", "auto", "--ucx-idle", "spin") : List.of("--transport", "tcp"));
                    args.addAll(pairing.serverArgs());
                    ServerProcess p = ServerProcess.start(args.toArray(new String[0]));
                    server = p;
                    serverCpu = p::cpuSeconds;
                    dbArgs.addAll(List.of("-db", YcsbRdmaStoreDb.class.getName(), "-p",
                        "rdmastore.uri=" + p.uri(transport), "-p", "rdmastore.transport=" + transport));
                }
                try (server) {
                    Phase load = phase(true, "C", records, records, threads, dbArgs);
                    progress.step(system + " load");
                    check(system, "load", load, errors);
                    if (serverWarmS > 0) {
                        for (String w : workloads) {
                            // for the server's JIT: the client's own warm-up comes with each measured cell
                            Phase warm = phase(w, records, 0, serverWarmS, threads, dbArgs, () -> Double.NaN);
                            check(system, w + " (server warm-up)", warm, errors);
                            progress.step(system + " warm-up " + w);
                        }
                    }
                    for (CpuState.Mode mode : options.cpuModes()) {
                        for (String w : workloads) {
                            List<Phase> ps;
                            try (CpuState.Guard g = CpuState.enter(mode, (long) ((warmMaxS + options.repeats()
                                * (measureS + 1) + PHASE_TIMEOUT_S) * 1e9))) {
                                mechanisms.put(mode.label(), g.mechanism());
                                ps = phases(w, records, warmS, measureS, options.repeats(), threads, dbArgs,
                                    serverCpu);
                            }
                            for (int r = 0; r < ps.size(); r++) {
                                Phase p = ps.get(r);
                                results.computeIfAbsent(key(system, pairing.label(), mode.label(), w),
                                    k -> new ArrayList<>()).add(p);
                                check(system, w, p, errors);
                                System.err.printf("%nYCSB %s %s %s window %d: %,.0f ops/s, p50 %.0f us, p99 %.0f us%n",
                                    system, mode.label(), w, r + 1, p.opsPerS(), p.p50Us(), p.p99Us());
                                progress.step(system + " " + mode.label() + " " + w);
                            }
                        }
                    }
                }
            }
        }
        progress.done();
        report(options, workloads, records, warmS, warmMaxS, measureS, serverWarmS, threads, results, mechanisms,
            report);
        if (!errors.isEmpty()) {
            throw new IllegalStateException("YCSB: failed operations: " + String.join("; ", errors));
        }
    }

    private static Spread spread(Map<String, List<Phase>> results, String key,
                                 java.util.function.ToDoubleFunction<Phase> f) {
        List<Phase> ps = results.get(key);
        return ps == null ? Spread.of() : Spread.of(ps.stream().mapToDouble(f).toArray());
    }

    private static void report(BenchOptions options, List<String> workloads, int records, double warmS,
                               double warmMaxS, int measureS, int serverWarmS,
                               int threads, Map<String, List<Phase>> results, Map<String, String> mechanisms,
                               Report report) {
        List<Row> rows = new ArrayList<>();
        for (String metric : List.of("ops_per_s", "p50_us", "p99_us")) {
            for (Map.Entry<String, List<Phase>> e : results.entrySet()) {
                String[] k = e.getKey().split("/");
                java.util.function.ToDoubleFunction<Phase> f = switch (metric) {
                    case "ops_per_s" -> Phase::opsPerS;
                    case "p50_us" -> Phase::p50Us;
                    default -> Phase::p99Us;
                };
                rows.add(spread(results, e.getKey(), f).row("YCSB", k[0], "workload-" + k[3],
                    workloads.indexOf(k[3]), threads, metric, Row.Tags.of(k[2], k[1], null)));
            }
        }
        List<String> header = List.of("persistence", "cpu", "workload", "system", "ops/s", "p50 us", "p99 us",
            "operations", "failed", "vs redis");
        List<List<String>> body = new ArrayList<>();
        List<String> cpuHeader = List.of("persistence", "cpu", "system", "server CPU s", "client CPU s", "operations",
            "server CPU s / M ops", "client CPU s / M ops", "ops/s vs redis (geomean)");
        List<List<String>> cpuBody = new ArrayList<>();
        for (BenchOptions.Persistence pairing : options.persistence()) {
            String pl = pairing.label();
            for (CpuState.Mode mode : options.cpuModes()) {
                String ml = mode.label();
                for (String w : workloads) {
                    Spread redis = spread(results, key("redis", pl, ml, w), Phase::opsPerS);
                    for (String system : SYSTEMS) {
                        String k = key(system, pl, ml, w);
                        List<Phase> ps = results.get(k);
                        if (ps == null) {
                            continue;
                        }
                        Spread ops = spread(results, k, Phase::opsPerS);
                        body.add(List.of(pl, ml, w, system, ops.format(E1RoundTrips::fmt),
                            num(spread(results, k, Phase::p50Us).median()),
                            num(spread(results, k, Phase::p99Us).median()),
                            Long.toString(ps.stream().mapToLong(Phase::operations).sum()),
                            Long.toString(ps.stream().mapToLong(Phase::failed).sum()),
                            redis.n() == 0 ? "-" : E1RoundTrips.ratio(ops.median(), redis.median())));
                    }
                }
                for (String system : SYSTEMS) {
                    double server = 0;
                    double client = 0;
                    long ops = 0;
                    double logSum = 0;
                    int n = 0;
                    for (String w : workloads) {
                        List<Phase> ps = results.getOrDefault(key(system, pl, ml, w), List.of());
                        for (Phase p : ps) {
                            server += p.serverCpuS();
                            client += p.clientCpuS();
                            ops += p.operations();
                        }
                        Spread a = spread(results, key(system, pl, ml, w), Phase::opsPerS);
                        Spread b = spread(results, key("redis", pl, ml, w), Phase::opsPerS);
                        if (a.n() > 0 && b.n() > 0) {
                            logSum += Math.log(a.median() / b.median());
                            n++;
                        }
                    }
                    if (ops == 0) {
                        continue;
                    }
                    Row.Tags tags = Row.Tags.of(ml, pl, null);
                    rows.add(new Row("YCSB", system, "all", 0, threads, "server_cpu_s", server).with(tags));
                    rows.add(new Row("YCSB", system, "all", 0, threads, "client_cpu_s", client).with(tags));
                    rows.add(new Row("YCSB", system, "all", 0, threads, "server_cpu_s_per_mop", server / ops * 1e6)
                        .with(tags));
                    cpuBody.add(List.of(pl, ml, system, num(server), num(client), Long.toString(ops),
                        num(server / ops * 1e6), num(client / ops * 1e6),
                        n == 0 ? "-" : String.format(Locale.ROOT, "%.2fx", Math.exp(logSum / n))));
                }
            }
        }
        String notes = String.format(Locale.ROOT, "YCSB 0.17.0 (its ClientThread, CoreWorkload, measurements and "
                + "text summary), %d records of 10 fields x 100 B stored as hashes, %d client thread(s). Each workload "
                + "runs per CPU mode in a YCSB JVM of its own: first the same workload's transactions in that JVM, "
                + "unmeasured, for at least %.1f s and on while its JIT compiles (until two quarter seconds in a row "
                + "in which the compilers worked under 2%% of the time, at most %.1f s: a spinning client and server "
                + "on two cores leave the compiler threads little CPU, and a 1 s warm-up left the ucx client "
                + "compiling for 3 s more); then %d measured runs of %d s each in that warm JVM, each as YCSB's "
                + "client makes one (fresh connections, workload and measurements; maxexecutiontime, operationcount "
                + "unbounded), against the same server process, %s; ops/s is the median with the range (min-max) "
                + "of the runs, ratios are of medians. CPU modes: %s. Persistence pairings: %s. The ucx "
                + "server runs --ucx-idle spin. Workload E skipped: %s. CPU is over the measured runs only: the "
                + "server's from /proc between the child's start of a run and its summary, the client's the YCSB "
                + "JVM's CPU over the same run (its summary export included).%n%nCPU cost:%n%n%s",
            records, threads, warmS, warmMaxS, options.repeats(), measureS,
            serverWarmS > 0 ? "which first ran every workload once, unmeasured (" + serverWarmS + " s each in a "
                + "fresh YCSB JVM; -Drdmastore.bench.ycsb.serverWarmup=0 skips it)"
                : "without an unmeasured pass first",
            E2Latency.describe(options.cpuModes(), mechanisms),
            String.join("; ", options.persistence().stream().map(p -> p.label() + " = " + p.describe()).toList()),
            YcsbRdmaStoreDb.SCAN_UNSUPPORTED, Report.table(cpuHeader, cpuBody));
        System.out.println();
        System.out.print(Report.plain(header, body));
        System.out.print(Report.plain(cpuHeader, cpuBody));
        report.add("YCSB", "YCSB core workloads (ops/s; failed must be 0)", Report.table(header, body), notes, rows);
    }

    private static void check(String system, String workload, Phase p, List<String> errors) {
        if (p.failed() > 0 || p.operations() == 0) {
            errors.add(system + " " + workload + ": " + p.failed() + " failed of " + p.operations() + " "
                + p.failures());
        }
    }

    static String num(double v) {
        return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, v >= 100 ? "%.0f" : "%.2f", v);
    }

    /** Runs one YCSB load in a child JVM (no warm-up) and parses its summary. */
    static Phase phase(boolean load, String workload, int records, int operations, int threads, List<String> dbArgs)
        throws IOException, InterruptedException {
        return run(load, workload, records, operations, 0, 0, load ? PHASE_TIMEOUT_S - 30 : RUN_SECONDS, threads,
            dbArgs, () -> Double.NaN).getFirst();
    }

    /**
     * Runs one workload in a child JVM: at least {@code warmS} seconds unmeasured (on while its JIT is busy), then
     * {@code measureS} seconds measured; the server's CPU ({@code serverCpu}) is read as the child starts measuring
     * and as it prints its summary.
     */
    static Phase phase(String workload, int records, double warmS, int measureS, int threads, List<String> dbArgs,
                       java.util.function.DoubleSupplier serverCpu) throws IOException, InterruptedException {
        return phases(workload, records, warmS, measureS, 1, threads, dbArgs, serverCpu).getFirst();
    }

    /**
     * Runs one workload in a child JVM: the warm-up of {@link #phase}, then {@code windows} measured runs of
     * {@code measureS} seconds one after the other in that JVM, each on fresh connections, a phase each.
     */
    static List<Phase> phases(String workload, int records, double warmS, int measureS, int windows, int threads,
                              List<String> dbArgs, java.util.function.DoubleSupplier serverCpu)
        throws IOException, InterruptedException {
        return run(false, workload, records, Integer.MAX_VALUE, warmS, windows, measureS, threads, dbArgs, serverCpu);
    }

    private static List<Phase> run(boolean load, String workload, int records, int operations, double warmS,
                                   int windows, long maxSeconds, int threads, List<String> dbArgs,
                                   java.util.function.DoubleSupplier serverCpu)
        throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("--sun-misc-unsafe-memory-access=allow");
        cmd.add("-Xmx512m");
        // the transport's switches (-Drdmastore.tcp.callerReads=false ...) reach the client under test
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("rdmastore.tcp.") || name.startsWith("rdmastore.ucx.")) {
                cmd.add("-D" + name + "=" + System.getProperty(name));
            }
        }
        // JVM options for every YCSB child, space-separated (e.g. to profile one)
        String jvm = System.getProperty("rdmastore.bench.childJvmArgs", "").trim();
        if (!jvm.isEmpty()) {
            cmd.addAll(List.of(jvm.split("\\s+")));
        }
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(YcsbChildMain.class.getName());
        if (warmS > 0) {
            cmd.addAll(List.of("--warmup-seconds", Double.toString(warmS), "--warmup-max-seconds",
                Double.toString(WARM_MAX_FACTOR * warmS)));
        }
        if (windows > 0) {
            cmd.addAll(List.of("--windows", Integer.toString(windows)));
        }
        cmd.add(load ? "-load" : "-t");
        cmd.addAll(dbArgs);
        cmd.addAll(List.of("-threads", Integer.toString(threads)));
        List<String> props = new ArrayList<>(List.of("workload=site.ycsb.workloads.CoreWorkload",
            "recordcount=" + records, "operationcount=" + operations, "readallfields=true",
            "hdrhistogram.percentiles=50,99",
            // runs stop at whichever comes first, the count or the time, so a full YCSB stays near 3 minutes
            "maxexecutiontime=" + maxSeconds));
        props.addAll(List.of(WORKLOADS.get(workload).split(" ")));
        for (String p : props) {
            cmd.add("-p");
            cmd.add(p);
        }
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("UCX_ERROR_SIGNALS", "");
        Process proc = pb.start();
        List<String> out = new ArrayList<>();
        // the server's CPU as each measured run starts and as it prints its summary
        List<double[]> cpuMarks = new ArrayList<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(proc.getInputStream(),
                StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.equals("MEASURE_START")) {
                        cpuMarks.add(new double[] {serverCpu.getAsDouble(), Double.NaN});
                    } else if (line.startsWith("[OVERALL], RunTime") && !cpuMarks.isEmpty()
                        && Double.isNaN(cpuMarks.getLast()[1])) {
                        cpuMarks.getLast()[1] = serverCpu.getAsDouble();
                    }
                    synchronized (out) {
                        out.add(line);
                    }
                }
            } catch (IOException ignored) {
                // the child is gone; what was read is parsed
            }
        }, "ycsb-out");
        reader.setDaemon(true);
        reader.start();
        long timeoutS = PHASE_TIMEOUT_S + (long) (WARM_MAX_FACTOR * warmS) + (long) windows * (maxSeconds + 1);
        String what = load ? "load" : "workload " + workload;
        if (!proc.waitFor(timeoutS, TimeUnit.SECONDS)) {
            proc.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new IllegalStateException("YCSB " + what + " did not finish in " + timeoutS + " s");
        }
        reader.join(10_000);
        List<String> lines;
        synchronized (out) {
            lines = List.copyOf(out);
        }
        if (proc.exitValue() != 0) {
            throw new IllegalStateException("YCSB " + what + " exited with " + proc.exitValue() + ":\n" + tail(lines));
        }
        List<List<String>> runs = splitRuns(lines, windows);
        List<Phase> phases = new ArrayList<>();
        for (int i = 0; i < runs.size(); i++) {
            double[] marks = i < cpuMarks.size() ? cpuMarks.get(i) : new double[] {Double.NaN, Double.NaN};
            Phase phase = parse(runs.get(i), load ? "INSERT" : "READ").withServerCpu(marks[1] - marks[0]);
            if (phase.operations() == 0) {
                throw new IllegalStateException("YCSB " + what + " completed no operation:\n" + tail(runs.get(i)));
            }
            phases.add(phase);
        }
        return phases;
    }

    /**
     * A child's output cut into its measured runs: with {@code windows} > 0, each from its {@code MEASURE_START} to
     * the next (the warm-up's lines before the first are dropped), exactly {@code windows} of them; else all of it.
     */
    static List<List<String>> splitRuns(List<String> lines, int windows) {
        if (windows == 0) {
            return List.of(lines);
        }
        List<List<String>> runs = new ArrayList<>();
        for (String line : lines) {
            if (line.equals("MEASURE_START")) {
                runs.add(new ArrayList<>());
            } else if (!runs.isEmpty()) {
                runs.getLast().add(line);
            }
        }
        if (runs.size() != windows) {
            throw new IllegalStateException("YCSB printed " + runs.size() + " measured runs, not " + windows + ":\n"
                + tail(lines));
        }
        return runs;
    }

    private static String tail(List<String> lines) {
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 25), lines.size()));
    }

    /** Parses YCSB's text summary; latency percentiles come from {@code latencyOp} (READ in runs, INSERT in loads). */
    static Phase parse(List<String> lines, String latencyOp) {
        double ops = Double.NaN;
        double p50 = Double.NaN;
        double p99 = Double.NaN;
        double cpu = Double.NaN;
        double warmCpu = 0;
        long operations = 0;
        long failed = 0;
        StringBuilder failures = new StringBuilder();
        for (String line : lines) {
            if (line.startsWith("CPU_SECONDS ")) {
                cpu = Double.parseDouble(line.substring(12).trim());
                continue;
            }
            if (line.startsWith("WARM_CPU_SECONDS ")) {
                warmCpu = Double.parseDouble(line.substring(17).trim());
                continue;
            }
            if (!line.startsWith("[")) {
                continue;
            }
            String[] f = line.split(",\\s*");
            if (f.length != 3) {
                continue;
            }
            String op = f[0].substring(1, f[0].length() - 1);
            String what = f[1];
            String value = f[2].trim();
            if (op.equals("OVERALL") && what.equals("Throughput(ops/sec)")) {
                ops = Double.parseDouble(value);
            } else if (op.equals(latencyOp) && what.equals("50thPercentileLatency(us)")) {
                p50 = Double.parseDouble(value);
            } else if (op.equals(latencyOp) && what.equals("99thPercentileLatency(us)")) {
                p99 = Double.parseDouble(value);
            } else if (what.startsWith("Return=") && !op.equals("CLEANUP")) {
                long n = Long.parseLong(value);
                if (what.equals("Return=OK")) {
                    operations += n;
                } else {
                    operations += n;
                    failed += n;
                    failures.append(op).append(' ').append(what).append(' ').append(n).append(' ');
                }
            } else if (op.endsWith("-FAILED") && what.equals("Operations")) {
                failures.append(op).append(' ').append(value).append(' ');
            }
        }
        if (Double.isNaN(ops)) {
            throw new IllegalStateException("YCSB printed no throughput:\n" + tail(lines));
        }
        return new Phase(ops, p50, p99, operations, failed, cpu - warmCpu, failures.toString().trim());
    }
}
