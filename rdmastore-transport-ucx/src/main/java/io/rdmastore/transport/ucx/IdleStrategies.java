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
     * {@code backoff} (default): spin ~0.4 ms, then yield, then park up to 1 ms, so an idle server does not burn a core;
     * {@code light}: spin ~10 us, then yield, then park (clients); {@code spin}: busy spin (lowest latency, one core per
     * worker); {@code yield}; {@code noop}.
     */
    static IdleStrategy of(String name) {
        return switch (name.toLowerCase(Locale.ROOT)) {
            // spin ~0.4 ms before yielding: a server under request/response traffic stays hot between requests (a park
            // costs ~50 us on a small VM); an idle one reaches the 1 ms park and stays there
            case "backoff" -> new BackoffIdleStrategy(10_000, 100, 1_000, 1_000_000);
            // a client's agent: its waiting threads drive the worker themselves, so the agent must not hold a core
            // (one per connection, 32 of them on 2 cores starved everything when they spun 0.4 ms each)
            case "light" -> new BackoffIdleStrategy(200, 50, 1_000, 1_000_000);
            case "spin" -> new BusySpinIdleStrategy();
            case "yield" -> new YieldingIdleStrategy();
            case "noop" -> new NoOpIdleStrategy();
            default -> throw new IllegalArgumentException("unknown idle strategy '" + name
                + "' (expected backoff, light, spin, yield or noop)");
        };
    }
}
