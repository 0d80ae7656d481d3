package io.rdmastore.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Appends frames to the current log segment and forces them to disk. Thread-safe: {@link #append} is serialised by
 * a lock (callers hold their shard locks, so per-key order in the file is the order of application);
 * {@link #syncTo} lets many threads share one fsync (group commit). {@link #rotate} must be called with every
 * writer stopped (the store holds all shard locks).
 */
final class LogWriter implements AutoCloseable {
    private final Path dir;
    private final Object appendLock = new Object();
    private final Object syncLock = new Object();
    private FileChannel channel;
    private long segmentId;
    private long appendedTotal;
    private volatile long syncedTotal;
    private volatile String failure;

    /** Opens segment {@code id} for append at {@code validEnd} (cutting anything after it), or creates it. */
    LogWriter(Path dir, long id, long validEnd) throws IOException {
        this.dir = dir;
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
        channel.position(channel.size());
    }

    /** Appends a sealed frame; returns a ticket for {@link #syncTo}. Nothing is written if it throws. */
    long append(ByteBuffer frame) {
        synchronized (appendLock) {
            if (failure != null) {
                throw new StoreException("MISCONF the log is not writable, writes are refused: " + failure);
            }
            long start = 0;
            try {
                start = channel.position();
                int n = frame.remaining();
                while (frame.hasRemaining()) {
                    channel.write(frame);
                }
                appendedTotal += n;
                return appendedTotal;
            } catch (IOException e) {
                try {
                    // A half-written frame followed by later good ones would look like corruption in the middle.
                    channel.truncate(start);
                    channel.position(start);
                } catch (IOException e2) {
                    failure = "append failed and could not be undone: " + e2;
                }
                throw new StoreException("log append failed: " + e.getMessage(), e);
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
            long target;
            FileChannel ch;
            synchronized (appendLock) {
                target = appendedTotal;
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

    /** fsync whatever was appended so far. */
    void force() {
        long t;
        synchronized (appendLock) {
            t = appendedTotal;
        }
        syncTo(t);
    }

    boolean dirty() {
        synchronized (appendLock) {
            return appendedTotal > syncedTotal;
        }
    }

    /** Closes the current segment (forced) and starts the next; returns the new segment's id. */
    long rotate() throws IOException {
        synchronized (syncLock) {
            synchronized (appendLock) {
                channel.force(false);
                syncedTotal = appendedTotal;
                channel.close();
                segmentId++;
                Path file = dir.resolve(LogDescriptor.segmentName(segmentId));
                channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                        StandardOpenOption.WRITE);
                writeFully(channel, ByteBuffer.wrap(LogDescriptor.SEGMENT_MAGIC), 0);
                channel.position(LogDescriptor.MAGIC_LENGTH);
                channel.force(true);
                syncDirectory(dir);
                return segmentId;
            }
        }
    }

    long segmentId() {
        synchronized (appendLock) {
            return segmentId;
        }
    }

    long currentSegmentBytes() {
        synchronized (appendLock) {
            try {
                return channel.position();
            } catch (IOException e) {
                return 0;
            }
        }
    }

    @Override
    public void close() throws IOException {
        synchronized (syncLock) {
            synchronized (appendLock) {
                if (channel.isOpen()) {
                    channel.force(true);
                    syncedTotal = appendedTotal;
                    channel.close();
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
