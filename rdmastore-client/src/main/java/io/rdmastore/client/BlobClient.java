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
import java.util.ArrayList;
import java.util.List;
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
 * majority with a WAIT after the write's reply and are retried only when refused with NOTPRIMARY (not applied).
 * Memory: a {@link BlobBuffer} is the caller's and is filled or read only during the call; byte-array, stream and
 * heap-segment variants go through a temporary off-heap buffer of the blob's size.
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

    /**
     * How a put reaches the other members of a replica set (docs/blobs.md, "Distribution to a replica set"). Ignored
     * for a single server.
     */
    public enum Distribution {
        /** {@link #PARALLEL} to the members this client reaches over ucx; the others pull from the primary. */
        AUTO,
        /** Every member pulls the client's buffer at once, whatever the transport (paper 004's parallel pull). */
        PARALLEL,
        /** Client to primary to the next member to the next, each lending onwards what it has received (HDFS). */
        PIPELINE,
        /** Only the primary pulls from the client; the others pull its file after the commit. */
        PRIMARY;

        /** Parses {@code auto}, {@code parallel}, {@code pipeline} or {@code primary}. */
        public static Distribution parse(String s) {
            try {
                return valueOf(s.toUpperCase(java.util.Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("unknown blob distribution '" + s
                    + "' (expected auto, parallel, pipeline or primary)");
            }
        }
    }

    private final ClientCore core;
    private final Duration timeout;
    private final WriteConcern writeConcern;
    private final Distribution distribution;
    private final boolean waitAll;

    BlobClient(ClientCore core, Duration timeout, WriteConcern writeConcern) {
        this(core, timeout, writeConcern, Distribution.AUTO, false);
    }

    private BlobClient(ClientCore core, Duration timeout, WriteConcern writeConcern, Distribution distribution,
                       boolean waitAll) {
        this.core = core;
        this.timeout = timeout;
        this.writeConcern = writeConcern;
        this.distribution = distribution;
        this.waitAll = waitAll;
    }

    /** This client with puts distributed to a replica set's members as {@code d} says. */
    public BlobClient distribution(Distribution d) {
        return new BlobClient(core, timeout, writeConcern, java.util.Objects.requireNonNull(d, "distribution"),
            waitAll);
    }

    /** This client with write concern {@code w} for its puts. */
    public BlobClient writeConcern(WriteConcern w) {
        return new BlobClient(core, timeout, java.util.Objects.requireNonNull(w, "writeConcern"), distribution,
            waitAll);
    }

    /**
     * This client with puts that return only once every member of the replica set holds the blob (a WAIT for all
     * secondaries after the write; the benchmark's "written to 3 members").
     */
    public BlobClient waitForAllMembers(boolean all) {
        return new BlobClient(core, timeout, writeConcern, distribution, all);
    }

    /**
     * Waits for the write concern of a blob write that succeeded on {@code c}. A blob's WAIT is sent after the write's
     * reply, not pipelined: the server commits a blob after requests sent behind it ran, which a pipelined WAIT would
     * not cover. A NOTPRIMARY refusal makes the next call rediscover the primary; a put then sends itself again
     * ({@link #PUT_ATTEMPTS}).
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

    /**
     * A put refused with NOTPRIMARY was not applied (an election ran meanwhile): it is sent again to the new primary,
     * at most this many times in all.
     */
    private static final int PUT_ATTEMPTS = 3;

    private BlobInfo put(byte[] key, BlobBuffer buffer, long length, int crc) {
        for (int attempt = 1; ; attempt++) {
            try {
                return putOnce(key, buffer, length, crc);
            } catch (RdmaStoreServerException e) {
                if (!ClientCore.isNotPrimaryError(e) || attempt >= PUT_ATTEMPTS) {
                    throw e;
                }
            }
        }
    }

    private BlobInfo putOnce(byte[] key, BlobBuffer buffer, long length, int crc) {
        Connection c = core.connection();
        Topology topology = core.topology();
        List<Topology.Member> others = new ArrayList<>();
        if (topology != null && topology.isReplicaSet() && length > 0 && distribution != Distribution.PRIMARY) {
            for (Topology.Member m : topology.members()) {
                if (!m.address().equals(topology.primaryAddress())) {
                    others.add(m);
                }
            }
        }
        byte[] descriptor = length == 0 ? new byte[0] : buffer.registration(c).descriptor();
        if (others.isEmpty()) {
            ClientCore.Call<Long> call = core.call(ProtocolDescriptor.BLOB_PUT,
                w -> w.bytes(key).i64(length).i32(crc).bytes(descriptor), (st, r) -> {
                    long v = r.i64("version");
                    r.end();
                    return v;
                }, transferTimeout(length));
            long version = written(c, ProtocolDescriptor.BLOB_PUT, call, transferTimeout(length));
            if (waitAll && topology != null && topology.isReplicaSet()) {
                core.awaitReplicas(c, ProtocolDescriptor.BLOB_PUT, topology.members().size() - 1,
                    transferTimeout(length));
            }
            return new BlobInfo(version, length, crc);
        }
        long token = 0;
        while (token == 0) {
            token = java.util.concurrent.ThreadLocalRandom.current().nextLong();
        }
        long tok = token;
        List<String> next = new ArrayList<>();
        List<Staging> stages = new ArrayList<>();
        try {
            if (distribution == Distribution.PIPELINE) {
                others.forEach(m -> next.add(m.address()));
            } else {
                for (Topology.Member m : others) {
                    Staging st = stage(m, tok, length, crc, buffer);
                    if (st != null) {
                        stages.add(st);
                    }
                }
            }
            // no member staging it (none reachable over ucx under AUTO): the token would only make each member wait
            // a moment for a stage that never comes
            long sent = stages.isEmpty() && next.isEmpty() ? 0 : tok;
            ClientCore.Call<Object[]> call = core.call(ProtocolDescriptor.BLOB_PUT, w -> {
                w.bytes(key).i64(length).i32(crc).bytes(descriptor).i64(sent).i32(0).i32(next.size());
                next.forEach(w::string);
            }, (st, r) -> {
                long v = r.i64("version");
                List<BlobInfo.Member> results = io.rdmastore.client.protocol.BlobResults.read(r);
                r.end();
                return new Object[] {v, results};
            }, transferTimeout(length));
            Object[] reply = written(c, ProtocolDescriptor.BLOB_PUT, call, transferTimeout(length));
            @SuppressWarnings("unchecked")
            List<BlobInfo.Member> members = new ArrayList<>((List<BlobInfo.Member>) reply[1]);
            for (Staging st : stages) {
                members.add(st.await(transferTimeout(length)));
            }
            if (waitAll) {
                core.awaitReplicas(c, ProtocolDescriptor.BLOB_PUT, topology.members().size() - 1,
                    transferTimeout(length));
            }
            return new BlobInfo((Long) reply[0], length, crc, members);
        } finally {
            for (Staging st : stages) {
                st.close(transferTimeout(length));
            }
        }
    }

    /** One member pulling this client's buffer ahead of the record (BLOB_STAGE). */
    private final class Staging {
        final Topology.Member member;
        final PeerChannel channel;
        final RegisteredMemory registration;
        final CompletableFuture<List<BlobInfo.Member>> reply;

        Staging(Topology.Member member, PeerChannel channel, RegisteredMemory registration,
                CompletableFuture<List<BlobInfo.Member>> reply) {
            this.member = member;
            this.channel = channel;
            this.registration = registration;
            this.reply = reply;
        }

        BlobInfo.Member await(Duration t) {
            try {
                List<BlobInfo.Member> r = channel.await(reply, t);
                return r.isEmpty() ? failed(member, "no result") : r.getFirst();
            } catch (RuntimeException e) {
                return failed(member, e.getMessage());
            }
        }

        /** Never frees the buffer while the member may still read it: waits for its reply (bounded) first. */
        void close(Duration t) {
            if (!reply.isDone()) {
                try {
                    channel.await(reply, t);
                } catch (RuntimeException e) {
                    // failed or timed out: the member pulls from the primary instead
                }
            }
            registration.close();
        }
    }

    private static BlobInfo.Member failed(Topology.Member m, String why) {
        return new BlobInfo.Member(m.id(), "parallel pull", false, why == null ? "failed" : why, 0, 0, 0);
    }

    /** Starts a member's pull of {@code buffer}; null when it is to pull from the primary instead. */
    private Staging stage(Topology.Member m, long token, long length, int crc, BlobBuffer buffer) {
        PeerChannel ch;
        Connection mc;
        try {
            ch = core.memberChannel(m.address());
            mc = ch.connection();
        } catch (RuntimeException e) {
            return null; // unreachable now: it pulls from the primary once it is back
        }
        if (distribution == Distribution.AUTO && mc.transportName().equals("tcp")) {
            return null;
        }
        RegisteredMemory reg = mc.register(buffer.segment());
        CompletableFuture<List<BlobInfo.Member>> reply;
        try {
            byte[] d = reg.descriptor();
            reply = ch.call(ProtocolDescriptor.BLOB_STAGE,
                w -> w.i64(token).i64(length).i32(crc).bytes(d).u8(0).i32(0).i32(0), (st, r) -> {
                    List<BlobInfo.Member> x = io.rdmastore.client.protocol.BlobResults.read(r);
                    r.end();
                    return x;
                }, transferTimeout(length));
        } catch (RuntimeException e) {
            reg.close();
            return null;
        }
        return new Staging(m, ch, reg, reply);
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
        ClientCore.Call<Lease> call = core.awaitedCall(ProtocolDescriptor.BLOB_GET, w -> w.bytes(key), (st, r) -> {
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
        ClientCore.Call<Boolean> call = core.awaitedCall(ProtocolDescriptor.BLOB_GET_DONE, w -> w.i64(lease.id),
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
                    StandardOpenOption.WRITE)) {
                int got = pullStaged(lease, (off, step) -> {
                    ByteBuffer bytes = step.asByteBuffer();
                    while (bytes.hasRemaining()) {
                        ch.write(bytes, off + bytes.position());
                    }
                }, progress);
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

    /** Where a staged pull hands its bytes: {@code bytes} (valid during the call) belong at {@code offset}. */
    @FunctionalInterface
    public interface ChunkWriter {
        void write(long offset, MemorySegment bytes) throws IOException;
    }

    /**
     * Pulls {@code length} bytes a peer lent (a member's lease) through a staging buffer, handing each step to
     * {@code out} in order; returns their CRC32C.
     */
    int pullLent(byte[] descriptor, long length, ChunkWriter out) throws IOException {
        return pullStaged(new Lease(0, length, 0, 0, descriptor), out, null);
    }

    /**
     * Pulls the leased blob into a registered staging buffer of at most {@link #STAGE_BYTES}, step by step, and hands
     * each step to {@code out} in order; returns the CRC32C of all of it. Landing in a file this way, with the
     * file's own writes, beats reads into a mapping of it: those take a page fault per 4 KiB page (docs/blobs.md,
     * "Landing").
     */
    private int pullStaged(Lease lease, ChunkWriter out, LongConsumer progress) throws IOException {
        CRC32C crc = new CRC32C();
        try (BlobBuffer stage = allocate(Math.min(lease.length, STAGE_BYTES))) {
            for (long off = 0; off < lease.length; ) {
                long n = Math.min(STAGE_BYTES, lease.length - off);
                pull(lease, off, n, stage, null, crc);
                out.write(off, stage.segment().asSlice(0, n));
                off += n;
                if (progress != null) {
                    progress.accept(off);
                }
            }
        }
        return (int) crc.getValue();
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
