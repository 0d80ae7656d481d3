package io.rdmastore.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The scheduling priority of the server processes an experiment starts. {@link #ORDINARY}: the bench's own. {@link
 * #RAISED}: {@code nice -n -10} ({@code -Drdmastore.bench.serverNice=N} changes it, 0 turns it off), for experiments
 * whose client threads outnumber the cores (E3: up to 32 on two), where every server of the experiment, Redis too,
 * runs raised. See docs/bench/README.md, "Servers at one priority".
 *
 * <p>Why: at the clients' priority the scheduler preempts a server thread for each client thread's slice. A spinning
 * poller loses its core to them outright, and a log writer preempted while it holds the log's lock can stall the poller
 * waiting for that lock: E3 at 32 clients showed a ucx p99 of 2-4 ms for a p50 of 1-2 us. Where the bench may not raise
 * priority (no root, no {@code CAP_SYS_NICE}) raised servers run at the bench's own and the report says so.
 */
enum ServerPriority {
    ORDINARY,
    RAISED;

    private static final int NICE = Integer.getInteger("rdmastore.bench.serverNice", -10);

    /** What raising does here: the prefix to run a command at the raised priority, and its description. */
    private record Raise(List<String> prefix, String description) {
    }

    /** Probed once, on first use (the holder idiom: no lock of our own). */
    private static final class Probed {
        static final Raise RAISE = probe();
    }

    /** {@code cmd} with what runs it at this priority put before it. */
    List<String> wrap(List<String> cmd) {
        List<String> p = prefix();
        if (p.isEmpty()) {
            return cmd;
        }
        List<String> out = new ArrayList<>(p);
        out.addAll(cmd);
        return out;
    }

    /** The words put before a server's command: {@code nice -n N}, or none (ordinary, not asked for, not allowed). */
    List<String> prefix() {
        return this == ORDINARY ? List.of() : Probed.RAISE.prefix();
    }

    /** What servers at this priority run at, for the report. */
    String describe() {
        return this == ORDINARY ? "nice 0 (the bench's own)" : Probed.RAISE.description();
    }

    private static Raise probe() {
        if (NICE == 0) {
            return new Raise(List.of(), "nice 0 (-Drdmastore.bench.serverNice=0)");
        }
        List<String> p = List.of("nice", "-n", Integer.toString(NICE));
        String why;
        try {
            // nice without a command prints the niceness it runs at: the one asked for when that was allowed
            List<String> probe = new ArrayList<>(p);
            probe.add("nice");
            Process proc = new ProcessBuilder(probe).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            String out = new String(proc.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).trim();
            if (!proc.waitFor(10, TimeUnit.SECONDS)) {
                proc.destroyForcibly();
                why = "nice did not answer";
            } else if (out.equals(Integer.toString(NICE))) {
                return new Raise(p, "nice " + NICE);
            } else {
                why = "not permitted here (nice ran at " + out + ")";
            }
        } catch (IOException e) {
            why = "nice unavailable: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            why = "interrupted";
        }
        System.err.println("bench: servers meant to run raised run at the bench's own priority: nice " + NICE + " "
            + why);
        return new Raise(List.of(), "nice 0: nice " + NICE + " " + why);
    }
}
