package io.rdmastore.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The scheduling priority of every server process the bench starts: rdmastore's, redis-server, and E1's echo peers
 * all run at the same niceness, {@code -10} unless {@code -Drdmastore.bench.serverNice=N} says otherwise (0: as the
 * bench itself). See docs/bench/README.md, "Servers at one priority".
 *
 * <p>Why: on two cores, up to 32 client threads share the machine with the server. At the clients' priority a server
 * thread is preempted for a scheduler slice whenever a client thread's turn comes; a spinning poller loses its core
 * to them outright, and a log-writer thread preempted while holding the log's lock stalls the poller that waits for
 * it. E3 at 32 clients then showed a ucx p99 of 2-3 ms against a p50 of 1-2 us. Every server gets the same priority,
 * so the comparison stays even; where the bench may not raise priority (no root, no {@code CAP_SYS_NICE}), all of them
 * run at the bench's own and the report says so.
 */
final class ServerPriority {
    private static final int NICE = Integer.getInteger("rdmastore.bench.serverNice", -10);
    private static List<String> prefix;
    private static String described;

    private ServerPriority() {
    }

    /** The words to put before a server's command: {@code nice -n N}, or none when not asked for or not allowed. */
    static synchronized List<String> prefix() {
        if (prefix == null) {
            prefix = probe();
        }
        return prefix;
    }

    /** What the servers of this run ran at, for the report's header. */
    static synchronized String describe() {
        prefix();
        return described;
    }

    /** {@code cmd} with the priority's prefix before it. */
    static List<String> wrap(List<String> cmd) {
        List<String> p = prefix();
        if (p.isEmpty()) {
            return cmd;
        }
        List<String> out = new java.util.ArrayList<>(p);
        out.addAll(cmd);
        return out;
    }

    private static List<String> probe() {
        if (NICE == 0) {
            described = "nice 0 (as the bench; -Drdmastore.bench.serverNice=0)";
            return List.of();
        }
        List<String> p = List.of("nice", "-n", Integer.toString(NICE));
        String why;
        try {
            // nice without a command prints the niceness it runs at: the one asked for when it was allowed
            List<String> probe = new java.util.ArrayList<>(p);
            probe.add("nice");
            Process proc = new ProcessBuilder(probe).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            String out = new String(proc.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).trim();
            if (!proc.waitFor(10, TimeUnit.SECONDS)) {
                proc.destroyForcibly();
                why = "nice did not answer";
            } else if (out.equals(Integer.toString(NICE))) {
                described = "nice " + NICE + " for every server (rdmastore, redis-server, E1's peers)";
                return p;
            } else {
                why = "not permitted here (nice ran at " + out + ")";
            }
        } catch (IOException e) {
            why = "nice unavailable: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            why = "interrupted";
        }
        described = "nice 0 for every server: nice " + NICE + " " + why;
        System.err.println("bench: servers run at the bench's own priority: nice " + NICE + " " + why);
        return List.of();
    }
}
