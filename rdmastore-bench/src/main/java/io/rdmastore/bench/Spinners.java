package io.rdmastore.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * Background threads that use CPU for a bounded time: the awake mode's keep-alive spinners (lowest priority, each
 * spinning with {@link Thread#onSpinWait} and parking briefly now and then) and the contention variant's burners
 * (ordinary priority, pure spinning). They stop at {@link #close}, or by themselves at their deadline, whichever comes
 * first, so a benchmark that fails mid-phase never leaves them running. Created and closed by one thread; the spinning
 * threads are daemons and touch nothing but their own counters.
 */
public final class Spinners implements AutoCloseable {
    /** Linux SCHED_IDLE: the thread runs only when nothing else wants the core, and yields it at once. */
    private static final int SCHED_IDLE = 5;
    private static final MethodHandle SCHED_SETSCHEDULER = schedSetScheduler();

    private final List<Thread> threads = new ArrayList<>();
    private final long deadline;
    private volatile boolean stop;
    private volatile int idlePolicyThreads;
    /** CPU nanoseconds of the threads that have exited (a dead thread's CPU time can no longer be read). */
    private long exitedCpuNanos;
    private final boolean[] exited;

    private Spinners(int count, long maxNanos, boolean keepAlive, String name) {
        this.deadline = System.nanoTime() + maxNanos;
        this.exited = new boolean[count];
        for (int i = 0; i < count; i++) {
            Runnable body = keepAlive ? this::keepAlive : this::burn;
            int index = i;
            Thread t = new Thread(() -> {
                try {
                    body.run();
                } finally {
                    recordCpu(index);
                }
            }, name + "-" + i);
            t.setDaemon(true);
            t.setPriority(keepAlive ? Thread.MIN_PRIORITY : Thread.NORM_PRIORITY);
            threads.add(t);
        }
        for (Thread t : threads) {
            t.start();
        }
    }

    /**
     * Keep-alive spinners for the awake CPU mode: {@code count} threads at the lowest priority (Linux SCHED_IDLE where
     * the call succeeds, so a woken server or client thread takes the core at once), each spinning 50 us with
     * {@link Thread#onSpinWait} and then parking 20 us, so no core sits idle long enough to enter a deep idle state.
     */
    public static Spinners keepAlive(int count, long maxNanos) {
        return new Spinners(count, maxNanos, true, "bench-keep-awake");
    }

    /** {@code count} burner threads at ordinary priority that spin without pause: the contention variant's load. */
    public static Spinners burners(int count, long maxNanos) {
        return new Spinners(count, maxNanos, false, "bench-burner");
    }

    private void keepAlive() {
        if (setIdlePolicy()) {
            synchronized (this) {
                idlePolicyThreads++;
            }
        }
        while (!stop && System.nanoTime() - deadline < 0) {
            long until = System.nanoTime() + 50_000;
            while (System.nanoTime() - until < 0) {
                Thread.onSpinWait();
            }
            LockSupport.parkNanos(20_000);
        }
    }

    private void burn() {
        long x = 0;
        while (!stop && System.nanoTime() - deadline < 0) {
            for (int i = 0; i < 10_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        if (x == 42) {
            // keeps the loop from being optimized away
            System.out.print("");
        }
    }

    /** Threads still running (0 once stopped or past the deadline and exited). */
    public int running() {
        int n = 0;
        for (Thread t : threads) {
            if (t.isAlive()) {
                n++;
            }
        }
        return n;
    }

    /** How many keep-alive threads run under SCHED_IDLE (0 where the call is not available). */
    public int idlePolicyThreads() {
        return idlePolicyThreads;
    }

    private synchronized void recordCpu(int index) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        if (mx.isCurrentThreadCpuTimeSupported()) {
            exitedCpuNanos += Math.max(0, mx.getCurrentThreadCpuTime());
        }
        exited[index] = true;
    }

    /** CPU seconds these threads used so far, running or exited (NaN where the JVM does not measure thread CPU). */
    public double cpuSeconds() {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        if (!mx.isThreadCpuTimeSupported()) {
            return Double.NaN;
        }
        synchronized (this) {
            // under the lock, so an exiting thread is counted once: in exitedCpuNanos or as running, not both
            long ns = exitedCpuNanos;
            for (int i = 0; i < threads.size(); i++) {
                if (!exited[i]) {
                    ns += Math.max(0, mx.getThreadCpuTime(threads.get(i).threadId()));
                }
            }
            return ns / 1e9;
        }
    }

    /** Stops the threads and waits (at most a second) for them to exit. */
    @Override
    public void close() {
        stop = true;
        for (Thread t : threads) {
            try {
                t.join(1_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Puts the calling thread under SCHED_IDLE; false where that is not possible here. */
    static boolean setIdlePolicy() {
        if (SCHED_SETSCHEDULER == null) {
            return false;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment param = a.allocate(ValueLayout.JAVA_INT);
            param.set(ValueLayout.JAVA_INT, 0, 0);
            return (int) SCHED_SETSCHEDULER.invokeExact(0, SCHED_IDLE, param) == 0;
        } catch (Throwable t) {
            return false;
        }
    }

    @SuppressWarnings("restricted") // one libc call, sched_setscheduler(2), with a fixed signature
    private static MethodHandle schedSetScheduler() {
        try {
            if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
                return null;
            }
            Linker linker = Linker.nativeLinker();
            return linker.defaultLookup().find("sched_setscheduler").map(f -> linker.downcallHandle(f,
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                    ValueLayout.ADDRESS))).orElse(null);
        } catch (Throwable t) {
            return null;
        }
    }
}
