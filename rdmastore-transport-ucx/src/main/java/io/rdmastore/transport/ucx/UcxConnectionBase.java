package io.rdmastore.transport.ucx;

import io.rdmastore.transport.Connection;
import io.rdmastore.transport.MemoryRanges;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.RemoteMemory;
import io.rdmastore.transport.TransportException;
import io.rdmastore.transport.TransportStatus;
import org.agrona.concurrent.ManyToOneConcurrentLinkedQueue;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpRemoteKey;
import org.openucx.jucx.ucp.UcpRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What both UCX connection kinds share: the endpoint, the control connection it lives on, cross-thread offers, close,
 * and one-sided reads and writes.
 *
 * <p>Threads: public methods are thread-safe; fields without {@code volatile} belong to the driver thread.
 */
abstract class UcxConnectionBase implements Connection {
    private static final Logger LOG = LoggerFactory.getLogger(UcxConnectionBase.class);

    final UcxTransport transport;
    final Connection control;
    final MessageHandler handler;
    final String reason;
    final UcxTransport.Peer peer;
    UcpEndpoint ep;
    int slot = -1;
    long slotAddress;
    volatile boolean ready;
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean driverClosed;
    private final CompletableFuture<Void> closeFuture = new CompletableFuture<>();
    private volatile Object attachment;
    /** Reads go through process_vm_readv (off after the first refusal: the peer cannot be read). */
    private volatile boolean crossMemoryReads;
    /** The kernel confirmed that the peer's declared pid holds the far end of the control socket. */
    private volatile boolean peerVouched;
    /** Set when the kernel showed the declared pid is not the peer's: every later read is refused too. */
    private volatile String refutedPid;

    /** The peer's doorbell (a peer on this host with an adaptive agent), else null; rung after each put to it. */
    final Doorbell.Remote peerBell;

    /** This side connected (a client's connection); set once, before the connection is listed. */
    boolean initiated;

    /** Offers from threads other than the driver, in order; drained by the driver. */
    final ManyToOneConcurrentLinkedQueue<byte[]> pending = new ManyToOneConcurrentLinkedQueue<>();
    final AtomicLong pendingBytes = new AtomicLong();

    UcxConnectionBase(UcxTransport transport, Connection control, MessageHandler handler, String reason,
                      UcxTransport.Peer peer) {
        this.transport = transport;
        this.control = control;
        this.handler = handler;
        this.reason = reason;
        this.peer = peer;
        this.crossMemoryReads = transport.crossMemoryReads(peer);
        this.peerBell = transport.doorbellOf(peer);
    }

    /** Driver: after a put or send to the peer, wakes its agent if it sleeps. */
    final void ringPeer() {
        Doorbell.Remote bell = peerBell;
        if (bell != null) {
            bell.ringIfAsleep();
        }
    }

    /** Driver: takes the local slot and endpoint. */
    abstract void attachLocal(int slot, long slotAddress, UcpEndpoint ep);

    /** Driver: the bytes of this side's OFFER for the peer; {@code slotKey} covers this connection's memory only. */
    abstract byte[] offer(byte[] slotKey);

    /** Driver: the peer's OFFER. */
    abstract void attachRemote(byte[] offer);

    void markReady() {
        ready = true;
    }

    /** Driver: receives what arrived, sends what is pending; returns work done. */
    abstract int poll();

    /**
     * Driver: whether this connection needs the worker progressed on every duty cycle (its messages, puts or callbacks
     * complete there); when no connection does, the transport progresses it once in several cycles.
     */
    boolean needsProgress() {
        return true;
    }

    /** Driver: sends one message now or reports back-pressure. */
    abstract int sendNow(MemorySegment message, long offset, int length);

    /** Queue budget for cross-thread offers before back-pressure. */
    abstract long pendingLimit();

    abstract String wire();

    @Override
    public final int offer(MemorySegment message) {
        if (closed.get()) {
            return TransportStatus.CLOSED;
        }
        long length = message.byteSize();
        if (length > maxMessageLength()) {
            return TransportStatus.TOO_LARGE;
        }
        if (!ready) {
            return TransportStatus.NOT_CONNECTED;
        }
        if (transport.tryEnterDriver()) {
            try {
                if (!hasPending() || drainPending() == 0) {
                    int status = sendNow(message, 0, (int) length);
                    if (status != TransportStatus.BACK_PRESSURED || length <= maxFramePayload()) {
                        return status;
                    }
                }
            } finally {
                transport.exitDriver();
            }
        }
        return enqueue(message, (int) length);
    }

    /**
     * Gathers {@code head} and {@code body} straight into the frames where the wire can ({@link #gathers()}) and this
     * thread can drive with nothing queued before it; otherwise (or when the peer's ring is full) joins them and offers
     * the whole, as the SPI's default does.
     */
    @Override
    public final int offer(MemorySegment head, MemorySegment body) {
        long length = head.byteSize() + body.byteSize();
        if (gathers() && !closed.get() && ready && length <= maxMessageLength() && transport.tryEnterDriver()) {
            try {
                if (!hasPending() || drainPending() == 0) {
                    int status = sendNow(head, body);
                    if (status != TransportStatus.BACK_PRESSURED) {
                        return status;
                    }
                }
            } finally {
                transport.exitDriver();
            }
        }
        return Connection.super.offer(head, body);
    }

    /** Whether {@link #sendNow(MemorySegment, MemorySegment)} gathers; without it a two-part offer is joined. */
    boolean gathers() {
        return false;
    }

    /**
     * Driver, where {@link #gathers()}: sends {@code head} followed by {@code body} as one message now (the rest of a
     * message larger than a frame kept by the connection if the peer's ring fills up), or reports back-pressure.
     */
    int sendNow(MemorySegment head, MemorySegment body) {
        throw new UnsupportedOperationException("this wire does not gather");
    }

    /** Driver: whether queued messages wait. */
    abstract boolean hasPending();

    /**
     * The largest message sent in one frame. Larger ones are fragmented: from the caller's memory when it can drive
     * (the rest kept by the connection if the peer's ring fills up), else through the pending queue.
     */
    abstract int maxFramePayload();

    private int enqueue(MemorySegment message, int length) {
        long before = pendingBytes.get();
        if (before > 0 && before + length > pendingLimit()) {
            transport.wake();
            return TransportStatus.BACK_PRESSURED;
        }
        pendingBytes.addAndGet(length);
        pending.offer(message.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
        transport.copies.sent(length);
        transport.wake();
        return TransportStatus.OK;
    }

    /**
     * Driver: sends queued messages in order while there is room.
     *
     * @return 0 when the queue is now empty, else the number still waiting
     */
    abstract int drainPending();

    final void deliver(MemorySegment message) {
        try {
            handler.onMessage(this, message);
        } catch (Throwable t) {
            LOG.warn("message handler failed on {}; closing", describe(), t);
            close(t);
        }
    }

    @Override
    public String transportName() {
        return transport.name();
    }

    @Override
    public String selectionReason() {
        return reason;
    }

    @Override
    public String describe() {
        return transport.name() + " " + wire() + " " + remoteAddress() + " ("
            + transport.wireKind(peer) + (crossMemoryReads ? ", reads by process_vm_readv" : "") + ", "
            + transport.context() + ", " + transport.copies + ")";
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return control.remoteAddress();
    }

    @Override
    public InetSocketAddress localAddress() {
        return control.localAddress();
    }

    @Override
    public int maxMessageLength() {
        return transport.context().maxMessageLengthValue();
    }

    @Override
    public boolean isOpen() {
        return !closed.get();
    }

    @Override
    public CompletableFuture<Void> closeFuture() {
        return closeFuture;
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
        close(null);
    }

    void close(Throwable cause) {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        transport.execute(() -> closeOnDriver(cause));
    }

    private void closeOnDriver(Throwable cause) {
        if (driverClosed) {
            return;
        }
        driverClosed = true;
        transport.removeConnection(this);
        releaseRemote();
        if (ep != null) {
            try {
                // FORCE is refused for endpoints without peer error handling (which shared memory needs); a flush
                // close is not waited for, so a dead peer cannot hold this thread
                transport.closeEndpoint(ep);
            } catch (Throwable t) {
                LOG.debug("endpoint close", t);
            }
            ep = null;
        }
        if (slot >= 0) {
            transport.releaseSlot(slot);
            slot = -1;
        }
        while (pending.poll() != null) {
            pendingBytes.set(0);
        }
        pendingBytes.set(0);
        try {
            if (ready) {
                handler.onClose(this, cause);
            }
        } catch (Throwable t) {
            LOG.warn("close handler failed", t);
        } finally {
            closeFuture.complete(null);
            control.close();
        }
    }

    /** Driver: releases remote keys. */
    abstract void releaseRemote();

    // ---- one-sided ----

    @Override
    public RegisteredMemory register(MemorySegment segment) {
        return new UcxRegisteredMemory(transport, segment, transport.register(segment));
    }

    @Override
    public RemoteMemory remoteMemory(byte[] descriptor) {
        return UcxRemoteMemory.parse(descriptor);
    }

    @Override
    public CompletableFuture<Void> read(RemoteMemory remote, long remoteOffset, RegisteredMemory local,
                                        long localOffset, long length) {
        return oneSided(true, remote, remoteOffset, local, localOffset, length);
    }

    @Override
    public boolean readNow(RemoteMemory remote, long remoteOffset, MemorySegment local, long localOffset,
                           long length) {
        if (!(remote instanceof UcxRemoteMemory r) || !local.isNative() || !crossMemoryReads || refutedPid != null) {
            // (a heap segment has no address the kernel could copy into)
            return false;
        }
        String bad = MemoryRanges.check(r, remoteOffset, local, localOffset, length);
        if (bad != null) {
            throw new TransportException("one-sided read refused: " + bad);
        }
        if (!isOpen() || !ready) {
            throw new TransportException("connection closed: " + describe());
        }
        if (length == 0) {
            return true;
        }
        CompletableFuture<Void> f = new CompletableFuture<>();
        if (!readAcrossMemory(r.address() + remoteOffset, local.address() + localOffset, length, f)) {
            return false;
        }
        try {
            f.join();
        } catch (java.util.concurrent.CompletionException e) {
            throw e.getCause() instanceof TransportException t ? t : new TransportException(e.getCause().getMessage(),
                e.getCause());
        }
        return true;
    }

    @Override
    public CompletableFuture<Void> write(RegisteredMemory local, long localOffset, RemoteMemory remote,
                                         long remoteOffset, long length) {
        return oneSided(false, remote, remoteOffset, local, localOffset, length);
    }

    private CompletableFuture<Void> oneSided(boolean read, RemoteMemory remote, long remoteOffset,
                                             RegisteredMemory local, long localOffset, long length) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        if (!(remote instanceof UcxRemoteMemory r) || !(local instanceof UcxRegisteredMemory l)) {
            f.completeExceptionally(new IllegalArgumentException("not ucx memory: " + remote + ", " + local));
            return f;
        }
        String bad = MemoryRanges.check(r, remoteOffset, l, localOffset, length);
        if (bad != null) {
            f.completeExceptionally(new TransportException("one-sided " + (read ? "read" : "write") + " refused: "
                + bad));
            return f;
        }
        if (!isOpen() || !ready) {
            f.completeExceptionally(new TransportException("connection closed: " + describe()));
            return f;
        }
        if (length == 0) {
            f.complete(null);
            return f;
        }
        if (refutedPid != null) {
            f.completeExceptionally(new TransportException("one-sided " + (read ? "read" : "write")
                + " refused: the peer declared pid " + peer.pid() + ", but " + refutedPid));
            return f;
        }
        // The driver never copies inline: a long copy there would stall every other connection of the worker.
        if (read && crossMemoryReads && !transport.isDriverThread() && readAcrossMemory(r.address() + remoteOffset,
                l.segment().address() + localOffset, length, f)) {
            return f;
        }
        transport.execute(() -> {
            if (ep == null) {
                f.completeExceptionally(new TransportException("connection closed: " + describe()));
                return;
            }
            UcpRemoteKey key;
            try {
                key = r.acquire(transport, ep);
            } catch (Throwable t) {
                f.completeExceptionally(t);
                return;
            }
            // the key lives until the operation ends (its callback, on this thread) or fails to start
            boolean[] released = new boolean[1];
            Runnable release = () -> {
                if (!released[0]) {
                    released[0] = true;
                    r.release(transport, key);
                }
            };
            try {
                UcxCallback cb = new UcxCallback() {
                    @Override
                    public void onSuccess(UcpRequest request) {
                        release.run();
                        f.complete(null);
                    }

                    @Override
                    public void onError(int status, String message) {
                        release.run();
                        f.completeExceptionally(new TransportException("ucx " + (read ? "get" : "put")
                            + " failed: " + message + " (" + status + ")"));
                    }
                };
                long localAddress = l.segment().address() + localOffset;
                if (read) {
                    ep.getNonBlocking(r.address() + remoteOffset, key, localAddress, length, cb);
                } else {
                    // a put's own completion is local; the flush completes once the data is in the peer's memory
                    ep.putNonBlockingImplicit(localAddress, length, r.address() + remoteOffset, key);
                    ep.flushNonBlocking(cb);
                }
            } catch (Throwable t) {
                release.run();
                f.completeExceptionally(t);
            }
        });
        return f;
    }

    /**
     * One kernel copy from the peer's memory into ours on this thread; false when the peer cannot be read this way
     * (then the read goes through UCX, and so do this connection's later ones).
     */
    private boolean readAcrossMemory(long remoteAddress, long localAddress, long length, CompletableFuture<Void> f) {
        if (!peerVouched) {
            // The pid is the peer's word: read its memory only once the kernel says it runs the peer's end of the
            // control socket, else a peer could name another process (or ours) and have us read that.
            PeerCredentials.Verdict v = PeerCredentials.verify(peer.pid(), control.localAddress(),
                control.remoteAddress());
            if (!v.vouched()) {
                crossMemoryReads = false;
                if (v.refuted()) {
                    refutedPid = v.reason();
                    if (v.reason().startsWith(PeerCredentials.NO_PROCESS)) {
                        LOG.info("{}: declared pid {} does not exist; its one-sided reads fail",
                            control.remoteAddress(), peer.pid());
                    } else {
                        LOG.warn("{}: declared pid {} is not its own ({}); its one-sided reads are refused",
                            control.remoteAddress(), peer.pid(), v.reason());
                    }
                    f.completeExceptionally(new TransportException("one-sided read refused: the peer declared pid "
                        + peer.pid() + ", but " + v.reason()));
                    return true;
                }
                LOG.info("{}: declared pid {} cannot be vouched for ({}); its reads go through ucx",
                    control.remoteAddress(), peer.pid(), v.reason());
                return false;
            }
            peerVouched = true;
        }
        int errno = CrossMemoryAttach.read(peer.pid(), localAddress, remoteAddress, length);
        if (errno == 0) {
            f.complete(null);
            return true;
        }
        if (errno == CrossMemoryAttach.Errno.ESRCH) {
            // The peer process is gone: fail now. UCX's get from a dead peer would never complete.
            f.completeExceptionally(new TransportException("one-sided read failed: peer process " + peer.pid()
                + " has exited"));
            return true;
        }
        if (errno == CrossMemoryAttach.Errno.EPERM || errno == CrossMemoryAttach.Errno.ENOSYS) {
            crossMemoryReads = false;
            LOG.info("process_vm_readv from pid {} refused (errno {}); reads on {} go through ucx", peer.pid(), errno,
                remoteAddress());
            return false;
        }
        f.completeExceptionally(new TransportException("one-sided read of " + length + " bytes at "
            + Long.toHexString(remoteAddress) + " failed: process_vm_readv errno " + errno));
        return true;
    }

    @Override
    public String toString() {
        return describe();
    }
}
