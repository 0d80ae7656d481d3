package io.rdmastore.transport;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

/**
 * A bidirectional, ordered, reliable connection carrying whole messages, plus one-sided reads and writes of memory the
 * peer registered. Messages are delivered to the {@link MessageHandler} given when the connection was made, in the
 * order they were offered, whole and intact.
 *
 * <p>Threads: {@link #offer(MemorySegment)} and every other method may be called from any thread; concurrent offers
 * from different threads are each delivered whole, in an order between them that is not defined. Offers from the
 * transport's own thread (inside a {@link MessageHandler} callback) take the fastest path.
 *
 * <p>Memory: {@code offer} copies the message before it returns, so the caller may reuse its segment at once.
 */
public interface Connection extends AutoCloseable {

    /** The provider carrying the data: {@code "tcp"} or {@code "ucx"}. */
    String transportName();

    /** Why this transport was chosen for this connection, in a sentence. */
    String selectionReason();

    /** A one-line description: transport, wire details, peer and the selection reason. */
    String describe();

    /** The peer's address on the bootstrap (control) socket. */
    InetSocketAddress remoteAddress();

    /** This side's address on the bootstrap (control) socket; null where the transport has no socket. Any thread. */
    default InetSocketAddress localAddress() {
        return null;
    }

    /** The largest message {@link #offer(MemorySegment)} accepts. */
    int maxMessageLength();

    /**
     * Caps what this connection buffers from its peer from now on: a message or frame whose announced body exceeds
     * {@code bytes} closes the connection before its bytes are read. A server sets the handshake's size until the peer
     * has authenticated, so an anonymous peer cannot make it hold more. Any thread. Default: no cap beyond the
     * transport's own maximum (for transports whose inbound memory is bounded otherwise).
     */
    default void inboundLimit(int bytes) {
    }

    /**
     * Offers one message. Copies {@code message} before returning.
     *
     * @return {@link TransportStatus#OK}, or a negative status: {@link TransportStatus#BACK_PRESSURED} (retry later),
     *     {@link TransportStatus#NOT_CONNECTED}, {@link TransportStatus#CLOSED}, {@link TransportStatus#TOO_LARGE}.
     */
    int offer(MemorySegment message);

    /**
     * Offers one message made of {@code head} followed by {@code body}, gathered by the transport straight from both
     * (a reply's header and a stored value, without first copying the value behind the header). Copies both before
     * returning; statuses as {@link #offer(MemorySegment)}. Default: joins the two into one array and offers that.
     */
    default int offer(MemorySegment head, MemorySegment body) {
        return offer(joined(head, body));
    }

    /** {@code head} followed by {@code body}, copied into one new heap segment. */
    private static MemorySegment joined(MemorySegment head, MemorySegment body) {
        long length = head.byteSize() + body.byteSize();
        if (length > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("message of " + length + " bytes");
        }
        MemorySegment whole = MemorySegment.ofArray(new byte[(int) length]);
        MemorySegment.copy(head, 0, whole, 0, head.byteSize());
        MemorySegment.copy(body, 0, whole, head.byteSize(), body.byteSize());
        return whole;
    }

    /**
     * Sends one message, waiting while back-pressured. Must not be called from the transport's own thread when the
     * transport needs that thread to make progress; use {@link #offer(MemorySegment)} there.
     *
     * @throws TransportException when the connection is closed, the message is too large, or the time-out passes
     */
    default void send(MemorySegment message, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        int idle = 0;
        while (true) {
            int status = offer(message);
            if (status >= 0) {
                return;
            }
            if (status != TransportStatus.BACK_PRESSURED && status != TransportStatus.NOT_CONNECTED) {
                throw new TransportException("send failed: " + TransportStatus.describe(status) + " on " + describe());
            }
            if (System.nanoTime() - deadline > 0) {
                throw new TransportException("send timed out after " + timeout.toMillis() + " ms ("
                    + TransportStatus.describe(status) + ") on " + describe(), new TimeoutException());
            }
            if (++idle < 100) {
                Thread.onSpinWait();
            } else if (idle < 200) {
                Thread.yield();
            } else {
                LockSupport.parkNanos(50_000);
            }
        }
    }

    /**
     * Registers {@code segment} so that this connection's peer may read or write it one-sided, once it has been sent
     * {@link RegisteredMemory#descriptor()}. The caller keeps ownership of the segment and must keep it alive until the
     * returned registration is closed.
     */
    RegisteredMemory register(MemorySegment segment);

    /** Decodes a descriptor that the peer produced with {@link RegisteredMemory#descriptor()}. */
    RemoteMemory remoteMemory(byte[] descriptor);

    /**
     * Reads {@code length} bytes of the peer's memory at {@code remoteOffset} into {@code local} at {@code localOffset}.
     * The future completes on the transport thread; {@code local} must not be touched until it does.
     */
    CompletableFuture<Void> read(RemoteMemory remote, long remoteOffset, RegisteredMemory local, long localOffset,
                                 long length);

    /**
     * As {@link #read}, but done at once on the calling thread, the transport's own included, where the transport
     * copies the peer's memory itself (a peer on this host: one kernel copy, no work by the peer, no registration of
     * {@code local} needed, which must be native memory); returns false, with nothing read, where it cannot (or
     * {@code local} is on the heap): use {@link #read} then. The copy
     * takes the thread for as long as it runs (about 100 us per MiB on the hosts measured), as a write of the same bytes
     * to a file would. Default: false.
     *
     * @throws TransportException when the copy failed (the peer exited, the range is not the peer's)
     */
    default boolean readNow(RemoteMemory remote, long remoteOffset, MemorySegment local, long localOffset,
                            long length) {
        return false;
    }

    /**
     * Writes {@code length} bytes of {@code local} at {@code localOffset} into the peer's memory at
     * {@code remoteOffset}. The future completes on the transport thread once the data is in the peer's memory.
     */
    CompletableFuture<Void> write(RegisteredMemory local, long localOffset, RemoteMemory remote, long remoteOffset,
                                  long length);

    /**
     * Waits for {@code done} on the calling thread while reading this connection's incoming messages itself, so that
     * the message completing {@code done} wakes this thread directly instead of the transport's thread first. Messages
     * read here reach the {@link MessageHandler} on this thread (other waiters' replies too); threads that wait at the
     * same time take turns, one reading. Returns once {@code done} is done, {@code deadlineNanos} ({@link
     * System#nanoTime()}) has passed, the connection has closed or the thread was interrupted (the flag is set
     * again), or at once with {@code false} where the transport delivers on threads of its own: the caller then waits
     * on {@code done} as usual. Default: false.
     */
    default boolean awaitReading(Future<?> done, long deadlineNanos) {
        return false;
    }

    /** Whether the connection can still carry messages. */
    boolean isOpen();

    /** Completes when the connection is closed, by either side or by failure. */
    CompletableFuture<Void> closeFuture();

    /** Attaches an object for the application (e.g. a session); not used by the transport. */
    void attach(Object attachment);

    /** The object given to {@link #attach(Object)}, or null. */
    Object attachment();

    /** Closes the connection. Idempotent; the handler's {@code onClose} runs once. */
    @Override
    void close();
}
