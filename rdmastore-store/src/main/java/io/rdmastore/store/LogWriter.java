package io.rdmastore.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.rdmastore.store.blob.Preallocation;

/**
 * Appends frames to the current log segment and forces them to disk. Thread-safe.
 *
 * <p>{@link #append} never touches the file: it copies a frame into the active buffer (a pooled 1 MiB direct buffer)
 * under a short lock (callers hold their shard locks, so per-key order in the file is the order of application), and
 * queues one larger than a buffer as it is, without copying it. A full buffer is queued and the append goes on in a
 * free one (at most {@value #MAX_BUFFERS} exist). A frame with an external field ({@link #appendExternal}: a large
 * value in the store's off-heap memory) is queued as its pieces, the value's a direct view of that memory, so neither
 * the log nor the JDK copies it before the {@code write}. Only when every buffer is queued, or
 * {@value #MAX_QUEUED_BYTES} bytes are queued, does an append wait for the writer ({@link #appendWaits()} counts those
 * waits). The queue reaches the file in order, in one gathering {@code write} per batch: by the write-behind thread
 * about {@value #WRITE_BEHIND_MICROS} microseconds after the first frame of the batch (at once when half the queue's
 * room is taken), by {@link #writeTo} and {@link #syncTo} (which many threads share: group commit), and by
 * {@link #rotate} and {@link #close}. So with {@code everysec} or {@code no} a process crash loses at most the last
 * batch (about a millisecond) and a machine crash about a second; with {@code always} {@link #syncTo} writes and
 * fsyncs before the caller replies.
 *
 * <p>Lock order: {@code syncLock}, then {@code writeLock} (owns the channel and the batch being written), then
 * {@code appendLock} (owns the active buffer, the queue and the free buffers). {@link #rotate} must be called with
 * every writer stopped (the store holds all shard locks). Buffers are private direct memory, never handed out; a
 * queued large frame is an array nobody changes any more (the oplog may share it).
 */
final class LogWriter implements AutoCloseable {
    /** Size of each pooled append buffer. */
    static final int BUFFER_BYTES = 1 << 20;
    /** Most pooled buffers: appends wait when all of them are queued. */
    static final int MAX_BUFFERS = 8;
    /**
     * Frames from this size on (larger than a buffer) are queued as they are, not copied into a buffer. Smaller ones
     * are copied even when large: the copy into direct memory is made anyway (by the JDK, into a temporary direct
     * buffer, when a heap array is written), and taking the builder's array costs a fresh one per write; in E2 a
     * 64-256 KiB PUT spent 1.4-1.9x the server time when such frames were queued as arrays.
     */
    static final int LARGE_FRAME_BYTES = BUFFER_BYTES + 1;
    /** Bytes queued (full buffers and large frames) beyond which an append waits for the writer. */
    static final long MAX_QUEUED_BYTES = (long) MAX_BUFFERS * BUFFER_BYTES;
    /**
     * Queued bytes from which an append wakes the writer at once instead of leaving the queue to its next round (or
     * to the appender's own {@code writeTo}): a wake-up per large record would cost a system call and, on a small
     * machine, a context switch per write.
     */
    static final long WAKE_QUEUED_BYTES = MAX_QUEUED_BYTES / 2;
    /** How long the write-behind thread lets a batch gather before writing it. */
    static final long WRITE_BEHIND_MICROS = 1000;
    private static final Logger LOG = LoggerFactory.getLogger(LogWriter.class);
    /**
     * The next segment, made ahead of the rotation that takes it ({@link #prepareSpare}): the magic, and its blocks
     * reserved. Not a segment's name, so recovery and the log checker pass it by.
     */
    static final String SPARE_NAME = "segment-next.spare";
    private static final String SPARE_TEMP_NAME = SPARE_NAME + ".tmp";
    /** Empty write-behind rounds (about 100 ms) before the thread parks until an append wakes it. */
    private static final int POLL_ROUNDS_BEFORE_IDLE = 100;
    private static final long IDLE_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private final Path dir;
    private final Object appendLock = new Object();
    private final Object writeLock = new Object();
    private final Object syncLock = new Object();
    /** Frames appended and not yet queued; null while every buffer is queued or written. Guarded by appendLock. */
    private ByteBuffer active;
    /** Empty pooled buffers. Guarded by appendLock. */
    private final ArrayDeque<ByteBuffer> free = new ArrayDeque<>();
    /** Pooled buffers in existence (active, free, queued or being written). Guarded by appendLock. */
    private int buffers;
    /** Those buffers, by identity: a queued external piece may be direct and as large. Guarded by appendLock. */
    private final Set<ByteBuffer> pooled = Collections.newSetFromMap(new IdentityHashMap<>());
    /** Full buffers (flipped) and large frames waiting for the file, in append order. Guarded by appendLock. */
    private final ArrayDeque<ByteBuffer> queue = new ArrayDeque<>();
    /** Bytes in {@link #queue} and in the batch being written. Guarded by appendLock. */
    private long queuedBytes;
    /** Appenders waiting in {@link #awaitRoomLocked}. Guarded by appendLock. */
    private int waiters;
    private final LongAdder appendWaits = new LongAdder();
    /** The batch the holder of writeLock writes; reused. Guarded by writeLock. */
    private final ArrayList<ByteBuffer> batch = new ArrayList<>();
    /** What to run once the frames queued so far are written (or given up): external bytes' owners. appendLock. */
    private final ArrayList<Runnable> queuedCallbacks = new ArrayList<>();
    /** The callbacks of {@link #batch}. Guarded by writeLock. */
    private final ArrayList<Runnable> batchCallbacks = new ArrayList<>();
    /** Guarded by writeLock. */
    private FileChannel channel;
    /**
     * Segments {@link #rotate} switched away from, not yet forced and closed, and where the last of them ends in
     * {@code writtenTotal} terms. Guarded by writeLock; emptied under syncLock ({@link #finishRotation}).
     */
    private final ArrayDeque<FileChannel> retiring = new ArrayDeque<>();
    private long retiringEnd;
    /** The current segment was created by a rotation whose creation is not yet durable. Guarded by writeLock. */
    private boolean segmentCreationPending;
    /**
     * That creation wrote the segment's magic, which must be forced with it; a spare that had it already (made by
     * {@link #prepareSpare}, or a reused segment) needs only its directory entry made durable. Guarded by writeLock.
     */
    private boolean creationWroteMagic;
    /** Guarded by writeLock: the file offset where the next write lands. */
    private long filePosition;
    private long segmentId;
    /** Bytes ever appended; written under appendLock. */
    private volatile long appendedTotal;
    /** Bytes ever handed to the OS; written under writeLock. */
    private volatile long writtenTotal;
    private volatile long syncedTotal;
    private volatile String failure;
    private volatile boolean closed;
    private volatile boolean writerParked;
    /** Appenders write their own records ({@link #callersWrite}): the write-behind thread is only a backstop. */
    private volatile boolean callersWrite;
    /** Rounds of the write-behind loop (each a wake-up of its thread); written by that thread only. */
    private volatile long writerRounds;
    /** Half the queue's room is taken: the writer writes without letting a batch gather. */
    private volatile boolean urgent;
    private final Thread writeBehind;
    /** Recent frames by position; its last position is the log's. Added to under appendLock. */
    private final Oplog oplog;
    /** Term stamped on new frames (set when this member becomes primary). */
    private volatile long term;
    /** Position of the newest frame appended. Guarded by appendLock. */
    private long lastIndex;
    private long lastTerm;
    /** Run under syncLock before each fsync of the log: makes durable what its records name (blob files). */
    private volatile Runnable beforeSync;
    /** Bytes each segment's blocks are reserved for ahead of its appends ({@link #preallocate}); 0: none. */
    private volatile long preallocateBytes;
    /** Serialises {@link #prepareSpare} calls. */
    private final Object spareLock = new Object();

    /** Opens segment {@code id} for append at {@code validEnd} (cutting anything after it), or creates it. */
    LogWriter(Path dir, long id, long validEnd, Oplog oplog) throws IOException {
        this.dir = dir;
        this.oplog = oplog;
        this.lastIndex = oplog.lastIndex();
        this.lastTerm = oplog.lastTerm();
        this.term = lastTerm;
        this.segmentId = id;
        active = ByteBuffer.allocateDirect(BUFFER_BYTES);
        // pooled like every later buffer, or its first write would drop it while it still counts in buffers
        pooled.add(active);
        buffers = 1;
        Path file = dir.resolve(LogDescriptor.segmentName(id));
        channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE);
        if (validEnd < LogDescriptor.MAGIC_LENGTH) {
            channel.truncate(0);
            writeFully(channel, ByteBuffer.wrap(LogDescriptor.SEGMENT_MAGIC), 0);
            channel.force(true);
            syncDirectory(dir);
        } else if (channel.size() > validEnd) {
            channel.truncate(validEnd);
            channel.force(true);
        }
        filePosition = channel.size();
        channel.position(filePosition);
        writeBehind = new Thread(this::writeBehindLoop, "rdmastore-log-writer");
        writeBehind.setDaemon(true);
        writeBehind.start();
    }

    /**
     * Tells the log that every appender hands its own records to the OS ({@code write} before its reply, as fsync
     * {@code everysec} and {@code always} do), so the write-behind thread need not follow the appends: it no longer
     * polls every millisecond after a write, nor is it unparked by each append that finds it parked (a system call on
     * the appender's path, and a thread woken on a core a spinning transport thread or a client uses: 1,600 wake-ups
     * a second under a SET loop). It still writes what nobody wrote within 50 ms, and at once when half the queue's
     * room is taken. docs/decisions.md, "The log's write-behind thread stays asleep while appenders write".
     */
    void callersWrite(boolean yes) {
        callersWrite = yes;
    }

    /**
     * Sets what runs before each fsync of the log (under the sync lock, on the syncing thread): it must make durable
     * whatever the records written so far name outside the log. Set once, before writes begin.
     */
    void beforeSync(Runnable r) {
        beforeSync = r;
    }

    /**
     * Appends a frame sealed by {@link FrameBuilder#sealPositioned}: stamps it with the current term and the next
     * index under the append lock (so indexes follow file order), takes it (a frame that fits a buffer is copied; a
     * larger one's array is taken from {@code f}, which gives it up) and returns a ticket for {@link #syncTo}. No
     * system call, except a wake-up of the writer when half the queue's room is taken; waits only when the queue is
     * full. Any thread (a transport thread under its shard locks). Nothing is appended if it throws.
     */
    long append(FrameBuilder f, ByteBuffer frame) {
        return append(frame, f, 0, 0, null);
    }

    /**
     * Appends a frame built with an external field ({@link FrameBuilder#putExternal}) and sealed: it is queued as its
     * pieces, written from where they are in one gathering write, and {@code written} runs once that write is done
     * (or failed, or the log closed without it), after which the external bytes may change. Returns the frame's fsync
     * ticket. When this throws, nothing was queued and {@code written} does not run.
     */
    long appendExternal(FrameBuilder f, Runnable written) {
        int n = f.frameLength();
        long ticket;
        boolean wake;
        synchronized (appendLock) {
            checkWritable();
            awaitRoomLocked(n, false);
            positionLocked(f, 0, 0, null, false);
            queueActiveLocked();
            for (ByteBuffer b : f.pieces()) {
                queue.add(b);
            }
            queuedCallbacks.add(written);
            queuedBytes += n;
            wake = queuedBytes >= WAKE_QUEUED_BYTES;
            ticket = appendedTotal + n;
            appendedTotal = ticket;
        }
        wakeWriter(wake);
        return ticket;
    }

    /** After an append: wakes the write-behind thread now when {@code urgent}, or when it sleeps until rung. */
    private void wakeWriter(boolean urgentNow) {
        if (urgentNow) {
            urgent = true;
            LockSupport.unpark(writeBehind);
        } else if (writerParked && !callersWrite) {
            LockSupport.unpark(writeBehind);
        }
    }

    /**
     * Appends a frame received from the primary, already stamped with {@code (term, index)}; {@code index} must follow
     * the last one. The log and the oplog keep {@code frame} itself: the caller gives it up.
     */
    long appendReplicated(byte[] frame, long frameTerm, long index) {
        return append(ByteBuffer.wrap(frame), null, frameTerm, index, frame);
    }

    private long append(ByteBuffer frame, FrameBuilder f, long replTerm, long replIndex, byte[] replFrame) {
        int n = frame.remaining();
        boolean wake;
        long ticket;
        synchronized (appendLock) {
            checkWritable();
            if (n >= LARGE_FRAME_BYTES) {
                awaitRoomLocked(n, false);
                byte[] kept = positionLocked(f, replTerm, replIndex, replFrame, true);
                queueActiveLocked();
                ByteBuffer whole = kept != null ? ByteBuffer.wrap(kept) : ByteBuffer.wrap(f.detach(), 0, n);
                queue.add(whole);
                queuedBytes += n;
                wake = queuedBytes >= WAKE_QUEUED_BYTES;
            } else {
                wake = false;
                if (activeLacksRoomLocked(n)) {
                    awaitRoomLocked(n, true);
                    // a write that ended during the wait may have left its buffer active, empty: it is used, not
                    // replaced (a replaced one would be lost to the pool for good)
                    if (activeLacksRoomLocked(n)) {
                        queueActiveLocked();
                        active = takeBufferLocked();
                    }
                    wake = queuedBytes >= WAKE_QUEUED_BYTES;
                }
                positionLocked(f, replTerm, replIndex, replFrame, false);
                active.put(frame);
            }
            ticket = appendedTotal + n;
            appendedTotal = ticket;
        }
        wakeWriter(wake);
        return ticket;
    }

    /**
     * Waits until a frame of {@code n} bytes may be queued: when {@code buffer}, for an active buffer with room for it
     * or a free (or new) one (a write that ends hands its first buffer back as the active one), else until the queue
     * has room for it (an empty queue always has). Counts a wait. The caller holds appendLock.
     */
    private void awaitRoomLocked(int n, boolean buffer) {
        boolean counted = false;
        while (buffer ? free.isEmpty() && buffers >= MAX_BUFFERS && activeLacksRoomLocked(n)
                : queuedBytes > 0 && queuedBytes + n > MAX_QUEUED_BYTES) {
            if (!counted) {
                appendWaits.increment();
                counted = true;
            }
            if (active != null && active.position() > 0) {
                // what is buffered goes first: the writer may take it while we wait
                queueActiveLocked();
            }
            LockSupport.unpark(writeBehind);
            waiters++;
            try {
                appendLock.wait(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new StoreException("interrupted while waiting for the log writer");
            } finally {
                waiters--;
            }
            checkWritable();
        }
    }

    /** Whether a frame of {@code n} bytes needs a buffer other than the active one. The caller holds appendLock. */
    private boolean activeLacksRoomLocked(int n) {
        return active == null || n > active.remaining();
    }

    /** Queues the active buffer when it holds frames; true if it did. The caller holds appendLock. */
    private boolean queueActiveLocked() {
        if (active == null || active.position() == 0) {
            return false;
        }
        active.flip();
        queue.add(active);
        queuedBytes += active.remaining();
        active = null;
        return true;
    }

    /** A free buffer, allocating one while fewer than the most exist; null when none is free. Under appendLock. */
    private ByteBuffer takeBufferLocked() {
        ByteBuffer b = free.poll();
        if (b == null && buffers < MAX_BUFFERS) {
            b = ByteBuffer.allocateDirect(BUFFER_BYTES);
            pooled.add(b);
            buffers++;
        }
        return b;
    }

    /**
     * Gives the frame its position (and the oplog its copy). The caller holds appendLock and appends it next. Returns,
     * when {@code keep}, an array holding exactly the frame that nobody changes any more (the oplog's copy, the
     * replicated frame), or null when there is none (the caller then takes the builder's).
     */
    private byte[] positionLocked(FrameBuilder f, long replTerm, long replIndex, byte[] replFrame, boolean keep) {
        if (f != null) {
            long t = term;
            long i = lastIndex + 1;
            f.stamp(t, i);
            byte[] copy = null;
            if (oplog.retains()) {
                // A standalone store keeps no window: its position lives here alone, no monitor per write.
                copy = f.frameCopy();
                oplog.add(t, i, copy);
            }
            lastTerm = t;
            lastIndex = i;
            return keep ? copy : null;
        }
        if (replIndex != lastIndex + 1) {
            throw new StoreException("replicated frame at index " + replIndex + " does not follow this log's "
                + lastIndex);
        }
        if (oplog.retains()) {
            oplog.add(replTerm, replIndex, replFrame);
        }
        lastTerm = replTerm;
        lastIndex = replIndex;
        return replFrame;
    }

    /** Position of the newest frame appended: {term, index}. */
    long[] lastPosition() {
        synchronized (appendLock) {
            return new long[] {lastTerm, lastIndex};
        }
    }

    long lastIndex() {
        synchronized (appendLock) {
            return lastIndex;
        }
    }

    /** Sets the term stamped on frames appended from now on. */
    void term(long t) {
        term = t;
    }

    long term() {
        return term;
    }

    /** After a snapshot from elsewhere was installed: the next frame follows {@code (t, index)}. */
    void resetPosition(long t, long index) {
        synchronized (appendLock) {
            oplog.reset(t, index);
            lastTerm = t;
            lastIndex = index;
            if (term < t) {
                term = t;
            }
        }
    }

    /** Hands everything appended so far to the OS (no fsync): it survives a crash of this process. */
    void writeOut() {
        synchronized (writeLock) {
            drainLocked();
        }
    }

    /** Throws as an append would when the log refuses writes (a failed write, closed). Any thread. */
    void ensureWritable() {
        checkWritable();
    }

    private void checkWritable() {
        if (failure != null) {
            throw new StoreException("MISCONF the log is not writable, writes are refused: " + failure);
        }
        if (closed) {
            throw new StoreException("the log is closed");
        }
    }

    /**
     * Hands everything appended so far to the OS: the queue and the active buffer, in append order, in one gathering
     * write. The caller holds writeLock; appends go on meanwhile in free buffers.
     */
    private void drainLocked() {
        long target;
        long bytes = 0;
        ByteBuffer[] pieces;
        synchronized (appendLock) {
            queueActiveLocked();
            if (queue.isEmpty()) {
                return;
            }
            batch.addAll(queue);
            queue.clear();
            batchCallbacks.addAll(queuedCallbacks);
            queuedCallbacks.clear();
            target = appendedTotal;
            urgent = false;
            if (active == null) {
                active = takeBufferLocked();
            }
        }
        pieces = batch.toArray(new ByteBuffer[0]);
        for (ByteBuffer b : pieces) {
            bytes += b.remaining();
        }
        long start = filePosition;
        try {
            int first = 0;
            while (first < pieces.length) {
                filePosition += channel.write(pieces, first, pieces.length - first);
                while (first < pieces.length && !pieces[first].hasRemaining()) {
                    first++;
                }
            }
            writtenTotal = target;
        } catch (IOException e) {
            // Appends already acknowledged are lost to the file: refuse further writes, as after a failed fsync.
            failure = "log write failed: " + e;
            undo(start);
            throw new StoreException("log write failed: " + e.getMessage(), e);
        } finally {
            synchronized (appendLock) {
                for (ByteBuffer b : batch) {
                    if (pooled.contains(b)) {
                        b.clear();
                        if (active == null) {
                            active = b;
                        } else {
                            free.add(b);
                        }
                    }
                }
                queuedBytes -= bytes;
                batch.clear();
                if (waiters > 0) {
                    appendLock.notifyAll();
                }
            }
            runCallbacks(batchCallbacks);
        }
    }

    /** Runs and forgets the callbacks in {@code list}; one that throws does not stop the others. */
    private static void runCallbacks(List<Runnable> list) {
        for (Runnable r : list) {
            try {
                r.run();
            } catch (RuntimeException e) {
                LOG.error("log write callback failed", e);
            }
        }
        list.clear();
    }

    /** Appenders that had to wait for a free buffer or for room in the queue, since open. Any thread. */
    long appendWaits() {
        return appendWaits.sum();
    }

    /** Cuts a half-written batch: followed by later good frames it would look like corruption in the middle. */
    private void undo(long start) {
        try {
            channel.truncate(start);
            channel.position(start);
            filePosition = start;
        } catch (IOException e2) {
            failure = "a log write failed and could not be undone: " + e2;
        }
    }

    private void writeBehindLoop() {
        int emptyRounds = 0;
        while (!closed) {
            writerRounds++;
            if (appendedTotal == writtenTotal && failure == null && emptyRounds < POLL_ROUNDS_BEFORE_IDLE
                && !callersWrite) {
                // While writes keep coming, poll on the timer: waking a parked thread would cost each batch's first
                // appender a system call on the hot path.
                emptyRounds++;
                LockSupport.parkNanos(this, TimeUnit.MICROSECONDS.toNanos(WRITE_BEHIND_MICROS));
                continue;
            }
            if (appendedTotal == writtenTotal || failure != null) {
                writerParked = true;
                if (appendedTotal == writtenTotal || failure != null) {
                    LockSupport.parkNanos(this, IDLE_PARK_NANOS);
                }
                writerParked = false;
                continue;
            }
            if (!urgent && !callersWrite && (emptyRounds == 0 || emptyRounds >= POLL_ROUNDS_BEFORE_IDLE)) {
                // Let the batch gather: one write per interval instead of one per frame.
                LockSupport.parkNanos(this, TimeUnit.MICROSECONDS.toNanos(WRITE_BEHIND_MICROS));
            }
            emptyRounds = 0;
            try {
                synchronized (writeLock) {
                    if (!closed) {
                        drainLocked();
                    }
                }
            } catch (RuntimeException e) {
                LOG.error("log write-behind failed, writes are refused from now on: {}", e.toString());
            }
        }
    }

    /**
     * Returns once everything up to {@code ticket} has been handed to the OS ({@code write}, no fsync), so a process
     * crash after it cannot lose it. Callers that arrive while another writes share that write (group commit): under
     * load one {@code write} covers the frames of many connections.
     */
    void writeTo(long ticket) {
        if (writtenTotal >= ticket) {
            return;
        }
        synchronized (writeLock) {
            if (writtenTotal < ticket && !closed) {
                drainLocked();
            }
        }
        if (writtenTotal < ticket && failure != null) {
            // another thread's write of these frames failed
            throw new StoreException("MISCONF the log is not writable: " + failure);
        }
    }

    /** Returns once everything up to {@code ticket} is on stable storage. */
    void syncTo(long ticket) {
        if (syncedTotal >= ticket) {
            return;
        }
        synchronized (syncLock) {
            if (syncedTotal >= ticket) {
                return;
            }
            if (failure != null) {
                throw new StoreException("MISCONF the log is not writable: " + failure);
            }
            // what the records name first, then a rotation's old segment: the new one's writes may not be durable
            // before its
            runBeforeSyncLocked();
            finishRotationLocked(true);
            long target;
            FileChannel ch;
            synchronized (writeLock) {
                drainLocked();
                target = writtenTotal;
                ch = channel;
            }
            try {
                ch.force(false);
            } catch (IOException e) {
                // After a failed fsync the kernel may have dropped dirty pages: stop accepting writes.
                failure = "fsync failed: " + e;
                throw new StoreException("log fsync failed: " + e.getMessage(), e);
            }
            syncedTotal = target;
        }
    }

    /** Writes and fsyncs whatever was appended so far. */
    void force() {
        syncTo(appendedTotal);
    }

    /** How many times the write-behind thread went round its loop (woke up) so far; for tests. */
    long writerRounds() {
        return writerRounds;
    }

    /** Everything appended so far has been handed to the OS; for tests. */
    boolean allWritten() {
        return writtenTotal == appendedTotal;
    }

    boolean dirty() {
        return appendedTotal > syncedTotal;
    }

    /**
     * Starts the next segment and returns its id; the caller holds every shard lock (no append runs). No fsync here:
     * the segment left behind is forced and closed, and the new one's creation made durable, by
     * {@link #finishRotation()}, which the caller runs after releasing its locks, so a rotation stalls writers for the
     * time of a file creation, not of an fsync of a segment's dirty pages. Until then every {@link #syncTo} finishes
     * it first: no write of the new segment is reported durable before the old segment's are.
     */
    long rotate() throws IOException {
        synchronized (writeLock) {
            drainLocked();
            synchronized (appendLock) {
                FileChannel old = channel;
                segmentId++;
                Path file = dir.resolve(LogDescriptor.segmentName(segmentId));
                // the spare, when one is ready, becomes the segment: a rename, its blocks already reserved
                boolean spare = takeSpare(file);
                FileChannel next = FileChannel.open(file,
                        spare ? StandardOpenOption.CREATE : StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                        StandardOpenOption.WRITE);
                boolean writeMagic;
                try {
                    // a reused spare keeps its former segment's bytes: its own frames end where their positions stop
                    // rising (FrameScanner), and truncating would drop the page-cache pages it is reused for. Its
                    // magic, already durable, is left alone: forcing the file would write the former segment's dirty
                    // pages to the disk
                    writeMagic = !spare || !startsWithMagic(next);
                    if (writeMagic) {
                        writeFully(next, ByteBuffer.wrap(LogDescriptor.SEGMENT_MAGIC), 0);
                    }
                    next.position(LogDescriptor.MAGIC_LENGTH);
                } catch (IOException e) {
                    segmentId--;
                    next.close();
                    Files.deleteIfExists(file);
                    throw e;
                }
                retiring.add(old);
                retiringEnd = writtenTotal;
                segmentCreationPending = true;
                creationWroteMagic = writeMagic;
                channel = next;
                filePosition = LogDescriptor.MAGIC_LENGTH;
                return segmentId;
            }
        }
    }

    /**
     * Forces and closes the segments {@link #rotate} left behind and makes the new segment's creation durable (its
     * magic and its directory entry). Any thread holding no shard lock.
     */
    void finishRotation() {
        synchronized (syncLock) {
            runBeforeSyncLocked();
            finishRotationLocked(true);
        }
        prepareSpare();
    }

    /**
     * Ends a rotation whose segments left behind a durable snapshot now covers: they are closed without being forced
     * (the snapshot holds their records; the caller reuses one as the spare, {@link #recycle}, and deletes the others,
     * whose dirty pages then never reach the disk), and the new segment's creation is made durable. Where a
     * {@link #syncTo} came first they were forced then, as before. The caller makes the next spare
     * ({@link #prepareSpare}) once it has recycled. Any thread holding no shard lock.
     */
    void finishRotationCovered() {
        synchronized (syncLock) {
            runBeforeSyncLocked();
            finishRotationLocked(false);
        }
    }

    /**
     * Keeps {@code segment}, a closed segment a durable snapshot covers, as the spare the next rotation takes, unless
     * a spare is ready: its file is written over from its start by the next segment's appends, into the page-cache
     * pages and disk blocks it already has. A {@code write(2)} of 1 MiB into a file's cached pages took 90-120 us
     * against 150-156 into reserved new ones and 250 into a growing file, 64 KiB 9-12 us against 19 and 26, and the
     * deletion's page freeing (a quarter of a 1 MiB SET loop's samples) goes too (docs/decisions.md, "Log segments
     * reuse their files"). Only a current-format segment no larger than twice the reservation, and only where
     * segments are reserved ahead ({@link #preallocate}); off with {@code -Drdmastore.log.recycle=false}. Returns
     * whether it was kept; the caller deletes it otherwise. Any thread holding no lock of the log.
     */
    boolean recycle(Path segment) {
        long bytes = preallocateBytes;
        if (bytes <= 0 || closed || !Boolean.parseBoolean(System.getProperty("rdmastore.log.recycle", "true"))) {
            return false;
        }
        synchronized (spareLock) {
            Path spare = dir.resolve(SPARE_NAME);
            if (Files.exists(spare)) {
                return false;
            }
            try (FileChannel ch = FileChannel.open(segment, StandardOpenOption.READ)) {
                if (ch.size() > 2 * bytes || !startsWithMagic(ch)) {
                    return false;
                }
            } catch (IOException e) {
                return false;
            }
            try {
                Files.move(segment, spare, StandardCopyOption.ATOMIC_MOVE);
                return true;
            } catch (IOException e) {
                LOG.debug("log segment {} not kept as the spare: {}", segment.getFileName(), e.toString());
                return false;
            }
        }
    }

    /**
     * Deletes the spare: before the log's position is set back ({@link #resetPosition}), when a reused spare could
     * hold frames above the new positions, so the next rotation creates its segment afresh.
     */
    void dropSpare() throws IOException {
        synchronized (spareLock) {
            Files.deleteIfExists(dir.resolve(SPARE_NAME));
        }
    }

    /**
     * Reserves the disk blocks of each segment, {@code bytes} of them, ahead of its appends: the current one now, the
     * next one as a spare made ahead of its rotation ({@link #prepareSpare}). An append into reserved blocks skips
     * the file system's block allocation: a 64 KiB {@code write} took 10.1 us against 14.3, a 1 MiB one 102 us
     * against 163 (docs/decisions.md, "Log segments' blocks reserved ahead"). The file's size and bytes stay what was
     * written, so recovery reads it as before. Best effort: where the file system cannot reserve, appends allocate as
     * they go; only on ext4 and xfs (tmpfs would hold the reserved blocks in memory). Off with
     * {@code -Drdmastore.log.preallocate=false}. Called once, after open, before writes begin.
     */
    void preallocate(long bytes) {
        // a spare half made by a process that stopped meanwhile (*.tmp) was deleted by the store's open
        if (bytes <= 0 || !Boolean.parseBoolean(System.getProperty("rdmastore.log.preallocate", "true"))) {
            return;
        }
        String type;
        try {
            type = Files.getFileStore(dir).type();
        } catch (IOException e) {
            type = "unknown";
        }
        if (!type.equals("ext4") && !type.equals("xfs")) {
            // tmpfs would hold the reserved blocks in memory; others have not been measured
            LOG.debug("log segments' blocks not reserved ahead on a {} file system", type);
            return;
        }
        Path current;
        synchronized (writeLock) {
            current = dir.resolve(LogDescriptor.segmentName(segmentId));
        }
        if (Preallocation.reserveKeepingSize(current, bytes) != 0) {
            LOG.info("log segments' blocks not reserved ahead: the file system of {} cannot", dir);
            return;
        }
        preallocateBytes = bytes;
        prepareSpare();
    }

    /**
     * Makes the spare segment unless one is ready: the magic written, {@link #preallocateBytes} reserved, forced, then
     * renamed to {@value #SPARE_NAME}. Runs where no lock of the log is held (after a rotation, on the thread that
     * finishes it). Best effort: a failure leaves no spare and the next rotation creates its segment.
     */
    void prepareSpare() {
        long bytes = preallocateBytes;
        if (bytes <= 0 || closed) {
            return;
        }
        synchronized (spareLock) {
            Path spare = dir.resolve(SPARE_NAME);
            Path temp = dir.resolve(SPARE_TEMP_NAME);
            if (Files.exists(spare)) {
                return;
            }
            try {
                Files.deleteIfExists(temp);
                try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.CREATE_NEW,
                        StandardOpenOption.WRITE)) {
                    writeFully(ch, ByteBuffer.wrap(LogDescriptor.SEGMENT_MAGIC), 0);
                    if (Preallocation.reserveKeepingSize(temp, bytes) != 0) {
                        throw new IOException("could not reserve " + bytes + " bytes");
                    }
                    ch.force(true);
                }
                Files.move(temp, spare, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException | RuntimeException e) {
                LOG.warn("no spare log segment made ahead ({}): the next rotation creates its segment", e.toString());
                try {
                    Files.deleteIfExists(temp);
                } catch (IOException ignored) {
                    // left for the next attempt, which deletes it first
                }
            }
        }
    }

    /** Whether {@code ch}'s file begins with the current segment magic. */
    private static boolean startsWithMagic(FileChannel ch) throws IOException {
        ByteBuffer magic = ByteBuffer.allocate(LogDescriptor.MAGIC_LENGTH);
        while (magic.hasRemaining() && ch.read(magic, magic.position()) > 0) {
            // read on until the magic is in or the file ends
        }
        return !magic.hasRemaining() && Arrays.equals(magic.array(), LogDescriptor.SEGMENT_MAGIC);
    }

    /** Renames a ready spare to {@code file}; false when there is none (or it cannot be taken). Under writeLock. */
    private boolean takeSpare(Path file) {
        if (preallocateBytes <= 0) {
            return false;
        }
        try {
            Files.move(dir.resolve(SPARE_NAME), file, StandardCopyOption.ATOMIC_MOVE);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Makes durable what the records appended so far name (the {@link #beforeSync} action): it runs before the log
     * is forced, so no durable record names a file that is not. The caller holds syncLock.
     */
    private void runBeforeSyncLocked() {
        Runnable r = beforeSync;
        if (r == null) {
            return;
        }
        try {
            r.run();
        } catch (RuntimeException e) {
            // the records written since cannot be made durable without their files: refuse writes, as a failed fsync
            failure = "fsync of blob files failed: " + e;
            throw new StoreException("log fsync failed: " + failure, e);
        }
    }

    /**
     * The caller holds syncLock. {@code forceOld}: force the segments left behind before closing them (false only
     * when a durable snapshot covers them).
     */
    private void finishRotationLocked(boolean forceOld) {
        List<FileChannel> old;
        boolean created;
        boolean forceCurrent;
        long end;
        FileChannel current;
        synchronized (writeLock) {
            if (retiring.isEmpty() && !segmentCreationPending) {
                return;
            }
            old = new ArrayList<>(retiring);
            retiring.clear();
            created = segmentCreationPending;
            forceCurrent = creationWroteMagic;
            segmentCreationPending = false;
            end = retiringEnd;
            current = channel;
        }
        try {
            for (FileChannel c : old) {
                try {
                    if (forceOld) {
                        c.force(false);
                    }
                } finally {
                    c.close();
                }
            }
            if (created) {
                if (forceCurrent) {
                    current.force(true);
                }
                syncDirectory(dir);
            }
        } catch (IOException e) {
            failure = "fsync failed: " + e;
            throw new StoreException("log fsync failed at a segment rotation: " + e.getMessage(), e);
        }
        if (end > syncedTotal) {
            syncedTotal = end;
        }
    }

    /**
     * Runs {@code r} holding the write lock: no batch reaches the file meanwhile while appends go on. For tests that
     * need a slow disk or a failing file ({@code r} gets the current channel).
     */
    void holdingWrites(java.util.function.Consumer<FileChannel> r) {
        synchronized (writeLock) {
            r.accept(channel);
        }
    }

    long segmentId() {
        synchronized (writeLock) {
            return segmentId;
        }
    }

    /** Bytes in the current segment, counting those still buffered. */
    long currentSegmentBytes() {
        synchronized (writeLock) {
            synchronized (appendLock) {
                return filePosition + queuedBytes + (active == null ? 0 : active.position());
            }
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        LockSupport.unpark(writeBehind);
        try {
            writeBehind.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (syncLock) {
            if (failure == null) {
                runBeforeSyncLocked();
                finishRotationLocked(true);
            } else {
                synchronized (writeLock) {
                    for (FileChannel c : retiring) {
                        c.close();
                    }
                    retiring.clear();
                }
            }
            synchronized (writeLock) {
                if (channel.isOpen()) {
                    try {
                        if (failure == null) {
                            drainLocked();
                            if (channel.size() > filePosition) {
                                // a reused file's former bytes: the next open then reads no torn tail
                                channel.truncate(filePosition);
                            }
                        }
                        channel.force(true);
                        syncedTotal = writtenTotal;
                    } finally {
                        channel.close();
                    }
                }
                // frames never written (a failed log): their external bytes are free now
                synchronized (appendLock) {
                    batchCallbacks.addAll(queuedCallbacks);
                    queuedCallbacks.clear();
                }
                runCallbacks(batchCallbacks);
            }
        }
    }

    static void writeFully(FileChannel ch, ByteBuffer b, long position) throws IOException {
        long p = position;
        while (b.hasRemaining()) {
            p += ch.write(b, p);
        }
    }

    /** Makes file creations and renames in {@code dir} durable (a no-op where directories cannot be opened). */
    static void syncDirectory(Path dir) {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        } catch (IOException | UnsupportedOperationException e) {
            // Some platforms cannot fsync a directory; the rename itself is still atomic there.
        }
    }
}
