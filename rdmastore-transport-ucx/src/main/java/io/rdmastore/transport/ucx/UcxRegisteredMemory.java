package io.rdmastore.transport.ucx;

import io.rdmastore.transport.RegisteredMemory;
import org.openucx.jucx.ucp.UcpMemory;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;

/** A segment registered with UCX. Descriptor: {@code [address:8][length:8][rkey...]}. Thread-safe. */
final class UcxRegisteredMemory implements RegisteredMemory {
    private final UcxTransport transport;
    private final MemorySegment segment;
    private final UcpMemory memory;
    private final byte[] descriptor;
    private final AtomicBoolean closed = new AtomicBoolean();

    UcxRegisteredMemory(UcxTransport transport, MemorySegment segment, UcpMemory memory) {
        this.transport = transport;
        this.segment = segment;
        this.memory = memory;
        byte[] rkey = UcxTransport.bytes(memory.getRemoteKeyBuffer());
        this.descriptor = ByteBuffer.allocate(16 + rkey.length).putLong(segment.address())
            .putLong(segment.byteSize()).put(rkey).array();
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public byte[] descriptor() {
        return descriptor.clone();
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            transport.deregister(memory);
        }
    }
}
