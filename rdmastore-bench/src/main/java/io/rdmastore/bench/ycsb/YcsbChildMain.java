package io.rdmastore.bench.ycsb;

/**
 * Runs YCSB's own {@code site.ycsb.Client} with the given arguments in this JVM and, as the JVM exits (the client
 * calls {@code System.exit}), prints {@code CPU_SECONDS <s>} with this JVM's total CPU time, so the benchmark can
 * charge the clients' CPU next to the server's. Started by the benchmark as a child process; single-threaded entry.
 */
public final class YcsbChildMain {
    private YcsbChildMain() {
    }

    public static void main(String[] args) throws Exception {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (java.lang.management.ManagementFactory.getOperatingSystemMXBean()
                instanceof com.sun.management.OperatingSystemMXBean os) {
                // stderr: YCSB's text exporter closes System.out when it finishes
                System.err.println("CPU_SECONDS " + os.getProcessCpuTime() / 1e9);
                System.err.flush();
            }
        }, "ycsb-cpu"));
        site.ycsb.Client.main(args);
    }
}
