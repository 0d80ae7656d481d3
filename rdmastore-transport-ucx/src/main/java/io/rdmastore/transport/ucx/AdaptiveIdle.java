package io.rdmastore.transport.ucx;

/**
 * The spin window of the adaptive idle strategies, driven by measured idleness: how long an agent with no work keeps
 * polling before it sleeps on its {@link Doorbell}.
 *
 * <p>Each idle spell ends either with work found while spinning, after {@code gap} nanoseconds, or with a sleep. Work
 * found widens the window to twice the gap (so traffic with gaps of g keeps the agent spinning through them), up to
 * {@code max}; a sleep halves it, down to {@code min}. Request/response traffic therefore keeps its agent hot, and
 * sparse traffic, or a core shared with more runnable threads than it has time for (where gaps stretch to scheduler
 * ticks), costs one wake-up per message instead of a spinning core.
 *
 * <p>Threads: the agent's only.
 */
final class AdaptiveIdle {
    private final long min;
    private final long max;
    private long window;

    AdaptiveIdle(long minNanos, long maxNanos) {
        if (minNanos <= 0 || maxNanos < minNanos) {
            throw new IllegalArgumentException("adaptive idle window needs 0 < min <= max");
        }
        this.min = minNanos;
        this.max = maxNanos;
        this.window = maxNanos;
    }

    /** Nanoseconds to spin before sleeping. */
    long window() {
        return window;
    }

    /** Work arrived {@code gapNanos} into an idle spell. */
    void workAfter(long gapNanos) {
        window = Math.max(window, Math.min(max, 2 * gapNanos));
    }

    /** The spell passed the window without work: the agent sleeps. */
    void slept() {
        window = Math.max(min, window >> 1);
    }
}
