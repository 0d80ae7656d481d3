package io.rdmastore.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;

/**
 * The CPU state a phase is measured in, the same for every system of an experiment. {@code idle}: nothing extra, the
 * cores may sleep between requests (a woken core costs tens of microseconds on a VM). {@code awake}: the cores are kept
 * out of deep idle for the phase, by holding a zero-latency request on {@code /dev/cpu_dma_latency} when this process
 * may write it (the kernel then keeps idle cores in their shallowest state, polling, without taking CPU from anyone),
 * else by keep-alive {@link Spinners} on cores - 1 cores (at least one), at the lowest priority. The choice can be
 * forced with {@code -Drdmastore.bench.awake=dma|spinner}. See docs/bench/README.md, "Fair measurement", for what
 * was measured (on a 2-core VM the latency request halved the wake-up p50; SCHED_IDLE spinners did not help).
 *
 * <p>Threads: a {@link Guard} is entered and closed by one thread (the bench driver).
 */
public final class CpuState {
    static final Path DMA_LATENCY = Path.of("/dev/cpu_dma_latency");

    private CpuState() {
    }

    /** A CPU state to measure in. */
    public enum Mode {
        AWAKE("awake"), IDLE("idle");

        private final String label;

        Mode(String label) {
            this.label = label;
        }

        /** awake or idle, as in rows and options. */
        public String label() {
            return label;
        }

        static List<Mode> parse(String v) {
            return switch (v.toLowerCase(Locale.ROOT)) {
                case "awake" -> List.of(AWAKE);
                case "idle" -> List.of(IDLE);
                case "both" -> List.of(AWAKE, IDLE);
                default -> throw new IllegalArgumentException("--cpu-mode takes awake, idle or both, not '" + v + "'");
            };
        }
    }

    /** A held CPU state; closing releases it. Bounded: whatever it started also ends by itself at its deadline. */
    public static final class Guard implements AutoCloseable {
        private final Mode mode;
        private final FileChannel dma;
        private final Spinners spinners;

        private Guard(Mode mode, FileChannel dma, Spinners spinners) {
            this.mode = mode;
            this.dma = dma;
            this.spinners = spinners;
        }

        public Mode mode() {
            return mode;
        }

        /** How the state is held: none, cpu_dma_latency=0, or n spinners (and whether under SCHED_IDLE). */
        public String mechanism() {
            if (dma != null) {
                return "cpu_dma_latency=0";
            }
            if (spinners != null) {
                return spinners.running() + " keep-alive spinner(s)" + (spinners.idlePolicyThreads() > 0
                    ? " under SCHED_IDLE" : "");
            }
            return "none";
        }

        /** CPU seconds the guard's own threads used (0 without spinners), to leave out of a client's CPU. */
        public double cpuSeconds() {
            return spinners == null ? 0 : spinners.cpuSeconds();
        }

        /** Spinner threads running (0 without spinners). */
        public int spinnersRunning() {
            return spinners == null ? 0 : spinners.running();
        }

        @Override
        public void close() {
            if (spinners != null) {
                spinners.close();
            }
            if (dma != null) {
                try {
                    dma.close();
                } catch (IOException ignored) {
                    // closing the file is what drops the request; a failure leaves nothing to undo
                }
            }
        }
    }

    /**
     * Enters {@code mode} for at most {@code maxNanos} (spinners stop by themselves then; a latency request lives as
     * long as the returned guard is open, or this process).
     */
    public static Guard enter(Mode mode, long maxNanos) {
        if (mode == Mode.IDLE) {
            return new Guard(mode, null, null);
        }
        String how = System.getProperty("rdmastore.bench.awake", "auto");
        if (!how.equals("spinner")) {
            FileChannel dma = holdDmaLatency();
            if (dma != null) {
                return new Guard(mode, dma, null);
            }
            if (how.equals("dma")) {
                throw new IllegalStateException("-Drdmastore.bench.awake=dma but " + DMA_LATENCY + " is not writable");
            }
        }
        return new Guard(mode, null, Spinners.keepAlive(spinnerCount(Runtime.getRuntime().availableProcessors()),
            maxNanos));
    }

    /** Keep-alive spinners for {@code cores} cores: cores - 1, so one core is always free of them, but at least one. */
    static int spinnerCount(int cores) {
        return Math.max(1, cores - 1);
    }

    /** Opens /dev/cpu_dma_latency and writes a 0 us request; null where that is not possible. */
    private static FileChannel holdDmaLatency() {
        if (!Files.isWritable(DMA_LATENCY)) {
            return null;
        }
        try {
            FileChannel ch = FileChannel.open(DMA_LATENCY, StandardOpenOption.WRITE);
            ByteBuffer zero = ByteBuffer.allocate(4).order(ByteOrder.nativeOrder()).putInt(0, 0);
            if (ch.write(zero) != 4) {
                ch.close();
                return null;
            }
            return ch;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /**
     * Measures how long a parked thread takes to run after it is unparked, when the cores had 2 ms to go idle: the
     * median and p90 of {@code n} hand-offs, in microseconds. Used to check what the awake mode buys on a host.
     */
    static double[] wakeUpLatencyUs(int n) throws InterruptedException {
        long[] woke = new long[1];
        long[] lat = new long[n];
        Thread sleeper = new Thread(() -> {
            for (int i = 0; i < n; i++) {
                LockSupport.park();
                synchronized (woke) {
                    woke[0] = System.nanoTime();
                    woke.notifyAll();
                }
            }
        }, "wake-probe");
        sleeper.setDaemon(true);
        sleeper.start();
        for (int i = 0; i < n; i++) {
            Thread.sleep(2);
            long t0;
            synchronized (woke) {
                woke[0] = 0;
                t0 = System.nanoTime();
                LockSupport.unpark(sleeper);
                while (woke[0] == 0) {
                    woke.wait(1_000);
                }
                lat[i] = woke[0] - t0;
            }
        }
        sleeper.join(1_000);
        java.util.Arrays.sort(lat);
        return new double[] {lat[n / 2] / 1e3, lat[n * 9 / 10] / 1e3};
    }

    /** {@code java ... io.rdmastore.bench.CpuState}: wake-up latency idle, with spinners, and with cpu_dma_latency. */
    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 300;
        wakeUpLatencyUs(50);
        for (String how : List.of("idle", "spinner", "dma")) {
            if (how.equals("dma") && !Files.isWritable(DMA_LATENCY)) {
                System.out.println("dma: " + DMA_LATENCY + " not writable");
                continue;
            }
            System.setProperty("rdmastore.bench.awake", how);
            try (Guard g = enter(how.equals("idle") ? Mode.IDLE : Mode.AWAKE, 60_000_000_000L)) {
                double[] l = wakeUpLatencyUs(n);
                System.out.printf(Locale.ROOT, "%-8s %-40s wake-up p50 %.1f us, p90 %.1f us%n", how, g.mechanism(),
                    l[0], l[1]);
            }
        }
    }
}
