package io.rdmastore.server;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.WireWriter;
import io.rdmastore.store.PinnedValue;
import io.rdmastore.store.Store;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.RegisteredMemory;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Rendezvous for large values (GET_LARGE, docs/protocol.md "Large values"): a value of at least the threshold, asked
 * for over a connection that reads one-sided (ucx), is not sent; it is pinned in the store ({@link Store#pinValue}),
 * registered with the connection, and its descriptor is sent instead. The client reads it once into its own memory
 * and names the lease in its next GET_LARGE or in VALUE_RELEASE. The pin keeps the bytes whole and unchanged while
 * lent (writes meanwhile go to new memory), so the reader never sees a torn value.
 *
 * <p>A lease ends exactly once: when the client releases it, when its connection closes, after the lease time-out
 * (a sweep on the timer thread), or when the server closes. Each connection holds at most
 * {@value #MAX_LEASES_PER_CONNECTION} leases; beyond that values are sent inline, so a client that never releases
 * pins a bounded amount of memory.
 *
 * <p>Threads: {@link #lend} and {@link #release} run on the session's transport thread; the sweep on the timer thread;
 * {@link #sessionClosed} on the closing thread. Leases live in one concurrent map; ending one is a compare-and-set.
 */
final class ValueLeases implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ValueLeases.class);
    /** Leases one connection may hold at once. */
    static final int MAX_LEASES_PER_CONNECTION = 64;
    /** Lease ids one request may end. */
    static final int MAX_RELEASES_PER_REQUEST = 4096;

    private final Store store;
    private final long threshold;
    private final long timeoutNanos;
    private final AtomicLong ids = new AtomicLong();
    private final Map<Long, Lease> leases = new ConcurrentHashMap<>();
    private final AtomicLong registeredBytes = new AtomicLong();
    private final AtomicLong lent = new AtomicLong();
    private final AtomicLong pulled = new AtomicLong();
    private final AtomicLong pulledBytes = new AtomicLong();
    private final AtomicLong pulledInPlace = new AtomicLong();
    private final AtomicLong pulledInParts = new AtomicLong();
    private final ScheduledFuture<?> sweeper;

    /** One lent value: its pin and its registration. */
    private final class Lease {
        final long id;
        final NativeSession session;
        final PinnedValue pin;
        final RegisteredMemory registration;
        final long bornNanos = System.nanoTime();
        final AtomicBoolean ended = new AtomicBoolean();

        Lease(long id, NativeSession session, PinnedValue pin, RegisteredMemory registration) {
            this.id = id;
            this.session = session;
            this.pin = pin;
            this.registration = registration;
        }

        boolean end() {
            if (!ended.compareAndSet(false, true)) {
                return false;
            }
            leases.remove(id);
            session.valueLeases.decrementAndGet();
            try {
                registration.close();
            } finally {
                registeredBytes.addAndGet(-pin.length());
                pin.release();
            }
            return true;
        }
    }

    /**
     * @param threshold the smallest value lent; 0 lends nothing
     * @param timer runs the time-out sweep
     */
    ValueLeases(Store store, ScheduledExecutorService timer, long threshold, Duration timeout) {
        this.store = store;
        this.threshold = threshold;
        this.timeoutNanos = timeout.toNanos();
        long period = Math.max(10, Math.min(1_000, timeout.toMillis() / 4));
        this.sweeper = threshold > 0 ? timer.scheduleWithFixedDelay(this::sweep, period, period, TimeUnit.MILLISECONDS)
            : null;
    }

    /** Whether a value of {@code length} bytes asked for over {@code session} is lent rather than sent. */
    boolean lends(NativeSession session, long length) {
        return threshold > 0 && length >= threshold && "ucx".equals(session.connection().transportName())
            && session.valueLeases.get() < MAX_LEASES_PER_CONNECTION;
    }

    /**
     * Lends {@code key}'s value: writes {@code VALUE_LENT, leaseId, length, descriptor} to {@code w}, or NULL status
     * when the key went meanwhile. Returns false (nothing written) when the value is now below the threshold, so the
     * caller sends it inline. Transport thread of {@code session}.
     */
    boolean lend(NativeSession session, byte[] key, WireWriter w) {
        PinnedValue pin = store.pinValue(key);
        if (pin == null) {
            w.u8At(ProtocolDescriptor.TYPE_OFFSET, ProtocolDescriptor.STATUS_NULL);
            return true;
        }
        if (!lends(session, pin.length())) {
            pin.release();
            return false;
        }
        Connection c = session.connection();
        RegisteredMemory reg;
        try {
            reg = c.register(pin.segment());
        } catch (RuntimeException e) {
            pin.release();
            throw e;
        }
        registeredBytes.addAndGet(pin.length());
        session.valueLeases.incrementAndGet();
        Lease lease = new Lease(ids.incrementAndGet(), session, pin, reg);
        leases.put(lease.id, lease);
        lent.incrementAndGet();
        w.u8(ProtocolDescriptor.VALUE_LENT).i64(lease.id).i64(pin.length()).bytes(reg.descriptor());
        if (!c.isOpen()) {
            // a close that raced the lease: the session's close sweep may have run already
            lease.end();
        }
        return true;
    }

    /** Ends {@code session}'s lease {@code id}; false when it is not (or no longer) one of its leases. */
    boolean release(NativeSession session, long id) {
        Lease lease = leases.get(id);
        return lease != null && lease.session == session && lease.end();
    }

    /** Ends every lease of a closed session. */
    void sessionClosed(NativeSession session) {
        if (session.valueLeases.get() == 0) {
            return;
        }
        for (Lease lease : leases.values()) {
            if (lease.session == session) {
                lease.end();
            }
        }
    }

    private void sweep() {
        long now = System.nanoTime();
        for (Lease lease : leases.values()) {
            if (now - lease.bornNanos > timeoutNanos && lease.end()) {
                LOG.debug("value lease {} of {} expired", lease.id, lease.session.connection().remoteAddress());
            }
        }
    }

    /** Leases held right now. */
    int leases() {
        return leases.size();
    }

    /** Values lent since start. */
    long lent() {
        return lent.get();
    }

    /** Bytes registered for leases right now. */
    long registeredBytes() {
        return registeredBytes.get();
    }

    @Override
    public void close() {
        if (sweeper != null) {
            sweeper.cancel(false);
        }
        for (Lease lease : leases.values()) {
            lease.end();
        }
    }

    /**
     * Counts a SET_LARGE value read one-sided from a client ({@code length} bytes); {@code inPlace}: read straight into
     * the store's block that became the value; {@code inParts}: read part by part while the client copied it
     * (SET_PARTS). Any thread.
     */
    void pulled(long length, boolean inPlace, boolean inParts) {
        pulled.incrementAndGet();
        pulledBytes.addAndGet(length);
        if (inPlace) {
            pulledInPlace.incrementAndGet();
        }
        if (inParts) {
            pulledInParts.incrementAndGet();
        }
    }

    /** Of {@link #pulled()}, the values read part by part while the client copied them (SET_PARTS). */
    public long pulledInParts() {
        return pulledInParts.get();
    }

    /** Of {@link #pulled()}, the values read straight into the store's memory (no copy after the read). */
    public long pulledInPlace() {
        return pulledInPlace.get();
    }

    /** SET_LARGE values read from clients since start. */
    public long pulled() {
        return pulled.get();
    }

    /** Bytes of SET_LARGE values read from clients since start. */
    public long pulledBytes() {
        return pulledBytes.get();
    }
}
