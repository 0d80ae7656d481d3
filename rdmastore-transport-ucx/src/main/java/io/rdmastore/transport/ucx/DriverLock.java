package io.rdmastore.transport.ucx;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Who may touch the UCX worker now: a reentrant try-lock with no queue and no parking. Acquiring is one CAS, release one
 * ordered store; contenders never wait (they hand work over through the command queue instead), so the hot path of
 * a ping-pong pays a few nanoseconds instead of a {@link java.util.concurrent.locks.ReentrantLock}'s queue checks.
 *
 * <p>Threads: any thread may call {@link #tryLock()}; {@link #unlock()} only by the owner.
 */
final class DriverLock {
    private static final VarHandle OWNER;

    static {
        try {
            OWNER = MethodHandles.lookup().findVarHandle(DriverLock.class, "owner", Thread.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused")
    private volatile Thread owner;
    private int holds;

    boolean tryLock() {
        Thread me = Thread.currentThread();
        if (OWNER.getOpaque(this) == me) {
            holds++;
            return true;
        }
        if (OWNER.compareAndSet(this, (Thread) null, me)) {
            holds = 1;
            return true;
        }
        return false;
    }

    /** Blocks (spinning, then yielding) until the lock is free; for close only. */
    void lock() {
        while (!tryLock()) {
            Thread.yield();
        }
    }

    void unlock() {
        if (--holds == 0) {
            OWNER.setRelease(this, (Thread) null);
        }
    }

    boolean isHeldByCurrentThread() {
        return OWNER.getOpaque(this) == Thread.currentThread();
    }
}
