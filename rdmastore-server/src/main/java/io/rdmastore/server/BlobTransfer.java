package io.rdmastore.server;

import io.rdmastore.transport.Connection;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.RemoteMemory;
import io.rdmastore.transport.TransportException;
import java.util.BitSet;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Consumer;
import java.util.function.LongConsumer;

/**
 * Pulls {@code length} bytes of memory a peer lent (its descriptor decoded as {@code remote}) into local registered
 * memory with chained one-sided reads, {@code window} chunks in flight: a put's pull from its client, a replica's pull
 * from the client or from the member before it in a pipeline (docs/blobs.md, "Distribution to a replica set").
 *
 * <p>A transfer may be <em>progressive</em>: its source is still arriving (a pipeline's previous member is itself
 * receiving it), so reads are issued only below the {@linkplain #advance available} mark the source announces.
 * {@code prefix} sees the contiguous bytes landed so far, in order, so a member can lend them onwards.
 *
 * <p>Threads: reads are issued on {@code puller} (never a transport thread: on one host a read issued there is one
 * process_vm_readv, which fails at once when the peer died) and complete on the transport's thread. {@code finished}
 * runs exactly once, when no read is in flight any more, with the failure or null; after it the local memory may go.
 */
final class BlobTransfer {
    private final Connection connection;
    private final RemoteMemory remote;
    private final RegisteredMemory local;
    private final long length;
    private final long chunk;
    private final int window;
    private final Executor puller;
    private final LongConsumer prefix;
    private final Consumer<Throwable> finished;
    /** Called with (offset, length) on the puller just before a chunk's read is issued (may be null). */
    private final java.util.function.BiConsumer<Long, Long> beforeRead;
    private final BitSet landed = new BitSet();
    private final long started = System.nanoTime();
    private long available;
    private long next;
    private long contiguous;
    private int inflight;
    private boolean pumping;
    private boolean done;
    private Throwable failure;
    private long transferNanos;

    BlobTransfer(Connection connection, RemoteMemory remote, RegisteredMemory local, long length, long chunk,
                 int window, boolean progressive, Executor puller, LongConsumer prefix, Consumer<Throwable> finished,
                 java.util.function.BiConsumer<Long, Long> beforeRead) {
        this.connection = connection;
        this.remote = remote;
        this.local = local;
        this.length = length;
        this.chunk = chunk;
        this.window = window;
        this.puller = puller;
        this.prefix = prefix;
        this.finished = finished;
        this.beforeRead = beforeRead;
        this.available = progressive ? 0 : length;
    }

    /** Starts the reads (on the puller). */
    void start() {
        schedule();
    }

    /** The source now holds {@code [0, bytes)}: reads below it may go (a progressive transfer). Any thread. */
    void advance(long bytes) {
        synchronized (this) {
            if (bytes <= available) {
                return;
            }
            available = Math.min(bytes, length);
        }
        schedule();
    }

    /** Nanoseconds from the start to the last byte landed (0 before). */
    synchronized long transferNanos() {
        return transferNanos;
    }

    /** Bytes landed contiguously from offset 0. */
    synchronized long landed() {
        return contiguous;
    }

    /**
     * Gives the transfer up (its peer is gone): no new reads; {@code finished} runs with {@code cause} once the reads
     * in flight ended. Returns whether some are still in flight (a UCX get from a vanished peer may never complete:
     * the caller then deletes the file now and frees the memory only in {@code finished}).
     */
    boolean abandon(Throwable cause) {
        boolean finishNow;
        synchronized (this) {
            if (done) {
                return false;
            }
            if (failure == null) {
                failure = cause;
            }
            finishNow = inflight == 0 && !pumping;
            if (finishNow) {
                done = true;
            }
        }
        if (finishNow) {
            finished.accept(failure);
            return false;
        }
        return true;
    }

    private void schedule() {
        try {
            puller.execute(this::pump);
        } catch (RejectedExecutionException closing) {
            pump(); // the service is closing: finish here so the memory and the file go
        }
    }

    private void pump() {
        boolean finish;
        synchronized (this) {
            if (pumping || done) {
                return;
            }
            pumping = true;
            try {
                // whole chunks only (the last may be short), so chunk i always covers [i * chunk, (i + 1) * chunk)
                while (failure == null && next < length && inflight < window
                    && next + Math.min(chunk, length - next) <= available) {
                    long off = next;
                    long n = Math.min(chunk, length - off);
                    next += n;
                    inflight++;
                    try {
                        if (beforeRead != null) {
                            beforeRead.accept(off, n);
                        }
                        connection.read(remote, off, local, off, n).whenComplete((ok, err) -> chunkDone(off, n, err));
                    } catch (RuntimeException e) {
                        inflight--;
                        failure = e;
                    }
                }
            } finally {
                pumping = false;
            }
            finish = inflight == 0 && (failure != null || contiguous >= length);
            if (finish) {
                done = true;
            }
        }
        if (finish) {
            finished.accept(failure);
        }
    }

    private void chunkDone(long off, long n, Throwable err) {
        long newPrefix = -1;
        boolean inPump;
        synchronized (this) {
            inflight--;
            if (err != null && failure == null) {
                failure = err instanceof CompletionException && err.getCause() != null ? err.getCause() : err;
            }
            if (err == null) {
                landed.set((int) (off / chunk));
                long before = contiguous;
                while (contiguous < length && landed.get((int) (contiguous / chunk))) {
                    contiguous = Math.min(length, contiguous + chunk);
                }
                if (contiguous != before) {
                    newPrefix = contiguous;
                    if (contiguous >= length) {
                        transferNanos = System.nanoTime() - started;
                    }
                }
            }
            // pump holds this monitor throughout, so only its own thread (a read that completed inside its call) can
            // see it running; that loop goes on by itself
            inPump = pumping;
        }
        if (newPrefix >= 0 && prefix != null) {
            try {
                prefix.accept(newPrefix);
            } catch (RuntimeException e) {
                abandon(e);
            }
        }
        if (!inPump) {
            schedule();
        }
    }

    /** The failure a transfer ended with, as a sentence. */
    static String describe(Throwable failure) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null
            ? failure.getCause() : failure;
        return cause instanceof TransportException ? cause.getMessage() : cause.toString();
    }
}
