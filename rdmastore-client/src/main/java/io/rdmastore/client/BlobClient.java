package io.rdmastore.client;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.ProtocolException;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.RemoteMemory;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.LongConsumer;
import java.util.zip.CRC32C;

/**
 * Blobs (docs/blobs.md): large values stored as files on the server and moved with one-sided reads. A get leases the
 * server's registered view of one version and pulls it in chunks, several in flight, straight into the caller's
 * registered memory (or a mapped file), checks the CRC32C and ends the lease. A put lends the caller's memory; the
 * server pulls it, checks the CRC32C and acknowledges once the blob is durable. Over tcp the same calls stream.
 *
 * <p>Threads: thread-safe; each call runs on the calling thread, which also drives the transport when the connection
 * needs it. Blob calls go to the primary of a replica set (whatever the read preference); writes honour write concern
 * majority with a WAIT after the write's reply and are not retried after a failover. Memory: a {@link BlobBuffer} is
 * the caller's and is filled or read only during the call; byte-array, stream and heap-segment variants go through a
 * temporary off-heap buffer of the blob's size.
 */
public final class BlobClient {
    /** Bytes per one-sided read of a get. */
    public static final long CHUNK_BYTES = 8L << 20;
    /** Reads of one get in flight. */
    public static final int WINDOW = 4;
    /** Staging buffer of {@link #getFile}: reads land here and are written to the file in steps of this size. */
    public static final long STAGE_BYTES = 64L << 20;
    /** Throughput assumed when stretching a transfer's time-out with its size: 50 MB/s. */
    private static final long SLOWEST_BYTES_PER_SECOND = 50_000_000L;

    private final ClientCore core;
    private final Duration timeout;
    private final WriteConcern writeConcern;

    BlobClient(ClientCore core, Duration timeout, WriteConcern writeConcern) {
        this.core = core;
        this.timeout = timeout;
        this.writeConcern = writeConcern;
    }

    /**
     * Waits for the write concern of a blob write that succeeded on {@code c}. A blob's WAIT is sent after the write's
     * reply, not pipelined: the server commits a blob after requests sent behind it ran, which a pipelined WAIT would
     * not cover. A NOTPRIMARY refusal makes the next call rediscover the primary; blob writes are not retried.
     */
    private <T> T written(Connection c, byte opcode, ClientCore.Call<T> call, Duration callTimeout) {
        T result;
        try {
            result = core.await(call, callTimeout);
        } catch (RdmaStoreServerException e) {
            if (ClientCore.isNotPrimaryError(e)) {
                core.notPrimary(c);
            }
            throw e;
        }
        if (writeConcern.majority()) {
            core.awaitMajority(c, opcode, writeConcern, timeout);
        }
        return result;
    }

    // ---- buffers ----

    /** Allocates a reusable registered buffer of {@code capacity} bytes; close it when done. */
    public BlobBuffer allocate(long capacity) {
        Arena arena = Arena.ofShared();
        try {
            return new BlobBuffer(capacity == 0 ? MemorySegment.NULL.reinterpret(0)
                : arena.allocate(capacity, 4096), arena);
        } catch (RuntimeException | OutOfMemoryError e) {
            arena.close();
            throw e;
        }
    }

    /** Wraps the caller's native segment as a reusable registered buffer (the segment stays the caller's). */
    public BlobBuffer wrap(MemorySegment segment) {
        return new BlobBuffer(segment, null);
    }

    // ---- put ----

    /** Stores {@code length} bytes of {@code buffer} (from offset 0) under {@code key}; returns what was stored. */
    public BlobInfo put(byte[] key, BlobBuffer buffer, long length) {
        if (length < 0 || length > buffer.capacity()) {
            throw new IllegalArgumentException("length " + length + " outside the buffer's 0.." + buffer.capacity());
        }
        int crc = crc32c(buffer.segment(), length, null);
        return put(key, buffer, length, crc);
    }

    private BlobInfo put(byte[] key, BlobBuffer buffer, long length, int crc) {
        Connection c = core.connection();
        byte[] descriptor = length == 0 ? new byte[0] : buffer.registration(c).descriptor();
        ClientCore.Call<Long> call = core.call(ProtocolDescriptor.BLOB_PUT,
            w -> w.bytes(key).i64(length).i32(crc).bytes(descriptor), (st, r) -> {
                long v = r.i64("version");
                r.end();
                return v;
            }, transferTimeout(length));
        long version = written(c, ProtocolDescriptor.BLOB_PUT, call, transferTimeout(length));
        return new BlobInfo(version, length, crc);
    }

    /** Stores {@code value} under {@code key}. */
    public BlobInfo put(byte[] key, byte[] value) {
        return put(key, MemorySegment.ofArray(value));
    }

    /** Stores the bytes of {@code value} (native segments are lent as they are; heap ones are copied off-heap first). */
    public BlobInfo put(byte[] key, MemorySegment value) {
        if (value.isNative() || value.byteSize() == 0) {
            try (BlobBuffer b = wrap(value)) {
                return put(key, b, value.byteSize());
            }
        }
        try (BlobBuffer b = allocate(value.byteSize())) {
            MemorySegment.copy(value, 0, b.segment(), 0, value.byteSize());
            return put(key, b, value.byteSize());
        }
    }

    /** Stores exactly {@code length} bytes read from {@code in}. */
    public BlobInfo put(byte[] key, InputStream in, long length) {
        try (BlobBuffer b = allocate(length)) {
            byte[] chunk = new byte[1 << 20];
            long off = 0;
            while (off < length) {
                int n = in.read(chunk, 0, (int) Math.min(chunk.length, length - off));
                if (n < 0) {
                    throw new RdmaStoreException("stream ended after " + off + " of " + length + " bytes; nothing stored");
                }
                MemorySegment.copy(chunk, 0, b.segment(), ValueLayout.JAVA_BYTE, off, n);
                off += n;
            }
            return put(key, b, length);
        } catch (IOException e) {
            throw new UncheckedIOException("reading the blob stream failed; nothing stored", e);
        }
    }

    /**
     * Stores a file's content: the file is mapped and lent as it is. {@code progress} (may be null) sees the bytes
     * checksummed before the transfer and the total once the server acknowledged.
     */
    public BlobInfo putFile(byte[] key, Path file, LongConsumer progress) {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ); Arena arena = Arena.ofShared()) {
            long length = ch.size();
            MemorySegment seg = length == 0 ? MemorySegment.NULL.reinterpret(0)
                : ch.map(FileChannel.MapMode.READ_ONLY, 0, length, arena);
            try (BlobBuffer b = wrap(seg)) {
                int crc = crc32c(seg, length, progress);
                BlobInfo info = put(key, b, length, crc);
                if (progress != null) {
                    progress.accept(length);
                }
                return info;
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
    }

    // ---- get ----

    /** The server's answer to BLOB_GET. */
    private record Lease(long version, long length, int crc, long id, byte[] descriptor) {
    }

    private Lease lease(byte[] key) {
        ClientCore.Call<Lease> call = core.call(ProtocolDescriptor.BLOB_GET, w -> w.bytes(key), (st, r) -> {
            if (st == ProtocolDescriptor.STATUS_NULL) {
                return null;
            }
            Lease l = new Lease(r.i64("version"), r.i64("length"), r.i32("crc32c"), r.i64("lease id"),
                r.bytes("descriptor", 64 * 1024));
            r.end();
            if (l.length < 0) {
                throw new ProtocolException("negative blob length " + l.length);
            }
            return l;
        }, timeout);
        return core.await(call, timeout);
    }

    private void endLease(Lease lease) {
        ClientCore.Call<Boolean> call = core.call(ProtocolDescriptor.BLOB_GET_DONE, w -> w.i64(lease.id),
            (st, r) -> st == ProtocolDescriptor.STATUS_OK, timeout);
        core.await(call, timeout);
    }

    /**
     * Reads blob {@code key} into {@code buffer} from offset 0.
     *
     * @param progress bytes received so far, called on this thread (may be null)
     * @return what was read, or null when there is no such blob
     * @throws RdmaStoreException when the buffer is too small (nothing is read) or the CRC32C does not match
     */
    public BlobInfo get(byte[] key, BlobBuffer buffer, LongConsumer progress) {
        Lease lease = lease(key);
        if (lease == null) {
            return null;
        }
        try {
            if (lease.length > buffer.capacity()) {
                throw new RdmaStoreException("blob of " + lease.length + " bytes does not fit the destination of "
                    + buffer.capacity() + " bytes");
            }
            int crc = pull(lease, buffer, progress);
            if (crc != lease.crc) {
                throw new RdmaStoreException(String.format("blob CRC32C mismatch: expected %08x, received %08x",
                    lease.crc, crc));
            }
        } finally {
            endLease(lease);
        }
        return new BlobInfo(lease.version, lease.length, lease.crc);
    }

    /** Reads blob {@code key} into {@code dst} (native segments are filled directly); null when absent. */
    public BlobInfo get(byte[] key, MemorySegment dst) {
        if (dst.isNative()) {
            try (BlobBuffer b = wrap(dst)) {
                return get(key, b, null);
            }
        }
        try (BlobBuffer b = allocate(dst.byteSize())) {
            BlobInfo info = get(key, b, null);
            if (info != null) {
                MemorySegment.copy(b.segment(), 0, dst, 0, info.length());
            }
            return info;
        }
    }

    /** The blob's bytes, or null when there is no such blob (at most 2 GiB - 1 in an array). */
    public byte[] get(byte[] key) {
        Lease lease = lease(key);
        if (lease == null) {
            return null;
        }
        endLease(lease);
        if (lease.length > Integer.MAX_VALUE - 8) {
            throw new RdmaStoreException("blob of " + lease.length + " bytes is too large for a byte array; use a"
                + " file, stream or segment");
        }
        try (BlobBuffer b = allocate(lease.length)) {
            BlobInfo info = get(key, b, null);
            return info == null ? null : b.segment().asSlice(0, info.length()).toArray(ValueLayout.JAVA_BYTE);
        }
    }

    /** Writes the blob to {@code out}; null (and nothing written) when there is no such blob. */
    public BlobInfo get(byte[] key, OutputStream out) {
        Lease lease = lease(key);
        if (lease == null) {
            return null;
        }
        endLease(lease);
        // Sized by the first lease; a larger version written since fails cleanly and can be retried.
        try (BlobBuffer b = allocate(lease.length)) {
            BlobInfo info = get(key, b, null);
            if (info == null) {
                return null;
            }
            byte[] chunk = new byte[1 << 20];
            for (long off = 0; off < info.length(); off += chunk.length) {
                int n = (int) Math.min(chunk.length, info.length() - off);
                MemorySegment.copy(b.segment(), ValueLayout.JAVA_BYTE, off, chunk, 0, n);
                out.write(chunk, 0, n);
            }
            return info;
        } catch (IOException e) {
            throw new UncheckedIOException("writing the blob to the stream failed", e);
        }
    }

    /**
     * Reads the blob into {@code file} through a {@code .part} file renamed into place once the CRC matched, so a
     * failed get leaves the target untouched; null when there is no such blob. The bytes land in a registered staging
     * buffer of at most {@link #STAGE_BYTES} and are written with {@code FileChannel.write}: writing through a shared
     * file mapping instead costs the file system a block reservation per 4 KiB page fault (a 300 MB get-file moved
     * its bytes about 1.4x slower that way).
     */
    public BlobInfo getFile(byte[] key, Path file, LongConsumer progress) {
        Lease lease = lease(key);
        if (lease == null) {
            return null;
        }
        Path part = file.resolveSibling(file.getFileName() + ".part");
        boolean done = false;
        try {
            try (FileChannel ch = FileChannel.open(part, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                    StandardOpenOption.WRITE); BlobBuffer stage = allocate(Math.min(lease.length, STAGE_BYTES))) {
                CRC32C crc = new CRC32C();
                for (long off = 0; off < lease.length; ) {
                    long n = Math.min(STAGE_BYTES, lease.length - off);
                    pull(lease, off, n, stage, null, crc);
                    ByteBuffer bytes = stage.segment().asSlice(0, n).asByteBuffer();
                    while (bytes.hasRemaining()) {
                        ch.write(bytes, off + bytes.position());
                    }
                    off += n;
                    if (progress != null) {
                        progress.accept(off);
                    }
                }
                int got = (int) crc.getValue();
                if (got != lease.crc) {
                    throw new RdmaStoreException(String.format("blob CRC32C mismatch: expected %08x, received"
                        + " %08x; %s not written", lease.crc, got, file));
                }
            }
            try {
                Files.move(part, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(part, file, StandardCopyOption.REPLACE_EXISTING);
            }
            done = true;
            return new BlobInfo(lease.version, lease.length, lease.crc);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
        } finally {
            endLease(lease);
            if (!done) {
                try {
                    Files.deleteIfExists(part);
                } catch (IOException e) {
                    // The .part file is only a leftover; the caller's error matters more.
                }
            }
        }
    }

    // ---- delete ----

    /** Deletes a blob; true when it existed. Readers holding a lease finish with the version they started. */
    public boolean delete(byte[] key) {
        Connection c = core.connection();
        ClientCore.Call<Boolean> call = core.call(ProtocolDescriptor.BLOB_DEL, w -> w.bytes(key), (st, r) -> {
            long n = r.i64("deleted");
            r.end();
            return n > 0;
        }, timeout);
        return written(c, ProtocolDescriptor.BLOB_DEL, call, timeout);
    }

    // ---- transfer machinery ----

    /**
     * Pulls the leased blob into {@code buffer}, WINDOW chunks in flight; returns the CRC32C of what arrived. A blob of
     * more than one chunk is summed on a second thread behind the reads ({@link ChecksumPipeline}); one chunk is
     * summed here, where a thread hand-off would cost more than it saves.
     */
    private int pull(Lease lease, BlobBuffer buffer, LongConsumer progress) {
        return pull(lease, 0, lease.length, buffer, progress, null);
    }

    /**
     * Pulls {@code [remoteBase, remoteBase + length)} of the leased blob into {@code [0, length)} of {@code buffer}.
     * With {@code running} given, the bytes are added to it in order on this thread and the return value means
     * nothing; else the CRC32C of the range is returned.
     */
    private int pull(Lease lease, long remoteBase, long length, BlobBuffer buffer, LongConsumer progress,
                     CRC32C running) {
        if (length == 0) {
            return (int) new CRC32C().getValue();
        }
        Connection c = core.connection();
        RemoteMemory remote = c.remoteMemory(lease.descriptor);
        RegisteredMemory local = buffer.registration(c);
        MemorySegment seg = buffer.segment();
        @SuppressWarnings("unchecked")
        CompletableFuture<Void>[] ring = new CompletableFuture[WINDOW];
        long[] offsets = new long[WINDOW];
        CRC32C crc = running != null ? running : new CRC32C();
        ChecksumPipeline checker = running == null && length > CHUNK_BYTES ? ChecksumPipeline.start(seg, length) : null;
        boolean checked = false;
        long deadline = System.nanoTime() + transferTimeout(length).toNanos();
        long issued = 0;
        long received = 0;
        int head = 0;
        int inflight = 0;
        int idle = 0;
        try {
            while (received < length) {
                while (inflight < WINDOW && issued < length) {
                    long n = Math.min(CHUNK_BYTES, length - issued);
                    int slot = (head + inflight) % WINDOW;
                    offsets[slot] = issued;
                    ring[slot] = c.read(remote, remoteBase + issued, local, issued, n);
                    issued += n;
                    inflight++;
                }
                CompletableFuture<Void> f = ring[head];
                if (f.isDone()) {
                    f.join();
                    long off = offsets[head];
                    long n = Math.min(CHUNK_BYTES, length - off);
                    received += n;
                    // chunks complete and are summed in order
                    if (checker != null) {
                        checker.landed(received);
                    } else {
                        crc.update(seg.asSlice(off, n).asByteBuffer());
                    }
                    ring[head] = null;
                    head = (head + 1) % WINDOW;
                    inflight--;
                    idle = 0;
                    if (progress != null) {
                        progress.accept(received);
                    }
                    continue;
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new RdmaStoreTimeoutException("blob transfer of " + length + " bytes timed out after "
                        + received + " bytes");
                }
                idle = ClientCore.idleStep(idle, core.driveIfNeeded());
            }
            if (checker != null) {
                while (!checker.isDone() && System.nanoTime() - deadline < 0) {
                    idle = ClientCore.idleStep(idle, core.driveIfNeeded());
                }
                if (!checker.isDone()) {
                    throw new RdmaStoreTimeoutException("blob CRC32C check of " + length + " bytes timed out");
                }
                checked = true;
                return checker.finish();
            }
        } catch (CompletionException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            throw new RdmaStoreConnectionException("blob transfer failed after " + received + " of " + length
                + " bytes: " + cause.getMessage(), cause);
        } finally {
            // Never return while a read may still write into the caller's memory.
            for (int i = 0; i < inflight; i++) {
                CompletableFuture<Void> f = ring[(head + i) % WINDOW];
                waitQuietly(f, deadline);
            }
            if (checker != null && !checked) {
                checker.abandon();
            }
        }
        return (int) crc.getValue();
    }

    private void waitQuietly(CompletableFuture<Void> f, long deadline) {
        int idle = 0;
        while (f != null && !f.isDone() && System.nanoTime() - deadline < 0) {
            idle = ClientCore.idleStep(idle, core.driveIfNeeded());
        }
        if (f != null && f.isDone()) {
            try {
                f.get();
            } catch (ExecutionException | InterruptedException | RuntimeException e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    private Duration transferTimeout(long length) {
        return timeout.plusMillis(length / (SLOWEST_BYTES_PER_SECOND / 1000));
    }

    /** CRC32C of the first {@code length} bytes, reporting progress per 64 MiB when asked. */
    static int crc32c(MemorySegment segment, long length, LongConsumer progress) {
        CRC32C crc = new CRC32C();
        long step = 64L << 20;
        for (long off = 0; off < length; off += step) {
            long n = Math.min(step, length - off);
            crc.update(segment.asSlice(off, n).asByteBuffer());
            if (progress != null) {
                progress.accept(off + n);
            }
        }
        return (int) crc.getValue();
    }
}
