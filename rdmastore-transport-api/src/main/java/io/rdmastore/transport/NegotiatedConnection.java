package io.rdmastore.transport;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;

/** A carrier connection that stayed on the carrier after negotiation, carrying the reason it did. Thread-safe. */
final class NegotiatedConnection implements Connection {
    private final Connection carrier;
    private final String name;
    private final String reason;
    private volatile Object attachment;

    NegotiatedConnection(Connection carrier, String name, String reason) {
        this.carrier = carrier;
        this.name = name;
        this.reason = reason;
    }

    @Override
    public String transportName() {
        return name;
    }

    @Override
    public String selectionReason() {
        return reason;
    }

    @Override
    public String describe() {
        return carrier.describe() + " (" + reason + ")";
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return carrier.remoteAddress();
    }

    @Override
    public InetSocketAddress localAddress() {
        return carrier.localAddress();
    }

    @Override
    public int maxMessageLength() {
        return carrier.maxMessageLength();
    }

    @Override
    public void inboundLimit(int bytes) {
        carrier.inboundLimit(bytes);
    }

    @Override
    public int offer(MemorySegment message) {
        return carrier.offer(message);
    }

    @Override
    public int offer(MemorySegment head, MemorySegment body) {
        return carrier.offer(head, body);
    }

    @Override
    public boolean awaitReading(Future<?> done, long deadlineNanos) {
        return carrier.awaitReading(done, deadlineNanos);
    }

    @Override
    public RegisteredMemory register(MemorySegment segment) {
        return carrier.register(segment);
    }

    @Override
    public RemoteMemory remoteMemory(byte[] descriptor) {
        return carrier.remoteMemory(descriptor);
    }

    @Override
    public CompletableFuture<Void> read(RemoteMemory remote, long remoteOffset, RegisteredMemory local,
                                        long localOffset, long length) {
        return carrier.read(remote, remoteOffset, local, localOffset, length);
    }

    @Override
    public CompletableFuture<Void> write(RegisteredMemory local, long localOffset, RemoteMemory remote,
                                         long remoteOffset, long length) {
        return carrier.write(local, localOffset, remote, remoteOffset, length);
    }

    @Override
    public boolean isOpen() {
        return carrier.isOpen();
    }

    @Override
    public CompletableFuture<Void> closeFuture() {
        return carrier.closeFuture();
    }

    @Override
    public void attach(Object value) {
        attachment = value;
    }

    @Override
    public Object attachment() {
        return attachment;
    }

    @Override
    public void close() {
        carrier.close();
    }
}
