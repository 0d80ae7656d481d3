package io.rdmastore.transport.tcp;

import io.rdmastore.transport.RegisteredMemory;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * A segment registered with one {@link TcpConnection}: its peer reads and writes it through control frames that this
 * side's event loop serves. The caller owns the segment and keeps it alive until {@link #close()}; the segment must be
 * accessible from the event-loop thread (global, automatic or shared arena, or a heap segment). Thread-safe.
 */
final class TcpRegisteredMemory implements RegisteredMemory {
    /** Descriptor layout: {@code [magic:int8 'T'][regionId:int32][length:int64]}. */
    static final int DESCRIPTOR_LENGTH = 13;
    static final byte DESCRIPTOR_MAGIC = 'T';

    private final TcpConnection owner;
    private final int id;
    private final MemorySegment segment;
    private volatile boolean closed;

    TcpRegisteredMemory(TcpConnection owner, int id, MemorySegment segment) {
        this.owner = owner;
        this.id = id;
        this.segment = segment;
    }

    int id() {
        return id;
    }

    boolean isClosed() {
        return closed;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public byte[] descriptor() {
        return ByteBuffer.allocate(DESCRIPTOR_LENGTH).put(DESCRIPTOR_MAGIC).putInt(id).putLong(segment.byteSize())
            .array();
    }

    @Override
    public void close() {
        closed = true;
        owner.deregister(this);
    }

    @Override
    public String toString() {
        return "tcp region " + id + " (" + segment.byteSize() + " bytes)";
    }
}
