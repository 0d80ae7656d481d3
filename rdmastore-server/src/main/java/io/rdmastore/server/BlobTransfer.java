package io.rdmastore.server;

import io.rdmastore.transport.Connection;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.RemoteMemory;
import io.rdmastore.transport.TransportException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.BitSet;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Consumer;
import java.util.function.LongConsumer;

/**
 * Pulls {@code length} bytes of memory a peer lent (its descriptor decoded as {@code remote}) with chained one-sided
 * reads, {@code window} chunks in flight, into the slots of a registered staging buffer, and hands each landed chunk
 * to a {@link Sink} (the blob file's own writes) before its slot takes the next: a put's pull from its client, a
 * replica's pull from the client or from the member before it in a pipeline (docs/blobs.md, "Distribution to a
 * replica set" and "Landing").
 *
 * <p>A transfer may be <em>progressive</em>: its source is still arriving (a pipeline's previous member is itself
 * receiving it), so reads are issued only below the {@linkplain #advance available} mark the source announces.
 * {@code prefix} sees the contiguous bytes landed so far, in order, so a member can lend them onwards.
 *
 * <p>Threads: reads are issued on {@code puller} (never a transport thread: on one host a read issued there is one
 * process_vm_readv, which fails at once when the peer died) and complete on the transport's thread; the sink runs on
 * {@code puller} too. {@code finished} runs exactly once, when no read or sink write is in flight any more, with the
 * failure or null; after it the staging memory may go.
 */
final class BlobTransfer {
    /** Where a landed chunk goes: {@code bytes} (a staging slot) belongs at {@code offset} of the blob. */
    @FunctionalInterface
    interface Sink {
        void write(long offset, MemorySegment bytes) throws IOException;
    }

    private final Connection connection;
    private final RemoteMemory remote;
    private final RegisteredMemory staging;
    private final long slotBytes;
    private final long length;
    private final long chunk;
    private final int window;
    private final Executor puller;
    private final Sink sink;
    private final LongConsumer prefix;
    private final Consumer<Throwable> finished;
    /** Staging slots not holding a chunk, as bits. Guarded by this. */
    private int freeSlots;
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

    /**
     * @param staging registered memory of {@code window} slots of {@code staging.segment().byteSize() / window}
     *     bytes each (null when {@code length} is 0); chunks larger than a slot are pulled a slot at a time
     */
    BlobTransfer(Connection connection, RemoteMemory remote, RegisteredMemory staging, long length, long chunk,
                 int window, boolean progressive, Executor puller, Sink sink, LongConsumer prefix,
                 Consumer<Throwable> finished) {
        if (window < 1 || window > 30) {
            throw new IllegalArgumentException("window " + window + " is not 1-30");
        }
        this.connection = connection;
        this.remote = remote;
        this.staging = staging;
        this.slotBytes = staging == null ? chunk : staging.segment().byteSize() / window;
        this.length = length;
        this.chunk = Math.min(chunk, slotBytes);
        this.window = window;
        this.puller = puller;
        this.sink = sink;
        this.prefix = prefix;
        this.finished = finished;
        this.freeSlots = (1 << window) - 1;
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
                    int slot = Integer.numberOfTrailingZeros(freeSlots);
                    next += n;
                    inflight++;
                    freeSlots &= ~(1 << slot);
                    try {
                        connection.read(remote, off, staging, slot * slotBytes, n)
                            .whenComplete((ok, err) -> readDone(off, n, slot, err));
                    } catch (RuntimeException e) {
                        inflight--;
                        freeSlots |= 1 << slot;
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

    /** A chunk's read ended (transport thread): its bytes go to the sink on the puller, then its slot is free. */
    private void readDone(long off, long n, int slot, Throwable err) {
        if (err != null) {
            chunkDone(off, n, slot, err);
            return;
        }
        Runnable write = () -> {
            Throwable failed = null;
            try {
                sink.write(off, staging.segment().asSlice(slot * slotBytes, n));
            } catch (IOException | RuntimeException e) {
                failed = e;
            }
            chunkDone(off, n, slot, failed);
        };
        try {
            puller.execute(write);
        } catch (RejectedExecutionException closing) {
            write.run(); // the service is closing: finish here so the memory and the file go
        }
    }

    private void chunkDone(long off, long n, int slot, Throwable err) {
        long newPrefix = -1;
        boolean inPump;
        synchronized (this) {
            inflight--;
            freeSlots |= 1 << slot;
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
