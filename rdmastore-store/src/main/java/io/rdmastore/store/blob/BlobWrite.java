package io.rdmastore.store.blob;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * A blob being written: a temporary file of the final length, mapped read-write. The writer fills it, with
 * {@link #write(long, MemorySegment)} (the file's own writes) or through {@link #segment()} (e.g. by one-sided reads
 * into the mapping), and then calls {@link BlobStore#commit(BlobWrite, Integer)} or {@link BlobStore#abort(BlobWrite)};
 * nothing is visible to readers before the commit.
 *
 * <p>Which to use: a write through the mapping takes a page fault per 4 KiB page it touches first, and on a virtual
 * machine each fault is an exit to the hypervisor (13 us a page measured here, 850 ms for 256 MiB, against 60 ms for
 * the same bytes through {@code write(2)}); so the bulk paths write through the file (docs/blobs.md, "Landing").
 *
 * <p>Threads: one writer at a time; the segment may be filled from any thread, and writes at distinct offsets from
 * several. Ownership: the store's; the segment is invalid after commit or abort.
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
     * Writes {@code src} into the file at {@code offset} through the file system (positional writes, no page faults
     * on the mapping). Any thread.
     *
     * @throws IOException when the file cannot be written
     * @throws IndexOutOfBoundsException when the bytes would end past {@link #length()}
     */
    public void write(long offset, MemorySegment src) throws IOException {
        long n = src.byteSize();
        if (offset < 0 || n > length - offset) {
            throw new IndexOutOfBoundsException("write of " + n + " bytes at " + offset + " past a blob of " + length);
        }
        // a ByteBuffer holds at most 2 GiB; a heap one goes through the JDK's per-thread direct buffer of its size,
        // which it keeps: 1 MiB pieces keep that small
        long piece = src.isNative() ? 1L << 30 : 1L << 20;
        for (long done = 0; done < n; ) {
            ByteBuffer b = src.asSlice(done, Math.min(piece, n - done)).asByteBuffer();
            long at = offset + done;
            while (b.hasRemaining()) {
                at += channel.write(b, at);
            }
            done = at - offset;
        }
    }

    /** The blob's length. */
    public long length() {
        return length;
    }
}
