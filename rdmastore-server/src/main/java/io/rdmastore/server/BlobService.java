package io.rdmastore.server;

import io.rdmastore.client.BlobInfo;
import io.rdmastore.client.PeerChannel;
import io.rdmastore.client.protocol.BlobResults;
import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.ProtocolException;
import io.rdmastore.client.protocol.WireReader;
import io.rdmastore.client.protocol.WireWriter;
import io.rdmastore.store.Store;
import io.rdmastore.store.StoreException;
import io.rdmastore.store.blob.BlobStore;
import io.rdmastore.store.blob.BlobValue;
import io.rdmastore.store.blob.BlobVersion;
import io.rdmastore.store.blob.BlobWrite;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.RemoteMemory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The blob opcodes (docs/blobs.md): BLOB_GET lends the client a registered view of one value for one transfer (a
 * lease: the mapped blob file, or a copy of a value kept in memory), BLOB_PUT pulls the client's lent buffer with
 * one-sided reads into a temporary file and stores it as the key's value once the CRC32C matches, BLOB_DEL deletes.
 * Blob values are ordinary string values of the store (GET and SET see them too). The same code serves every
 * transport: over tcp the provider emulates the one-sided reads by streaming chunks.
 *
 * <p>Threads: the request methods run on the session's transport thread and never block it: a put's reads are chained
 * futures (completed on the transport thread), its CRC check, fsync and rename run on this service's commit thread,
 * and its reply keeps its place in the session's reply order through a deferred reply. Leases end on BLOB_GET_DONE, on
 * their time-out (timer thread) or when the session closes, whichever comes first, exactly once.
 *
 * <p>Memory: a leased version stays mapped (and its file on disk) until its last lease ends, whatever overwrites or
 * deletes happen meanwhile, so a reader never sees a mix of versions. Each lease registers the mapping once; a value
 * kept in memory is copied into a lease-owned off-heap buffer, freed when the lease ends.
 */
final class BlobService implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(BlobService.class);
    /** Bytes per one-sided read of a put; several are in flight. */
    static final long CHUNK_BYTES = 16L << 20;
    /** One-sided reads of one put in flight. */
    static final int WINDOW = 4;
    /** Idle staging buffers kept ({@link #WINDOW} x {@link #CHUNK_BYTES} = 64 MiB each). */
    private static final int STAGING_KEPT = 2;

    private final Store store;
    private final BlobStore files;
    private final int maxKeyBytes;
    private final ScheduledExecutorService timer;
    private final ExecutorService committer;
    /**
     * Issues a put's reads. Not the transport thread: a read issued off the UCX driver thread from a peer on this
     * host is one process_vm_readv (transport-ucx.md), which also fails at once when the peer died, where UCX's
     * emulated get would wait forever.
     */
    private final ExecutorService puller;
    private final long leaseTimeoutMillis;
    private final AtomicLong leaseIds = new AtomicLong();
    private final Map<Long, Lease> leases = new ConcurrentHashMap<>();
    private final AtomicInteger putsInFlight = new AtomicInteger();
    /** Puts still pulling, so a closed session can abandon its own. */
    private final java.util.Set<Receive> pulls = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** Staged blobs by token (docs/blobs.md, "Distribution to a replica set"). */
    private final Map<Long, Staged> stages = new ConcurrentHashMap<>();
    /** Token of each version put with one: version -> {token, millis}. */
    private final Map<Long, long[]> tokens = new ConcurrentHashMap<>();
    private final Map<String, PeerChannel> peerChannels = new ConcurrentHashMap<>();
    private final AtomicLong registeredBytes = new AtomicLong();
    private final StagingBuffers staging = new StagingBuffers(WINDOW, CHUNK_BYTES, STAGING_KEPT);
    private volatile java.util.function.Function<String, PeerChannel> peerOpener;
    private volatile java.util.function.Supplier<String> self = () -> "this member";
    private volatile BlobInfo.Member lastPut;
    private volatile BlobInfo.Member lastStage;
    /** How long a staged blob waits for the record that names it. */
    static final long STAGE_TTL_MILLIS = 10 * 60_000;

    /** One lent value. */
    private final class Lease {
        final long id;
        final NativeSession session;
        /** Gives the value back: releases the blob version or frees the copy. */
        final Runnable free;
        final RegisteredMemory registration;
        final AtomicBoolean ended = new AtomicBoolean();
        volatile ScheduledFuture<?> expiry;

        Lease(long id, NativeSession session, Runnable free, RegisteredMemory registration) {
            this.id = id;
            this.session = session;
            this.free = free;
            this.registration = registration;
        }

        boolean end() {
            if (!ended.compareAndSet(false, true)) {
                return false;
            }
            leases.remove(id);
            ScheduledFuture<?> f = expiry;
            if (f != null) {
                f.cancel(false);
            }
            try {
                if (registration != null) {
                    registration.close();
                }
            } finally {
                free.run();
            }
            return true;
        }
    }

    BlobService(Store store, ScheduledExecutorService timer, Duration leaseTimeout) {
        this.store = store;
        this.files = store.blobs();
        this.maxKeyBytes = store.config().maxKeyBytes();
        this.timer = timer;
        this.leaseTimeoutMillis = leaseTimeout.toMillis();
        this.committer = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "rdmastore-blob-commit");
            t.setDaemon(true);
            return t;
        });
        this.puller = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "rdmastore-blob-pull");
            t.setDaemon(true);
            return t;
        });
    }

    int leases() {
        return leases.size();
    }

    int putsInFlight() {
        return putsInFlight.get();
    }

    int pullsPending() {
        return pulls.size();
    }

    // ---- BLOB_GET / BLOB_GET_DONE ----

    /**
     * Request: key:bytes. Reply: version:i64 (0 for a value kept in memory), length:i64, crc32c:i32, leaseId:i64,
     * descriptor:bytes; NULL if none.
     */
    void get(NativeSession session, WireReader r, WireWriter w) {
        byte[] key = r.bytes("key", maxKeyBytes);
        r.end();
        BlobValue value = store.acquireBlob(key);
        if (value == null) {
            w.u8At(ProtocolDescriptor.TYPE_OFFSET, ProtocolDescriptor.STATUS_NULL);
            return;
        }
        long version;
        long length;
        int crc;
        MemorySegment segment;
        Runnable free;
        BlobVersion v = value.blob();
        if (v != null) {
            version = v.version();
            length = v.length();
            crc = v.crc32c();
            free = v::release;
            try {
                segment = length > 0 ? v.segment() : null;
            } catch (RuntimeException e) {
                v.release();
                throw e;
            }
        } else {
            byte[] bytes = value.inline();
            version = 0;
            length = bytes.length;
            crc = BlobStore.crc32c(MemorySegment.ofArray(bytes));
            Arena arena = Arena.ofShared();
            segment = length > 0 ? arena.allocate(length, 64) : null;
            if (segment != null) {
                MemorySegment.copy(bytes, 0, segment, ValueLayout.JAVA_BYTE, 0, bytes.length);
            }
            free = arena::close;
        }
        RegisteredMemory reg = null;
        try {
            Connection c = session.connection();
            if (segment != null) {
                reg = register(c, segment);
            }
            Lease lease = new Lease(leaseIds.incrementAndGet(), session, free, reg);
            leases.put(lease.id, lease);
            lease.expiry = timer.schedule(() -> {
                if (lease.end()) {
                    LOG.info("blob lease {} of {} expired after {} ms", lease.id, c.remoteAddress(),
                        leaseTimeoutMillis);
                }
            }, leaseTimeoutMillis, TimeUnit.MILLISECONDS);
            w.i64(version).i64(length).i32(crc).i64(lease.id);
            w.bytes(reg == null ? new byte[0] : reg.descriptor());
            if (!c.isOpen()) {
                // A close that raced the lease: the session's close sweep may have run already.
                lease.end();
            }
        } catch (RuntimeException e) {
            if (reg != null) {
                reg.close();
            }
            free.run();
            throw e;
        }
    }

    /** Request: leaseId:i64. Reply: OK, or NULL when the lease already ended (time-out). */
    void getDone(NativeSession session, WireReader r, WireWriter w) {
        long id = r.i64("lease id");
        r.end();
        Lease lease = leases.get(id);
        if (lease == null || lease.session != session || !lease.end()) {
            w.u8At(ProtocolDescriptor.TYPE_OFFSET, ProtocolDescriptor.STATUS_NULL);
        }
    }

    // ---- BLOB_DEL ----

    /** Request: key:bytes. Reply: deleted:i64 (1 or 0). Deletes the key whatever its value, as DEL does. */
    void delete(WireReader r, WireWriter w) {
        byte[] key = r.bytes("key", maxKeyBytes);
        r.end();
        w.i64(store.delete(key));
    }

    // ---- BLOB_PUT ----

    /**
     * Request: key:bytes, length:i64, crc32c:i32, descriptor:bytes (the client's registered buffer), and optionally
     * token:i64, chunk:i32, n:i32, n x next member address (a pipeline: this member lends what it received onwards).
     * Reply after the data is pulled, verified and durable: version:i64, and with the optional part the members'
     * results (see {@link BlobResults}). Limits and free space are checked before any data moves.
     */
    void put(NativeSession session, long requestId, WireReader r, WireWriter w) {
        byte[] key = r.bytes("key", maxKeyBytes);
        long length = r.i64("length");
        int crc = r.i32("crc32c");
        byte[] descriptor = r.bytes("descriptor", 64 * 1024);
        boolean extended = r.hasRemaining();
        long token = 0;
        long chunk = CHUNK_BYTES;
        List<String> next = List.of();
        if (extended) {
            token = r.i64("token");
            chunk = chunkBytes(r.i32("chunk"));
            next = addresses(r);
        }
        r.end();
        if (length < 0) {
            throw new ProtocolException("negative blob length " + length);
        }
        Connection c = session.connection();
        RemoteMemory remote = remoteOf(c, descriptor, length);
        BlobWrite write = files.begin(length);
        Receive rx;
        try {
            rx = new Receive(session, c, remote, write, crc, token, chunk, false, next,
                "pulled from the client over " + c.transportName());
        } catch (RuntimeException e) {
            files.abort(write);
            throw e;
        }
        Object placeholder = session.deferReply();
        putsInFlight.incrementAndGet();
        final long tokenF = token;
        rx.onSealed = (sealed, failure) -> {
            if (failure != null) {
                putsInFlight.decrementAndGet();
                LOG.info("blob put from {} failed during transfer: {}", c.remoteAddress(),
                    BlobTransfer.describe(failure));
                rx.finishAll(() -> session.completeDeferred(placeholder, error(requestId, "ERR blob transfer failed: "
                    + BlobTransfer.describe(failure) + "; nothing was stored")));
                return;
            }
            committer.execute(() -> {
                byte[] reply;
                try {
                    long t0 = System.nanoTime();
                    long version = store.putBlob(key, write, crc, tokenF == 0 ? null : v -> {
                        tokens.put(v, new long[] {tokenF, System.currentTimeMillis()});
                        trimTokens();
                    });
                    long commitNanos = System.nanoTime() - t0;
                    session.wroteAt(Store.lastCommitIndex());
                    rx.self = new BlobInfo.Member(self.get(), rx.path, true, "version " + version + ", commit "
                        + commitNanos / 1000 + " us", rx.transfer.transferNanos(), write.crcNanos(), write.syncNanos());
                    lastPut = rx.self;
                    WireWriter out = new WireWriter(256).header(ProtocolDescriptor.STATUS_OK, requestId).i64(version);
                    reply = null;
                    if (extended) {
                        // the pipeline's members answer before the put does, so its reply carries their results
                        rx.finishAll(() -> session.completeDeferred(placeholder,
                            BlobResults.write(out, rx.results()).toByteArray()));
                    } else {
                        reply = out.toByteArray();
                    }
                } catch (StoreException e) {
                    reply = error(requestId, NativeSession.storeError(e));
                } catch (RuntimeException e) {
                    LOG.warn("blob commit failed", e);
                    files.abort(write);
                    reply = error(requestId, "ERR internal error in BLOB_PUT: " + e);
                } finally {
                    putsInFlight.decrementAndGet();
                }
                if (reply != null) {
                    byte[] fin = reply;
                    rx.finishAll(() -> session.completeDeferred(placeholder, fin));
                }
            });
        };
        rx.start();
    }

    // ---- BLOB_STAGE / BLOB_STAGE_PROGRESS: a replica receives a blob before the record that names it ----

    /**
     * Request: token:i64, length:i64, crc32c:i32, descriptor:bytes, progressive:u8, chunk:i32, n:i32, n x next member
     * address. This member pulls the lent buffer (a client's, or the previous pipeline member's while it is still
     * arriving: progressive), verifies and seals it under {@code token}, and keeps it until the record naming the
     * blob arrives from the primary ({@link #takeStaged}); a pipeline lends it onwards to the next address meanwhile.
     * Reply once this member and those after it are done: the members' results ({@link BlobResults}).
     */
    void stage(NativeSession session, long requestId, WireReader r) {
        long token = r.i64("token");
        long length = r.i64("length");
        int crc = r.i32("crc32c");
        byte[] descriptor = r.bytes("descriptor", 64 * 1024);
        boolean progressive = r.u8("progressive") != 0;
        long chunk = chunkBytes(r.i32("chunk"));
        List<String> next = addresses(r);
        r.end();
        if (length < 0 || token == 0) {
            throw new ProtocolException(token == 0 ? "a stage needs a non-zero token" : "negative blob length " + length);
        }
        if (stages.containsKey(token)) {
            throw new ProtocolException("blob token " + Long.toHexString(token) + " is staged already");
        }
        Connection c = session.connection();
        RemoteMemory remote = remoteOf(c, descriptor, length);
        BlobWrite write = files.begin(length);
        Staged staged = new Staged(token, length, crc);
        Receive rx;
        try {
            rx = new Receive(session, c, remote, write, crc, token, chunk, progressive, next,
                (progressive ? "pipeline" : "parallel pull") + " over " + c.transportName());
        } catch (RuntimeException e) {
            files.abort(write);
            throw e;
        }
        Staged old = staged(token, staged);
        if (old != null) {
            rx.abandon(new IllegalStateException("token already staged"));
            throw new ProtocolException("blob token " + Long.toHexString(token) + " is staged already");
        }
        staged.receive = rx;
        Object placeholder = session.deferReply();
        rx.onSealed = (sealed, failure) -> {
            if (failure != null) {
                staged.sealed.completeExceptionally(failure);
                stages.remove(token, staged);
                rx.self = new BlobInfo.Member(self.get(), rx.path, false, BlobTransfer.describe(failure), 0, 0, 0);
            } else {
                staged.sealed.complete(sealed);
                rx.self = new BlobInfo.Member(self.get(), rx.path, true, "staged", rx.transfer.transferNanos(),
                    sealed.crcNanos(), sealed.syncNanos());
                lastStage = rx.self;
            }
            rx.finishAll(() -> session.completeDeferred(placeholder,
                BlobResults.write(new WireWriter(256).header(ProtocolDescriptor.STATUS_OK, requestId), rx.results())
                    .toByteArray()));
        };
        rx.start();
    }

    /** Request: token:i64, available:i64 (bytes the previous pipeline member holds). Reply: empty; NULL if unknown. */
    void stageProgress(WireReader r, WireWriter w) {
        long token = r.i64("token");
        long available = r.i64("available");
        r.end();
        Staged s = stages.get(token);
        if (s == null || s.receive == null) {
            w.u8At(ProtocolDescriptor.TYPE_OFFSET, ProtocolDescriptor.STATUS_NULL);
            return;
        }
        if (available < 0) {
            s.receive.abandon(new io.rdmastore.transport.TransportException("the previous member of the pipeline"
                + " gave the transfer up"));
            return;
        }
        s.receive.transfer.advance(available);
    }

    /** Registers a stage unless one has its token; returns the one that had it. */
    private Staged staged(long token, Staged s) {
        Staged old = stages.putIfAbsent(token, s);
        if (old == null) {
            timer.schedule(() -> expire(token, s), STAGE_TTL_MILLIS, TimeUnit.MILLISECONDS);
        }
        return old;
    }

    private void expire(long token, Staged s) {
        if (stages.remove(token, s)) {
            s.sealed.thenAccept(files::drop);
            LOG.info("staged blob {} dropped: no record named it within {} s", Long.toHexString(token),
                STAGE_TTL_MILLIS / 1000);
        }
    }

    /**
     * The content staged under {@code token} (waiting up to {@code waitMillis} for a stage that is still arriving or
     * not yet begun), taken out of the staging area: the caller installs or drops it. Null when there is none, it
     * failed, or it does not match {@code length} and {@code crc32c}. Blocks: call it off the transport threads.
     */
    BlobStore.Sealed takeStaged(long token, long length, int crc32c, long waitMillis) {
        long deadline = System.currentTimeMillis() + waitMillis;
        Staged s = stages.get(token);
        // a stage is requested before the put that names it, but may reach this member after the record
        long appear = Math.min(deadline, System.currentTimeMillis() + 200);
        while (s == null && System.currentTimeMillis() < appear) {
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
            s = stages.get(token);
        }
        if (s == null) {
            return null;
        }
        BlobStore.Sealed sealed;
        try {
            sealed = s.sealed.get(Math.max(1, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
        if (!stages.remove(token, s)) {
            return null;
        }
        if (sealed.length() != length || sealed.crc32c() != crc32c) {
            files.drop(sealed);
            return null;
        }
        return sealed;
    }

    // ---- REPL_BLOB_LEND: a secondary fetches a version it lacks ----

    /**
     * Request (after the set's key): version:i64, lend:u8. Reply: length:i64, crc32c:i32, token:i64 (0 when the put
     * had none), leaseId:i64 (0 unless lent), descriptor:bytes (empty unless lent); NULL when this member does not
     * hold the version. A lease ends like a BLOB_GET lease (BLOB_GET_DONE, time-out, close).
     */
    void lendVersion(NativeSession session, WireReader r, WireWriter w) {
        long version = r.i64("version");
        boolean lend = r.u8("lend") != 0;
        r.end();
        BlobVersion v = files.acquire(version);
        if (v == null) {
            w.u8At(ProtocolDescriptor.TYPE_OFFSET, ProtocolDescriptor.STATUS_NULL);
            return;
        }
        long[] t = tokens.get(version);
        long token = t == null ? 0 : t[0];
        if (!lend || v.length() == 0) {
            w.i64(v.length()).i32(v.crc32c()).i64(token).i64(0).bytes(new byte[0]);
            v.release();
            return;
        }
        MemorySegment segment;
        try {
            segment = v.segment();
        } catch (RuntimeException e) {
            v.release();
            throw e;
        }
        Lease lease = lend(session, segment, v::release);
        w.i64(v.length()).i32(v.crc32c()).i64(token).i64(lease.id).bytes(lease.registration.descriptor());
    }

    /** Registers {@code segment} with the session's connection as a lease; {@code free} runs when it ends. */
    private Lease lend(NativeSession session, MemorySegment segment, Runnable free) {
        Connection c = session.connection();
        RegisteredMemory reg;
        try {
            reg = register(c, segment);
        } catch (RuntimeException e) {
            free.run();
            throw e;
        }
        Lease lease = new Lease(leaseIds.incrementAndGet(), session, free, reg);
        leases.put(lease.id, lease);
        lease.expiry = timer.schedule(() -> {
            if (lease.end()) {
                LOG.info("blob lease {} of {} expired after {} ms", lease.id, c.remoteAddress(), leaseTimeoutMillis);
            }
        }, leaseTimeoutMillis, TimeUnit.MILLISECONDS);
        if (!c.isOpen()) {
            lease.end();
        }
        return lease;
    }

    // ---- the receiving side, shared by puts and stages ----

    /** One staged blob, by token. */
    private static final class Staged {
        final long token;
        final long length;
        final int crc;
        final CompletableFuture<BlobStore.Sealed> sealed = new CompletableFuture<>();
        volatile Receive receive;

        Staged(long token, long length, int crc) {
            this.token = token;
            this.length = length;
            this.crc = crc;
        }
    }

    /**
     * One blob arriving at this member: a transfer into a blob write, then (stages) a seal, and, in a pipeline, a
     * read-only mapping of the arriving file lent to the next member, with the landed prefix announced to it as it
     * grows. {@link #finishAll} waits for the next member's reply before the put's or stage's own.
     */
    private final class Receive {
        final NativeSession session;
        final Connection connection;
        final BlobWrite write;
        final int crc;
        final long token;
        final long chunk;
        final List<String> next;
        final String path;
        /** Where the reads land before the file's writes take them; null for an empty blob. */
        final StagingBuffers.Buffer stage;
        final RegisteredMemory local;
        final BlobTransfer transfer;
        /** Put: (null, failure) or (null, null) when the data landed. Stage: (sealed, null) or (null, failure). */
        java.util.function.BiConsumer<BlobStore.Sealed, Throwable> onSealed;
        volatile BlobInfo.Member self;
        /** The next member's results, once it answered (or failed). */
        final CompletableFuture<List<BlobInfo.Member>> downstream;
        PeerChannel nextPeer;
        Arena lentArena;
        RegisteredMemory lent;
        boolean abandoned;

        Receive(NativeSession session, Connection connection, RemoteMemory remote, BlobWrite write, int crc,
                long token, long chunk, boolean progressive, List<String> next, String path) {
            this.session = session;
            this.connection = connection;
            this.write = write;
            this.crc = crc;
            this.token = token;
            this.chunk = chunk;
            this.next = next;
            this.path = path;
            long length = write.length();
            this.stage = length > 0 ? staging.take() : null;
            try {
                this.local = length > 0 ? register(connection, stage.segment()) : null;
            } catch (RuntimeException e) {
                staging.give(stage);
                throw e;
            }
            this.downstream = next.isEmpty() ? CompletableFuture.completedFuture(List.of()) : new CompletableFuture<>();
            this.transfer = new BlobTransfer(connection, remote, local == null ? null
                : ((CountedRegistration) local).inner, length, chunk, WINDOW, progressive, puller, write::write,
                next.isEmpty() ? null : this::forward, this::landed);
        }

        void start() {
            pulls.add(this);
            if (!next.isEmpty()) {
                try {
                    lendOnwards();
                } catch (RuntimeException e) {
                    LOG.info("pipeline to {} not started: {}", next.getFirst(), e.toString());
                    downstream.complete(List.of(new BlobInfo.Member(next.getFirst(), "pipeline", false,
                        "not reached: " + e.getMessage(), 0, 0, 0)));
                }
            }
            transfer.start();
        }

        /** Maps the arriving file read-only a second time and lends it to the next member as a progressive stage. */
        private void lendOnwards() {
            String to = next.getFirst();
            nextPeer = peer(to);
            long length = write.length();
            byte[] descriptor = new byte[0];
            if (length > 0) {
                Connection pc = nextPeer.connection();
                lentArena = Arena.ofShared();
                try (FileChannel ch = FileChannel.open(write.file(), StandardOpenOption.READ)) {
                    MemorySegment view = ch.map(FileChannel.MapMode.READ_ONLY, 0, length, lentArena);
                    lent = register(pc, view);
                } catch (IOException | RuntimeException e) {
                    lentArena.close();
                    lentArena = null;
                    throw new IllegalStateException("cannot lend " + write.file().getFileName() + ": " + e, e);
                }
                descriptor = lent.descriptor();
            }
            byte[] d = descriptor;
            List<String> rest = next.subList(1, next.size());
            Duration t = transferTimeout(length);
            nextPeer.call(ProtocolDescriptor.BLOB_STAGE, w -> {
                w.i64(token).i64(length).i32(crc).bytes(d).u8(1).i32((int) Math.min(Integer.MAX_VALUE, chunk))
                    .i32(rest.size());
                rest.forEach(w::string);
            }, (st, r) -> BlobResults.read(r), t).whenComplete((results, err) -> {
                if (err != null) {
                    Throwable c = err instanceof CompletionException && err.getCause() != null ? err.getCause() : err;
                    downstream.complete(List.of(new BlobInfo.Member(to, "pipeline", false, c.getMessage(), 0, 0, 0)));
                } else {
                    downstream.complete(results);
                }
            });
        }

        /** The landed prefix grew: tell the next member (fire and forget; the mark only ever rises). */
        private void forward(long prefix) {
            PeerChannel p = nextPeer;
            if (p != null && !downstream.isDone()) {
                p.call(ProtocolDescriptor.BLOB_STAGE_PROGRESS, w -> w.i64(token).i64(prefix), (st, r) -> null,
                    transferTimeout(write.length()));
            }
        }

        /** The transfer ended (no read in flight). */
        private void landed(Throwable failure) {
            pulls.remove(this);
            if (local != null) {
                local.close();
                staging.give(stage);
            }
            synchronized (this) {
                if (abandoned) {
                    files.abort(write);
                    return;
                }
            }
            if (failure != null && onSealed == null) {
                files.abort(write); // refused before it started (a duplicate token)
                return;
            }
            if (failure != null) {
                files.abort(write);
                PeerChannel p = nextPeer;
                if (p != null && !downstream.isDone()) {
                    // the next member would wait for bytes that never come: tell it to give up (a negative mark)
                    p.call(ProtocolDescriptor.BLOB_STAGE_PROGRESS, w -> w.i64(token).i64(-1), (st, r) -> null,
                        Duration.ofSeconds(30));
                }
                onSealed.accept(null, failure);
                return;
            }
            if (onSealed == null) {
                return;
            }
            if (token != 0 && !isPut()) {
                committer.execute(() -> {
                    BlobStore.Sealed sealed;
                    try {
                        sealed = files.seal(write, crc);
                    } catch (RuntimeException e) {
                        onSealed.accept(null, e);
                        return;
                    }
                    onSealed.accept(sealed, null);
                });
            } else {
                onSealed.accept(null, null);
            }
        }

        private boolean isPut() {
            return path.startsWith("pulled from the client");
        }

        /** Runs {@code reply} once the next member answered; ends the lend to it. */
        void finishAll(Runnable reply) {
            downstream.whenComplete((r, e) -> {
                if (lent != null) {
                    lent.close();
                    lent = null;
                }
                if (lentArena != null) {
                    lentArena.close();
                    lentArena = null;
                }
                reply.run();
            });
        }

        List<BlobInfo.Member> results() {
            List<BlobInfo.Member> out = new ArrayList<>();
            if (self != null) {
                out.add(self);
            }
            out.addAll(downstream.getNow(List.of()));
            return out;
        }

        /** The session closed mid-transfer: see {@link BlobTransfer#abandon}. */
        void abandon(Throwable cause) {
            if (transfer.abandon(cause)) {
                synchronized (this) {
                    abandoned = true;
                }
                files.discard(write);
                LOG.info("blob transfer from {} abandoned with reads in flight: {}", connection.remoteAddress(),
                    BlobTransfer.describe(cause));
                // the outcome is known now; the memory goes when the reads end (landed)
                onSealed.accept(null, cause);
            }
        }
    }

    private RemoteMemory remoteOf(Connection c, byte[] descriptor, long length) {
        if (length == 0) {
            return null;
        }
        RemoteMemory remote = c.remoteMemory(descriptor);
        if (remote.length() < length) {
            throw new ProtocolException("the lent buffer holds " + remote.length() + " bytes, less than the blob's "
                + length);
        }
        return remote;
    }

    private static long chunkBytes(int requested) {
        if (requested <= 0) {
            return CHUNK_BYTES;
        }
        return Math.max(64 << 10, Math.min(requested, 64 << 20));
    }

    private static List<String> addresses(WireReader r) {
        int n = r.i32("next members");
        if (n < 0 || n > 16) {
            throw new ProtocolException("a pipeline has 0 to 16 further members, not " + n);
        }
        List<String> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(r.string("member address", 1024));
        }
        return out;
    }

    private static Duration transferTimeout(long length) {
        return Duration.ofSeconds(30).plusMillis(length / 50_000);
    }

    private static byte[] error(long requestId, String text) {
        return new WireWriter(256).header(ProtocolDescriptor.STATUS_ERROR, requestId).rawString(text).toByteArray();
    }

    /** Registers memory and counts it in {@link #registeredBytes} until the registration closes. */
    private RegisteredMemory register(Connection c, MemorySegment segment) {
        RegisteredMemory reg = c.register(segment);
        long n = segment.byteSize();
        registeredBytes.addAndGet(n);
        return new CountedRegistration(reg, n);
    }

    /** A registration that gives its bytes back to the count when closed (once). */
    private final class CountedRegistration implements RegisteredMemory {
        private final RegisteredMemory inner;
        private final long bytes;
        private final AtomicBoolean closed = new AtomicBoolean();

        CountedRegistration(RegisteredMemory inner, long bytes) {
            this.inner = inner;
            this.bytes = bytes;
        }

        @Override
        public MemorySegment segment() {
            return inner.segment();
        }

        @Override
        public byte[] descriptor() {
            return inner.descriptor();
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                registeredBytes.addAndGet(-bytes);
                inner.close();
            }
        }
    }

    /** Bytes of memory registered for transfers right now: leases, pulls and pipeline lends. */
    long registeredBytes() {
        return registeredBytes.get();
    }

    int stagesHeld() {
        return stages.size();
    }

    BlobInfo.Member lastPut() {
        return lastPut;
    }

    BlobInfo.Member lastStage() {
        return lastStage;
    }

    /** Where pipelines forward to: a channel per member address, opened on first use. */
    void peers(java.util.function.Function<String, PeerChannel> opener, java.util.function.Supplier<String> selfName) {
        this.peerOpener = opener;
        this.self = selfName;
    }

    private PeerChannel peer(String address) {
        if (peerOpener == null) {
            throw new IllegalStateException("this server forwards blobs to no one (no peers configured)");
        }
        return peerChannels.computeIfAbsent(address, peerOpener);
    }

    private void trimTokens() {
        if (tokens.size() > 4096) {
            long cutoff = System.currentTimeMillis() - STAGE_TTL_MILLIS;
            tokens.values().removeIf(t -> t[1] < cutoff);
        }
    }

    /** Ends the session's leases and abandons its puts. */
    void sessionClosed(NativeSession session) {
        for (Lease lease : leases.values()) {
            if (lease.session == session) {
                lease.end();
            }
        }
        for (Receive rx : pulls) {
            if (rx.session == session) {
                rx.abandon(new io.rdmastore.transport.TransportException("the connection closed mid-transfer"));
            }
        }
    }

    @Override
    public void close() {
        for (Lease lease : leases.values()) {
            lease.end();
        }
        for (Receive rx : pulls) {
            rx.abandon(new io.rdmastore.transport.TransportException("the server is closing"));
        }
        peerChannels.values().forEach(PeerChannel::close);
        for (Staged st : stages.values()) {
            st.sealed.thenAccept(files::drop);
        }
        puller.shutdown();
        committer.shutdown();
        staging.close();
        try {
            if (!committer.awaitTermination(10, TimeUnit.SECONDS)) {
                LOG.warn("blob commits still running after 10 s at close");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
