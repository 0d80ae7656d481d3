package io.rdmastore.store.blob;

import io.rdmastore.store.StoreException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * One stored blob file: its version number (unique in the store, the file's name), length, CRC32C and, once asked
 * for, a read-only memory mapping of it.
 *
 * <p>Lifetime: reference counted. Every key whose value is this version holds one reference (taken and dropped under
 * the key's shard lock), every reader one from {@link io.rdmastore.store.Store#acquireBlob} until it calls
 * {@link #release()}. When the count reaches zero the mapping goes and the store's reaper deletes the file once the
 * log record that dropped the last key reference is durable (so a crash can never leave a log that names a deleted
 * file). Until then {@link #segment()} stays valid and unchanged: a blob file is never written after its commit.
 *
 * <p>Threads: thread-safe. The segment may be read from any thread while the caller holds a reference.
 */
public final class BlobVersion {
    private final BlobStore store;
    private final long version;
    private final long length;
    private final int crc32c;
    private final Path file;
    /** Named by the log but absent on disk (found during recovery only). */
    private final boolean missing;
    private int refs;
    /** The file was deleted; no reference may be taken any more. */
    private boolean dead;
    private Arena arena;
    private MemorySegment segment;

    BlobVersion(BlobStore store, long version, long length, int crc32c, Path file, boolean missing) {
        this.store = store;
        this.version = version;
        this.length = length;
        this.crc32c = crc32c;
        this.file = file;
        this.missing = missing;
    }

    /** The version number: grows with every blob stored, unique in the store. */
    public long version() {
        return version;
    }

    /** Length in bytes. */
    public long length() {
        return length;
    }

    /** CRC32C of the whole content, as verified when it was stored. */
    public int crc32c() {
        return crc32c;
    }

    /** The file holding the content. */
    public Path file() {
        return file;
    }

    /** Whether the log names this version but its file was not found at recovery. */
    public boolean missing() {
        return missing;
    }

    /**
     * The content, mapped read-only on first use. Valid while the caller holds a reference.
     *
     * @throws StoreException when the file cannot be mapped
     */
    public synchronized MemorySegment segment() {
        if (refs <= 0) {
            throw new IllegalStateException("blob version " + version + " is not referenced");
        }
        if (segment == null) {
            if (missing) {
                throw new StoreException("blob file " + file + " is missing");
            }
            if (length == 0) {
                segment = MemorySegment.NULL.reinterpret(0);
            } else {
                Arena a = Arena.ofShared();
                try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
                    segment = ch.map(FileChannel.MapMode.READ_ONLY, 0, length, a);
                    arena = a;
                } catch (IOException | RuntimeException e) {
                    a.close();
                    throw new StoreException("cannot map blob file " + file + ": " + e, e);
                }
            }
        }
        return segment;
    }

    /**
     * Takes one more reference.
     *
     * @throws IllegalStateException when the file was already deleted (a bug: only a holder may share a version)
     */
    public synchronized void retain() {
        if (dead) {
            throw new IllegalStateException("blob version " + version + " was already deleted");
        }
        refs++;
    }

    /** Number of references held (keys plus readers). */
    public synchronized int references() {
        return refs;
    }

    /** Gives back one reference; the last one unmaps the content and hands the file to the store's reaper. */
    public void release() {
        boolean last;
        synchronized (this) {
            if (refs <= 0) {
                throw new IllegalStateException("blob version " + version + " released more often than retained");
            }
            last = --refs == 0;
            if (last) {
                unmap();
            }
        }
        if (last) {
            store.unreferenced(this);
        }
    }

    /** Marks the version deleted if nobody took it back meanwhile; true when the caller may delete the file. */
    synchronized boolean bury() {
        if (refs > 0 || dead) {
            return false;
        }
        dead = true;
        return true;
    }

    synchronized void unmap() {
        if (arena != null) {
            arena.close();
            arena = null;
        }
        segment = null;
    }

    @Override
    public String toString() {
        return "BlobVersion{version=" + version + ", length=" + length + ", crc32c="
            + String.format("%08x", crc32c) + ", file=" + file.getFileName() + "}";
    }
}
