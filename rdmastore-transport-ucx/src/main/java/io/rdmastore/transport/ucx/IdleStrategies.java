package io.rdmastore.transport.ucx;

import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.NoOpIdleStrategy;
import org.agrona.concurrent.YieldingIdleStrategy;

import java.util.Locale;

/** Named idle strategies for the worker agent. */
final class IdleStrategies {
    private IdleStrategies() {
    }

    /** Whether {@code name} is one of the adaptive strategies ({@link AdaptiveIdle}), which the agent runs itself. */
    static boolean isAdaptive(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        return n.equals("adaptive") || n.equals("light");
    }

    /**
     * The window of an adaptive strategy, or null for the others: {@code adaptive} (servers, the default) spins
     * between 20 us and 200 us; {@code light} (a client's agent: its waiting threads drive the worker themselves, so
     * the agent must not hold a core, which 32 connections' agents spinning 0.4 ms each on 2 cores once did) between
     * 2 us and 20 us.
     */
    static AdaptiveIdle adaptive(String name) {
        return switch (name.toLowerCase(Locale.ROOT)) {
            case "adaptive" -> new AdaptiveIdle(20_000, 200_000);
            case "light" -> new AdaptiveIdle(2_000, 20_000);
            default -> null;
        };
    }

    /**
     * The fixed strategies: {@code backoff}: spin ~0.4 ms, then yield, then park up to 1 ms, so an idle server does not
     * burn a core; {@code spin}: busy spin (lowest latency, one core per worker); {@code yield}; {@code noop}.
     */
    static IdleStrategy of(String name) {
        return switch (name.toLowerCase(Locale.ROOT)) {
            // spin ~0.4 ms before yielding: a server under request/response traffic stays hot between requests (a park
            // costs ~50 us on a small VM); an idle one reaches the 1 ms park and stays there
            case "backoff" -> new BackoffIdleStrategy(10_000, 100, 1_000, 1_000_000);
            case "spin" -> new BusySpinIdleStrategy();
            case "yield" -> new YieldingIdleStrategy();
            case "noop" -> new NoOpIdleStrategy();
            default -> throw new IllegalArgumentException("unknown idle strategy '" + name
                + "' (expected adaptive, light, backoff, spin, yield or noop)");
        };
    }
}
