package io.rdmastore.bench.ycsb;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;

/**
 * Runs YCSB's own {@code site.ycsb.Client} with the given arguments in this JVM and, as the JVM exits (the client
 * calls {@code System.exit}), prints {@code CPU_SECONDS <s>} with this JVM's total CPU time, so the benchmark can
 * charge the clients' CPU next to the server's. Started by the benchmark as a child process; single-threaded entry.
 *
 * <p>{@code --warmup-seconds S} before YCSB's arguments first runs the same workload's transactions for S seconds in
 * this JVM on a connection of its own, unmeasured (YCSB's measurements are reset afterwards), so the measured run
 * finds the JIT warm; it then prints {@code WARM_CPU_SECONDS <s>} and {@code MEASURE_START} before handing over to
 * YCSB's client.
 */
public final class YcsbChildMain {
    private YcsbChildMain() {
    }

    public static void main(String[] args) throws Exception {
        double warm = 0;
        if (args.length >= 2 && args[0].equals("--warmup-seconds")) {
            warm = Double.parseDouble(args[1]);
            args = Arrays.copyOfRange(args, 2, args.length);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // stderr: YCSB's text exporter closes System.out when it finishes
            System.err.println("CPU_SECONDS " + cpuSeconds());
            System.err.flush();
        }, "ycsb-cpu"));
        if (warm > 0) {
            warmUp(args, warm);
            System.err.println("WARM_CPU_SECONDS " + cpuSeconds());
        }
        System.err.println("MEASURE_START");
        System.err.flush();
        site.ycsb.Client.main(args);
    }

    private static double cpuSeconds() {
        if (java.lang.management.ManagementFactory.getOperatingSystemMXBean()
            instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getProcessCpuTime() / 1e9;
        }
        return Double.NaN;
    }

    /** Runs the workload's transactions (YCSB's {@code -t}) for {@code seconds} on one thread, unmeasured. */
    static void warmUp(String[] args, double seconds) throws Exception {
        Properties p = new Properties();
        String db = null;
        List<String> rest = new ArrayList<>(List.of(args));
        for (int i = 0; i + 1 < rest.size(); i++) {
            if (rest.get(i).equals("-p")) {
                String kv = rest.get(++i);
                int eq = kv.indexOf('=');
                p.setProperty(kv.substring(0, eq), kv.substring(eq + 1));
            } else if (rest.get(i).equals("-db")) {
                db = rest.get(++i);
            }
        }
        if (db == null || !rest.contains("-t")) {
            return;
        }
        site.ycsb.measurements.Measurements.setProperties(p);
        site.ycsb.DB d = (site.ycsb.DB) Class.forName(db).getDeclaredConstructor().newInstance();
        d.setProperties(p);
        d.init();
        site.ycsb.Workload w = (site.ycsb.Workload) Class.forName(p.getProperty("workload"))
            .getDeclaredConstructor().newInstance();
        w.init(p);
        Object state = w.initThread(p, 0, 1);
        long end = System.nanoTime() + (long) (seconds * 1e9);
        while (System.nanoTime() - end < 0 && w.doTransaction(d, state)) {
            // warming up: nothing is recorded
        }
        w.cleanup();
        d.cleanup();
        // what the workload recorded (read-modify-write timings) must not reach the measured run's summary
        java.lang.reflect.Field singleton = site.ycsb.measurements.Measurements.class.getDeclaredField("singleton");
        singleton.setAccessible(true);
        singleton.set(null, null);
    }
}
