package io.rdmastore.bench;

import java.util.Locale;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The host's state, as the bench sees it before each experiment: two threads bounce one cache line between two cores,
 * and the round trip's cost is what every cross-core message of the experiment pays at least. On this project's VM it
 * flips within seconds between about 40-230 ns and 510-930 ns (docs/decisions.md, "The slow state is the vCPUs'"),
 * which is the "slow state" of E1-E3's repeats: a figure next to each experiment tells a slow repeat from a slow build.
 *
 * <p>Bounded: {@link #SLICES} slices of {@link #SLICE_NANOS}; the second thread ends with the measurement.
 * {@code java -cp ... io.rdmastore.bench.CoreProbe [n]} prints n measurements a second apart.
 */
final class CoreProbe {
    static final int SLICES = 6;
    static final long SLICE_NANOS = 50_000_000L;

    private CoreProbe() {
    }

    /**
     * One measurement, nanoseconds per round trip over {@link #SLICES} slices (median, fastest and slowest); null on a
     * single core, where two spinning threads would share it, or when the other thread did not answer for half a
     * second.
     */
    static Spread measure() throws InterruptedException {
        if (Runtime.getRuntime().availableProcessors() < 2) {
            return null;
        }
        // [0] the ping, [16] the pong: 128 bytes apart, on lines of their own
        AtomicLongArray cells = new AtomicLongArray(32);
        Thread pong = new Thread(() -> {
            long seen = 0;
            while (true) {
                long v;
                while ((v = cells.get(0)) == seen) {
                    Thread.onSpinWait();
                }
                if (v < 0) {
                    return;
                }
                seen = v;
                cells.set(16, v);
            }
        }, "rdmastore-core-probe");
        pong.setDaemon(true);
        pong.start();
        double[] ns = new double[SLICES];
        long n = 0;
        try {
            for (int s = 0; s < SLICES; s++) {
                long start = System.nanoTime();
                long end = start + SLICE_NANOS;
                long trips = 0;
                long now;
                do {
                    for (int i = 0; i < 256; i++) {
                        long v = ++n;
                        cells.set(0, v);
                        int spins = 0;
                        while (cells.get(16) != v) {
                            Thread.onSpinWait();
                            if ((++spins & 0xFFFF) == 0 && System.nanoTime() - start > 10 * SLICE_NANOS) {
                                // the other thread did not answer for half a second (no core for it): no figure
                                return null;
                            }
                        }
                    }
                    trips += 256;
                    now = System.nanoTime();
                } while (now < end);
                ns[s] = (now - start) / (double) trips;
            }
        } finally {
            cells.set(0, -1);
            pong.join(1000);
        }
        return Spread.of(ns);
    }

    /** {@code 140 (120-560)}: the median slice's nanoseconds with the fastest and slowest. */
    static String format(Spread s) {
        return s.format(v -> String.format(Locale.ROOT, "%.0f", v));
    }

    public static void main(String[] args) throws InterruptedException {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        for (int i = 0; i < n; i++) {
            Spread s = measure();
            System.out.println(s == null ? "not measured (one core, or no answer)"
                : "core-to-core round trip ns: " + format(s));
            Thread.sleep(1000);
        }
    }
}
