package io.rdmastore.server.resp;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * INFO sections with Redis's field names that the face computes from its own counters: {@code cpu},
 * {@code replication}, {@code commandstats} and {@code errorstats}. Stateless; any thread.
 */
final class RespInfo {
    private static final String NO_REPLID = "0000000000000000000000000000000000000000";
    /** Clock ticks per second for /proc/self/stat; 100 on every Linux the server runs on. */
    private static final double CLOCK_TICKS = 100.0;

    private RespInfo() {
    }

    /**
     * {@code used_cpu_sys} and {@code used_cpu_user} in seconds, from /proc/self/stat (Linux); elsewhere the JVM's
     * process CPU time counts as user time.
     */
    static void cpu(Map<String, String> out) {
        double user = -1;
        double sys = -1;
        try {
            String stat = Files.readString(Path.of("/proc/self/stat"));
            // fields after the command name, which is in parentheses and may hold spaces
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            user = Long.parseLong(f[11]) / CLOCK_TICKS;
            sys = Long.parseLong(f[12]) / CLOCK_TICKS;
        } catch (IOException | RuntimeException e) {
            if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
                user = os.getProcessCpuTime() / 1e9;
                sys = 0;
            }
        }
        out.put("used_cpu_sys", seconds(Math.max(sys, 0)));
        out.put("used_cpu_user", seconds(Math.max(user, 0)));
        out.put("used_cpu_sys_children", seconds(0));
        out.put("used_cpu_user_children", seconds(0));
    }

    private static String seconds(double s) {
        return String.format(Locale.ROOT, "%.6f", s);
    }

    /**
     * The replication section. rdmastore has no replicas yet: it is a master with none, at offset 0. The one place
     * to fill in once the oplog is replicated.
     */
    static void replication(Map<String, String> out) {
        out.put("role", "master");
        out.put("connected_slaves", "0");
        out.put("master_failover_state", "no-failover");
        out.put("master_replid", NO_REPLID);
        out.put("master_replid2", NO_REPLID);
        out.put("master_repl_offset", "0");
        out.put("second_repl_offset", "-1");
        out.put("repl_backlog_active", "0");
        out.put("repl_backlog_size", "0");
        out.put("repl_backlog_first_byte_offset", "0");
        out.put("repl_backlog_histlen", "0");
    }

    /** {@code cmdstat_<name>:calls=..,usec=..,usec_per_call=..,rejected_calls=0,failed_calls=..}, called ones only. */
    static void commandStats(RespFace face, Map<String, String> out) {
        RespCommand[] all = RespCommand.all();
        Map<String, String> sorted = new TreeMap<>();
        for (RespCommand c : all) {
            int i = c.ordinal();
            long calls = face.commandCalls[i].sum();
            long failed = face.commandFailed[i].sum();
            if (calls == 0) {
                continue;
            }
            long usec = face.commandMicros[i].sum();
            sorted.put("cmdstat_" + c.lowerName, "calls=" + calls + ",usec=" + usec + ",usec_per_call="
                + String.format(Locale.ROOT, "%.2f", (double) usec / calls) + ",rejected_calls=0,failed_calls="
                + failed);
        }
        out.putAll(sorted);
    }

    /** {@code errorstat_<CODE>:count=..} for every error code replied since start (or CONFIG RESETSTAT). */
    static void errorStats(RespFace face, Map<String, String> out) {
        Map<String, String> sorted = new TreeMap<>();
        for (Map.Entry<String, LongAdder> e : face.errorCodes.entrySet()) {
            sorted.put("errorstat_" + e.getKey(), "count=" + e.getValue().sum());
        }
        out.putAll(sorted);
    }
}
