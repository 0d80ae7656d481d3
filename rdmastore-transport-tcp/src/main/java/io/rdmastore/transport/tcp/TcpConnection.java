package io.rdmastore.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.EventLoop;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.epoll.EpollReadsOff;
import io.netty.channel.socket.DuplexChannel;
import io.netty.channel.unix.Socket;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.MemoryRanges;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.RemoteMemory;
import io.rdmastore.transport.TransportException;
import io.rdmastore.transport.TransportStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static io.rdmastore.transport.tcp.FrameDescriptor.HEADER_LENGTH;

/**
 * One native TCP connection. Messages and one-sided operations share the socket (see the package documentation).
 *
 * <p>Threads: public methods may be called from any thread. Methods without {@code public} run on the channel's event
 * loop unless they say otherwise, and so does everything they touch that is not volatile, concurrent or guarded.
 * Messages reach the {@link MessageHandler} in order, as read-only views valid only during the call: on that loop, or,
 * on a connection whose callers read ({@link SocketReader}), on the thread holding the reader's lock.
 */
final class TcpConnection implements Connection {
    private static final Logger LOG = LoggerFactory.getLogger(TcpConnection.class);

    private final TcpTransport transport;
    private final TcpTransport.Context ctx;
    private final Channel channel;
    private volatile MessageHandler handler;
    private volatile String description;
    private final CompletableFuture<Void> closeFuture = new CompletableFuture<>();
    private final AtomicBoolean closeNotified = new AtomicBoolean();
    private volatile boolean closed;
    private volatile Throwable closeCause;
    private volatile Object attachment;
    private volatile int inboundLimit = Integer.MAX_VALUE;
    /** Bytes handed to the event loop by other threads and not yet in Netty's outbound buffer. */
    private final AtomicLong queuedBytes = new AtomicLong();
    /** Writes handed to the event loop by other threads; the last one of a burst flushes. */
    private final AtomicInteger queuedWrites = new AtomicInteger();
    private final Map<Integer, TcpRegisteredMemory> regions = new ConcurrentHashMap<>();
    private final AtomicInteger nextRegionId = new AtomicInteger(1);

    /** One-sided chunks awaiting their responses; this map's monitor guards it, the ids and every {@link Op}. */
    private final Map<Long, Chunk> pending = new HashMap<>();
    private long nextRequestId = 1;

    // Event loop only.
    private boolean inRead;
    private boolean flushPending;

    /**
     * Whether callers write their frames themselves ({@link #offer} on a thread other than the event loop: one
     * {@code send} instead of a hand-off that wakes the loop). Writes then hold this connection's monitor: a caller
     * writes directly only while Netty holds no bytes of the connection, and the loop adds bytes only under the
     * monitor, so frames never interleave.
     */
    private final boolean directWrites;
    /**
     * The callers' own descriptor of the socket ({@link SocketDup}), from the preface on until the channel is
     * inactive; under this connection's monitor.
     */
    private Socket directFd;
    /** Whether {@link #directFd} is set (read without the monitor, checked again under it). */
    private volatile boolean directReady;
    /** Messages callers wrote whole on their own thread; under this connection's monitor. */
    private long directFrames;
    /**
     * Reads the socket on the threads waiting for replies instead of the event loop ({@link SocketReader}); set on the
     * loop with the callers' descriptor when {@link TcpTransport.Context#callerReads()} holds, null otherwise.
     */
    private volatile SocketReader reader;
    /** The largest frame body accepted: a message, or one chunk of a one-sided operation with its header. */
    private final int maxFrameBody;

    TcpConnection(TcpTransport transport, Channel channel, MessageHandler handler) {
        this(transport, channel, handler, false);
    }

    TcpConnection(TcpTransport transport, Channel channel, MessageHandler handler, boolean directWrites) {
        this.transport = transport;
        this.ctx = transport.context();
        this.channel = channel;
        this.handler = handler;
        this.directWrites = directWrites && channel instanceof EpollSocketChannel;
        // Control frames may exceed a small maxMessageLength: one chunk plus its header, or an error text.
        this.maxFrameBody = (int) Math.min(Integer.MAX_VALUE - HEADER_LENGTH, Math.max((long) ctx.maxMessageLength(),
            (long) ctx.oneSidedChunkLength() + 64 + FrameDescriptor.MAX_ERROR_TEXT));
    }

    void handler(MessageHandler value) {
        handler = value;
    }

    static String format(InetSocketAddress a) {
        return a == null ? "?" : a.getHostString() + ":" + a.getPort();
    }

    // ---- Connection ----

    @Override
    public String transportName() {
        return TcpTransport.NAME;
    }

    @Override
    public String selectionReason() {
        return "carrier";
    }

    @Override
    public String describe() {
        String d = description;
        if (d == null) {
            d = TcpTransport.NAME + " (" + transport.flavor() + ") "
                + format((InetSocketAddress) channel.localAddress()) + " -> "
                + format((InetSocketAddress) channel.remoteAddress());
            if (channel.localAddress() != null && channel.remoteAddress() != null) {
                description = d;
            }
        }
        return d;
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return (InetSocketAddress) channel.remoteAddress();
    }

    @Override
    public InetSocketAddress localAddress() {
        return (InetSocketAddress) channel.localAddress();
    }

    @Override
    public int maxMessageLength() {
        return ctx.maxMessageLength();
    }

    @Override
    public void inboundLimit(int bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("inbound limit must be >= 0: " + bytes);
        }
        inboundLimit = bytes;
    }

    /** The cap set by {@link #inboundLimit(int)}; the frame decoder reads it per frame. */
    int inboundLimit() {
        return inboundLimit;
    }

    @Override
    public int offer(MemorySegment message) {
        return offerParts(message, null);
    }

    /** Both parts are copied straight into the frame's one direct buffer. */
    @Override
    public int offer(MemorySegment head, MemorySegment body) {
        return offerParts(head, body);
    }

    private int offerParts(MemorySegment message, MemorySegment body) {
        long size = message.byteSize() + (body == null ? 0 : body.byteSize());
        if (closed || !channel.isActive()) {
            return TransportStatus.CLOSED;
        }
        if (size > ctx.maxMessageLength()) {
            return TransportStatus.TOO_LARGE;
        }
        if (!channel.isWritable() || queuedBytes.get() > ctx.writeBufferHighWaterMark()) {
            return TransportStatus.BACK_PRESSURED;
        }
        int n = (int) size;
        ByteBuf buf = channel.alloc().directBuffer(HEADER_LENGTH + n);
        buf.writeInt(n).writeByte(FrameDescriptor.MESSAGE);
        try {
            copyIn(buf, message, 0, (int) message.byteSize());
            if (body != null) {
                copyIn(buf, body, 0, (int) body.byteSize());
            }
        } catch (RuntimeException e) {
            // The caller's segment is not readable here (closed arena, other thread's confined arena).
            buf.release();
            throw e;
        }
        EventLoop loop = channel.eventLoop();
        if (loop.inEventLoop()) {
            writeOnLoop(buf);
            return TransportStatus.OK;
        }
        if (directReady && buf.hasMemoryAddress()) {
            return offerDirect(buf, loop);
        }
        return handOff(buf, loop);
    }

    /**
     * Sends {@code buf} on the caller's thread when Netty holds none of this connection's bytes; what the socket does
     * not take at once (a full send buffer) goes to the loop, which then owns the order until its queue drains.
     */
    private int offerDirect(ByteBuf buf, EventLoop loop) {
        synchronized (this) {
            if (directFd != null && queuedWrites.get() == 0 && nettyHoldsNothing()) {
                try {
                    int at = buf.readerIndex();
                    int left = buf.readableBytes();
                    while (left > 0) {
                        int n = directFd.writeAddress(buf.memoryAddress(), at, at + left);
                        if (n <= 0) {
                            break;
                        }
                        at += n;
                        left -= n;
                    }
                    if (left == 0) {
                        buf.release();
                        directFrames++;
                        return TransportStatus.OK;
                    }
                    buf.readerIndex(at);
                } catch (IOException e) {
                    // The socket failed (reset by the peer): the loop sees it too and closes the connection.
                    buf.release();
                    return TransportStatus.CLOSED;
                }
            }
            return handOff(buf, loop);
        }
    }

    /** Whether Netty's outbound buffer of the channel is empty (every byte it took is in the kernel). */
    private boolean nettyHoldsNothing() {
        ChannelOutboundBuffer out = channel.unsafe().outboundBuffer();
        return out != null && out.totalPendingWriteBytes() == 0;
    }

    /** Messages callers wrote whole on their own thread so far (for tests and diagnostics). */
    synchronized long directFrames() {
        return directFrames;
    }

    /** Called on the loop once the preface is written: from now on callers may write directly. */
    void prefaceWritten() {
        if (!directWrites) {
            return;
        }
        synchronized (this) {
            if (!closed && channel.isActive()) {
                directFd = SocketDup.of(((EpollSocketChannel) channel).fd());
                if (directFd == null) {
                    LOG.debug("{}: callers hand their frames to the event loop: no descriptor of their own ({})",
                        describe(), SocketDup.unavailabilityCause());
                }
                directReady = directFd != null;
                if (directReady && ctx.callerReads()) {
                    startReader();
                }
            }
        }
    }

    /** Moves reading from the event loop to the callers ({@link SocketReader}) where the platform allows; on the loop. */
    private void startReader() {
        if (!SocketPoll.available()) {
            LOG.debug("{}: the event loop reads: no poll(2) ({})", describe(), SocketPoll.unavailabilityCause());
            return;
        }
        SocketReader r;
        try {
            r = new SocketReader(this, directFd, channel.alloc());
        } catch (RuntimeException e) {
            LOG.debug("{}: the event loop reads: no eventfd for a reader ({})", describe(), e.toString());
            return;
        }
        if (!EpollReadsOff.apply(channel)) {
            LOG.debug("{}: the event loop reads: its reads could not be turned off", describe());
            r.abandon();
            return;
        }
        reader = r;
        r.start();
    }

    @Override
    public boolean awaitReading(Future<?> done, long deadlineNanos) {
        SocketReader r = reader;
        return r != null && !onAnEventLoop() && r.await(done, deadlineNanos);
    }

    /**
     * Whether the calling thread is one of the transport's event loops: it must not sit in {@code poll}, since the rest
     * of a request the socket took only in part may be queued on it (and other connections share it).
     */
    private boolean onAnEventLoop() {
        for (io.netty.util.concurrent.EventExecutor e : channel.eventLoop().parent()) {
            if (e.inEventLoop()) {
                return true;
            }
        }
        return false;
    }

    /**
     * Bytes the event loop read although callers read this connection (Netty reads on a socket error): delivered as the
     * callers' reads are. False when nothing more will be read. On the loop.
     */
    boolean readByLoop(ByteBuf bytes) {
        return reader.deliver(bytes);
    }

    /** Whether threads other than the event loop read this connection's socket. */
    boolean readsOnCallers() {
        return reader != null;
    }

    /** Times the connection's background reader has waited on the socket (tests); 0 without caller reads. */
    long backgroundPolls() {
        SocketReader r = reader;
        return r == null ? 0 : r.backgroundPolls();
    }

    /** Threads waiting in {@link #awaitReading} now, reading or not (tests). */
    int readWaiters() {
        SocketReader r = reader;
        return r == null ? 0 : r.waiters();
    }

    /** Stops direct writes and closes the callers' descriptor; on the loop when the channel is inactive. */
    private void closeDirect() {
        if (!directWrites) {
            return;
        }
        SocketReader r = reader;
        if (r != null) {
            // first, without the monitor: a reader delivering a frame may be writing a reply under it
            r.stop();
        }
        synchronized (this) {
            directReady = false;
            if (directFd != null) {
                try {
                    directFd.close();
                } catch (IOException e) {
                    LOG.debug("{}: closing the callers' descriptor: {}", describe(), e.toString());
                }
                directFd = null;
            }
        }
    }

    private int handOff(ByteBuf buf, EventLoop loop) {
        int frame = buf.readableBytes();
        queuedBytes.addAndGet(frame);
        queuedWrites.incrementAndGet();
        try {
            loop.execute(() -> writeQueued(buf, frame));
        } catch (RejectedExecutionException e) {
            queuedBytes.addAndGet(-frame);
            queuedWrites.decrementAndGet();
            buf.release();
            return TransportStatus.CLOSED;
        }
        return TransportStatus.OK;
    }

    private void writeQueued(ByteBuf buf, int frame) {
        if (directWrites) {
            synchronized (this) {
                writeQueuedLocked(buf, frame);
            }
        } else {
            writeQueuedLocked(buf, frame);
        }
    }

    private void writeQueuedLocked(ByteBuf buf, int frame) {
        queuedBytes.addAndGet(-frame);
        channel.write(buf, channel.voidPromise());
        // Tasks run between reads, so the last hand-off of a burst flushes for all of them.
        if (queuedWrites.decrementAndGet() == 0) {
            channel.flush();
        }
    }

    /**
     * Writes a frame of the transport's own (a response, a one-sided request): on the event loop flushed once at the
     * end of the current read batch, or now; on a reader thread ({@link SocketReader}) as a caller's frame.
     */
    void writeOnLoop(ByteBuf buf) {
        EventLoop loop = channel.eventLoop();
        if (!loop.inEventLoop()) {
            if (directReady && buf.hasMemoryAddress()) {
                offerDirect(buf, loop);
            } else {
                handOff(buf, loop);
            }
            return;
        }
        if (directWrites) {
            synchronized (this) {
                if (queuedWrites.get() > 0) {
                    // A caller's frame is queued, perhaps the rest of one the socket took only part of: this one
                    // must follow it on the wire, so it joins the queue behind it (a loop shutting down refuses it
                    // and the buffer is released: the connection is closing).
                    handOff(buf, channel.eventLoop());
                } else {
                    writeOnLoopLocked(buf);
                }
            }
        } else {
            writeOnLoopLocked(buf);
        }
    }

    private void writeOnLoopLocked(ByteBuf buf) {
        if (inRead) {
            channel.write(buf, channel.voidPromise());
            flushPending = true;
        } else {
            channel.writeAndFlush(buf, channel.voidPromise());
        }
    }

    void readStarted() {
        inRead = true;
    }

    void readComplete() {
        inRead = false;
        if (flushPending) {
            flushPending = false;
            channel.flush();
        }
    }

    @Override
    public RegisteredMemory register(MemorySegment segment) {
        if (segment == null) {
            throw new IllegalArgumentException("segment must not be null");
        }
        if (closed) {
            throw new TransportException("cannot register memory: connection closed: " + describe());
        }
        TcpRegisteredMemory r = new TcpRegisteredMemory(this, nextRegionId.getAndIncrement(), segment);
        regions.put(r.id(), r);
        return r;
    }

    void deregister(TcpRegisteredMemory r) {
        regions.remove(r.id(), r);
    }

    @Override
    public RemoteMemory remoteMemory(byte[] descriptor) {
        return TcpRemoteMemory.decode(descriptor);
    }

    @Override
    public CompletableFuture<Void> read(RemoteMemory remote, long remoteOffset, RegisteredMemory local,
                                        long localOffset, long length) {
        return start(true, remote, remoteOffset, local, localOffset, length);
    }

    @Override
    public CompletableFuture<Void> write(RegisteredMemory local, long localOffset, RemoteMemory remote,
                                         long remoteOffset, long length) {
        return start(false, remote, remoteOffset, local, localOffset, length);
    }

    private CompletableFuture<Void> start(boolean read, RemoteMemory remote, long remoteOffset,
                                          RegisteredMemory local, long localOffset, long length) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        String what = read ? "read" : "write";
        String bad = null;
        if (!(remote instanceof TcpRemoteMemory r)) {
            bad = "remote memory " + remote + " was not decoded by the tcp transport";
        } else if (local == null) {
            bad = "local registered memory is null";
        } else if (local instanceof TcpRegisteredMemory t && t.isClosed()) {
            bad = "local registration " + t + " is closed";
        } else {
            bad = MemoryRanges.check(r, remoteOffset, local, localOffset, length);
        }
        if (bad != null) {
            f.completeExceptionally(new TransportException("one-sided " + what + " refused: " + bad));
            return f;
        }
        if (closed) {
            f.completeExceptionally(new TransportException("one-sided " + what + " failed: connection closed: "
                + describe()));
            return f;
        }
        if (length == 0) {
            f.complete(null);
            return f;
        }
        Op op = new Op(read, f, ((TcpRemoteMemory) remote).regionId(), remoteOffset, local.segment(), localOffset,
            length);
        try {
            channel.eventLoop().execute(() -> pump(op));
        } catch (RejectedExecutionException e) {
            f.completeExceptionally(new TransportException("one-sided " + what + " failed: transport closed", e));
        }
        return f;
    }

    /** Issues the next chunks of {@code op} up to the window. The loop, or a reader delivering a response. */
    private void pump(Op op) {
        synchronized (pending) {
            pumpLocked(op);
        }
    }

    private void pumpLocked(Op op) {
        if (closed || !channel.isActive()) {
            op.fail(new TransportException("one-sided " + op.what() + " failed: connection closed: " + describe()));
            return;
        }
        while (!op.failed && op.inFlight < ctx.oneSidedWindow() && op.issued < op.length) {
            int n = (int) Math.min(ctx.oneSidedChunkLength(), op.length - op.issued);
            long id = nextRequestId++;
            pending.put(id, new Chunk(op, op.issued, n));
            ByteBuf b;
            if (op.read) {
                b = channel.alloc().directBuffer(HEADER_LENGTH + FrameDescriptor.READ_REQUEST_LENGTH);
                b.writeInt(FrameDescriptor.READ_REQUEST_LENGTH).writeByte(FrameDescriptor.READ_REQUEST)
                    .writeLong(id).writeInt(op.regionId).writeLong(op.remoteOffset + op.issued).writeInt(n);
            } else {
                b = channel.alloc().directBuffer(HEADER_LENGTH + FrameDescriptor.WRITE_REQUEST_HEADER + n);
                b.writeInt(FrameDescriptor.WRITE_REQUEST_HEADER + n).writeByte(FrameDescriptor.WRITE_REQUEST)
                    .writeLong(id).writeInt(op.regionId).writeLong(op.remoteOffset + op.issued);
                try {
                    copyIn(b, op.local, op.localOffset + op.issued, n);
                } catch (RuntimeException e) {
                    b.release();
                    pending.remove(id);
                    op.fail(new TransportException("one-sided write failed: local memory not accessible: " + e, e));
                    return;
                }
            }
            op.issued += n;
            op.inFlight++;
            writeOnLoop(b);
        }
    }

    // ---- frames from the peer (the event loop, or the thread holding the reader's lock) ----

    /**
     * Dispatches one frame whose body is {@code in[body, body + length)}. Returns null, or the reason the connection
     * must be closed as a protocol violation.
     */
    String onFrame(byte type, ByteBuf in, int body, int length) {
        switch (type) {
            case FrameDescriptor.MESSAGE -> {
                if (length > ctx.maxMessageLength()) {
                    return "message of " + length + " bytes exceeds the maximum of " + ctx.maxMessageLength();
                }
                MessageHandler h = handler;
                if (h != null) {
                    try {
                        h.onMessage(this, view(in, body, length).asReadOnly());
                    } catch (RuntimeException e) {
                        // A handler that throws has lost track of this connection's state: close rather than go on.
                        LOG.warn("{}: message handler threw, closing the connection", describe(), e);
                        failure(new TransportException("message handler failed: " + e, e));
                    }
                }
                return null;
            }
            case FrameDescriptor.READ_REQUEST -> {
                return serveRead(in, body, length);
            }
            case FrameDescriptor.WRITE_REQUEST -> {
                return serveWrite(in, body, length);
            }
            case FrameDescriptor.READ_RESPONSE, FrameDescriptor.WRITE_RESPONSE -> {
                return onResponse(type, in, body, length);
            }
            case FrameDescriptor.ERROR -> {
                String reason = in.toString(body, Math.min(length, FrameDescriptor.MAX_ERROR_TEXT),
                    StandardCharsets.UTF_8);
                LOG.info("{}: peer closes the connection: {}", describe(), reason);
                closeCause = new TransportException("peer closed the connection: " + reason);
                channel.close();
                return null;
            }
            default -> {
                return "unknown frame type " + type;
            }
        }
    }

    private String serveRead(ByteBuf in, int body, int length) {
        if (length != FrameDescriptor.READ_REQUEST_LENGTH) {
            return "read request of " + length + " bytes (expected " + FrameDescriptor.READ_REQUEST_LENGTH + ")";
        }
        long id = in.getLong(body);
        int regionId = in.getInt(body + 8);
        long offset = in.getLong(body + 12);
        int n = in.getInt(body + 20);
        TcpRegisteredMemory r = regions.get(regionId);
        String error = check(r, regionId, offset, n);
        if (error == null) {
            ByteBuf b = channel.alloc().directBuffer(HEADER_LENGTH + FrameDescriptor.RESPONSE_HEADER + n);
            b.writeInt(FrameDescriptor.RESPONSE_HEADER + n).writeByte(FrameDescriptor.READ_RESPONSE).writeLong(id)
                .writeByte(FrameDescriptor.STATUS_OK);
            try {
                copyIn(b, r.segment(), offset, n);
                writeOnLoop(b);
                return null;
            } catch (RuntimeException e) {
                b.release();
                error = "region " + regionId + " is not accessible: " + e.getMessage();
            }
        }
        writeOnLoop(failure(FrameDescriptor.READ_RESPONSE, id, "remote read failed: " + error));
        return null;
    }

    private String serveWrite(ByteBuf in, int body, int length) {
        if (length < FrameDescriptor.WRITE_REQUEST_HEADER) {
            return "write request of " + length + " bytes (at least " + FrameDescriptor.WRITE_REQUEST_HEADER
                + " expected)";
        }
        long id = in.getLong(body);
        int regionId = in.getInt(body + 8);
        long offset = in.getLong(body + 12);
        int n = length - FrameDescriptor.WRITE_REQUEST_HEADER;
        TcpRegisteredMemory r = regions.get(regionId);
        String error = check(r, regionId, offset, n);
        if (error == null) {
            try {
                copyOut(in, body + FrameDescriptor.WRITE_REQUEST_HEADER, r.segment(), offset, n);
                ByteBuf b = channel.alloc().directBuffer(HEADER_LENGTH + FrameDescriptor.RESPONSE_HEADER);
                b.writeInt(FrameDescriptor.RESPONSE_HEADER).writeByte(FrameDescriptor.WRITE_RESPONSE).writeLong(id)
                    .writeByte(FrameDescriptor.STATUS_OK);
                writeOnLoop(b);
                return null;
            } catch (RuntimeException e) {
                error = "region " + regionId + " is not accessible: " + e.getMessage();
            }
        }
        writeOnLoop(failure(FrameDescriptor.WRITE_RESPONSE, id, "remote write failed: " + error));
        return null;
    }

    private String check(TcpRegisteredMemory r, int regionId, long offset, int n) {
        if (r == null || r.isClosed()) {
            return "unknown or closed region " + regionId;
        }
        long size = r.segment().byteSize();
        if (n < 0 || offset < 0 || offset > size - n) {
            return "offset " + offset + " + length " + n + " is outside region " + regionId + " of " + size
                + " bytes";
        }
        if (n > ctx.oneSidedChunkLength()) {
            return "chunk of " + n + " bytes exceeds the limit of " + ctx.oneSidedChunkLength();
        }
        return null;
    }

    private ByteBuf failure(byte type, long id, String text) {
        byte[] t = FrameDescriptor.errorText(text);
        ByteBuf b = channel.alloc().directBuffer(HEADER_LENGTH + FrameDescriptor.RESPONSE_HEADER + t.length);
        b.writeInt(FrameDescriptor.RESPONSE_HEADER + t.length).writeByte(type).writeLong(id)
            .writeByte(FrameDescriptor.STATUS_FAILED).writeBytes(t);
        return b;
    }

    private String onResponse(byte type, ByteBuf in, int body, int length) {
        if (length < FrameDescriptor.RESPONSE_HEADER) {
            return "response of " + length + " bytes (at least " + FrameDescriptor.RESPONSE_HEADER + " expected)";
        }
        synchronized (pending) {
            return onResponseLocked(type, in, body, length);
        }
    }

    private String onResponseLocked(byte type, ByteBuf in, int body, int length) {
        long id = in.getLong(body);
        byte status = in.getByte(body + 8);
        Chunk c = pending.remove(id);
        if (c == null || c.op.read != (type == FrameDescriptor.READ_RESPONSE)) {
            return "response to unknown request " + id;
        }
        Op op = c.op;
        op.inFlight--;
        int dataAt = body + FrameDescriptor.RESPONSE_HEADER;
        int dataLength = length - FrameDescriptor.RESPONSE_HEADER;
        if (status != FrameDescriptor.STATUS_OK) {
            op.fail(new TransportException(in.toString(dataAt, Math.min(dataLength, FrameDescriptor.MAX_ERROR_TEXT),
                StandardCharsets.UTF_8)));
            return null;
        }
        if (op.failed) {
            return null;
        }
        if (op.read) {
            if (dataLength != c.length) {
                return "read response of " + dataLength + " bytes for a request of " + c.length;
            }
            try {
                copyOut(in, dataAt, op.local, op.localOffset + c.offset, c.length);
            } catch (RuntimeException e) {
                op.fail(new TransportException("one-sided read failed: local memory not accessible: " + e, e));
                return null;
            }
        }
        op.completed += c.length;
        if (op.completed == op.length) {
            op.future.complete(null);
        } else {
            pumpLocked(op);
        }
        return null;
    }

    /**
     * Takes the next whole frame from {@code in} and dispatches it: 1 when it did, 0 when the frame is not complete
     * yet, -1 when the connection reads no more (this side is closing, or a protocol violation it has reported; the
     * bytes are skipped). On the loop, or on the thread holding the reader's lock.
     */
    int nextFrame(ByteBuf in) {
        int readable = in.readableBytes();
        if (closed) {
            // Closed by this side: what the peer sent afterwards is not delivered.
            in.skipBytes(readable);
            return -1;
        }
        if (readable < 4) {
            return 0;
        }
        int at = in.readerIndex();
        int length = in.getInt(at);
        String refused = null;
        if (length < 0 || length > maxFrameBody) {
            refused = "frame length " + length + " is out of range (0.." + maxFrameBody + ")";
        } else if (length > inboundLimit) {
            // Refused at the header, before its bytes are buffered (before authentication: the handshake's size).
            refused = "frame of " + length + " bytes exceeds this connection's current limit of " + inboundLimit;
        } else if (readable >= HEADER_LENGTH && in.getByte(at + 4) == FrameDescriptor.MESSAGE
            && length > ctx.maxMessageLength()) {
            // Refused at the header: an oversize message is not buffered first.
            refused = "message of " + length + " bytes exceeds the maximum of " + ctx.maxMessageLength();
        }
        if (refused != null) {
            in.skipBytes(readable);
            protocolError(refused);
            return -1;
        }
        if (readable < HEADER_LENGTH + length) {
            return 0;
        }
        byte type = in.getByte(at + 4);
        int body = at + HEADER_LENGTH;
        // Consume first: the bytes stay in place until this returns, and a re-entrant close sees a clean state.
        in.readerIndex(body + length);
        String violation = onFrame(type, in, body, length);
        if (violation != null) {
            in.skipBytes(in.readableBytes());
            protocolError(violation);
            return -1;
        }
        return 1;
    }

    /** The peer closed the socket (a reader saw the end of the stream): close this side too. Any thread. */
    void peerClosed() {
        channel.close();
    }

    /** Closes after telling the peer why (ERROR frame); used for protocol violations. Any thread. */
    void protocolError(String reason) {
        LOG.info("{}: closing: {}", describe(), reason);
        closeCause = new TransportException("protocol error: " + reason);
        closed = true;
        byte[] t = FrameDescriptor.errorText(reason);
        ByteBuf b = channel.alloc().directBuffer(HEADER_LENGTH + t.length);
        b.writeInt(t.length).writeByte(FrameDescriptor.ERROR).writeBytes(t);
        synchronized (this) {
            channel.writeAndFlush(b).addListener(f -> lingerThenClose());
        }
    }

    /** How long a connection closing after an ERROR frame waits for the peer to close first. */
    static final long LINGER_MILLIS = 1_000;

    /**
     * After an ERROR frame: shuts the write side (the peer reads the frame, then the end of the stream) and drops what
     * the peer still sends ({@link #nextFrame} skips it once closed) until the peer closes, or for at most
     * {@link #LINGER_MILLIS}. Closing at once with the peer's bytes unread makes the kernel answer with a reset, which
     * can reach the peer before it has read the frame and takes the reason with it.
     */
    private void lingerThenClose() {
        if (channel instanceof DuplexChannel d && channel.isActive() && !d.isOutputShutdown()) {
            d.shutdownOutput().addListener(f -> {
                if (!channel.isActive()) {
                    return;
                }
                try {
                    channel.eventLoop().schedule(() -> {
                        channel.close();
                    }, LINGER_MILLIS, TimeUnit.MILLISECONDS);
                } catch (RejectedExecutionException e) {
                    // the loop is stopping and closes its channels itself
                    channel.close();
                }
            });
        } else {
            channel.close();
        }
    }

    /** {@link #failure} on the event loop, after the I/O events it has pending. Any thread. */
    void failLater(Throwable cause) {
        try {
            channel.eventLoop().execute(() -> failure(cause));
        } catch (RejectedExecutionException e) {
            failure(cause);
        }
    }

    void failure(Throwable cause) {
        if (closeCause == null) {
            closeCause = cause;
        }
        closed = true;
        channel.close();
    }

    /** The channel became inactive: fail what is pending and tell the handler once. Event loop only. */
    void onInactive() {
        closed = true;
        try {
            closeDirect();
        } catch (RuntimeException e) {
            LOG.warn("{}: releasing the callers' descriptor failed", describe(), e);
        }
        synchronized (pending) {
            if (!pending.isEmpty()) {
                TransportException e = new TransportException("one-sided operation failed: connection closed: "
                    + describe());
                List<Chunk> all = new ArrayList<>(pending.values());
                pending.clear();
                for (Chunk c : all) {
                    c.op.fail(e);
                }
            }
        }
        regions.clear();
        if (closeNotified.compareAndSet(false, true)) {
            MessageHandler h = handler;
            try {
                if (h != null) {
                    h.onClose(this, closeCause);
                }
            } catch (RuntimeException e) {
                LOG.warn("{}: onClose handler threw", describe(), e);
            } finally {
                closeFuture.complete(null);
            }
        }
    }

    @Override
    public boolean isOpen() {
        return !closed && channel.isActive();
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
        closed = true;
        if (!channel.isOpen() || channel.eventLoop().isShuttingDown()) {
            // Closed already, or its event loop is stopping and closes it: a listener could no longer be notified
            // there (Netty would log "Failed to submit a listener notification task" with a stack trace).
            return;
        }
        // flush first: a reply offered just before close (a handshake REJECT, an error) must reach the peer
        channel.writeAndFlush(io.netty.buffer.Unpooled.EMPTY_BUFFER)
            .addListener(io.netty.channel.ChannelFutureListener.CLOSE);
    }

    @Override
    public String toString() {
        return describe();
    }

    // ---- copying between ByteBufs and segments ----

    /** Appends {@code src[offset, offset + n)} to {@code buf}. */
    static void copyIn(ByteBuf buf, MemorySegment src, long offset, int n) {
        buf.ensureWritable(n);
        int at = buf.writerIndex();
        if (n > 0) {
            MemorySegment.copy(src, offset, MemorySegment.ofBuffer(buf.nioBuffer(at, n)), 0, n);
        }
        buf.writerIndex(at + n);
    }

    /** Copies {@code buf[index, index + n)} into {@code dst} at {@code dstOffset}. */
    static void copyOut(ByteBuf buf, int index, MemorySegment dst, long dstOffset, int n) {
        if (n > 0) {
            MemorySegment.copy(view(buf, index, n), 0, dst, dstOffset, n);
        }
    }

    /** A view of {@code buf[index, index + n)}, copied only when the buffer is not contiguous. */
    static MemorySegment view(ByteBuf buf, int index, int n) {
        if (buf.nioBufferCount() == 1) {
            return MemorySegment.ofBuffer(buf.nioBuffer(index, n));
        }
        byte[] copy = new byte[n];
        buf.getBytes(index, copy);
        return MemorySegment.ofArray(copy);
    }

    /** One one-sided read or write in progress; under the monitor of {@link #pending} after construction. */
    private static final class Op {
        final boolean read;
        final CompletableFuture<Void> future;
        final int regionId;
        final long remoteOffset;
        final MemorySegment local;
        final long localOffset;
        final long length;
        long issued;
        long completed;
        int inFlight;
        boolean failed;

        Op(boolean read, CompletableFuture<Void> future, int regionId, long remoteOffset, MemorySegment local,
           long localOffset, long length) {
            this.read = read;
            this.future = future;
            this.regionId = regionId;
            this.remoteOffset = remoteOffset;
            this.local = local;
            this.localOffset = localOffset;
            this.length = length;
        }

        String what() {
            return read ? "read" : "write";
        }

        void fail(Throwable t) {
            if (!failed) {
                failed = true;
                future.completeExceptionally(t);
            }
        }
    }

    /** One chunk request awaiting its response. */
    private record Chunk(Op op, long offset, int length) {
    }
}
