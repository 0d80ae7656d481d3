package io.rdmastore.store;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A string value held for reading beyond the store's locks ({@link Store#pinValue}): its bytes stay allocated and
 * unchanged until {@link #release()}, whatever overwrites, deletes or expiries of its key happen meanwhile (they take
 * new memory; the old value is freed at the release). Made for lending a value to a one-sided reader.
 *
 * <p>Ownership: the holder must call {@link #release()} exactly once; later calls do nothing. {@link #segment()} must
 * not be used after the release. Any thread.
 */
public final class PinnedValue implements AutoCloseable {
    private final MemorySegment segment;
    private final Runnable unpin;
    private final AtomicBoolean released = new AtomicBoolean();

    PinnedValue(MemorySegment segment, Runnable unpin) {
        this.segment = segment;
        this.unpin = unpin;
    }

    /** The value's bytes (read-only; native memory, so it can be registered); valid until {@link #release()}. */
    public MemorySegment segment() {
        return segment;
    }

    /** The value's length in bytes. */
    public long length() {
        return segment.byteSize();
    }

    /** Ends the pin. Idempotent. */
    public void release() {
        if (released.compareAndSet(false, true)) {
            unpin.run();
        }
    }

    @Override
    public void close() {
        release();
    }
}
