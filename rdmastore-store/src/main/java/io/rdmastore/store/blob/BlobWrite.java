package io.rdmastore.store.blob;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * A blob being written: a temporary file of the final length, mapped read-write. The writer fills
 * {@link #segment()} (e.g. by one-sided reads into it) and then calls {@link BlobStore#commit(BlobWrite, Integer)} or
 * {@link BlobStore#abort(BlobWrite)}; nothing is visible to readers before the commit.
 *
 * <p>Threads: one writer at a time; the segment may be filled from any thread. Ownership: the store's; the segment
 * is invalid after commit or abort.
 */
public final class BlobWrite {
    final long length;
    final Path temp;
    final FileChannel channel;
    final Arena arena;
    final MemorySegment segment;
    boolean finished;
    volatile long crcNanos;
    volatile long syncNanos;

    BlobWrite(long length, Path temp, FileChannel channel, Arena arena, MemorySegment segment) {
        this.length = length;
        this.temp = temp;
        this.channel = channel;
        this.arena = arena;
        this.segment = segment;
    }

    /** The destination memory, {@link #length()} bytes. */
    public MemorySegment segment() {
        return segment;
    }

    /**
     * The temporary file being written (renamed at commit): another read-only mapping of it sees the bytes written so
     * far, which is how a member lends a blob onwards while it is still arriving.
     */
    public Path file() {
        return temp;
    }

    /** Time the commit spent on the CRC32C (0 before the commit). */
    public long crcNanos() {
        return crcNanos;
    }

    /** Time the commit spent making the file durable (0 before the commit or without fsync). */
    public long syncNanos() {
        return syncNanos;
    }

    /**
     * Faults in the destination pages of {@code [offset, offset + length)} ahead of a transfer into them (one call
     * instead of a page fault per page). Any thread; best effort.
     */
    public void prepare(long offset, long length) {
        Preallocation.populate(segment, offset, Math.min(length, this.length - offset));
    }

    /** The blob's length. */
    public long length() {
        return length;
    }
}
