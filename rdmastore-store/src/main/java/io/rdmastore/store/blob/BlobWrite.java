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

    /** The blob's length. */
    public long length() {
        return length;
    }
}
