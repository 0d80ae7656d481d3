package io.rdmastore.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Appends frames to the current log segment and forces them to disk. Thread-safe.
 *
 * <p>{@link #append} copies the frame into an in-process buffer under a short lock (callers hold their shard locks,
 * so per-key order in the file is the order of application); it makes no system call. The buffer reaches the file
 * in one {@code write} per batch: by the write-behind thread about {@value #WRITE_BEHIND_MICROS} microseconds after
 * the first frame of the batch, by {@link #syncTo} (which many threads share: group commit), by an append that finds
 * the buffer full, and by {@link #rotate} and {@link #close}. A frame larger than the buffer is written directly.
 * So with {@code everysec} or {@code no} a process crash loses at most the last batch (about a millisecond) and a
 * machine crash about a second; with {@code always} {@link #syncTo} writes and fsyncs before the caller replies.
 *
 * <p>Lock order: {@code syncLock}, then {@code writeLock} (owns the channel and the spare buffer), then
 * {@code appendLock} (owns the active buffer). {@link #rotate} must be called with every writer stopped (the store
 * holds all shard locks). Buffers are private direct memory, never handed out.
 */
final class LogWriter implements AutoCloseable {
    /** Size of each of the two append buffers. */
    static final int BUFFER_BYTES = 1 << 20;
    /** How long the write-behind thread lets a batch gather before writing it. */
    static final long WRITE_BEHIND_MICROS = 1000;
    private static final Logger LOG = LoggerFactory.getLogger(LogWriter.class);
    /** Empty write-behind rounds (about 100 ms) before the thread parks until an append wakes it. */
    private static final int POLL_ROUNDS_BEFORE_IDLE = 100;
    private static final long IDLE_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private final Path dir;
    private final Object appendLock = new Object();
    private final Object writeLock = new Object();
    private final Object syncLock = new Object();
    /** Frames appended and not yet handed to the OS. Guarded by appendLock. */
    private ByteBuffer active = ByteBuffer.allocateDirect(BUFFER_BYTES);
    /** Empty whenever writeLock is free. Guarded by writeLock. */
    private ByteBuffer spare = ByteBuffer.allocateDirect(BUFFER_BYTES);
    /** Guarded by writeLock. */
    private FileChannel channel;
    /**
     * Segments {@link #rotate} switched away from, not yet forced and closed, and where the last of them ends in
     * {@code writtenTotal} terms. Guarded by writeLock; emptied under syncLock ({@link #finishRotation}).
     */
    private final java.util.ArrayDeque<FileChannel> retiring = new java.util.ArrayDeque<>();
    private long retiringEnd;
    /** The current segment was created by a rotation whose creation is not yet durable. Guarded by writeLock. */
    private boolean segmentCreationPending;
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
    private final Thread writeBehind;
    /** Recent frames by position; its last position is the log's. Added to under appendLock. */
    private final Oplog oplog;
    /** Term stamped on new frames (set when this member becomes primary). */
    private volatile long term;
    /** Position of the newest frame appended. Guarded by appendLock. */
    private long lastIndex;
    private long lastTerm;

    /** Opens segment {@code id} for append at {@code validEnd} (cutting anything after it), or creates it. */
    LogWriter(Path dir, long id, long validEnd, Oplog oplog) throws IOException {
        this.dir = dir;
        this.oplog = oplog;
        this.lastIndex = oplog.lastIndex();
        this.lastTerm = oplog.lastTerm();
        this.term = lastTerm;
        this.segmentId = id;
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
     * Appends a frame sealed by {@link FrameBuilder#sealPositioned}: stamps it with the current term and the next
     * index under the append lock (so indexes follow file order), copies it, and returns a ticket for
     * {@link #syncTo}. Nothing is appended if it throws.
     */
    long append(FrameBuilder f, ByteBuffer frame) {
        return append(frame, f, 0, 0, null);
    }

    /**
     * Appends a frame received from the primary, already stamped with {@code (term, index)}; {@code index} must follow
     * the last one. The oplog keeps {@code frame} itself: the caller gives it up.
     */
    long appendReplicated(byte[] frame, long frameTerm, long index) {
        return append(ByteBuffer.wrap(frame), null, frameTerm, index, frame);
    }

    private long append(ByteBuffer frame, FrameBuilder f, long replTerm, long replIndex, byte[] replFrame) {
        int n = frame.remaining();
        long ticket;
        synchronized (appendLock) {
            checkWritable();
            if (n <= active.remaining()) {
                positionLocked(f, replTerm, replIndex, replFrame);
                active.put(frame);
                ticket = appendedTotal + n;
                appendedTotal = ticket;
            } else {
                ticket = -1;
            }
        }
        if (ticket < 0) {
            ticket = appendSlow(frame, n, f, replTerm, replIndex, replFrame);
        }
        if (writerParked) {
            LockSupport.unpark(writeBehind);
        }
        return ticket;
    }

    /** Gives the frame its position (and the oplog its copy). The caller holds appendLock and appends it next. */
    private void positionLocked(FrameBuilder f, long replTerm, long replIndex, byte[] replFrame) {
        if (f != null) {
            long t = term;
            long i = lastIndex + 1;
            f.stamp(t, i);
            if (oplog.retains()) {
                // A standalone store keeps no window: its position lives here alone, no monitor per write.
                oplog.add(t, i, f.frameCopy());
            }
            lastTerm = t;
            lastIndex = i;
        } else {
            if (replIndex != lastIndex + 1) {
                throw new StoreException("replicated frame at index " + replIndex + " does not follow this log's "
                    + lastIndex);
            }
            if (oplog.retains()) {
                oplog.add(replTerm, replIndex, replFrame);
            }
            lastTerm = replTerm;
            lastIndex = replIndex;
        }
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

    /** The buffer is too full for the frame: write it out, then buffer the frame or write it directly. */
    private long appendSlow(ByteBuffer frame, int n, FrameBuilder f, long replTerm, long replIndex, byte[] replFrame) {
        synchronized (writeLock) {
            drainLocked();
            synchronized (appendLock) {
                checkWritable();
                positionLocked(f, replTerm, replIndex, replFrame);
                if (n <= active.remaining()) {
                    active.put(frame);
                    appendedTotal += n;
                    return appendedTotal;
                }
                if (active.position() != 0) {
                    // Others refilled it since the drain; write theirs first so the file keeps append order.
                    writeOut(active, appendedTotal);
                }
                long start = filePosition;
                try {
                    while (frame.hasRemaining()) {
                        filePosition += channel.write(frame);
                    }
                } catch (IOException e) {
                    // The frame has its index already: later frames may not follow a hole, so refuse them.
                    failure = "log append failed: " + e;
                    undo(start);
                    throw new StoreException("log append failed: " + e.getMessage(), e);
                }
                appendedTotal += n;
                writtenTotal = appendedTotal;
                return appendedTotal;
            }
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

    /** Hands everything buffered so far to the OS. The caller holds writeLock. */
    private void drainLocked() {
        ByteBuffer full;
        long target;
        synchronized (appendLock) {
            if (active.position() == 0) {
                return;
            }
            full = active;
            active = spare;
            spare = full;
            target = appendedTotal;
        }
        writeOut(full, target);
    }

    /** Writes {@code b} (filled, not flipped) to the file and clears it. The caller holds writeLock. */
    private void writeOut(ByteBuffer b, long target) {
        long start = filePosition;
        b.flip();
        try {
            while (b.hasRemaining()) {
                filePosition += channel.write(b);
            }
            writtenTotal = target;
        } catch (IOException e) {
            // Appends already acknowledged are lost to the file: refuse further writes, as after a failed fsync.
            failure = "log write failed: " + e;
            undo(start);
            throw new StoreException("log write failed: " + e.getMessage(), e);
        } finally {
            b.clear();
        }
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
            if (appendedTotal == writtenTotal && failure == null && emptyRounds < POLL_ROUNDS_BEFORE_IDLE) {
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
            if (emptyRounds == 0 || emptyRounds >= POLL_ROUNDS_BEFORE_IDLE) {
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
            // a rotation's old segment first: the new one's writes may not be durable before its
            finishRotationLocked();
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
                FileChannel next = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                        StandardOpenOption.WRITE);
                try {
                    writeFully(next, ByteBuffer.wrap(LogDescriptor.SEGMENT_MAGIC), 0);
                    next.position(LogDescriptor.MAGIC_LENGTH);
                } catch (IOException e) {
                    segmentId--;
                    next.close();
                    java.nio.file.Files.deleteIfExists(file);
                    throw e;
                }
                retiring.add(old);
                retiringEnd = writtenTotal;
                segmentCreationPending = true;
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
            finishRotationLocked();
        }
    }

    /** The caller holds syncLock. */
    private void finishRotationLocked() {
        List<FileChannel> old;
        boolean created;
        long end;
        FileChannel current;
        synchronized (writeLock) {
            if (retiring.isEmpty() && !segmentCreationPending) {
                return;
            }
            old = new java.util.ArrayList<>(retiring);
            retiring.clear();
            created = segmentCreationPending;
            segmentCreationPending = false;
            end = retiringEnd;
            current = channel;
        }
        try {
            for (FileChannel c : old) {
                try {
                    c.force(false);
                } finally {
                    c.close();
                }
            }
            if (created) {
                current.force(true);
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

    long segmentId() {
        synchronized (writeLock) {
            return segmentId;
        }
    }

    /** Bytes in the current segment, counting those still buffered. */
    long currentSegmentBytes() {
        synchronized (writeLock) {
            synchronized (appendLock) {
                return filePosition + active.position();
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
                finishRotationLocked();
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
                        }
                        channel.force(true);
                        syncedTotal = writtenTotal;
                    } finally {
                        channel.close();
                    }
                }
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
