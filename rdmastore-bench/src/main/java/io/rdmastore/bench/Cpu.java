package io.rdmastore.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

/** CPU time of processes, so a busy-polling transport's price shows next to its speed. */
public final class Cpu {
    private static final double TICKS = 100.0; // USER_HZ on Linux

    private Cpu() {
    }

    /** User + system CPU seconds of process {@code pid} so far; NaN where /proc is missing. */
    public static double processSeconds(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / TICKS;
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
    }

    /** CPU seconds this JVM used so far. */
    public static double selfSeconds() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getProcessCpuTime() / 1e9;
        }
        return processSeconds(ProcessHandle.current().pid());
    }
}
