package io.rdmastore.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.epoll.Native;
import io.netty.channel.unix.FileDescriptor;
import io.netty.channel.unix.Socket;
import io.rdmastore.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Reads a client connection's socket on the threads that wait for its replies, so that a reply wakes the thread
 * waiting for it and nothing else (through the event loop it woke the loop, which then woke the caller).
 *
 * <p>Leader and followers: a thread that waits for a reply ({@link #await}) takes the read lock when it is free and
 * reads, delivering every frame that arrives (other threads' replies complete their futures) until its own reply is
 * in; a thread that finds the lock taken waits on its future. A background thread covers the rest: bytes that arrive
 * while no thread waits (pushes, replies to calls nobody waits for, the peer's one-sided requests) and, when a leader
 * leaves while others still wait, their replies. It waits in {@code poll(2)} without the lock, holds the lock only
 * while bytes are there to read (so a caller that comes back for its next reply finds it free and reads for itself),
 * leaves the socket to the callers while they keep taking the lead (it looks at their count every 1-8 ms instead of
 * waking with each reply), and is woken through an eventfd.
 *
 * <p>Frames are delivered by one thread at a time, in order, under the read lock ({@link TcpConnection#nextFrame}).
 * The descriptor is the connection's own duplicate ({@link SocketDup}); {@link #stop} shuts the socket down (every
 * poll returns), waits for the lock and frees the buffer, after which no thread reads the descriptor again.
 */
final class SocketReader {
    private static final Logger LOG = LoggerFactory.getLogger(SocketReader.class);
    private static final int INITIAL_BUFFER = 64 * 1024;
    /** Longest single poll of a leader; it polls again until its deadline (a bound, not a tick: data wakes it). */
    private static final int MAX_POLL_MILLIS = 1000;
    /**
     * How long the background thread leaves the socket to reading callers before it looks again: 1 ms, doubling up to
     * 8 ms while callers keep taking the lead (many connections with busy callers would otherwise wake their background
     * threads with every reply), back to 1 ms once it reads itself. Bytes that arrive just after the last caller left
     * wait for that look.
     */
    private static final int MIN_BACKOFF_MILLIS = 1;
    private static final int MAX_BACKOFF_MILLIS = 8;
    /** How long a waiting thread that does not read waits on its reply before it looks whether the stream ended. */
    private static final long FOLLOWER_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private final TcpConnection connection;
    private final Socket socket;
    private final ByteBufAllocator alloc;
    private final ReentrantLock lock = new ReentrantLock();
    private final AtomicInteger waiters = new AtomicInteger();
    /** Leads taken by callers; while it moves, callers read the socket and the background thread stays off it. */
    private final AtomicLong leads = new AtomicLong();
    /** Times the background thread waited on the socket (tests). */
    private final AtomicLong backgroundPolls = new AtomicLong();
    /** Wakes the background thread; closed by it when it ends, under {@link #wakeGuard}. */
    private final FileDescriptor wake;
    private final Object wakeGuard = new Object();
    private boolean wakeClosed;
    private final SocketPoll leaderPoll;
    private final SocketPoll backgroundPoll;
    private final SocketPoll backoffPoll;
    private final Thread background;
    private volatile boolean stopped;
    /** The stream ended (end of file, a failure or a protocol violation): nothing more is read. */
    private volatile boolean ended;
    /** Bytes read and not yet delivered; under {@link #lock}. */
    private ByteBuf in;

    SocketReader(TcpConnection connection, Socket socket, ByteBufAllocator alloc) {
        this.connection = connection;
        this.socket = socket;
        this.alloc = alloc;
        this.wake = Native.newEventFd();
        this.leaderPoll = new SocketPoll(socket.intValue(), -1);
        this.backgroundPoll = new SocketPoll(socket.intValue(), wake.intValue());
        this.backoffPoll = new SocketPoll(wake.intValue(), -1);
        this.background = new Thread(this::runBackground, "rdmastore-tcp-reader " + connection.describe());
        background.setDaemon(true);
    }

    void start() {
        background.start();
    }

    /** Gives up a reader that was never started: closes its eventfd. */
    void abandon() {
        closeWake();
    }

    /** Closes the eventfd; wake-ups afterwards do nothing. */
    private void closeWake() {
        synchronized (wakeGuard) {
            wakeClosed = true;
            try {
                wake.close();
            } catch (IOException e) {
                LOG.debug("{}: closing the reader's eventfd: {}", connection.describe(), e.toString());
            }
        }
    }

    /**
     * Reads and delivers this connection's frames on the calling thread until {@code done} completes or the deadline
     * passes (see {@link io.rdmastore.transport.Connection#awaitReading}). False when this thread cannot read here: a
     * virtual thread (a blocking poll would pin its carrier), a thread already delivering a frame of this connection,
     * or a stopped reader.
     */
    boolean await(Future<?> done, long deadlineNanos) {
        if (stopped || lock.isHeldByCurrentThread() || Thread.currentThread().isVirtual()) {
            return false;
        }
        waiters.incrementAndGet();
        boolean led = false;
        try {
            while (!done.isDone() && !stopped && !ended && !Thread.currentThread().isInterrupted()) {
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                if (lock.tryLock()) {
                    led = true;
                    // one writer at a time (the lock's holder): no atomic add needed
                    leads.lazySet(leads.get() + 1);
                    try {
                        lead(done, deadlineNanos);
                    } finally {
                        lock.unlock();
                    }
                    continue;
                }
                // another thread reads and delivers this reply; look at the stream's end now and then
                try {
                    done.get(Math.min(left, FOLLOWER_SLICE_NANOS), TimeUnit.NANOSECONDS);
                } catch (TimeoutException | ExecutionException | CancellationException e) {
                    // the caller reads the outcome from the future
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        } finally {
            int others = waiters.decrementAndGet();
            // a leader leaving others behind hands the socket to the background thread (which may be backing off)
            if (led && others > 0) {
                wakeBackground();
            }
        }
        return true;
    }

    /** Reads and delivers until {@code done} completes, the deadline passes or the stream ends. Under the lock. */
    private void lead(Future<?> done, long deadlineNanos) {
        while (!done.isDone() && !stopped && !ended && !Thread.currentThread().isInterrupted()) {
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                return;
            }
            // poll first: a reply just asked for is rarely in yet, and a read that finds nothing is a wasted call
            if (leaderPoll.await((int) Math.min(MAX_POLL_MILLIS, TimeUnit.NANOSECONDS.toMillis(left) + 1)) != 0) {
                readOnce();
            }
        }
    }

    /**
     * One {@code read} and the delivery of every whole frame it completed: the bytes read, 0 when none were waiting,
     * -1 when the stream ended. Under the lock.
     */
    private int readOnce() {
        if (stopped || ended) {
            return -1;
        }
        ByteBuf b = in;
        if (b == null) {
            b = in = alloc.directBuffer(INITIAL_BUFFER);
        }
        int n;
        try {
            n = socket.readAddress(b.memoryAddress(), b.writerIndex(), b.capacity());
        } catch (IOException e) {
            end(e);
            return -1;
        }
        if (n == 0) {
            return 0;
        }
        if (n < 0) {
            end(null);
            return -1;
        }
        b.writerIndex(b.writerIndex() + n);
        return deliverBuffered(b) ? n : -1;
    }

    /** Delivers the whole frames buffered; false when the connection reads no more. Under the lock. */
    private boolean deliverBuffered(ByteBuf b) {
        int frame = 0;
        while (b.isReadable()) {
            int r = connection.nextFrame(b);
            if (r < 0) {
                ended = true;
                return false;
            }
            if (r == 0) {
                frame = b.readableBytes() >= 4 ? FrameDescriptor.HEADER_LENGTH + b.getInt(b.readerIndex()) : 0;
                break;
            }
        }
        makeRoom(b, frame);
        return true;
    }

    /**
     * Delivers bytes another reader took off the socket (the event loop on a socket error), after those buffered here,
     * also when this reader met the error first (the loop's bytes came before it); consumes them. False when the
     * connection reads no more.
     */
    boolean deliver(ByteBuf bytes) {
        lock.lock();
        try {
            if (stopped) {
                bytes.skipBytes(bytes.readableBytes());
                return false;
            }
            if (in == null) {
                in = alloc.directBuffer(Math.max(INITIAL_BUFFER, bytes.readableBytes()));
            }
            in.writeBytes(bytes);
            return deliverBuffered(in);
        } finally {
            lock.unlock();
        }
    }

    /** Compacts the buffer and grows it for a frame of {@code frame} bytes in all (0: its length is not known yet). */
    private void makeRoom(ByteBuf b, int frame) {
        if (!b.isReadable()) {
            if (b.capacity() > 4 * INITIAL_BUFFER) {
                // a large frame passed: give its memory back
                b.release();
                in = null;
            } else {
                b.clear();
            }
            return;
        }
        if (b.readerIndex() > 0 && (b.writableBytes() < INITIAL_BUFFER / 4 || frame > b.capacity() - b.readerIndex())) {
            b.discardReadBytes();
        }
        int need = Math.max(frame - b.readableBytes(), INITIAL_BUFFER / 4);
        if (b.writableBytes() < need) {
            b.ensureWritable(need);
        }
    }

    /** The stream ended: a clean end of file ({@code cause} null) or a failed read. Under the lock. */
    private void end(IOException cause) {
        ended = true;
        if (cause == null) {
            connection.peerClosed();
        } else {
            // A socket error also wakes the event loop (EPOLLERR), which reads what the peer sent before it, and that
            // may be in flight to deliver(): the loop fails the connection after its own read.
            connection.failLater(new TransportException("connection failed: " + cause, cause));
        }
    }

    private void runBackground() {
        int backoff = MIN_BACKOFF_MILLIS;
        try {
            while (!stopped) {
                // bytes, or a wake-up: a leader left others waiting, or the reader stops
                backgroundPolls.lazySet(backgroundPolls.get() + 1);
                int ready = backgroundPoll.await(-1);
                if ((ready & 2) != 0) {
                    drainWake();
                }
                if (stopped || ended) {
                    return;
                }
                if (ready == 0) {
                    continue;
                }
                if (!lock.tryLock()) {
                    // A caller reads and delivers what arrived. Stay off the socket (its bytes would wake this thread
                    // too) for as long as callers keep taking the lead, looking every backoff; go back to it when a
                    // leader leaves others waiting (the eventfd) or a whole backoff passed without a lead.
                    long seen;
                    do {
                        seen = leads.get();
                        boolean woken = backoffPoll.await(backoff) != 0;
                        backoff = Math.min(MAX_BACKOFF_MILLIS, backoff * 2);
                        if (woken) {
                            drainWake();
                            break;
                        }
                    } while (!stopped && leads.get() != seen);
                    continue;
                }
                backoff = MIN_BACKOFF_MILLIS;
                try {
                    // read what is there and let go: waiting for more with the lock held would make every caller
                    // that comes back a follower, its reply handed over by this thread, for as long as one waits
                    while (!stopped && !ended && readOnce() > 0) {
                        // deliver the next bytes too
                    }
                } finally {
                    lock.unlock();
                }
                if (ended) {
                    return;
                }
            }
        } catch (RuntimeException | Error e) {
            LOG.warn("{}: the background reader failed", connection.describe(), e);
            connection.failure(new TransportException("reader failed: " + e, e));
        } finally {
            closeWake();
        }
    }

    private void wakeBackground() {
        synchronized (wakeGuard) {
            if (!wakeClosed) {
                Native.eventFdWrite(wake.intValue(), 1L);
            }
        }
    }

    private void drainWake() {
        synchronized (wakeGuard) {
            if (!wakeClosed) {
                Native.eventFdRead(wake.intValue());
            }
        }
    }

    /**
     * Stops reading for good: shuts the socket down (a thread in {@code poll} returns), wakes the background thread and
     * waits for the thread reading to leave. Afterwards no thread reads the descriptor; the caller closes it.
     */
    void stop() {
        stopped = true;
        try {
            socket.shutdown(true, true);
        } catch (IOException | RuntimeException e) {
            // not connected any more (NotYetConnectedException): the readers saw the end already
        }
        wakeBackground();
        lock.lock();
        try {
            if (in != null) {
                in.release();
                in = null;
            }
        } finally {
            lock.unlock();
        }
    }

    /** Times the background thread has waited on the socket so far (tests). */
    long backgroundPolls() {
        return backgroundPolls.get();
    }

    /** Threads waiting in {@link #await} now (tests). */
    int waiters() {
        return waiters.get();
    }
}
