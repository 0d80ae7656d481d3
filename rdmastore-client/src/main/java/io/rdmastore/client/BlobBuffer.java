package io.rdmastore.client;

import io.rdmastore.transport.Connection;
import io.rdmastore.transport.RegisteredMemory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Native memory registered for one-sided blob transfers, reusable across many gets and puts so the registration cost
 * is paid once ({@link BlobClient#allocate(long)} or {@link BlobClient#wrap(MemorySegment)}).
 *
 * <p>Ownership: an allocated buffer owns its memory and frees it on {@link #close()}; a wrapped one only registers the
 * caller's segment, which must stay alive until close. The buffer registers itself with the client's current
 * connection on first use and again after a reconnect. Threads: one transfer at a time; close from any thread once no
 * transfer uses it.
 */
public final class BlobBuffer implements AutoCloseable {
    private final MemorySegment segment;
    private final Arena arena;
    private Connection connection;
    private RegisteredMemory registration;

    BlobBuffer(MemorySegment segment, Arena arena) {
        if (!segment.isNative() && segment.byteSize() > 0) {
            throw new IllegalArgumentException("a blob buffer needs native (off-heap or mapped) memory; heap segments"
                + " cannot be registered");
        }
        this.segment = segment;
        this.arena = arena;
    }

    /** The memory; a get fills it from offset 0, a put sends it from offset 0. */
    public MemorySegment segment() {
        return segment;
    }

    /** Capacity in bytes. */
    public long capacity() {
        return segment.byteSize();
    }

    synchronized RegisteredMemory registration(Connection c) {
        if (connection != c || registration == null) {
            if (registration != null) {
                registration.close();
            }
            registration = c.register(segment);
            connection = c;
        }
        return registration;
    }

    /** Deregisters, and frees the memory if this buffer allocated it. Idempotent. */
    @Override
    public synchronized void close() {
        if (registration != null) {
            registration.close();
            registration = null;
        }
        connection = null;
        if (arena != null && arena.scope().isAlive()) {
            arena.close();
        }
    }
}
