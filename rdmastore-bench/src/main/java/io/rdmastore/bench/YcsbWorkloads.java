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

    @Override
    public String id() {
        return "YCSB";
    }

    @Override
    public String title() {
        return "YCSB core workloads A, B, C, D, F (site.ycsb.Client) on rdmastore ucx, tcp and Redis; E unsupported";
    }

    /** Parsed summary of one YCSB phase. */
    record Phase(double opsPerS, double p50Us, double p99Us, long operations, long failed, double clientCpuS,
                 String failures) {
    }

    @Override
    public void run(boolean quick, Report report) throws Exception {
        int records = quick ? 200 : 5_000;
        int operations = quick ? 400 : 100_000;
        int threads = Integer.getInteger("rdmastore.bench.ycsb.threads", 1);
        System.out.println("YCSB: workload E skipped: " + YcsbRdmaStoreDb.SCAN_UNSUPPORTED);
        // --quick: read, update and insert paths only (A and D), to keep the CI smoke run short
        List<String> workloads = quick ? List.of("A", "D") : new ArrayList<>(WORKLOADS.keySet());
        Progress progress = new Progress("YCSB", SYSTEMS.length * (workloads.size() + 1));
        List<Row> rows = new ArrayList<>();
        Map<String, Phase> results = new LinkedHashMap<>();
        Map<String, double[]> cpu = new LinkedHashMap<>();
        List<String> errors = new ArrayList<>();
        for (String system : SYSTEMS) {
            AutoCloseable server;
            List<String> dbArgs = new ArrayList<>();
            java.util.function.DoubleSupplier serverCpu;
            if (system.equals("redis")) {
                RedisServer redis = RedisServer.start();
                server = redis;
                serverCpu = redis::cpuSeconds;
                dbArgs.addAll(List.of("-db", YcsbRedisDb.class.getName(), "-p", "redis.port=" + redis.port()));
            } else {
                String transport = system.equals("rdmastore-ucx") ? "ucx" : "tcp";
                ServerProcess p = transport.equals("ucx")
                    ? ServerProcess.start("--transport", "auto", "--ucx-idle", "spin", "--fsync", "everysec")
                    : ServerProcess.start("--transport", "tcp", "--fsync", "everysec");
                server = p;
                serverCpu = p::cpuSeconds;
                dbArgs.addAll(List.of("-db", YcsbRdmaStoreDb.class.getName(), "-p", "rdmastore.uri=" + p.uri(transport),
                    "-p", "rdmastore.transport=" + transport));
            }
            try (server) {
                double serverStart = serverCpu.getAsDouble();
                double clientCpu = 0;
                long ops = 0;
                Phase load = phase(true, "C", records, records, threads, dbArgs);
                clientCpu += load.clientCpuS();
                progress.step(system + " load");
                check(system, "load", load, errors);
                for (String w : workloads) {
                    Phase p = phase(false, w, records, operations, threads, dbArgs);
                    results.put(system + "/" + w, p);
                    clientCpu += p.clientCpuS();
                    ops += p.operations();
                    check(system, w, p, errors);
                    progress.step(system + " " + w);
                    int idx = workloads.indexOf(w);
                    rows.add(new Row("YCSB", system, "workload-" + w, idx, threads, "ops_per_s", p.opsPerS()));
                }
                double s = serverCpu.getAsDouble() - serverStart;
                cpu.put(system, new double[] {s, clientCpu, ops});
            }
        }
        progress.done();
        for (String w : workloads) {
            for (String system : SYSTEMS) {
                Phase p = results.get(system + "/" + w);
                if (p != null) {
                    rows.add(new Row("YCSB", system, "workload-" + w, workloads.indexOf(w), threads, "p50_us", p.p50Us()));
                    rows.add(new Row("YCSB", system, "workload-" + w, workloads.indexOf(w), threads, "p99_us", p.p99Us()));
                }
            }
        }
        for (Map.Entry<String, double[]> e : cpu.entrySet()) {
            double[] c = e.getValue();
            rows.add(new Row("YCSB", e.getKey(), "all", 0, threads, "server_cpu_s", c[0]));
            rows.add(new Row("YCSB", e.getKey(), "all", 0, threads, "client_cpu_s", c[1]));
            rows.add(new Row("YCSB", e.getKey(), "all", 0, threads, "server_cpu_s_per_mop", c[0] / c[2] * 1e6));
        }
        List<String> header = List.of("workload", "system", "ops/s", "p50 us", "p99 us", "operations", "failed",
            "vs redis");
        List<List<String>> body = new ArrayList<>();
        for (String w : workloads) {
            Phase redis = results.get("redis/" + w);
            for (String system : SYSTEMS) {
                Phase p = results.get(system + "/" + w);
                if (p != null) {
                    body.add(List.of(w, system, E1RoundTrips.fmt(p.opsPerS()), num(p.p50Us()), num(p.p99Us()),
                        Long.toString(p.operations()), Long.toString(p.failed()),
                        redis == null ? "-" : E1RoundTrips.ratio(p.opsPerS(), redis.opsPerS())));
                }
            }
        }
        List<String> cpuHeader = List.of("system", "server CPU s", "client CPU s", "operations",
            "server CPU s / M ops", "client CPU s / M ops");
        List<List<String>> cpuBody = new ArrayList<>();
        for (Map.Entry<String, double[]> e : cpu.entrySet()) {
            double[] c = e.getValue();
            cpuBody.add(List.of(e.getKey(), num(c[0]), num(c[1]), String.format(Locale.ROOT, "%.0f", c[2]),
                num(c[0] / c[2] * 1e6), num(c[1] / c[2] * 1e6)));
        }
        String notes = String.format(Locale.ROOT, "YCSB 0.17.0 site.ycsb.Client, CoreWorkload, %d records of 10 fields x"
                + " 100 B stored as hashes, up to %d operations or %d s per workload, %d client thread(s), each system on its own"
                + " fresh server (rdmastore with --fsync everysec; ucx server --ucx-idle spin; Redis without"
                + " persistence). Workload E skipped: %s. Client CPU is each YCSB JVM's whole life (start-up and JIT"
                + " included), so compare it between systems, not to the server's.%n%nCPU cost:%n%n%s", records,
            operations, RUN_SECONDS, threads, YcsbRdmaStoreDb.SCAN_UNSUPPORTED, Report.table(cpuHeader, cpuBody));
        System.out.println();
        System.out.print(Report.plain(header, body));
        System.out.print(Report.plain(cpuHeader, cpuBody));
        report.add("YCSB", "YCSB core workloads (ops/s; failed must be 0)", Report.table(header, body), notes, rows);
        if (!errors.isEmpty()) {
            throw new IllegalStateException("YCSB: failed operations: " + String.join("; ", errors));
        }
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

    /** Runs one YCSB phase in a child JVM and parses its summary. */
    static Phase phase(boolean load, String workload, int records, int operations, int threads, List<String> dbArgs)
        throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("--sun-misc-unsafe-memory-access=allow");
        cmd.add("-Xmx512m");
        cmd.add("-XX:TieredStopAtLevel=" + (operations < 5000 ? "1" : "4"));
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(YcsbChildMain.class.getName());
        cmd.add(load ? "-load" : "-t");
        cmd.addAll(dbArgs);
        cmd.addAll(List.of("-threads", Integer.toString(threads)));
        List<String> props = new ArrayList<>(List.of("workload=site.ycsb.workloads.CoreWorkload",
            "recordcount=" + records, "operationcount=" + operations, "readallfields=true",
            "hdrhistogram.percentiles=50,99",
            // runs stop at whichever comes first, the count or the time, so a full YCSB stays near 3 minutes
            "maxexecutiontime=" + (load ? PHASE_TIMEOUT_S - 30 : RUN_SECONDS)));
        props.addAll(List.of(WORKLOADS.get(workload).split(" ")));
        for (String p : props) {
            cmd.add("-p");
            cmd.add(p);
        }
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("UCX_ERROR_SIGNALS", "");
        Process proc = pb.start();
        List<String> out = new ArrayList<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(proc.getInputStream(),
                StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
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
        if (!proc.waitFor(PHASE_TIMEOUT_S, TimeUnit.SECONDS)) {
            proc.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new IllegalStateException("YCSB " + (load ? "load" : "workload " + workload) + " did not finish in "
                + PHASE_TIMEOUT_S + " s");
        }
        reader.join(10_000);
        List<String> lines;
        synchronized (out) {
            lines = List.copyOf(out);
        }
        if (proc.exitValue() != 0) {
            throw new IllegalStateException("YCSB " + (load ? "load" : "workload " + workload) + " exited with "
                + proc.exitValue() + ":\n" + tail(lines));
        }
        Phase phase = parse(lines, load ? "INSERT" : "READ");
        if (phase.operations() == 0) {
            throw new IllegalStateException("YCSB " + (load ? "load" : "workload " + workload) + " completed no"
                + " operation:\n" + tail(lines));
        }
        return phase;
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
        long operations = 0;
        long failed = 0;
        StringBuilder failures = new StringBuilder();
        for (String line : lines) {
            if (line.startsWith("CPU_SECONDS ")) {
                cpu = Double.parseDouble(line.substring(12).trim());
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
        return new Phase(ops, p50, p99, operations, failed, cpu, failures.toString().trim());
    }
}
