package io.rdmastore.server;

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
import java.time.Duration;
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
    private final java.util.Set<Pull> pulls = java.util.concurrent.ConcurrentHashMap.newKeySet();

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
                reg = c.register(segment);
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
     * Request: key:bytes, length:i64, crc32c:i32, descriptor:bytes (the client's registered buffer). Reply after the
     * data is pulled, verified and durable: version:i64. Limits and free space are checked before any data moves.
     */
    void put(NativeSession session, long requestId, WireReader r, WireWriter w) {
        byte[] key = r.bytes("key", maxKeyBytes);
        long length = r.i64("length");
        int crc = r.i32("crc32c");
        byte[] descriptor = r.bytes("descriptor", 64 * 1024);
        r.end();
        if (length < 0) {
            throw new ProtocolException("negative blob length " + length);
        }
        Connection c = session.connection();
        RemoteMemory remote = null;
        if (length > 0) {
            remote = c.remoteMemory(descriptor);
            if (remote.length() < length) {
                throw new ProtocolException("the lent buffer holds " + remote.length() + " bytes, less than the blob's "
                    + length);
            }
        }
        BlobWrite write = files.begin(length);
        RegisteredMemory local;
        try {
            local = length > 0 ? c.register(write.segment()) : null;
        } catch (RuntimeException e) {
            files.abort(write);
            throw e;
        }
        Object placeholder = session.deferReply();
        putsInFlight.incrementAndGet();
        Pull pull = new Pull(session, requestId, key, c, remote, local, write, crc, placeholder);
        pulls.add(pull);
        puller.execute(pull::pump);
    }

    /** One put's chained one-sided reads; pumps more reads as earlier ones complete. */
    private final class Pull {
        final NativeSession session;
        final long requestId;
        final byte[] key;
        final Connection connection;
        final RemoteMemory remote;
        final RegisteredMemory local;
        final BlobWrite write;
        final int crc;
        final Object placeholder;
        final long length;
        long next;
        int inflight;
        boolean pumping;
        boolean finished;
        /** The session closed mid-transfer and the put was already given up (file deleted, counter released). */
        boolean released;
        Throwable failure;

        Pull(NativeSession session, long requestId, byte[] key, Connection connection, RemoteMemory remote,
             RegisteredMemory local, BlobWrite write, int crc, Object placeholder) {
            this.session = session;
            this.requestId = requestId;
            this.key = key;
            this.connection = connection;
            this.remote = remote;
            this.local = local;
            this.write = write;
            this.crc = crc;
            this.placeholder = placeholder;
            this.length = write.length();
        }

        void pump() {
            boolean finish;
            synchronized (this) {
                if (pumping) {
                    return;
                }
                pumping = true;
                try {
                    while (failure == null && next < length && inflight < WINDOW) {
                        long off = next;
                        long n = Math.min(CHUNK_BYTES, length - off);
                        next += n;
                        inflight++;
                        try {
                            connection.read(remote, off, local, off, n).whenComplete((ok, err) -> chunkDone(err));
                        } catch (RuntimeException e) {
                            inflight--;
                            failure = e;
                        }
                    }
                } finally {
                    pumping = false;
                }
                finish = !finished && inflight == 0 && (failure != null || next >= length);
                if (finish) {
                    finished = true;
                }
            }
            if (finish) {
                finish();
            }
        }

        void chunkDone(Throwable err) {
            boolean inPump;
            synchronized (this) {
                inflight--;
                if (err != null && failure == null) {
                    failure = err;
                }
                // pump holds this monitor throughout, so only its own thread (a read that completed inside its
                // call) can see it running; that loop goes on by itself
                inPump = pumping;
            }
            if (!inPump) {
                try {
                    puller.execute(this::pump);
                } catch (RejectedExecutionException closing) {
                    pump(); // the service is closing: finish here so the mapping and the file go
                }
            }
        }

        /**
         * The session closed. Over tcp the reads fail with it, and on one host a process_vm_readv from a dead client
         * fails at once; a UCX get from a vanished peer (RDMA, or cross-memory reads refused) may never complete (no
         * peer error handling: it is what keeps shared memory available). So the put ends here: its file goes now,
         * its mapping only when no read can write into it any more.
         */
        void abandon() {
            boolean finishNow;
            synchronized (this) {
                if (finished) {
                    return;
                }
                if (failure == null) {
                    failure = new io.rdmastore.transport.TransportException("the connection closed mid-transfer");
                }
                finishNow = inflight == 0;
                if (finishNow) {
                    finished = true;
                } else {
                    released = true;
                }
            }
            if (finishNow) {
                finish();
                return;
            }
            files.discard(write);
            putsInFlight.decrementAndGet();
            LOG.info("blob put from {} abandoned: the connection closed with {} reads in flight",
                connection.remoteAddress(), inflight);
        }

        /** Runs once, with no read in flight, so the mapping can go whatever the outcome. */
        private void finish() {
            pulls.remove(this);
            if (local != null) {
                local.close();
            }
            if (released) {
                files.abort(write);
                return;
            }
            if (failure != null) {
                files.abort(write);
                putsInFlight.decrementAndGet();
                Throwable cause = failure.getCause() != null && failure instanceof java.util.concurrent.CompletionException
                    ? failure.getCause() : failure;
                LOG.info("blob put from {} failed during transfer: {}", connection.remoteAddress(), cause.toString());
                reply(error("ERR blob transfer failed: " + cause.getMessage() + "; nothing was stored"));
                return;
            }
            committer.execute(() -> {
                byte[] reply;
                try {
                    long version = store.putBlob(key, write, crc);
                    reply = new WireWriter(32).header(ProtocolDescriptor.STATUS_OK, requestId).i64(version)
                        .toByteArray();
                } catch (StoreException e) {
                    reply = error(NativeSession.storeError(e));
                } catch (RuntimeException e) {
                    LOG.warn("blob commit failed", e);
                    files.abort(write);
                    reply = error("ERR internal error in BLOB_PUT: " + e);
                } finally {
                    putsInFlight.decrementAndGet();
                }
                reply(reply);
            });
        }

        private byte[] error(String text) {
            return new WireWriter(256).header(ProtocolDescriptor.STATUS_ERROR, requestId).rawString(text).toByteArray();
        }

        private void reply(byte[] bytes) {
            session.completeDeferred(placeholder, bytes);
        }
    }

    /** Ends the session's leases and abandons its puts. */
    void sessionClosed(NativeSession session) {
        for (Lease lease : leases.values()) {
            if (lease.session == session) {
                lease.end();
            }
        }
        for (Pull pull : pulls) {
            if (pull.session == session) {
                pull.abandon();
            }
        }
    }

    @Override
    public void close() {
        for (Lease lease : leases.values()) {
            lease.end();
        }
        puller.shutdown();
        committer.shutdown();
        try {
            if (!committer.awaitTermination(10, TimeUnit.SECONDS)) {
                LOG.warn("blob commits still running after 10 s at close");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
