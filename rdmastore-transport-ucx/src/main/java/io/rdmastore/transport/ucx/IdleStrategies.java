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

    /**
     * {@code backoff} (default): spin, then yield, then park up to 1 ms, so an idle server does not burn a core;
     * {@code spin}: busy spin (lowest latency, one core per worker); {@code yield}; {@code noop}.
     */
    static IdleStrategy of(String name) {
        return switch (name.toLowerCase(Locale.ROOT)) {
            case "backoff" -> new BackoffIdleStrategy(200, 50, 1_000, 1_000_000);
            case "spin" -> new BusySpinIdleStrategy();
            case "yield" -> new YieldingIdleStrategy();
            case "noop" -> new NoOpIdleStrategy();
            default -> throw new IllegalArgumentException("unknown idle strategy '" + name
                + "' (expected backoff, spin, yield or noop)");
        };
    }
}
