package io.rdmastore.store;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Lock;
import java.util.function.Function;
import java.util.stream.Stream;

import org.bson.BsonDocument;
import org.bson.BsonValue;
import org.bson.BsonObjectId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.rdmastore.store.blob.BlobConfig;
import io.rdmastore.store.blob.BlobStore;
import io.rdmastore.store.blob.BlobValue;
import io.rdmastore.store.blob.BlobVersion;
import io.rdmastore.store.blob.BlobWrite;
import io.rdmastore.store.doc.BsonValues;
import io.rdmastore.store.doc.DocumentFilter;
import io.rdmastore.store.doc.DocumentUpdate;

/**
 * The storage engine: a keyspace of strings, hashes, sets ({@link #sets()}), lists ({@link #lists()}) and sorted sets
 * ({@link #sortedSets()}) with TTLs, collections of BSON documents, an append-only
 * CRC32C-framed log and snapshots.
 *
 * <p>Threads: thread-safe. Any number of threads may call any method at once. Keys are spread over
 * {@value Keyspace#SHARDS} shards, each guarded by a read/write lock; single-key operations lock one shard,
 * multi-key operations lock theirs in index order, documents share one read/write lock. A write is appended to the
 * log while its locks are held and applied to memory right after, from the very bytes logged, so replay after a
 * crash produces exactly what the live store held. With {@link FsyncPolicy#ALWAYS} the call waits for the fsync
 * after releasing its locks (concurrent writers share fsyncs).
 *
 * <p>Memory: every {@code byte[]} argument is copied; the caller keeps it. Every {@code byte[]}, list or document
 * returned is a fresh copy owned by the caller. String values live off-heap and are freed on overwrite or delete
 * under the shard's write lock, so {@link #readValue} (which holds the read lock) never sees freed memory. Hash fields
 * and documents live on the Java heap.
 *
 * <p>Errors: {@link StoreException} subclasses with client-facing messages; an operation that throws has changed
 * nothing.
 */
public final class Store implements AutoCloseable {
    /** {@link #getEx} argument: leave the TTL as it is. */
    public static final long TTL_KEEP = -1;
    /** {@link #getEx} argument: remove the TTL. */
    public static final long TTL_PERSIST = -2;

    private static final Logger LOG = LoggerFactory.getLogger(Store.class);
    /** Directories open in this JVM: a second file lock from the same process would not conflict, so check here. */
    static final Set<Path> OPEN_DIRS = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private static final ThreadLocal<FrameBuilder> FRAMES = ThreadLocal.withInitial(FrameBuilder::new);
    /** The frame an {@link #exclusive} scope gathers this thread's writes into; null outside one. */
    private static final ThreadLocal<AtomicScope> ATOMIC = new ThreadLocal<>();
    /**
     * An {@link #exclusive} scope's gathered frame is logged before it passes this size, and a new one started: a
     * transaction of more than this many bytes of changes is logged as several frames (atomic per frame only).
     */
    static final int ATOMIC_FRAME_MAX = 256 * 1024 * 1024;
    /** Oplog index of the last write committed by each thread (the face reads it for WAIT). */
    private static final ThreadLocal<long[]> LAST_COMMIT = ThreadLocal.withInitial(() -> new long[1]);
    private static final int MAX_COLLECTION_NAME_BYTES = 255;
    /** The most secondary indexes one collection may have (MongoDB allows 64 with _id's). */
    public static final int MAX_INDEXES = 63;
    private static final long SNAPSHOT_CHUNK_BYTES = 1 << 20;
    private static final int EXPIRY_SHARDS_PER_TICK = 64;

    private final StoreConfig config;
    private final Path dir;
    private final Keyspace keyspace = new Keyspace();
    private final Sets sets = new Sets(this);
    private final Lists lists = new Lists(this);
    private final SortedSets sortedSets = new SortedSets(this);
    private final Documents documents = new Documents();
    private final LongAdder examined = new LongAdder();
    private final AtomicLong bytesSinceSnapshot = new AtomicLong();
    private final AtomicLong changesSinceSave = new AtomicLong();
    private final Object snapshotMonitor = new Object();
    private final ExecutorService snapshotExecutor;
    private final ScheduledExecutorService fsyncExecutor;
    private final ScheduledExecutorService expiryExecutor;
    private final Oplog oplog;
    /** False on a secondary (and on a member between primaries): client writes are refused with the reason. */
    private volatile boolean writesAllowed;
    private volatile String readOnlyReason = "NOTPRIMARY no primary at the moment (election in progress)";
    /** Told after every committed client write, once its locks are released (the primary wakes its secondaries). */
    private volatile Runnable appendListener;
    /** Told of every key a write changes, under that key's shard lock (the RESP face's WATCH and blocked pops). */
    private volatile KeyListener keyListener;
    /** Position of the last frame applied by recovery or a snapshot load (OP_POSITION). */
    private long replayTerm;
    private long replayIndex;
    private LogWriter log;
    private BlobStore blobs;
    private FileChannel lockChannel;
    private FileLock dirLock;
    private boolean dirClaimed;
    private RecoveryReport recovery;
    private volatile long lastSnapshotMillis;
    private volatile boolean closed;
    private CompletableFuture<Path> snapshotInFlight;
    private int expiryCursor;

    private Store(StoreConfig config) {
        this.config = config;
        this.dir = config.dataDir();
        this.snapshotExecutor = Executors.newSingleThreadExecutor(r -> daemon(r, "rdmastore-snapshot"));
        this.fsyncExecutor = Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "rdmastore-fsync"));
        this.expiryExecutor = Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "rdmastore-expiry"));
        this.oplog = new Oplog(config.oplogWindowBytes());
        this.writesAllowed = !config.replicaSetMember();
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    // =====================================================================================================
    // Lifecycle
    // =====================================================================================================

    /**
     * Opens (creating if needed) the store in {@code config.dataDir()}: loads the newest snapshot, replays the log
     * written after it, cuts a torn tail, and starts the background fsync and expiry threads. Only one store may have
     * a directory open at a time.
     *
     * @throws CorruptLogException when a record in the middle of the log or a snapshot is damaged
     * @throws StoreException      when the directory cannot be used
     */
    public static Store open(StoreConfig config) {
        StoreConfig c = config.clone().conclude();
        Store s = new Store(c);
        try {
            s.recover();
        } catch (IOException e) {
            s.abortOpen();
            throw new StoreException("cannot open store in " + c.dataDir() + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            s.abortOpen();
            throw e;
        }
        s.startBackground();
        LOG.info("store open in {} (fsync {}): {}", c.dataDir(), c.fsync(), s.recovery);
        return s;
    }

    private void abortOpen() {
        closed = true;
        snapshotExecutor.shutdownNow();
        fsyncExecutor.shutdownNow();
        expiryExecutor.shutdownNow();
        if (blobs != null) {
            blobs.close();
        }
        keyspace.freeAll();
        try {
            if (log != null) {
                log.close();
            }
        } catch (IOException e) {
            LOG.warn("closing the log after a failed open: {}", e.toString());
        }
        releaseDirLock();
    }

    private void releaseDirLock() {
        if (dirClaimed) {
            OPEN_DIRS.remove(dir.toAbsolutePath().normalize());
            dirClaimed = false;
        }
        try {
            if (dirLock != null) {
                dirLock.release();
            }
            if (lockChannel != null) {
                lockChannel.close();
            }
        } catch (IOException e) {
            LOG.warn("releasing the data directory lock: {}", e.toString());
        }
    }

    private void recover() throws IOException {
        long started = System.nanoTime();
        Files.createDirectories(dir);
        if (!OPEN_DIRS.add(dir.toAbsolutePath().normalize())) {
            throw new StoreException("data directory " + dir + " is in use by another store in this process");
        }
        dirClaimed = true;
        lockChannel = FileChannel.open(dir.resolve("LOCK"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        dirLock = lockChannel.tryLock();
        if (dirLock == null) {
            throw new StoreException("data directory " + dir + " is in use by another store");
        }
        try (Stream<Path> files = Files.list(dir)) {
            for (Path p : files.filter(p -> p.getFileName().toString().endsWith(".tmp")).toList()) {
                Files.deleteIfExists(p);
            }
        }
        BlobConfig bc = config.blobs();
        if (bc.directory() == null) {
            bc.directory(dir.resolve("blobs"));
        }
        blobs = BlobStore.open(bc);
        List<Path> snapshots = listSorted(dir, true);
        List<Path> segments = listSorted(dir, false);
        Path snapshot = snapshots.isEmpty() ? null : snapshots.getLast();
        long base = snapshot == null ? 1 : LogDescriptor.snapshotId(snapshot);
        long snapshotRecords = 0;
        if (snapshot != null) {
            long[] records = {0};
            FrameScanner.Outcome o = FrameScanner.scan(snapshot, LogDescriptor.SNAPSHOT_MAGIC, (payload, off) -> {
                applyFrame(payload);
                records[0]++;
            });
            if (!o.clean()) {
                throw new CorruptLogException(snapshot, o.badOffset(), o.problem());
            }
            if (o.lastOp() != LogDescriptor.OP_SNAPSHOT_END) {
                throw new CorruptLogException(snapshot, o.validEnd(), "snapshot has no end record");
            }
            snapshotRecords = records[0];
            lastSnapshotMillis = Files.getLastModifiedTime(snapshot).toMillis();
        }
        oplog.reset(replayTerm, replayIndex);
        List<Path> replay = new ArrayList<>();
        for (Path seg : segments) {
            if (LogDescriptor.segmentId(seg) < base) {
                // Left over by a crash after the snapshot that covers it became durable.
                Files.deleteIfExists(seg);
            } else {
                replay.add(seg);
            }
        }
        long expected = base;
        long records = 0;
        long tornCut = 0;
        long lastId = base;
        long validEnd = 0;
        // each segment's records follow the snapshot's position, then the segment before it
        long afterIndex = replayIndex;
        for (int i = 0; i < replay.size(); i++) {
            Path seg = replay.get(i);
            long id = LogDescriptor.segmentId(seg);
            if (id != expected) {
                throw new CorruptLogException(seg, 0, "log segment " + LogDescriptor.segmentName(expected)
                        + " is missing");
            }
            expected++;
            long[] n = {0};
            FrameScanner.Outcome o = FrameScanner.scanSegment(seg, afterIndex, (payload, off) -> {
                long before = replayIndex;
                applyFrame(payload);
                n[0]++;
                if (replayIndex != before) {
                    keepReplayed(payload);
                }
            });
            records += n[0];
            boolean last = i == replay.size() - 1;
            if (!o.clean()) {
                if (!o.tornTail() || !last) {
                    throw new CorruptLogException(seg, o.badOffset(), o.problem());
                }
                tornCut = o.fileBytes() - o.validEnd();
                LOG.warn("log {} ends with a torn record at offset {} ({}): cutting {} bytes", seg.getFileName(),
                        o.badOffset(), o.problem(), tornCut);
            } else if (last && o.validEnd() < o.fileBytes()) {
                // a segment whose frames end before its file does: a torn last record, or a reused file's former
                // bytes (a store that closes cuts those), which nothing tells apart
                tornCut = o.fileBytes() - o.validEnd();
                LOG.warn("log {} ends at offset {}: cutting the {} bytes after it (a torn record, or what its file "
                        + "held before it was reused)", seg.getFileName(), o.validEnd(), tornCut);
            }
            lastId = id;
            validEnd = o.validEnd();
            afterIndex = o.lastIndex();
        }
        log = new LogWriter(dir, lastId, replay.isEmpty() ? 0 : validEnd, oplog);
        // everysec and always write each record before the reply (durable); with no, the write-behind thread does
        log.callersWrite(config.fsync() != FsyncPolicy.NO);
        // each segment's blocks reserved ahead of its appends, as much as a segment takes before a snapshot rotates
        // it (64 MiB when snapshots are off; at most 1 GiB)
        long segmentBytes = config.snapshotLogBytes() > 0 ? config.snapshotLogBytes() : 64L << 20;
        log.preallocate(Math.min(segmentBytes + (1L << 20), 1L << 30));
        // blob files written without fsync are forced before any log fsync that could make their records durable
        log.beforeSync(() -> blobs.syncUnsynced(true));
        if (!replay.isEmpty()) {
            // The replayed log decides which blob files go; it must outlive a machine crash first.
            try (FileChannel ch = FileChannel.open(replay.getLast(), StandardOpenOption.WRITE)) {
                ch.force(false);
            }
        }
        if (!config.replicaSetMember()) {
            // A member's expiry deletes come from its primary: a record of its own would fork the set's positions.
            dropExpiredAfterRecovery();
        }
        dropMissingBlobs();
        blobs.startReaper(log::force);
        adoptLegacyBlobs();
        long ms = (System.nanoTime() - started) / 1_000_000;
        recovery = new RecoveryReport(snapshot, snapshotRecords, replay.size(), records, tornCut, ms);
        bytesSinceSnapshot.set(logBytes());
    }

    /** Keeps a replayed frame in the oplog window at the position its OP_POSITION gave. */
    private void keepReplayed(ByteBuffer payload) {
        byte[] frame = null;
        if (oplog.retains()) {
            int len = payload.limit();
            frame = new byte[LogDescriptor.HEADER_LENGTH + len];
            ByteBuffer b = ByteBuffer.wrap(frame).order(LogDescriptor.ORDER);
            b.putInt(len);
            b.putInt(0);
            payload.rewind();
            b.put(payload);
            b.putInt(4, LogDescriptor.crc(len, frame, LogDescriptor.HEADER_LENGTH, len));
        }
        if (replayIndex != oplog.lastIndex() + 1) {
            oplog.reset(replayTerm, replayIndex - 1);
        }
        oplog.add(replayTerm, replayIndex, frame);
    }

    /**
     * Keys whose blob file is gone (deleted or damaged by hand; the store deletes a file only after the log dropped
     * it) are reported and deleted, so the store opens with every other value.
     */
    private void dropMissingBlobs() {
        for (Keyspace.Shard s : keyspace.shards) {
            List<Key> gone = new ArrayList<>();
            for (Map.Entry<Key, Keyspace.Entry> me : s.map.entrySet()) {
                BlobVersion v = me.getValue().blob;
                if (v != null && v.missing()) {
                    LOG.error("the value of key {} was blob file {}, which is missing or damaged: the key is deleted",
                        printable(me.getKey().bytes), v.file());
                    gone.add(me.getKey());
                }
            }
            for (Key k : gone) {
                if (config.replicaSetMember()) {
                    keyspace.applyDelete(k);
                    continue;
                }
                FrameBuilder f = frame();
                f.op(LogDescriptor.OP_DELETE).putBytes(k.bytes);
                commit(f);
            }
        }
    }

    /** Blob files of the format that named the key in the file: each becomes its key's value if the key is free. */
    private void adoptLegacyBlobs() {
        for (BlobStore.LegacyBlob old : blobs.legacy()) {
            Key k = Key.copyOf(old.key());
            Keyspace.Shard s = keyspace.shard(k);
            if (s.map.containsKey(k)) {
                LOG.warn("legacy blob file {} is not adopted: key {} has a value already", old.file(),
                    printable(old.key()));
                continue;
            }
            BlobVersion v = blobs.adopt(old);
            try {
                FrameBuilder f = frame();
                putString(f, k, -1, null, v);
                commit(f);
            } finally {
                v.release();
            }
            LOG.info("legacy blob file {} adopted as the value of key {}", old.file(), printable(old.key()));
        }
        log.force();
    }

    private static String printable(byte[] key) {
        return new String(key, StandardCharsets.UTF_8);
    }

    /** Keys that expired while the store was down are dropped now (and logged, so replay stays exact). */
    private void dropExpiredAfterRecovery() {
        for (int i = 0; i < Keyspace.SHARDS; i++) {
            sweepShard(i, System.currentTimeMillis());
        }
    }

    private static List<Path> listSorted(Path dir, boolean snapshots) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> (snapshots ? LogDescriptor.snapshotId(p) : LogDescriptor.segmentId(p)) >= 0)
                    .sorted((a, b) -> Long.compare(
                            snapshots ? LogDescriptor.snapshotId(a) : LogDescriptor.segmentId(a),
                            snapshots ? LogDescriptor.snapshotId(b) : LogDescriptor.segmentId(b)))
                    .toList();
        }
    }

    private void startBackground() {
        if (config.fsync() == FsyncPolicy.EVERYSEC) {
            fsyncExecutor.scheduleWithFixedDelay(() -> {
                try {
                    if (log.dirty()) {
                        log.force();
                    }
                } catch (RuntimeException e) {
                    LOG.error("background fsync failed: {}", e.toString());
                }
            }, 1, 1, TimeUnit.SECONDS);
        }
        if (config.activeExpiry()) {
            expiryExecutor.scheduleWithFixedDelay(this::expiryTick, 100, 100, TimeUnit.MILLISECONDS);
        }
    }

    /** What recovery found and did when this store was opened. */
    public RecoveryReport recoveryReport() {
        return recovery;
    }

    /** The configuration in force (a copy taken at open; changing it has no effect). */
    public StoreConfig config() {
        return config.clone();
    }

    /**
     * Stops the background threads, waits for a running snapshot, fsyncs and closes the log, and frees all off-heap
     * memory. Idempotent. Calls that race with close may fail with {@link StoreException}.
     */
    @Override
    public void close() {
        CompletableFuture<Path> pending;
        synchronized (snapshotMonitor) {
            if (closed) {
                return;
            }
            closed = true;
            pending = snapshotInFlight;
        }
        expiryExecutor.shutdownNow();
        fsyncExecutor.shutdownNow();
        if (pending != null) {
            try {
                pending.join();
            } catch (RuntimeException e) {
                LOG.warn("snapshot running at close failed: {}", e.toString());
            }
        }
        snapshotExecutor.shutdown();
        try {
            expiryExecutor.awaitTermination(10, TimeUnit.SECONDS);
            fsyncExecutor.awaitTermination(10, TimeUnit.SECONDS);
            snapshotExecutor.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Lock[] all = lockAll();
        try {
            log.close();
        } catch (IOException e) {
            throw new StoreException("closing the log failed: " + e.getMessage(), e);
        } finally {
            unlockAll(all);
            // after the log is durable (so queued blob files may go), before the keys drop their references
            blobs.close();
            keyspace.freeAll();
            releaseDirLock();
        }
        LOG.info("store in {} closed", dir);
    }

    void checkOpen() {
        if (closed) {
            throw new StoreException("store is closed");
        }
    }

    // =====================================================================================================
    // Commit path
    // =====================================================================================================

    private static FrameBuilder frame() {
        return FRAMES.get().reset();
    }

    /** The writes of one {@link #exclusive} scope, gathered into one frame; its thread only. */
    private static final class AtomicScope {
        final FrameBuilder frame = new FrameBuilder();
        /** Writes gathered since the last flush (they count as changes when logged). */
        int writes;
        /** The highest fsync ticket of this scope's frames logged so far (0: none). */
        long ticket;
    }

    /**
     * Logs and applies the frame; the caller holds the locks of everything it touches. Returns an fsync ticket. Inside
     * an {@link #exclusive} scope the frame is applied now and its ops added to the scope's frame, which is logged
     * once when the scope ends; the ticket is then 0 (the scope waits for durability).
     */
    private long commit(FrameBuilder f) {
        if (f.isEmpty()) {
            return 0;
        }
        if (!writesAllowed) {
            discardExternal(f);
            throw new ReadOnlyException(readOnlyReason);
        }
        AtomicScope scope = ATOMIC.get();
        if (scope != null) {
            // refused now, as an append would be, rather than applied and then not logged
            log.ensureWritable();
            if ((long) scope.frame.payloadLength() + f.payloadLength() > ATOMIC_FRAME_MAX) {
                flushScope(scope);
            }
            scope.frame.append(f);
            scope.writes++;
            applyFrame(f.payload());
            return 0;
        }
        long ticket;
        if (f.hasExternal()) {
            // a value in a block of the store's memory (putStringValue): logged from there, then the entry adopts it
            MemorySegment block = f.external();
            try {
                f.sealPositioned();
                ticket = log.appendExternal(f, () -> keyspace.memory.unpinForLog(block));
            } catch (RuntimeException e) {
                discardExternal(f);
                throw e;
            }
            applyFrame(f.headPayload(), block);
        } else {
            ByteBuffer frame = f.sealPositioned();
            ticket = log.append(f, frame);
            applyFrame(f.payload());
        }
        LAST_COMMIT.get()[0] = f.index();
        bytesSinceSnapshot.addAndGet(f.frameLength());
        changesSinceSave.incrementAndGet();
        return ticket;
    }

    /** Frees the block of a frame's external value ({@link #putStringValue}) when the frame is not logged. */
    private void discardExternal(FrameBuilder f) {
        MemorySegment block = f.external();
        if (block != null) {
            keyspace.memory.unpinForLog(block);
            keyspace.memory.free(block);
        }
    }

    /** Logs what an {@link #exclusive} scope gathered (already applied) as one frame; under the scope's locks. */
    private void flushScope(AtomicScope scope) {
        FrameBuilder f = scope.frame;
        if (f.isEmpty()) {
            return;
        }
        ByteBuffer frame = f.sealPositioned();
        int len = frame.remaining();
        scope.ticket = Math.max(scope.ticket, log.append(f, frame));
        LAST_COMMIT.get()[0] = f.index();
        bytesSinceSnapshot.addAndGet(len);
        changesSinceSave.addAndGet(scope.writes);
        scope.writes = 0;
        f.reset();
    }

    /** After the locks are released: waits for the fsync when the policy asks, maybe starts a snapshot. */
    private void durable(long ticket) {
        if (ticket == 0) {
            return;
        }
        if (config.fsync() == FsyncPolicy.ALWAYS) {
            log.syncTo(ticket);
        } else if (config.fsync() == FsyncPolicy.EVERYSEC && !WriteBatch.defer(log, ticket)) {
            // As Redis does: the write reaches the OS before the reply (at the latest when the caller's WriteBatch
            // ends), so only a machine crash can lose it.
            log.writeTo(ticket);
        }
        Runnable l = appendListener;
        if (l != null) {
            l.run();
        }
        maybeSnapshot();
    }

    /** Starts a background snapshot when the log since the last one passed the configured size. */
    private void maybeSnapshot() {
        long trigger = config.snapshotLogBytes();
        if (trigger > 0 && bytesSinceSnapshot.get() >= trigger && !closed) {
            synchronized (snapshotMonitor) {
                if (snapshotInFlight == null && !closed) {
                    snapshotAsync();
                }
            }
        }
    }

    /** Applies one frame's ops to memory: the one code path for live writes, recovery and snapshot loading. */
    private void applyFrame(ByteBuffer p) {
        applyFrame(p, null);
    }

    /**
     * As {@link #applyFrame(ByteBuffer)}; {@code adopt}, when not null, holds the value of the frame's one
     * {@code STRING_PUT}, which {@code p} ends with up to that value's length: the entry takes the block itself.
     */
    private void applyFrame(ByteBuffer p, MemorySegment adopt) {
        KeyListener listener = keyListener;
        if (listener != null && !listener.wantsKeys()) {
            listener = null;
        }
        while (p.hasRemaining()) {
            byte op = p.get();
            int keyAt = p.position();
            if (listener != null && op == LogDescriptor.OP_FLUSH_KEYS) {
                listener.flushing(k -> {
                    Keyspace.Entry e = keyspace.shard(Key.wrap(k)).map.get(Key.wrap(k));
                    return e != null && !e.expired(System.currentTimeMillis());
                });
            }
            byte[] k = null;
            boolean expired = false;
            boolean existed = true;
            if (listener != null && keyOp(op)) {
                k = new byte[p.getInt(keyAt)];
                p.get(keyAt + 4, k);
                if (op == LogDescriptor.OP_DELETE || listener.wantsCreations()) {
                    Key key = Key.wrap(k);
                    Keyspace.Entry e = keyspace.shard(key).map.get(key);
                    expired = op == LogDescriptor.OP_DELETE && e != null && e.expired(System.currentTimeMillis());
                    existed = e != null && !e.expired(System.currentTimeMillis());
                }
            }
            if (adopt != null && op == LogDescriptor.OP_STRING_PUT) {
                Key key = Key.wrap(Keyspace.readBytes(p));
                long expireAt = p.getLong();
                if (p.getInt() != adopt.byteSize()) {
                    throw new IllegalStateException("adopted value's length differs from its record's");
                }
                keyspace.applyStringAdopt(key, expireAt, adopt);
            } else {
                applyOp(op, p);
            }
            if (k != null) {
                listener.keyChanged(k, expired);
                if (!existed && op != LogDescriptor.OP_DELETE) {
                    listener.keyCreated(k);
                }
            }
        }
    }

    /** Whether an op's payload starts with the key it changes (every keyspace op but FLUSH_KEYS). */
    private static boolean keyOp(byte op) {
        return switch (op) {
            case LogDescriptor.OP_FLUSH_KEYS, LogDescriptor.OP_COLLECTION_CREATE, LogDescriptor.OP_COLLECTION_DROP,
                 LogDescriptor.OP_DOCUMENT_PUT, LogDescriptor.OP_DOCUMENT_DELETE, LogDescriptor.OP_SNAPSHOT_END,
                 LogDescriptor.OP_POSITION, LogDescriptor.OP_INDEX_CREATE, LogDescriptor.OP_INDEX_DROP -> false;
            default -> true;
        };
    }

    private void applyOp(byte op, ByteBuffer p) {
        // (the switch keeps the indentation it had inside applyFrame's loop)
        {
            switch (op) {
                case LogDescriptor.OP_STRING_PUT -> {
                    Key k = Key.wrap(Keyspace.readBytes(p));
                    long expireAt = p.getLong();
                    int len = p.getInt();
                    keyspace.applyStringPut(k, expireAt, p, len);
                }
                case LogDescriptor.OP_STRING_WRITE_AT -> {
                    Key k = Key.wrap(Keyspace.readBytes(p));
                    long offset = p.getLong();
                    int len = p.getInt();
                    keyspace.applyStringWriteAt(k, offset, p, len);
                }
                case LogDescriptor.OP_HASH_PUT -> keyspace.applyHashPut(Key.wrap(Keyspace.readBytes(p)), p, false, -1);
                case LogDescriptor.OP_HASH_REPLACE -> {
                    Key k = Key.wrap(Keyspace.readBytes(p));
                    long expireAt = p.getLong();
                    keyspace.applyHashPut(k, p, true, expireAt);
                }
                case LogDescriptor.OP_HASH_DEL -> keyspace.applyHashDelete(Key.wrap(Keyspace.readBytes(p)), p);
                case LogDescriptor.OP_DELETE -> keyspace.applyDelete(Key.wrap(Keyspace.readBytes(p)));
                case LogDescriptor.OP_EXPIRE -> {
                    Key k = Key.wrap(Keyspace.readBytes(p));
                    keyspace.applyExpire(k, p.getLong());
                }
                case LogDescriptor.OP_FLUSH_KEYS -> keyspace.applyFlush();
                case LogDescriptor.OP_COLLECTION_CREATE -> documents.create(readString(p));
                case LogDescriptor.OP_COLLECTION_DROP -> documents.applyDrop(readString(p));
                case LogDescriptor.OP_DOCUMENT_PUT -> {
                    String name = readString(p);
                    documents.applyPut(name, readDocument(p));
                }
                case LogDescriptor.OP_DOCUMENT_DELETE -> {
                    String name = readString(p);
                    documents.applyDelete(name, readDocument(p).get("_id"));
                }
                case LogDescriptor.OP_INDEX_CREATE -> {
                    String name = readString(p);
                    documents.applyIndexCreate(name, readString(p));
                }
                case LogDescriptor.OP_INDEX_DROP -> {
                    String name = readString(p);
                    documents.applyIndexDrop(name, readString(p));
                }
                case LogDescriptor.OP_STRING_BLOB -> {
                    Key k = Key.wrap(Keyspace.readBytes(p));
                    long expireAt = p.getLong();
                    long version = p.getLong();
                    long length = p.getLong();
                    int crc = p.getInt();
                    keyspace.applyStringBlob(k, expireAt, blobs.resolve(version, length, crc));
                }
                case LogDescriptor.OP_SET_ADD, LogDescriptor.OP_SET_REM, LogDescriptor.OP_SET_REPLACE ->
                    Sets.apply(keyspace, op, p);
                case LogDescriptor.OP_LIST_PUSH, LogDescriptor.OP_LIST_POP, LogDescriptor.OP_LIST_REPLACE,
                     LogDescriptor.OP_LIST_SET, LogDescriptor.OP_LIST_TRIM -> Lists.apply(keyspace, op, p);
                case LogDescriptor.OP_ZSET_ADD, LogDescriptor.OP_ZSET_REM, LogDescriptor.OP_ZSET_REPLACE ->
                    SortedSets.apply(keyspace, op, p);
                case LogDescriptor.OP_SNAPSHOT_END -> p.getLong();
                case LogDescriptor.OP_POSITION -> {
                    replayTerm = p.getLong();
                    replayIndex = p.getLong();
                }
                default -> throw new StoreException("unknown log op code " + op);
            }
        }
    }

    private static String readString(ByteBuffer p) {
        return new String(Keyspace.readBytes(p), StandardCharsets.UTF_8);
    }

    private static BsonDocument readDocument(ByteBuffer p) {
        int len = p.getInt();
        BsonDocument d = BsonValues.decode(p.slice(p.position(), len));
        p.position(p.position() + len);
        return d;
    }

    // =====================================================================================================
    // Locking helpers
    // =====================================================================================================

    Key key(byte[] k) {
        return bounded(k, "key");
    }

    /** A copy of a key or hash field, refused when longer than the key limit. */
    Key bounded(byte[] b, String what) {
        Objects.requireNonNull(b, what);
        if (b.length > config.maxKeyBytes()) {
            throw new LimitExceededException(what + " is " + b.length + " bytes, larger than the limit of "
                    + config.maxKeyBytes());
        }
        return Key.copyOf(b);
    }

    void checkValue(long length) {
        if (length > config.maxValueBytes()) {
            throw new LimitExceededException("string exceeds maximum allowed size (" + length + " > "
                    + config.maxValueBytes() + " bytes)");
        }
    }

    private static int[] shardIndexes(Key[] keys) {
        int[] idx = new int[keys.length];
        for (int i = 0; i < keys.length; i++) {
            idx[i] = Keyspace.shardIndex(keys[i]);
        }
        Arrays.sort(idx);
        int n = 0;
        for (int i = 0; i < idx.length; i++) {
            if (n == 0 || idx[n - 1] != idx[i]) {
                idx[n++] = idx[i];
            }
        }
        return Arrays.copyOf(idx, n);
    }

    private Lock[] lockShards(int[] idx, boolean write) {
        Lock[] locks = new Lock[idx.length];
        for (int i = 0; i < idx.length; i++) {
            var rw = keyspace.shards[idx[i]].lock;
            locks[i] = write ? rw.writeLock() : rw.readLock();
            locks[i].lock();
        }
        return locks;
    }

    private static void unlock(Lock[] locks) {
        for (int i = locks.length - 1; i >= 0; i--) {
            locks[i].unlock();
        }
    }

    /** Every shard's write lock and the documents' write lock: no write can be in flight while they are held. */
    private Lock[] lockAll() {
        Lock[] locks = new Lock[Keyspace.SHARDS + 1];
        for (int i = 0; i < Keyspace.SHARDS; i++) {
            locks[i] = keyspace.shards[i].lock.writeLock();
            locks[i].lock();
        }
        locks[Keyspace.SHARDS] = documents.lock.writeLock();
        locks[Keyspace.SHARDS].lock();
        return locks;
    }

    private static void unlockAll(Lock[] locks) {
        unlock(locks);
    }

    private static Keyspace.Entry liveRead(Keyspace.Shard s, Key k, long now) {
        Keyspace.Entry e = s.map.get(k);
        return e == null || e.expired(now) ? null : e;
    }

    /** The live entry, or null; an expired one is deleted in the same frame, so replay sees the same history. */
    static Keyspace.Entry liveWrite(Keyspace.Shard s, Key k, long now, FrameBuilder f) {
        Keyspace.Entry e = s.map.get(k);
        if (e != null && e.expired(now)) {
            f.op(LogDescriptor.OP_DELETE).putBytes(k.bytes);
            return null;
        }
        return e;
    }

    private static void requireString(Keyspace.Entry e) {
        if (e != null && e.type != Keyspace.STRING) {
            throw new WrongTypeException();
        }
    }

    private static void requireHash(Keyspace.Entry e) {
        if (e != null && e.type != Keyspace.HASH) {
            throw new WrongTypeException();
        }
    }

    // =====================================================================================================
    // Keys
    // =====================================================================================================

    /** The type of value {@code key} holds; {@link ValueType#NONE} when missing or expired. */
    public ValueType type(byte[] key) {
        return readKey(key, e -> Keyspace.valueType(e));
    }

    /**
     * How many elements {@code key} holds, whatever its type: fields, members or elements of a collection, 1 for a
     * string, 0 when missing or expired. O(1); a cost estimate for callers that decide where to run a command.
     */
    public long elements(byte[] key) {
        return readKey(key, e -> {
            if (e == null) {
                return 0L;
            }
            return switch (e.type) {
                case Keyspace.HASH -> (long) e.hash.size();
                case Keyspace.SET -> (long) e.set.size();
                case Keyspace.LIST -> (long) e.list.size();
                case Keyspace.ZSET -> (long) e.zset.size();
                default -> 1L;
            };
        });
    }

    /** How many of {@code keys} exist; a key named twice counts twice (Redis EXISTS). */
    public long exists(byte[]... keys) {
        checkOpen();
        Key[] ks = keys(keys);
        Lock[] locks = lockShards(shardIndexes(ks), false);
        try {
            long now = System.currentTimeMillis();
            long n = 0;
            for (Key k : ks) {
                if (liveRead(keyspace.shard(k), k, now) != null) {
                    n++;
                }
            }
            return n;
        } finally {
            unlock(locks);
        }
    }

    private Key[] keys(byte[][] keys) {
        Key[] ks = new Key[keys.length];
        for (int i = 0; i < keys.length; i++) {
            ks[i] = key(keys[i]);
        }
        return ks;
    }

    /** Deletes the keys (atomically); returns how many existed. */
    public long delete(byte[]... keys) {
        checkOpen();
        Key[] ks = keys(keys);
        long ticket;
        long n = 0;
        Lock[] locks = lockShards(shardIndexes(ks), true);
        try {
            FrameBuilder f = frame();
            long now = System.currentTimeMillis();
            Set<Key> seen = new HashSet<>();
            for (Key k : ks) {
                if (!seen.add(k)) {
                    continue;
                }
                Keyspace.Entry e = liveWrite(keyspace.shard(k), k, now, f);
                if (e != null) {
                    n++;
                    f.op(LogDescriptor.OP_DELETE).putBytes(k.bytes);
                }
            }
            ticket = commit(f);
        } finally {
            unlock(locks);
        }
        durable(ticket);
        return n;
    }

    /**
     * Sets the key's expiry to an absolute time (PEXPIREAT). A time not in the future deletes the key.
     *
     * @return false when the key does not exist
     */
    public boolean expireAt(byte[] key, long epochMillis) {
        return writeKey(key, (k, e, f, now) -> {
            if (e == null) {
                return false;
            }
            if (epochMillis <= now) {
                f.op(LogDescriptor.OP_DELETE).putBytes(k.bytes);
            } else {
                f.op(LogDescriptor.OP_EXPIRE).putBytes(k.bytes).putLong(epochMillis);
            }
            return true;
        });
    }

    /** Milliseconds to live: -2 when missing, -1 without TTL. */
    public long pttl(byte[] key) {
        long at = expireTime(key);
        return at < 0 ? at : Math.max(0, at - System.currentTimeMillis());
    }

    /** Absolute expiry in epoch milliseconds (PEXPIRETIME): -2 when missing, -1 without TTL. */
    public long expireTime(byte[] key) {
        return readKey(key, e -> e == null ? -2L : e.expireAt < 0 ? -1L : e.expireAt);
    }

    /** Removes the key's TTL; false when the key is missing or had none. */
    public boolean persist(byte[] key) {
        return writeKey(key, (k, e, f, now) -> {
            boolean changed = e != null && e.expireAt >= 0;
            if (changed) {
                f.op(LogDescriptor.OP_EXPIRE).putBytes(k.bytes).putLong(-1);
            }
            return changed;
        });
    }

    /**
     * Renames a key, keeping its TTL and replacing whatever {@code to} held (RENAME), or only when {@code to} does
     * not exist (RENAMENX, {@code onlyIfAbsent}).
     *
     * @return true when renamed; false only for RENAMENX when {@code to} exists (or equals {@code from})
     * @throws NoSuchKeyException when {@code from} does not exist
     */
    public boolean rename(byte[] from, byte[] to, boolean onlyIfAbsent) {
        checkOpen();
        Key a = key(from);
        Key b = key(to);
        long ticket;
        Lock[] locks = lockShards(shardIndexes(new Key[] {a, b}), true);
        try {
            FrameBuilder f = frame();
            long now = System.currentTimeMillis();
            Keyspace.Entry e = liveWrite(keyspace.shard(a), a, now, f);
            if (e == null) {
                commit(f);
                throw new NoSuchKeyException();
            }
            if (a.equals(b)) {
                return !onlyIfAbsent;
            }
            Keyspace.Entry target = liveWrite(keyspace.shard(b), b, now, f);
            if (onlyIfAbsent && target != null) {
                ticket = commit(f);
                return false;
            }
            // the target first: a blob version then never loses its last reference in between
            encodeEntry(f, b, e);
            f.op(LogDescriptor.OP_DELETE).putBytes(a.bytes);
            ticket = commit(f);
        } finally {
            unlock(locks);
        }
        durable(ticket);
        return true;
    }

    /**
     * COPY: writes a copy of {@code from}'s value, with its TTL, to {@code to} (a blob value shares its file).
     *
     * @return false when {@code to} exists and {@code replace} is not set, or {@code from} is {@code to}
     * @throws NoSuchKeyException when {@code from} does not exist
     */
    public boolean copy(byte[] from, byte[] to, boolean replace) {
        checkOpen();
        Key a = key(from);
        Key b = key(to);
        long ticket;
        Lock[] locks = lockShards(shardIndexes(new Key[] {a, b}), true);
        try {
            FrameBuilder f = frame();
            long now = System.currentTimeMillis();
            Keyspace.Entry e = liveWrite(keyspace.shard(a), a, now, f);
            Keyspace.Entry target = a.equals(b) ? e : liveWrite(keyspace.shard(b), b, now, f);
            if (e == null) {
                commit(f);
                throw new NoSuchKeyException();
            }
            if (a.equals(b) || (target != null && !replace)) {
                ticket = commit(f);
                return false;
            }
            encodeEntry(f, b, e);
            ticket = commit(f);
        } finally {
            unlock(locks);
        }
        durable(ticket);
        return true;
    }

    private static void encodeEntry(FrameBuilder f, Key k, Keyspace.Entry e) {
        if (e.type == Keyspace.STRING) {
            Keyspace.encodeString(f, k, e);
        } else if (e.type == Keyspace.SET) {
            Sets.encode(f, k, e);
        } else if (e.type == Keyspace.LIST) {
            Lists.encode(f, k, e);
        } else if (e.type == Keyspace.ZSET) {
            SortedSets.encode(f, k, e);
        } else {
            f.op(LogDescriptor.OP_HASH_REPLACE).putBytes(k.bytes).putLong(e.expireAt).putInt(e.hash.size());
            for (Map.Entry<Key, byte[]> fe : e.hash.entrySet()) {
                f.putBytes(fe.getKey().bytes).putBytes(fe.getValue());
            }
        }
    }

    /** Keys in the keyspace (DBSIZE): includes keys that expired but were not swept yet, as Redis does. */
    public long size() {
        checkOpen();
        return keyspace.keys.get();
    }

    /** Empties the keyspace (FLUSHALL). Document collections are not touched; drop them with {@link #dropCollection}. */
    public void flushAll() {
        checkOpen();
        long ticket;
        Lock[] locks = lockShards(allShards(), true);
        try {
            FrameBuilder f = frame();
            f.op(LogDescriptor.OP_FLUSH_KEYS);
            ticket = commit(f);
        } finally {
            unlock(locks);
        }
        durable(ticket);
    }

    private static int[] allShards() {
        int[] idx = new int[Keyspace.SHARDS];
        for (int i = 0; i < idx.length; i++) {
            idx[i] = i;
        }
        return idx;
    }

    /** Every live key matching a Redis glob pattern (KEYS). O(keyspace): for tools, not for hot paths. */
    public List<byte[]> keys(String globPattern) {
        checkOpen();
        byte[] pattern = globPattern.getBytes(StandardCharsets.UTF_8);
        List<byte[]> out = new ArrayList<>();
        for (int i = 0; i < Keyspace.SHARDS; i++) {
            collectShard(i, pattern, null, out);
        }
        return out;
    }

    private void collectShard(int i, byte[] pattern, ValueType type, List<byte[]> out) {
        Keyspace.Shard s = keyspace.shards[i];
        s.lock.readLock().lock();
        try {
            long now = System.currentTimeMillis();
            for (Map.Entry<Key, Keyspace.Entry> me : s.map.entrySet()) {
                Keyspace.Entry e = me.getValue();
                if (e.expired(now)) {
                    continue;
                }
                if (type != null && type != Keyspace.valueType(e)) {
                    continue;
                }
                if (pattern == null || Glob.matches(pattern, me.getKey().bytes)) {
                    out.add(me.getKey().bytes.clone());
                }
            }
        } finally {
            s.lock.readLock().unlock();
        }
    }

    /**
     * One step of a SCAN iteration. Start with cursor 0 and pass back {@code nextCursor} until it is 0. Every key
     * present for the whole iteration is returned at least once; {@code count} is a hint (whole shards are returned).
     *
     * @param globOrNull  pattern the returned keys match, or null
     * @param typeOrNull  only keys of this type, or null
     */
    public ScanResult scan(long cursor, String globOrNull, int count, ValueType typeOrNull) {
        checkOpen();
        if (count < 1) {
            throw new BadRequestException("syntax error: COUNT must be at least 1");
        }
        if (typeOrNull == ValueType.NONE) {
            return new ScanResult(0, List.of());
        }
        byte[] pattern = globOrNull == null ? null : globOrNull.getBytes(StandardCharsets.UTF_8);
        List<byte[]> out = new ArrayList<>();
        if (cursor < 0 || cursor >= Keyspace.SHARDS) {
            return new ScanResult(0, out);
        }
        int i = (int) cursor;
        int visited = 0;
        while (i < Keyspace.SHARDS) {
            collectShard(i, pattern, typeOrNull, out);
            i++;
            visited++;
            // Bound the work per call even when a pattern filters everything out.
            if (out.size() >= count || visited >= Math.max(count, 16) * 4) {
                break;
            }
        }
        return new ScanResult(i >= Keyspace.SHARDS ? 0 : i, out);
    }

    /** A random live key, or null when the keyspace is empty (RANDOMKEY). */
    public byte[] randomKey() {
        checkOpen();
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        int start = rnd.nextInt(Keyspace.SHARDS);
        for (int n = 0; n < Keyspace.SHARDS; n++) {
            Keyspace.Shard s = keyspace.shards[(start + n) & (Keyspace.SHARDS - 1)];
            s.lock.readLock().lock();
            try {
                if (s.map.isEmpty()) {
                    continue;
                }
                long now = System.currentTimeMillis();
                List<Key> live = new ArrayList<>(s.map.size());
                for (Map.Entry<Key, Keyspace.Entry> me : s.map.entrySet()) {
                    if (!me.getValue().expired(now)) {
                        live.add(me.getKey());
                    }
                }
                if (!live.isEmpty()) {
                    return live.get(rnd.nextInt(live.size())).bytes.clone();
                }
            } finally {
                s.lock.readLock().unlock();
            }
        }
        return null;
    }

    // =====================================================================================================
    // Strings
    // =====================================================================================================

    /** The string value, or null when missing. @throws WrongTypeException on a hash */
    public byte[] get(byte[] key) {
        checkOpen();
        Key k = key(key);
        Keyspace.Shard s = keyspace.shard(k);
        s.lock.readLock().lock();
        try {
            Keyspace.Entry e = liveRead(s, k, System.currentTimeMillis());
            requireString(e);
            return e == null ? null : copyValue(e);
        } finally {
            s.lock.readLock().unlock();
        }
    }

    /**
     * Zero-copy read: calls {@code reader} with a read-only off-heap view of the string value (or null when the key
     * is missing) while holding the shard's read lock. The view is tied to a confined arena closed when the reader
     * returns: it may be used only by the calling thread and only during the call (touching it later throws
     * {@link IllegalStateException} rather than reading freed memory). The reader must be quick and must not call
     * this store (writers to the same shard wait for it).
     *
     * @throws WrongTypeException on a hash
     */
    @SuppressWarnings("restricted") // re-scoping the view to a per-call arena is what makes an escaped view safe
    public <R> R readValue(byte[] key, Function<MemorySegment, R> reader) {
        checkOpen();
        Key k = key(key);
        Keyspace.Shard s = keyspace.shard(k);
        s.lock.readLock().lock();
        try {
            Keyspace.Entry e = liveRead(s, k, System.currentTimeMillis());
            requireString(e);
            if (e == null) {
                return reader.apply(null);
            }
            checkReadable(e);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment view = Keyspace.value(e).asSlice(0, e.length).reinterpret(arena, null).asReadOnly();
                return reader.apply(view);
            }
        } finally {
            s.lock.readLock().unlock();
        }
    }

    /**
     * Pins the string value of {@code key} for reading beyond the store's locks (a one-sided transfer): its bytes stay
     * as they are until {@link PinnedValue#release()}, which the caller must call; overwrites and deletes meanwhile
     * write new memory and the pinned bytes are freed at the release. Null when the key does not exist. Any thread.
     *
     * @throws WrongTypeException on a value that is not a string
     */
    @SuppressWarnings("restricted") // the pin keeps the malloc'd block alive beyond the lock; the view is read-only
    public PinnedValue pinValue(byte[] key) {
        checkOpen();
        Key k = key(key);
        Keyspace.Shard s = keyspace.shard(k);
        s.lock.readLock().lock();
        try {
            Keyspace.Entry e = liveRead(s, k, System.currentTimeMillis());
            requireString(e);
            if (e == null) {
                return null;
            }
            checkReadable(e);
            if (e.blob != null) {
                BlobVersion v = e.blob;
                v.retain();
                try {
                    return new PinnedValue(v.segment().asSlice(0, e.length).asReadOnly(), v::release);
                } catch (RuntimeException x) {
                    v.release();
                    throw x;
                }
            }
            MemorySegment block = e.string;
            if (e.length == 0) {
                return new PinnedValue(MemorySegment.ofArray(new byte[0]).asReadOnly(), () -> { });
            }
            keyspace.memory.pin(block);
            return new PinnedValue(block.asSlice(0, e.length).asReadOnly(), () -> keyspace.memory.unpin(block));
        } finally {
            s.lock.readLock().unlock();
        }
    }

    /** Values pinned right now ({@link #pinValue}); for tests and INFO. */
    public int pinnedValues() {
        return keyspace.memory.pinned();
    }

    /** SET with options; see {@link SetOptions}. Values from the blob threshold on are stored as blob files. */
    public SetResult set(byte[] key, byte[] value, SetOptions options) {
        options.validate();
        checkValue(value.length);
        BlobVersion blob = storeAsBlob(key, value);
        try {
            return set(key, value, blob, options);
        } finally {
            if (blob != null) {
                blob.release();
            }
        }
    }

    /**
     * SET of a value in memory the caller owns (a transport's receive buffer): the log record is built from it
     * directly, without a {@code byte[]} of the value first. The segment is read while the call runs and not kept.
     * A value from the blob threshold on goes the {@code byte[]} way.
     */
    public SetResult set(byte[] key, MemorySegment value, SetOptions options) {
        long length = value.byteSize();
        if (blobs.blobSized(length)) {
            return set(key, value.toArray(ValueLayout.JAVA_BYTE), options);
        }
        options.validate();
        checkValue(length);
        return set(key, options, (f, k, expireAt) -> putStringValue(f, k, expireAt, value));
    }

    /**
     * A block of the store's memory for a value of {@code length} bytes that the caller fills and then hands to
     * {@link #setAdopting} (or back to {@link #freeValue}): a transport reads a client's value straight into the memory
     * that becomes the entry's, with no copy after. Null when a value of that length is not kept in such a block
     * (below {@link #EXTERNAL_VALUE_BYTES}, or from the blob threshold on): the caller sends it by {@link #set} then.
     */
    public MemorySegment allocateValue(long length) {
        checkOpen();
        checkValue(length);
        if (length < EXTERNAL_VALUE_BYTES || blobs.blobSized(length)) {
            return null;
        }
        return keyspace.memory.allocate(length);
    }

    /** Gives back a block from {@link #allocateValue} that is not handed to {@link #setAdopting}. */
    public void freeValue(MemorySegment block) {
        keyspace.memory.free(block);
    }

    /**
     * SET of the value in {@code block}, from {@link #allocateValue} and filled by the caller: the entry takes the
     * block itself, and the log writes the value from it. The store owns the block from this call on, whether the
     * value is written, not written (NX, XX) or refused; the caller must not touch it afterwards.
     */
    public SetResult setAdopting(byte[] key, MemorySegment block, SetOptions options) {
        boolean[] taken = {false};
        try {
            options.validate();
            return set(key, options, (f, k, expireAt) -> {
                if (ATOMIC.get() != null) {
                    // a scope's frame gathers several writes: the value is copied into it, as putStringValue does
                    putStringHead(f, k, expireAt).putBytes(block, block.byteSize());
                    return;
                }
                putExternalValue(f, k, expireAt, block);
                taken[0] = true;
            });
        } finally {
            if (!taken[0]) {
                keyspace.memory.free(block);
            }
        }
    }

    /**
     * Values from this size on are copied once, into the block that becomes the entry's memory, and logged from that
     * block ({@link FrameBuilder#putExternal}); smaller ones are copied into the log frame, and from it into memory.
     */
    static final long EXTERNAL_VALUE_BYTES = 32 * 1024;

    /**
     * The op that sets a string held in {@code value}, as the frame's last op. A large value (outside an
     * {@link #exclusive} scope, whose frame gathers several writes) goes into a new block of the store's memory,
     * pinned until the log has written it from there; the entry adopts the block when the frame is applied.
     */
    private void putStringValue(FrameBuilder f, Key k, long expireAt, MemorySegment value) {
        long length = value.byteSize();
        if (length < EXTERNAL_VALUE_BYTES || ATOMIC.get() != null) {
            putStringHead(f, k, expireAt).putBytes(value, length);
            return;
        }
        MemorySegment block = keyspace.memory.allocate(length);
        try {
            MemorySegment.copy(value, 0, block, 0, length);
            putExternalValue(f, k, expireAt, block);
        } catch (RuntimeException e) {
            keyspace.memory.free(block);
            throw e;
        }
    }

    /** The op that sets a string held in {@code block}, which the frame takes (pinned until the log wrote it). */
    private void putExternalValue(FrameBuilder f, Key k, long expireAt, MemorySegment block) {
        putStringHead(f, k, expireAt).putExternal(block);
        keyspace.memory.pinForLog(block);
    }

    /** Writes the op that sets key {@code k}'s string, expiring at {@code expireAt} (-1: never). */
    @FunctionalInterface
    private interface StringPut {
        void put(FrameBuilder f, Key k, long expireAt);
    }

    private SetResult set(byte[] key, byte[] value, BlobVersion blob, SetOptions options) {
        return set(key, options, (f, k, expireAt) -> {
            if (blob == null) {
                putStringValue(f, k, expireAt, MemorySegment.ofArray(value));
            } else {
                putString(f, k, expireAt, null, blob);
            }
        });
    }

    private SetResult set(byte[] key, SetOptions options, StringPut put) {
        return writeKey(key, (k, e, f, now) -> {
            byte[] old = null;
            if (options.returnOld()) {
                requireString(e);
                old = e == null ? null : copyValue(e);
            }
            boolean written = !(options.ifAbsent() && e != null) && !(options.ifPresent() && e == null);
            if (written) {
                long expireAt = options.keepTtl() && e != null ? e.expireAt : options.expireAtMillis();
                put.put(f, k, expireAt);
            }
            if (!options.returnOld()) {
                return written ? SetResult.WRITTEN : SetResult.NOT_WRITTEN;
            }
            return new SetResult(written, old);
        });
    }

    /** Plain SET: stores the value and clears any TTL. */
    public void set(byte[] key, byte[] value) {
        checkOpen();
        Key k = key(key);
        checkValue(value.length);
        if (blobs.blobSized(value.length)) {
            set(key, value, new SetOptions());
            return;
        }
        Keyspace.Shard s = keyspace.shard(k);
        long ticket;
        s.lock.writeLock().lock();
        try {
            FrameBuilder f = frame();
            putStringValue(f, k, -1, MemorySegment.ofArray(value));
            ticket = commit(f);
        } finally {
            s.lock.writeLock().unlock();
        }
        durable(ticket);
    }

    /** The op that sets a string: its bytes, or (when {@code blob} is not null) a reference to its blob file. */
    private static void putString(FrameBuilder f, Key k, long expireAt, byte[] value, BlobVersion blob) {
        if (blob == null) {
            putStringHead(f, k, expireAt).putBytes(value);
        } else {
            f.op(LogDescriptor.OP_STRING_BLOB).putBytes(k.bytes).putLong(expireAt).putLong(blob.version())
                .putLong(blob.length()).putInt(blob.crc32c());
        }
    }

    /** The op that sets a string in memory, up to its value (which the caller appends). */
    private static FrameBuilder putStringHead(FrameBuilder f, Key k, long expireAt) {
        return f.op(LogDescriptor.OP_STRING_PUT).putBytes(k.bytes).putLong(expireAt);
    }

    /**
     * A value from the blob threshold on, written to a durable blob file before any lock is taken (the caller holds
     * the one reference and releases it after logging); null for a value that stays in memory. {@code key}, when
     * given, is checked first, so a bad key costs no file.
     */
    private BlobVersion storeAsBlob(byte[] key, byte[] value) {
        if (!blobs.blobSized(value.length)) {
            return null;
        }
        if (key != null) {
            key(key);
        }
        BlobWrite w = blobs.begin(value.length);
        try {
            w.write(0, MemorySegment.ofArray(value));
        } catch (IOException e) {
            blobs.abort(w);
            throw new StoreException("cannot write blob file: " + e + "; the old value is kept", e);
        } catch (RuntimeException e) {
            blobs.abort(w);
            throw e;
        }
        // With always the file is forced here; otherwise by the log before its next fsync (so, per the policy).
        return blobs.commit(w, null, config.fsync() != FsyncPolicy.ALWAYS);
    }

    /** A string value as a new array, refused when it is larger than a reply may be (a blob can be). */
    private byte[] copyValue(Keyspace.Entry e) {
        checkReadable(e);
        return Keyspace.copyOut(e);
    }

    private void checkReadable(Keyspace.Entry e) {
        if (e.length > config.maxValueBytes()) {
            throw new LimitExceededException("value is " + e.length + " bytes, larger than max-value-bytes ("
                    + config.maxValueBytes() + "): read it with the blob API (BLOB_GET, rdmastore get-file)");
        }
    }

    // =====================================================================================================
    // Blobs
    // =====================================================================================================

    /** The blob files behind values from the threshold on: settings, directory, counts. */
    public BlobStore blobs() {
        return blobs;
    }

    /**
     * Stores a blob written by {@link BlobStore#begin} as the value of {@code key} (clearing any TTL, as SET does):
     * checks its CRC32C against {@code expectedCrc32c}, makes the file durable, logs the record that gives it to the
     * key. A blob below the threshold is kept in memory instead, like any small value. The write is finished either
     * way (committed or aborted).
     *
     * @return the blob's version, 0 when the value was kept in memory
     * @throws StoreException on a CRC mismatch, a bad key or an I/O error; the old value is kept
     */
    public long putBlob(byte[] key, BlobWrite w, int expectedCrc32c) {
        return putBlob(key, w, expectedCrc32c, null);
    }

    /**
     * As {@link #putBlob(byte[], BlobWrite, int)}; {@code numbered} (may be null) sees the new version after its file
     * is durable and before the record naming it is logged (a replica set's primary remembers which staged copy the
     * version is before any secondary can ask).
     */
    public long putBlob(byte[] key, BlobWrite w, int expectedCrc32c, java.util.function.LongConsumer numbered) {
        checkOpen();
        try {
            key(key);
        } catch (RuntimeException e) {
            blobs.abort(w);
            throw e;
        }
        if (!blobs.blobSized(w.length())) {
            byte[] value;
            try {
                BlobStore.verifiedCrc32c(w, expectedCrc32c);
                value = w.segment().toArray(ValueLayout.JAVA_BYTE);
            } finally {
                blobs.abort(w);
            }
            set(key, value);
            return 0;
        }
        BlobVersion v = blobs.commit(w, expectedCrc32c);
        try {
            if (numbered != null) {
                numbered.accept(v.version());
            }
            writeKey(key, (k, e, f, now) -> {
                putString(f, k, -1, null, v);
                return null;
            });
            return v.version();
        } finally {
            v.release();
        }
    }

    /**
     * The value of {@code key} for a one-sided transfer: a blob version with a reference the caller must release
     * (its file and mapping stay whatever writes follow), or a copy of a value kept in memory; null when missing.
     *
     * @throws WrongTypeException on a hash
     */
    public BlobValue acquireBlob(byte[] key) {
        return readKey(key, e -> {
            requireString(e);
            if (e == null) {
                return null;
            }
            if (e.blob != null) {
                e.blob.retain();
                return new BlobValue(e.blob, null);
            }
            return new BlobValue(null, Keyspace.copyOut(e));
        });
    }

    /** GETDEL: the string value (or null), deleting the key. */
    public byte[] getDel(byte[] key) {
        return writeKey(key, (k, e, f, now) -> {
            requireString(e);
            if (e == null) {
                return null;
            }
            byte[] old = copyValue(e);
            f.op(LogDescriptor.OP_DELETE).putBytes(k.bytes);
            return old;
        });
    }

    /**
     * GETEX: the string value (or null) and a TTL change: an absolute expiry in epoch milliseconds,
     * {@link #TTL_KEEP} or {@link #TTL_PERSIST}.
     */
    public byte[] getEx(byte[] key, long expireAtMillis) {
        if (expireAtMillis == 0 || expireAtMillis < TTL_PERSIST) {
            throw new BadRequestException("invalid expire time in 'getex' command");
        }
        return writeKey(key, (k, e, f, now) -> {
            requireString(e);
            if (e == null) {
                return null;
            }
            if (expireAtMillis == TTL_PERSIST) {
                if (e.expireAt >= 0) {
                    f.op(LogDescriptor.OP_EXPIRE).putBytes(k.bytes).putLong(-1);
                }
            } else if (expireAtMillis > 0) {
                if (expireAtMillis <= now) {
                    f.op(LogDescriptor.OP_DELETE).putBytes(k.bytes);
                } else {
                    f.op(LogDescriptor.OP_EXPIRE).putBytes(k.bytes).putLong(expireAtMillis);
                }
            }
            return copyValue(e);
        });
    }

    /** INCRBY / DECRBY: adds to a decimal 64-bit integer string (a missing key counts as 0); keeps the TTL. */
    public long incrBy(byte[] key, long delta) {
        long[] r = new long[1];
        updateString(key, 20, NotANumberException.NOT_AN_INTEGER, old -> {
            r[0] = RedisNumbers.addExact(old == null ? 0 : RedisNumbers.parseLong(old), delta);
            return RedisNumbers.formatLong(r[0]);
        });
        return r[0];
    }

    /** INCRBYFLOAT with a double increment; returns the new value as Redis prints it. */
    public String incrByFloat(byte[] key, double delta) {
        return incrByFloat(key, RedisNumbers.fromDouble(delta));
    }

    /** INCRBYFLOAT with the increment as the client sent it; returns the new value as Redis prints it. */
    public String incrByFloat(byte[] key, String delta) {
        return incrByFloat(key, RedisNumbers.parseFloat(delta));
    }

    private String incrByFloat(byte[] key, BigDecimal delta) {
        String[] r = new String[1];
        updateString(key, 5000, NotANumberException.NOT_A_FLOAT, old -> {
            r[0] = RedisNumbers.addFloat(old == null ? BigDecimal.ZERO : RedisNumbers.parseFloat(old), delta);
            return r[0].getBytes(StandardCharsets.US_ASCII);
        });
        return r[0];
    }

    /**
     * Replaces a string by a function of its value (null when missing), keeping its TTL; a value longer than
     * {@code maxNumberLength} cannot be a number and is refused with {@code notANumber} before it is copied.
     */
    private void updateString(byte[] key, int maxNumberLength, String notANumber, Function<byte[], byte[]> change) {
        writeKey(key, (k, e, f, now) -> {
            requireString(e);
            if (e != null && e.length > maxNumberLength) {
                throw new NotANumberException(notANumber);
            }
            byte[] nv = change.apply(e == null ? null : copyValue(e));
            f.op(LogDescriptor.OP_STRING_PUT).putBytes(k.bytes).putLong(e == null ? -1 : e.expireAt).putBytes(nv);
            return null;
        });
    }

    /** APPEND: returns the new length; creates the key when missing. */
    public long append(byte[] key, byte[] suffix) {
        return writeKey(key, (k, e, f, now) -> {
            requireString(e);
            long cur = e == null ? 0 : e.length;
            long len = cur + suffix.length;
            checkValue(len);
            if (e == null || suffix.length > 0) {
                writeAt(f, k, e, cur, suffix);
            }
            return len;
        });
    }

    /** STRLEN: 0 when missing. */
    public long strlen(byte[] key) {
        return readKey(key, e -> {
            requireString(e);
            return e == null ? 0L : e.length;
        });
    }

    /** GETRANGE: bytes {@code start..end} inclusive, negative indexes from the end; empty (never null) when none. */
    public byte[] getRange(byte[] key, long start, long end) {
        return readKey(key, e -> {
            requireString(e);
            long len = e == null ? 0 : e.length;
            if (start < 0 && end < 0 && start > end) {
                return new byte[0];
            }
            long from = Math.max(0, start < 0 ? len + start : start);
            long to = Math.min(len - 1, Math.max(0, end < 0 ? len + end : end));
            if (from > to || len == 0) {
                return new byte[0];
            }
            byte[] out = new byte[(int) (to - from + 1)];
            MemorySegment.copy(Keyspace.value(e), ValueLayout.JAVA_BYTE, from, out, 0, out.length);
            return out;
        });
    }

    /** SETRANGE: overwrites from {@code offset}, zero-padding; returns the new length. */
    public long setRange(byte[] key, long offset, byte[] bytes) {
        if (offset < 0) {
            throw new BadRequestException("offset is out of range");
        }
        return writeKey(key, (k, e, f, now) -> {
            requireString(e);
            long cur = e == null ? 0 : e.length;
            if (bytes.length == 0) {
                return cur;
            }
            checkValue(offset + bytes.length);
            writeAt(f, k, e, offset, bytes);
            return Math.max(cur, offset + bytes.length);
        });
    }

    /** SETBIT: sets or clears one bit (bit 0 is the high bit of byte 0), zero-padding; returns the old bit. */
    public int setBit(byte[] key, long bitOffset, boolean on) {
        if (bitOffset < 0) {
            throw new BadRequestException("bit offset is not an integer or out of range");
        }
        long at = bitOffset >>> 3;
        int mask = 1 << (7 - (int) (bitOffset & 7));
        return writeKey(key, (k, e, f, now) -> {
            requireString(e);
            int old = e == null || at >= e.length ? 0 : Keyspace.value(e).get(ValueLayout.JAVA_BYTE, at) & 0xff;
            int nv = on ? old | mask : old & ~mask;
            if (e == null || nv != old || at >= e.length) {
                checkValue(at + 1);
                writeAt(f, k, e, at, new byte[] {(byte) nv});
            }
            return (old & mask) != 0 ? 1 : 0;
        });
    }

    /**
     * The op for APPEND/SETRANGE. On a value held in a blob file it is the whole new value: a write-at record would
     * need the old file at replay, which may be deleted by then. Blob files are never changed, so the result lives in
     * memory.
     */
    private void writeAt(FrameBuilder f, Key k, Keyspace.Entry e, long offset, byte[] bytes) {
        if (e == null || e.blob == null) {
            f.op(LogDescriptor.OP_STRING_WRITE_AT).putBytes(k.bytes).putLong(offset).putBytes(bytes);
            return;
        }
        byte[] nv = new byte[Math.toIntExact(Math.max(e.length, offset + bytes.length))];
        MemorySegment.copy(Keyspace.value(e), ValueLayout.JAVA_BYTE, 0, nv, 0, (int) e.length);
        System.arraycopy(bytes, 0, nv, (int) offset, bytes.length);
        f.op(LogDescriptor.OP_STRING_PUT).putBytes(k.bytes).putLong(e.expireAt).putBytes(nv);
    }

    /**
     * MSET (atomic) or, with {@code onlyIfNoneExist}, MSETNX. Clears TTLs of the keys written.
     *
     * @param keysAndValues key, value, key, value, ...
     * @return false only for MSETNX when some key existed (nothing is written then)
     */
    public boolean mset(List<byte[]> keysAndValues, boolean onlyIfNoneExist) {
        checkOpen();
        if (keysAndValues.isEmpty() || keysAndValues.size() % 2 != 0) {
            throw new BadRequestException("wrong number of arguments for 'mset' command");
        }
        Key[] ks = new Key[keysAndValues.size() / 2];
        for (int i = 0; i < ks.length; i++) {
            ks[i] = key(keysAndValues.get(2 * i));
            checkValue(keysAndValues.get(2 * i + 1).length);
        }
        BlobVersion[] held = new BlobVersion[ks.length];
        try {
            for (int i = 0; i < ks.length; i++) {
                held[i] = storeAsBlob(null, keysAndValues.get(2 * i + 1));
            }
            return mset(ks, keysAndValues, held, onlyIfNoneExist);
        } finally {
            for (BlobVersion v : held) {
                if (v != null) {
                    v.release();
                }
            }
        }
    }

    private boolean mset(Key[] ks, List<byte[]> keysAndValues, BlobVersion[] held, boolean onlyIfNoneExist) {
        long ticket;
        Lock[] locks = lockShards(shardIndexes(ks), true);
        try {
            FrameBuilder f = frame();
            long now = System.currentTimeMillis();
            boolean any = false;
            for (Key k : ks) {
                any |= liveWrite(keyspace.shard(k), k, now, f) != null;
            }
            if (onlyIfNoneExist && any) {
                ticket = commit(f);
                return false;
            }
            for (int i = 0; i < ks.length; i++) {
                putString(f, ks[i], -1, keysAndValues.get(2 * i + 1), held[i]);
            }
            ticket = commit(f);
        } finally {
            unlock(locks);
        }
        durable(ticket);
        return true;
    }

    /** MGET: one entry per key, null for missing keys and keys that are not strings. */
    public List<byte[]> mget(byte[]... keys) {
        checkOpen();
        Key[] ks = keys(keys);
        Lock[] locks = lockShards(shardIndexes(ks), false);
        try {
            long now = System.currentTimeMillis();
            List<byte[]> out = new ArrayList<>(ks.length);
            for (Key k : ks) {
                Keyspace.Entry e = liveRead(keyspace.shard(k), k, now);
                out.add(e == null || e.type != Keyspace.STRING ? null : copyValue(e));
            }
            return out;
        } finally {
            unlock(locks);
        }
    }

    // =====================================================================================================
    // Hashes
    // =====================================================================================================

    private Key field(byte[] f) {
        return bounded(f, "hash field");
    }

    /** HSET: sets fields; returns how many were added (not counting updated ones). */
    public long hset(byte[] key, List<byte[]> fieldsAndValues) {
        if (fieldsAndValues.isEmpty() || fieldsAndValues.size() % 2 != 0) {
            throw new BadRequestException("wrong number of arguments for 'hset' command");
        }
        Key[] fields = new Key[fieldsAndValues.size() / 2];
        for (int i = 0; i < fields.length; i++) {
            fields[i] = field(fieldsAndValues.get(2 * i));
            checkValue(fieldsAndValues.get(2 * i + 1).length);
        }
        return writeKey(key, (k, e, f, now) -> {
            requireHash(e);
            long added = 0;
            Set<Key> seen = new HashSet<>();
            for (Key fk : fields) {
                if (seen.add(fk) && (e == null || !e.hash.containsKey(fk))) {
                    added++;
                }
            }
            f.op(LogDescriptor.OP_HASH_PUT).putBytes(k.bytes).putInt(fields.length);
            for (int i = 0; i < fields.length; i++) {
                f.putBytes(fields[i].bytes).putBytes(fieldsAndValues.get(2 * i + 1));
            }
            return added;
        });
    }

    /** HSETNX: sets the field only when absent. */
    public boolean hsetnx(byte[] key, byte[] field, byte[] value) {
        Key fk = field(field);
        checkValue(value.length);
        return writeKey(key, (k, e, f, now) -> {
            requireHash(e);
            if (e != null && e.hash.containsKey(fk)) {
                return false;
            }
            f.op(LogDescriptor.OP_HASH_PUT).putBytes(k.bytes).putInt(1).putBytes(fk.bytes).putBytes(value);
            return true;
        });
    }

    /** Runs {@code body} on the live hash (null when missing) under the shard's read lock. */
    private <R> R readHash(byte[] key, Function<Keyspace.Entry, R> body) {
        return readKey(key, e -> {
            requireHash(e);
            return body.apply(e);
        });
    }

    /**
     * Runs a read of one key under its shard's read lock; {@code body} sees the live entry (null when missing or
     * expired). GET, readValue and hgetAll's reader keep their own copy of this for the hot path (no lambda per
     * call).
     */
    <R> R readKey(byte[] key, Function<Keyspace.Entry, R> body) {
        checkOpen();
        Key k = key(key);
        Keyspace.Shard s = keyspace.shard(k);
        s.lock.readLock().lock();
        try {
            return body.apply(liveRead(s, k, System.currentTimeMillis()));
        } finally {
            s.lock.readLock().unlock();
        }
    }

    /** HGET: the field's value or null. */
    public byte[] hget(byte[] key, byte[] field) {
        Key fk = field(field);
        return readHash(key, e -> {
            byte[] v = e == null ? null : e.hash.get(fk);
            return v == null ? null : v.clone();
        });
    }

    /** HMGET: one entry per field, null when missing. */
    public List<byte[]> hmget(byte[] key, byte[]... fields) {
        Key[] fks = new Key[fields.length];
        for (int i = 0; i < fields.length; i++) {
            fks[i] = field(fields[i]);
        }
        return readHash(key, e -> {
            List<byte[]> out = new ArrayList<>(fks.length);
            for (Key fk : fks) {
                byte[] v = e == null ? null : e.hash.get(fk);
                out.add(v == null ? null : v.clone());
            }
            return out;
        });
    }

    /** HGETALL: field, value, field, value, ... in insertion order (copies); empty when missing. */
    public List<byte[]> hgetAll(byte[] key) {
        ArrayList<byte[]> out = new ArrayList<>();
        hgetAll(key, new HashReader() {
            @Override
            public void size(int pairs) {
                out.ensureCapacity(pairs * 2);
            }

            @Override
            public void pair(byte[] field, byte[] value) {
                out.add(field.clone());
                out.add(value.clone());
            }
        });
        return out;
    }

    /**
     * HGETALL without copies: hands the live hash's size, then its fields and values in insertion order, to
     * {@code into} under the shard's read lock (size 0 when the key is missing). The arrays are the store's own:
     * {@code into} reads them during the call (a reply encoder copies them into its buffer) and neither keeps nor
     * changes them.
     */
    public void hgetAll(byte[] key, HashReader into) {
        checkOpen();
        Key k = key(key);
        Keyspace.Shard s = keyspace.shard(k);
        s.lock.readLock().lock();
        try {
            Keyspace.Entry e = liveRead(s, k, System.currentTimeMillis());
            requireHash(e);
            if (e == null) {
                into.size(0);
                return;
            }
            into.size(e.hash.size());
            for (Map.Entry<Key, byte[]> fe : e.hash.entrySet()) {
                into.pair(fe.getKey().bytes, fe.getValue());
            }
        } finally {
            s.lock.readLock().unlock();
        }
    }

    /** Receives a hash from {@link #hgetAll(byte[], HashReader)}, under the shard's read lock. */
    public interface HashReader {
        /** The number of field-value pairs that follow; called first, once. */
        void size(int pairs);

        /** One field and its value, the store's own arrays: read them during the call, keep and change neither. */
        void pair(byte[] field, byte[] value);
    }

    /** HDEL: removes fields, returns how many existed; removing the last field deletes the key. */
    public long hdel(byte[] key, byte[]... fields) {
        Key[] fks = new Key[fields.length];
        for (int i = 0; i < fields.length; i++) {
            fks[i] = field(fields[i]);
        }
        return writeKey(key, (k, e, f, now) -> {
            requireHash(e);
            List<Key> present = new ArrayList<>();
            if (e != null) {
                Set<Key> seen = new HashSet<>();
                for (Key fk : fks) {
                    if (seen.add(fk) && e.hash.containsKey(fk)) {
                        present.add(fk);
                    }
                }
            }
            if (!present.isEmpty()) {
                f.op(LogDescriptor.OP_HASH_DEL).putBytes(k.bytes).putInt(present.size());
                for (Key fk : present) {
                    f.putBytes(fk.bytes);
                }
            }
            return (long) present.size();
        });
    }

    /** HEXISTS. */
    public boolean hexists(byte[] key, byte[] field) {
        Key fk = field(field);
        return readHash(key, e -> e != null && e.hash.containsKey(fk));
    }

    /** HLEN: 0 when missing. */
    public long hlen(byte[] key) {
        return readHash(key, e -> e == null ? 0L : e.hash.size());
    }

    /** HKEYS in insertion order. */
    public List<byte[]> hkeys(byte[] key) {
        return readHash(key, e -> {
            List<byte[]> out = new ArrayList<>();
            if (e != null) {
                for (Key fk : e.hash.keySet()) {
                    out.add(fk.bytes.clone());
                }
            }
            return out;
        });
    }

    /** HVALS in insertion order. */
    public List<byte[]> hvals(byte[] key) {
        return readHash(key, e -> {
            List<byte[]> out = new ArrayList<>();
            if (e != null) {
                for (byte[] v : e.hash.values()) {
                    out.add(v.clone());
                }
            }
            return out;
        });
    }

    /** HSTRLEN: the value's length, 0 when missing. */
    public long hstrlen(byte[] key, byte[] field) {
        Key fk = field(field);
        return readHash(key, e -> {
            byte[] v = e == null ? null : e.hash.get(fk);
            return v == null ? 0L : v.length;
        });
    }

    /** HINCRBY: adds to a field holding a decimal 64-bit integer (missing counts as 0). */
    public long hincrBy(byte[] key, byte[] field, long delta) {
        long[] r = new long[1];
        updateField(key, field, old -> {
            long cur = old == null ? 0 : RedisNumbers.parseLong(old);
            r[0] = RedisNumbers.addExact(cur, delta);
            return RedisNumbers.formatLong(r[0]);
        });
        return r[0];
    }

    /** HINCRBYFLOAT: adds to a field holding a float; returns the new value as Redis prints it. */
    public String hincrByFloat(byte[] key, byte[] field, String delta) {
        BigDecimal d = RedisNumbers.parseFloat(delta);
        String[] r = new String[1];
        updateField(key, field, old -> {
            BigDecimal cur = old == null ? BigDecimal.ZERO : RedisNumbers.parseFloat(old);
            r[0] = RedisNumbers.addFloat(cur, d);
            return r[0].getBytes(StandardCharsets.US_ASCII);
        });
        return r[0];
    }

    private void updateField(byte[] key, byte[] field, Function<byte[], byte[]> change) {
        Key fk = field(field);
        writeKey(key, (k, e, f, now) -> {
            requireHash(e);
            byte[] nv = change.apply(e == null ? null : e.hash.get(fk));
            f.op(LogDescriptor.OP_HASH_PUT).putBytes(k.bytes).putInt(1).putBytes(fk.bytes).putBytes(nv);
            return null;
        });
    }

    /** The set commands (SADD, SINTER, ...) on this store's keyspace. */
    public Sets sets() {
        return sets;
    }

    /** The list commands (LPUSH, LRANGE, ...) on this store's keyspace. */
    public Lists lists() {
        return lists;
    }

    /** The sorted set commands (ZADD, ZRANGE, ...) on this store's keyspace. */
    public SortedSets sortedSets() {
        return sortedSets;
    }

    /** The body of a read or write of several keys: their live entries in argument order (null when missing). */
    @FunctionalInterface
    interface KeysBody<R> {
        R apply(Key[] keys, Keyspace.Entry[] live, FrameBuilder f, long now);
    }

    /**
     * Runs {@code body} with the shards of {@code keys} locked (write locks when {@code write}), commits the frame it
     * fills and waits for durability as {@link #writeKey} does; a read-only body leaves the frame empty (expired keys
     * it meets are then left to the expiry sweep).
     */
    <R> R withKeys(byte[][] keys, boolean write, KeysBody<R> body) {
        checkOpen();
        Key[] ks = keys(keys);
        long ticket = 0;
        R result;
        Lock[] locks = lockShards(shardIndexes(ks), write);
        try {
            FrameBuilder f = frame();
            long now = System.currentTimeMillis();
            Keyspace.Entry[] live = new Keyspace.Entry[ks.length];
            for (int i = 0; i < ks.length; i++) {
                Keyspace.Shard s = keyspace.shard(ks[i]);
                boolean seen = false;
                for (int j = 0; j < i && !seen; j++) {
                    seen = ks[j].equals(ks[i]);
                }
                live[i] = write && !seen ? liveWrite(s, ks[i], now, f) : liveRead(s, ks[i], now);
            }
            result = body.apply(ks, live, f, now);
            if (write) {
                ticket = commit(f);
            }
        } finally {
            unlock(locks);
        }
        durable(ticket);
        return result;
    }

    /**
     * The body of a write to one key: it sees the key's live entry (an expired one already removed, its delete in
     * {@code f}) and appends its log records to {@code f}. Runs under the shard's write lock; may throw to refuse.
     */
    @FunctionalInterface
    interface KeyWrite<R> {
        R apply(Key k, Keyspace.Entry live, FrameBuilder f, long now);
    }

    /**
     * Runs a write to one key: the shard's write lock, the log frame committed (and applied) before the lock is
     * released, then the wait for durability the fsync policy asks for, outside the lock.
     */
    <R> R writeKey(byte[] key, KeyWrite<R> body) {
        checkOpen();
        Key k = key(key);
        Keyspace.Shard s = keyspace.shard(k);
        long ticket;
        R result;
        s.lock.writeLock().lock();
        try {
            FrameBuilder f = frame();
            long now = System.currentTimeMillis();
            result = body.apply(k, liveWrite(s, k, now, f), f, now);
            ticket = commit(f);
        } finally {
            s.lock.writeLock().unlock();
        }
        durable(ticket);
        return result;
    }

    /**
     * One step of an HSCAN iteration; {@code keys()} of the result alternates field, value. Fields are visited in
     * the order of their hash codes, so every field present for the whole iteration is returned.
     */
    public ScanResult hscan(byte[] key, long cursor, String globOrNull, int count) {
        if (count < 1) {
            throw new BadRequestException("syntax error: COUNT must be at least 1");
        }
        byte[] pattern = globOrNull == null ? null : globOrNull.getBytes(StandardCharsets.UTF_8);
        return readHash(key, e -> {
            List<byte[]> out = new ArrayList<>();
            if (e == null || cursor < 0 || cursor > 0xffffffffL) {
                return new ScanResult(0, out);
            }
            List<Map.Entry<Key, byte[]>> fields = new ArrayList<>();
            for (Map.Entry<Key, byte[]> fe : e.hash.entrySet()) {
                if (Integer.toUnsignedLong(fe.getKey().hashCode()) >= cursor) {
                    fields.add(fe);
                }
            }
            fields.sort((a, b) -> Integer.compareUnsigned(a.getKey().hashCode(), b.getKey().hashCode()));
            int taken = 0;
            long next = 0;
            for (int i = 0; i < fields.size(); i++) {
                Map.Entry<Key, byte[]> fe = fields.get(i);
                long h = Integer.toUnsignedLong(fe.getKey().hashCode());
                if (taken >= count && h != Integer.toUnsignedLong(fields.get(i - 1).getKey().hashCode())) {
                    next = h;
                    break;
                }
                taken++;
                if (pattern == null || Glob.matches(pattern, fe.getKey().bytes)) {
                    out.add(fe.getKey().bytes.clone());
                    out.add(fe.getValue().clone());
                }
            }
            return new ScanResult(next, out);
        });
    }

    // =====================================================================================================
    // Documents
    // =====================================================================================================

    private static byte[] collectionName(String name) {
        Objects.requireNonNull(name, "collection");
        byte[] b = name.getBytes(StandardCharsets.UTF_8);
        if (b.length == 0 || b.length > MAX_COLLECTION_NAME_BYTES || name.indexOf('\0') >= 0
                || name.indexOf('$') >= 0) {
            throw new BadRequestException("invalid collection name '" + name + "': 1.." + MAX_COLLECTION_NAME_BYTES
                    + " bytes of UTF-8 without '$' or NUL");
        }
        return b;
    }

    private byte[] encodeDocument(BsonDocument d) {
        byte[] b = BsonValues.encode(d);
        if (b.length > config.maxDocumentBytes()) {
            throw new LimitExceededException("document is " + b.length + " bytes, larger than the limit of "
                    + config.maxDocumentBytes());
        }
        return b;
    }

    private static byte[] encodeId(BsonValue id) {
        return BsonValues.encode(new BsonDocument("_id", id));
    }

    /** A copy of {@code doc} with {@code _id} first (generated when absent). */
    private static BsonDocument withId(BsonDocument doc) {
        BsonValue id = doc.get("_id");
        if (id == null) {
            id = new BsonObjectId();
        } else if (id.isArray()) {
            throw new BadRequestException("can't use an array for _id");
        } else if (id.isDocument() && !id.asDocument().isEmpty() && id.asDocument().getFirstKey().startsWith("$")) {
            throw new BadRequestException("_id fields may not contain '$'-prefixed fields");
        }
        BsonDocument out = new BsonDocument("_id", id);
        for (Map.Entry<String, BsonValue> e : doc.entrySet()) {
            if (!e.getKey().equals("_id")) {
                out.put(e.getKey(), e.getValue());
            }
        }
        return out.clone();
    }

    /**
     * Inserts a document (the caller's object is not modified); an {@code _id} ObjectId is generated when absent.
     *
     * @return the document's {@code _id}
     * @throws BadRequestException on a duplicate {@code _id}
     */
    public BsonValue insertOne(String collection, BsonDocument document) {
        return insertMany(collection, List.of(document)).getFirst();
    }

    /** Inserts documents atomically (all or none); returns their ids in order. */
    public List<BsonValue> insertMany(String collection, List<BsonDocument> docs) {
        checkOpen();
        byte[] name = collectionName(collection);
        List<BsonDocument> prepared = new ArrayList<>(docs.size());
        List<byte[]> encoded = new ArrayList<>(docs.size());
        for (BsonDocument d : docs) {
            BsonDocument p = withId(Objects.requireNonNull(d, "document"));
            prepared.add(p);
            encoded.add(encodeDocument(p));
        }
        long ticket;
        Lock w = documents.lock.writeLock();
        w.lock();
        try {
            Documents.Collection c = documents.collections.get(collection);
            Set<Object> batch = new HashSet<>();
            for (BsonDocument p : prepared) {
                Object idKey = BsonValues.idKey(p.get("_id"));
                if (!batch.add(idKey) || (c != null && c.byId.containsKey(idKey))) {
                    throw new BadRequestException("E11000 duplicate key error collection: " + collection
                            + " index: _id_ dup key: { _id: " + p.get("_id") + " }");
                }
            }
            FrameBuilder f = frame();
            f.op(LogDescriptor.OP_COLLECTION_CREATE).putBytes(name);
            for (byte[] e : encoded) {
                f.op(LogDescriptor.OP_DOCUMENT_PUT).putBytes(name).putBytes(e);
            }
            ticket = commit(f);
        } finally {
            w.unlock();
        }
        durable(ticket);
        List<BsonValue> ids = new ArrayList<>(prepared.size());
        for (BsonDocument p : prepared) {
            ids.add(p.get("_id"));
        }
        return ids;
    }

    /**
     * Stored documents matching. Where the filter requires a field to equal a value and that field is {@code _id} or
     * has an index, only the documents holding the value are examined (the smallest such set), in the order they
     * gained it; otherwise the collection is scanned in insertion order. The caller's filter is compiled before any
     * lock is taken.
     */
    private List<BsonDocument> matching(Documents.Collection c, DocumentFilter filter, long limit) {
        List<BsonDocument> out = new ArrayList<>();
        if (c == null || limit <= 0) {
            return out;
        }
        BsonValue id = filter.idEquals();
        if (id != null) {
            BsonDocument d = c.byId.get(BsonValues.idKey(id));
            examined.increment();
            if (d != null && filter.matches(d)) {
                out.add(d);
            }
            return out;
        }
        Collection<Object> candidates = null;
        for (Map.Entry<String, BsonValue> eq : filter.equalities()) {
            if (!Documents.Index.usable(eq.getValue())) {
                continue;
            }
            Collection<Object> ids;
            if (eq.getKey().equals("_id")) {
                Object k = BsonValues.idKey(eq.getValue());
                ids = c.byId.containsKey(k) ? List.of(k) : List.of();
            } else {
                Documents.Index ix = c.indexes.get(eq.getKey());
                if (ix == null) {
                    continue;
                }
                ids = ix.lookup(eq.getValue());
            }
            if (candidates == null || ids.size() < candidates.size()) {
                candidates = ids;
            }
        }
        if (candidates != null) {
            for (Object k : candidates) {
                if (take(c.byId.get(k), filter, out, limit)) {
                    break;
                }
            }
        } else {
            for (BsonDocument d : c.byId.values()) {
                if (take(d, filter, out, limit)) {
                    break;
                }
            }
        }
        return out;
    }

    /** Examines {@code d}: adds it to {@code out} when it matches; true once {@code out} holds {@code limit}. */
    private boolean take(BsonDocument d, DocumentFilter filter, List<BsonDocument> out, long limit) {
        examined.increment();
        if (filter.matches(d)) {
            out.add(d);
        }
        return out.size() >= limit;
    }

    /** Documents examined by finds, updates, deletes and counts since the store opened (as MongoDB's docsExamined). */
    public long documentsExamined() {
        return examined.sum();
    }

    /** Documents matching {@code filter} (null = all), at most {@code limit} (0 = no limit), as private copies. */
    public List<BsonDocument> find(String collection, BsonDocument filter, int limit) {
        checkOpen();
        collectionName(collection);
        if (limit < 0) {
            throw new BadRequestException("limit must be >= 0");
        }
        DocumentFilter fl = DocumentFilter.compile(filter);
        Lock r = documents.lock.readLock();
        r.lock();
        try {
            List<BsonDocument> found = matching(documents.collections.get(collection), fl,
                    limit == 0 ? Long.MAX_VALUE : limit);
            List<BsonDocument> out = new ArrayList<>(found.size());
            for (BsonDocument d : found) {
                out.add(d.clone());
            }
            return out;
        } finally {
            r.unlock();
        }
    }

    /** The first matching document or null. */
    public BsonDocument findOne(String collection, BsonDocument filter) {
        List<BsonDocument> l = find(collection, filter, 1);
        return l.isEmpty() ? null : l.getFirst();
    }

    /** Applies {@code update} ($set/$unset/$inc) to the first match; inserts when none matches and {@code upsert}. */
    public UpdateResult updateOne(String collection, BsonDocument filter, BsonDocument update, boolean upsert) {
        DocumentUpdate u = DocumentUpdate.compile(update);
        return update(collection, filter, u::apply, upsert, 1);
    }

    /** Applies {@code update} to every match; inserts one document when none matches and {@code upsert}. */
    public UpdateResult updateMany(String collection, BsonDocument filter, BsonDocument update, boolean upsert) {
        DocumentUpdate u = DocumentUpdate.compile(update);
        return update(collection, filter, u::apply, upsert, Long.MAX_VALUE);
    }

    /** Replaces the first match by {@code replacement} (keeping its {@code _id}); upserts when asked. */
    public UpdateResult replaceOne(String collection, BsonDocument filter, BsonDocument replacement, boolean upsert) {
        Objects.requireNonNull(replacement, "replacement");
        for (String k : replacement.keySet()) {
            if (k.startsWith("$")) {
                throw new BadRequestException("replacement document must not contain update operators: " + k);
            }
        }
        return update(collection, filter, old -> {
            BsonDocument d = new BsonDocument();
            BsonValue id = old.get("_id");
            if (id != null) {
                d.put("_id", id);
            }
            for (Map.Entry<String, BsonValue> e : replacement.entrySet()) {
                if (!e.getKey().equals("_id") || id == null) {
                    d.put(e.getKey(), e.getValue());
                } else if (!BsonValues.equal(e.getValue(), id)) {
                    throw new BadRequestException("the (immutable) field '_id' was found to have been altered");
                }
            }
            return d.clone();
        }, upsert, 1);
    }

    private UpdateResult update(String collection, BsonDocument filter, Function<BsonDocument, BsonDocument> change,
                                boolean upsert, long limit) {
        checkOpen();
        byte[] name = collectionName(collection);
        DocumentFilter fl = DocumentFilter.compile(filter);
        long ticket;
        long matched;
        long modified = 0;
        BsonValue upsertedId = null;
        Lock w = documents.lock.writeLock();
        w.lock();
        try {
            List<BsonDocument> found = matching(documents.collections.get(collection), fl, limit);
            matched = found.size();
            FrameBuilder f = frame();
            for (BsonDocument old : found) {
                BsonDocument nd = change.apply(old);
                BsonValue oldId = old.get("_id");
                BsonValue newId = nd.get("_id");
                if (newId == null || !BsonValues.equal(oldId, newId) || newId.getBsonType() != oldId.getBsonType()) {
                    throw new BadRequestException("Performing an update on the path '_id' would modify the"
                            + " immutable field '_id'");
                }
                if (nd.equals(old)) {
                    continue;
                }
                f.op(LogDescriptor.OP_DOCUMENT_PUT).putBytes(name).putBytes(encodeDocument(nd));
                modified++;
            }
            if (matched == 0 && upsert) {
                BsonDocument seed = new BsonDocument();
                for (Map.Entry<String, BsonValue> eq : fl.equalities()) {
                    BsonValue v = eq.getValue();
                    if (v.isDocument() && !v.asDocument().isEmpty() && v.asDocument().getFirstKey().startsWith("$")) {
                        continue;
                    }
                    DocumentUpdate.set(seed, eq.getKey().split("\\."), v, eq.getKey());
                }
                BsonDocument nd = change.apply(seed);
                if (seed.containsKey("_id") && (!nd.containsKey("_id")
                        || !BsonValues.equal(seed.get("_id"), nd.get("_id")))) {
                    throw new BadRequestException("Performing an update on the path '_id' would modify the"
                            + " immutable field '_id'");
                }
                nd = withId(nd);
                upsertedId = nd.get("_id");
                Documents.Collection c = documents.collections.get(collection);
                if (c != null && c.byId.containsKey(BsonValues.idKey(upsertedId))) {
                    throw new BadRequestException("E11000 duplicate key error collection: " + collection
                            + " index: _id_ dup key: { _id: " + upsertedId + " }");
                }
                f.op(LogDescriptor.OP_DOCUMENT_PUT).putBytes(name).putBytes(encodeDocument(nd));
            }
            ticket = commit(f);
        } finally {
            w.unlock();
        }
        durable(ticket);
        return new UpdateResult(matched, modified, upsertedId);
    }

    /** Deletes the first match; returns 0 or 1. */
    public long deleteOne(String collection, BsonDocument filter) {
        return deleteMatching(collection, filter, 1);
    }

    /** Deletes every match; returns how many. */
    public long deleteMany(String collection, BsonDocument filter) {
        return deleteMatching(collection, filter, Long.MAX_VALUE);
    }

    private long deleteMatching(String collection, BsonDocument filter, long limit) {
        checkOpen();
        byte[] name = collectionName(collection);
        DocumentFilter fl = DocumentFilter.compile(filter);
        long ticket;
        long n;
        Lock w = documents.lock.writeLock();
        w.lock();
        try {
            List<BsonDocument> found = matching(documents.collections.get(collection), fl, limit);
            n = found.size();
            FrameBuilder f = frame();
            for (BsonDocument d : found) {
                f.op(LogDescriptor.OP_DOCUMENT_DELETE).putBytes(name).putBytes(encodeId(d.get("_id")));
            }
            ticket = commit(f);
        } finally {
            w.unlock();
        }
        durable(ticket);
        return n;
    }

    /** How many documents match (null filter = all). */
    public long count(String collection, BsonDocument filter) {
        checkOpen();
        collectionName(collection);
        DocumentFilter fl = DocumentFilter.compile(filter);
        Lock r = documents.lock.readLock();
        r.lock();
        try {
            Documents.Collection c = documents.collections.get(collection);
            if (c == null) {
                return 0;
            }
            if (filter == null || filter.isEmpty()) {
                return c.byId.size();
            }
            return matching(c, fl, Long.MAX_VALUE).size();
        } finally {
            r.unlock();
        }
    }

    /** Creates an empty collection; false when it existed. Inserting into a missing collection creates it too. */
    public boolean createCollection(String collection) {
        return collectionOp(collection, true);
    }

    /** Drops a collection and its documents; false when it did not exist. */
    public boolean dropCollection(String collection) {
        return collectionOp(collection, false);
    }

    private boolean collectionOp(String collection, boolean create) {
        checkOpen();
        byte[] name = collectionName(collection);
        long ticket;
        Lock w = documents.lock.writeLock();
        w.lock();
        try {
            boolean exists = documents.collections.containsKey(collection);
            if (exists == create) {
                return false;
            }
            FrameBuilder f = frame();
            f.op(create ? LogDescriptor.OP_COLLECTION_CREATE : LogDescriptor.OP_COLLECTION_DROP).putBytes(name);
            ticket = commit(f);
        } finally {
            w.unlock();
        }
        durable(ticket);
        return true;
    }

    /**
     * Creates an equality index on a field (a dotted path) of the collection, creating the collection if needed, and
     * indexes the documents already there; false when the index existed ({@code _id} always has one). Finds, updates,
     * deletes and counts whose filter requires the field to equal a scalar value then examine only the documents
     * holding it.
     *
     * @throws LimitExceededException when the collection has {@link #MAX_INDEXES} secondary indexes
     */
    public boolean createIndex(String collection, String field) {
        return indexOp(collection, field, true);
    }

    /**
     * Drops the collection's index on the field; false when there was none.
     *
     * @throws BadRequestException for {@code _id}, whose index cannot be dropped
     */
    public boolean dropIndex(String collection, String field) {
        return indexOp(collection, field, false);
    }

    /** The indexed fields of the collection: {@code _id} first, then the others in the order they were created. */
    public List<String> indexes(String collection) {
        checkOpen();
        collectionName(collection);
        Lock r = documents.lock.readLock();
        r.lock();
        try {
            Documents.Collection c = documents.collections.get(collection);
            List<String> out = new ArrayList<>();
            out.add("_id");
            if (c != null) {
                out.addAll(c.indexes.keySet());
            }
            return out;
        } finally {
            r.unlock();
        }
    }

    private static byte[] indexField(String field) {
        Objects.requireNonNull(field, "field");
        byte[] b = field.getBytes(StandardCharsets.UTF_8);
        if (field.isEmpty() || b.length > MAX_COLLECTION_NAME_BYTES || field.startsWith(".") || field.endsWith(".")
                || field.contains("..") || field.startsWith("$") || field.contains(".$") || field.indexOf('\0') >= 0) {
            throw new BadRequestException("invalid index field '" + field + "': a dotted path of 1.."
                    + MAX_COLLECTION_NAME_BYTES + " bytes, no empty part, no part starting with '$', no NUL");
        }
        return b;
    }

    private boolean indexOp(String collection, String field, boolean create) {
        checkOpen();
        byte[] name = collectionName(collection);
        byte[] f = indexField(field);
        if (field.equals("_id")) {
            if (create) {
                return false;
            }
            throw new BadRequestException("cannot drop _id index");
        }
        long ticket;
        Lock w = documents.lock.writeLock();
        w.lock();
        try {
            Documents.Collection c = documents.collections.get(collection);
            boolean exists = c != null && c.indexes.containsKey(field);
            if (exists == create) {
                return false;
            }
            if (create && c != null && c.indexes.size() >= MAX_INDEXES) {
                throw new LimitExceededException("collection " + collection + " already has " + MAX_INDEXES
                        + " indexes besides _id; drop one first");
            }
            FrameBuilder fb = frame();
            fb.op(create ? LogDescriptor.OP_INDEX_CREATE : LogDescriptor.OP_INDEX_DROP).putBytes(name).putBytes(f);
            ticket = commit(fb);
        } finally {
            w.unlock();
        }
        durable(ticket);
        return true;
    }

    /** Collection names, sorted. */
    public List<String> collections() {
        checkOpen();
        Lock r = documents.lock.readLock();
        r.lock();
        try {
            List<String> names = new ArrayList<>(documents.collections.keySet());
            Collections.sort(names);
            return names;
        } finally {
            r.unlock();
        }
    }

    // =====================================================================================================
    // Durability
    // =====================================================================================================

    /** fsyncs the log now, whatever the policy. */
    public void flush() {
        checkOpen();
        log.force();
    }

    /** SAVE: writes a snapshot and returns when it is durable and the log before it is deleted. */
    public void snapshot() {
        try {
            snapshotAsync().join();
        } catch (java.util.concurrent.CompletionException e) {
            if (e.getCause() instanceof StoreException se) {
                throw se;
            }
            throw new StoreException("snapshot failed: " + e.getCause(), e.getCause());
        }
    }

    /**
     * BGSAVE: starts a snapshot in the background (or joins the one running) and completes with its file. Writers
     * are stopped only while the log switches to a new segment and the document list is copied; keys are then
     * copied shard by shard under each shard's read lock.
     */
    public CompletableFuture<Path> snapshotAsync() {
        synchronized (snapshotMonitor) {
            checkOpen();
            if (snapshotInFlight != null) {
                return snapshotInFlight;
            }
            CompletableFuture<Path> f = new CompletableFuture<>();
            snapshotInFlight = f;
            snapshotExecutor.execute(() -> {
                Path written = null;
                Throwable failed = null;
                try {
                    written = writeSnapshot();
                } catch (Throwable t) {
                    LOG.error("snapshot failed: {}", t.toString());
                    failed = t;
                } finally {
                    // before the future completes: a caller woken by it who asks for a snapshot next must get a new
                    // one, not this finished one (a SAVE would otherwise return without covering its own writes)
                    synchronized (snapshotMonitor) {
                        snapshotInFlight = null;
                    }
                }
                if (failed == null) {
                    f.complete(written);
                } else {
                    f.completeExceptionally(failed instanceof StoreException ? failed
                            : new StoreException("snapshot failed: " + failed, failed));
                }
            });
            return f;
        }
    }

    /**
     * Snapshot {@code base} is durable under its final name: makes the rename durable, deletes the segments and
     * snapshots it replaces, and makes the deletions durable. When {@code recycle}, the newest of those segments is
     * kept as the log's spare instead where it can be ({@link LogWriter#recycle}).
     */
    private void retireOlderThan(long base, boolean recycle) throws IOException {
        LogWriter.syncDirectory(dir);
        List<Path> covered = listSorted(dir, false).stream().filter(p -> LogDescriptor.segmentId(p) < base).toList();
        for (int i = covered.size() - 1; i >= 0; i--) {
            Path p = covered.get(i);
            if (!(recycle && i == covered.size() - 1 && log.recycle(p))) {
                Files.deleteIfExists(p);
            }
        }
        for (Path p : listSorted(dir, true)) {
            if (LogDescriptor.snapshotId(p) < base) {
                Files.deleteIfExists(p);
            }
        }
        LogWriter.syncDirectory(dir);
    }

    private record CollectionCopy(byte[] name, List<String> indexes, List<BsonDocument> docs) {
    }

    private Path writeSnapshot() throws IOException {
        long started = System.nanoTime();
        long base;
        List<CollectionCopy> docs = new ArrayList<>();
        long[] position;
        Lock[] all = lockAll();
        try {
            base = log.rotate();
            position = log.lastPosition();
            for (Map.Entry<String, Documents.Collection> c : documents.collections.entrySet()) {
                docs.add(new CollectionCopy(c.getKey().getBytes(StandardCharsets.UTF_8),
                        List.copyOf(c.getValue().indexes.keySet()), new ArrayList<>(c.getValue().byId.values())));
            }
            bytesSinceSnapshot.set(0);
            changesSinceSave.set(0);
        } finally {
            unlockAll(all);
        }
        // The segment left behind is not forced here: once the snapshot below is durable it covers that segment's
        // records, so it is closed unforced and deleted (a log overwritten at 1 GB/s rotates every 64 MiB, and
        // forcing each rotation's 64 MiB kept the disk saturated under its writes). An fsync that comes first
        // (everysec's, an ALWAYS write's) forces it before the new segment's writes, as before.
        Path tmp = dir.resolve(LogDescriptor.snapshotName(base) + ".tmp");
        Path target = dir.resolve(LogDescriptor.snapshotName(base));
        long records = 0;
        // Frames to write once the shard's lock is released: copies of the builder's frames, and the pieces of large
        // strings' frames, whose values are written from their own blocks, pinned until then (copy-on-write for an
        // APPEND or SETRANGE meanwhile, an overwrite's free deferred), so no value is copied into the heap.
        List<ByteBuffer> pending = new ArrayList<>();
        List<MemorySegment> pinned = new ArrayList<>();
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            LogWriter.writeFully(ch, ByteBuffer.wrap(LogDescriptor.SNAPSHOT_MAGIC), 0);
            long pos = LogDescriptor.MAGIC_LENGTH;
            FrameBuilder f = new FrameBuilder();
            // The position the snapshot covers: the log after it starts at the next index.
            f.op(LogDescriptor.OP_POSITION).putLong(position[0]).putLong(position[1]);
            ByteBuffer head = f.seal();
            LogWriter.writeFully(ch, head, pos);
            pos += f.payloadLength() + LogDescriptor.HEADER_LENGTH;
            f.reset();
            Runnable flush = () -> {
                if (!f.isEmpty()) {
                    ByteBuffer b = f.seal();
                    byte[] copy = new byte[b.remaining()];
                    b.get(copy);
                    pending.add(ByteBuffer.wrap(copy));
                    f.reset();
                }
            };
            java.util.function.BiConsumer<Key, Keyspace.Entry> large = (k, e) -> {
                flush.run();
                keyspace.memory.pinForLog(e.string);
                pinned.add(e.string);
                f.op(LogDescriptor.OP_STRING_PUT).putBytes(k.bytes).putLong(e.expireAt)
                    .putExternal(e.string.asSlice(0, e.length));
                f.seal();
                pending.addAll(List.of(f.pieces()));
                f.reset();
            };
            for (int i = 0; i < Keyspace.SHARDS; i++) {
                Keyspace.Shard s = keyspace.shards[i];
                // Encoded under the read lock, written after releasing it, so writers wait only for a memcpy.
                s.lock.readLock().lock();
                try {
                    records += Keyspace.encodeShard(s, f, SNAPSHOT_CHUNK_BYTES, flush, EXTERNAL_VALUE_BYTES, large);
                    flush.run();
                } finally {
                    s.lock.readLock().unlock();
                }
                pos = writePending(ch, pos, pending, pinned);
            }
            for (CollectionCopy c : docs) {
                f.op(LogDescriptor.OP_COLLECTION_CREATE).putBytes(c.name());
                for (String field : c.indexes()) {
                    f.op(LogDescriptor.OP_INDEX_CREATE).putBytes(c.name())
                            .putBytes(field.getBytes(StandardCharsets.UTF_8));
                }
                for (BsonDocument d : c.docs()) {
                    f.op(LogDescriptor.OP_DOCUMENT_PUT).putBytes(c.name()).putBytes(BsonValues.encode(d));
                    records++;
                    if (f.payloadLength() >= SNAPSHOT_CHUNK_BYTES) {
                        flush.run();
                    }
                }
            }
            flush.run();
            f.op(LogDescriptor.OP_SNAPSHOT_END).putLong(records);
            flush.run();
            pos = writePending(ch, pos, pending, pinned);
            // the blob files it names first (those written without fsync since the rotation)
            blobs.syncUnsynced();
            ch.force(true);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        } finally {
            // an encoding that failed under a lock leaves its blocks pinned
            unpinForLog(pinned);
        }
        Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
        LogWriter.syncDirectory(dir);
        log.finishRotationCovered();
        retireOlderThan(base, true);
        log.prepareSpare();
        lastSnapshotMillis = System.currentTimeMillis();
        LOG.info("snapshot {} written: {} records, {} bytes, {} ms", target.getFileName(), records,
                Files.size(target), (System.nanoTime() - started) / 1_000_000);
        return target;
    }

    /**
     * Writes a snapshot's {@code pending} frames at {@code position}, then lets go of them and of the {@code pinned}
     * blocks they were written from; returns the position after them.
     */
    private long writePending(FileChannel ch, long position, List<ByteBuffer> pending, List<MemorySegment> pinned)
            throws IOException {
        long p = position;
        try {
            for (ByteBuffer b : pending) {
                int n = b.remaining();
                LogWriter.writeFully(ch, b, p);
                p += n;
            }
            return p;
        } finally {
            pending.clear();
            unpinForLog(pinned);
        }
    }

    private void unpinForLog(List<MemorySegment> blocks) {
        for (MemorySegment b : blocks) {
            keyspace.memory.unpinForLog(b);
        }
        blocks.clear();
    }

    /** When the last snapshot became durable (epoch ms), 0 if never. */
    public long lastSnapshotEpochMillis() {
        return lastSnapshotMillis;
    }

    /**
     * Bytes of the log: the current segment's records (its file may be a reused one, longer than them) and the older
     * segments' files.
     */
    private long logBytes() {
        try {
            long current = log.segmentId();
            long n = log.currentSegmentBytes();
            for (Path p : listSorted(dir, false)) {
                if (LogDescriptor.segmentId(p) != current) {
                    n += Files.size(p);
                }
            }
            return n;
        } catch (IOException e) {
            return -1;
        }
    }

    /** Figures for INFO. */
    public StoreStats stats() {
        checkOpen();
        boolean inProgress;
        synchronized (snapshotMonitor) {
            inProgress = snapshotInFlight != null;
        }
        return new StoreStats(keyspace.keys.get(), keyspace.expires.get(), keyspace.memory.usedBytes(), logBytes(),
                lastSnapshotMillis, config.fsync(), changesSinceSave.get(), documents.collections.size(),
                documents.documents.get(), inProgress, log.appendWaits(),
                keyspace.memory.mappedBytes());
    }

    // =====================================================================================================
    // Replication: the log as an oplog
    // =====================================================================================================

    /** The position of a snapshot file: the log after it starts at {@code index + 1}. */
    public record SnapshotFile(Path path, long term, long index) {
    }

    /**
     * The recent frames by (term, index), for secondaries and rollbacks. A store without a window (standalone) keeps
     * none and does not track its position here: {@link #lastPosition()} is the log's.
     */
    public Oplog oplog() {
        return oplog;
    }

    /** The position of the newest frame in the log: {@code {term, index}} (0, 0 for an empty log). */
    public long[] lastPosition() {
        checkOpen();
        return log.lastPosition();
    }

    /**
     * Called on the writer's thread after every committed write, with no store lock held (and after the fsync with
     * {@link FsyncPolicy#ALWAYS}). Must be quick and must not write to the store. Null removes it.
     */
    public void appendListener(Runnable listener) {
        this.appendListener = listener;
    }

    /**
     * Told of every key a write changes (client writes, expiry, replicated frames, snapshot installs), whatever the
     * protocol: the RESP face's WATCH, blocked list pops and keyspace events hang on it. Called on the writer's
     * thread while it holds the key's shard write lock (for a flush, every shard's), after the change is applied:
     * it must be quick, must not block and must not call the store. Null removes it.
     */
    public void keyListener(KeyListener listener) {
        this.keyListener = listener;
    }

    /** What {@link #keyListener} is told. Implementations must be thread-safe; see there for the calling rules. */
    public interface KeyListener {
        /**
         * {@code key} (a fresh copy, the listener's to keep) was written or deleted; {@code expired}: it was deleted
         * because its time to live had passed (the expiry sweep, or a write that found it expired).
         */
        void keyChanged(byte[] key, boolean expired);

        /**
         * Whether anyone listens now; asked once per frame, so a listener with nobody behind it costs no key copies.
         * A registration that answers true from then on sees every write that applies after it.
         */
        default boolean wantsKeys() {
            return true;
        }

        /** Whether {@link #keyCreated} is wanted (it costs one more lookup per write). */
        default boolean wantsCreations() {
            return false;
        }

        /** {@code key} did not exist (or had expired) before this write, after {@link #keyChanged}. */
        default void keyCreated(byte[] key) {
        }

        /**
         * Every key is about to be removed (FLUSHALL); {@code live} tells whether a key exists (and is not expired)
         * just before. Valid only during the call.
         */
        void flushing(java.util.function.Predicate<byte[]> live);
    }

    /**
     * Runs {@code body} holding every shard's write lock and the documents' lock (the same lock set as a snapshot
     * takes): no other client's read or write, from any face, interleaves with it, and the store calls it makes take
     * their locks reentrantly. The RESP face's EXEC. {@code body} must not wait for another thread that uses the
     * store (a synchronous {@link #snapshot} would deadlock). Any thread.
     *
     * <p>Every write {@code body} makes is applied at once (its later reads see it) and logged as part of one frame,
     * written when {@code body} ends (also when it throws: what it applied is logged): recovery replays all of it or,
     * when the frame is torn, none; a secondary applies it as one frame under the locks of every key it names. A
     * scope whose changes pass {@link #ATOMIC_FRAME_MAX} bytes is logged in several frames. The durability wait of
     * the fsync policy happens once, after the locks are released. A nested call runs inside the outer scope.
     */
    public <T> T exclusive(java.util.function.Supplier<T> body) {
        checkOpen();
        if (ATOMIC.get() != null) {
            return body.get();
        }
        AtomicScope scope = new AtomicScope();
        Lock[] all = lockAll();
        T result;
        ATOMIC.set(scope);
        try {
            result = body.get();
        } finally {
            ATOMIC.remove();
            try {
                flushScope(scope);
            } finally {
                unlockAll(all);
            }
        }
        durable(scope.ticket);
        return result;
    }

    /** The oplog index of the last write this thread committed (0 if none): what a WAIT after it waits for. */
    public static long lastCommitIndex() {
        return LAST_COMMIT.get()[0];
    }

    /** The term stamped on writes from now on (a new primary sets its own before it accepts writes). */
    public void term(long term) {
        log.term(term);
        blobs.versionFloor(term << 32);
    }

    /**
     * The blob files that {@code entries} name and this store lacks (or holds with other content): {version, length,
     * crc32c} each. A secondary copies them from its primary before it applies the entries.
     */
    public List<long[]> missingBlobs(List<Oplog.Entry> entries) {
        List<long[]> refs = new ArrayList<>();
        for (Oplog.Entry e : entries) {
            int len = e.frame().length - LogDescriptor.HEADER_LENGTH;
            if (len > 0) {
                FrameKeys.touched(ByteBuffer.wrap(e.frame(), LogDescriptor.HEADER_LENGTH, len).slice()
                    .order(LogDescriptor.ORDER), refs);
            }
        }
        refs.removeIf(r -> blobs.has(r[0], r[1], (int) r[2]));
        return refs;
    }

    /** The blob files a snapshot file names that this store lacks, as {@link #missingBlobs(List)}. */
    public List<long[]> missingBlobs(Path snapshot) throws IOException {
        List<long[]> refs = new ArrayList<>();
        FrameScanner.scan(snapshot, LogDescriptor.SNAPSHOT_MAGIC, (payload, off) -> FrameKeys.touched(payload, refs));
        refs.removeIf(r -> blobs.has(r[0], r[1], (int) r[2]));
        return refs;
    }

    public long term() {
        return log.term();
    }

    /**
     * Lets client writes in (the primary) or refuses them with {@code reason} (a secondary, or a member between
     * primaries; the reason starts with NOTPRIMARY). Active expiry runs only while writes are allowed: a secondary's
     * expiry deletes come from its primary.
     */
    public void allowWrites(boolean allowed, String reason) {
        if (reason != null) {
            readOnlyReason = reason;
        }
        writesAllowed = allowed;
    }

    public boolean writesAllowed() {
        return writesAllowed;
    }

    /** Why writes are refused while {@link #writesAllowed()} is false: the text of their error (NOTPRIMARY ...). */
    public String readOnlyReason() {
        return readOnlyReason;
    }

    /**
     * Appends frames received from the primary to this log, as they are (same bytes, same positions), and applies
     * each under the locks of what it touches, in order. Returns once they are handed to the OS (fsynced with
     * {@link FsyncPolicy#ALWAYS}): the position returned is what a secondary acknowledges as durable. Called by one
     * thread at a time (the member's replication thread).
     *
     * @throws StoreException when a frame is damaged, or does not follow this log (nothing of it was applied)
     */
    public long applyReplicated(List<Oplog.Entry> entries) {
        checkOpen();
        long ticket = 0;
        long last = log.lastIndex();
        for (Oplog.Entry e : entries) {
            byte[] frame = e.frame();
            ByteBuffer b = ByteBuffer.wrap(frame).order(LogDescriptor.ORDER);
            int len = frame.length - LogDescriptor.HEADER_LENGTH;
            if (len < LogDescriptor.POSITION_OP_LENGTH || b.getInt(0) != len
                || LogDescriptor.crc(len, frame, LogDescriptor.HEADER_LENGTH, len) != b.getInt(4)) {
                throw new StoreException("replicated frame at index " + e.index() + " is damaged (length or CRC)");
            }
            int at = frame.length - LogDescriptor.POSITION_OP_LENGTH;
            if (frame[at] != LogDescriptor.OP_POSITION || b.getLong(at + 1) != e.term()
                || b.getLong(at + 9) != e.index()) {
                throw new StoreException("replicated frame at index " + e.index() + " carries another position");
            }
            ByteBuffer payload = ByteBuffer.wrap(frame, LogDescriptor.HEADER_LENGTH, len).slice()
                .order(LogDescriptor.ORDER);
            Lock[] locks = lockTouched(payload);
            try {
                ticket = log.appendReplicated(frame, e.term(), e.index());
                applyFrame(payload);
            } finally {
                unlock(locks);
            }
            bytesSinceSnapshot.addAndGet(frame.length);
            changesSinceSave.incrementAndGet();
            last = e.index();
        }
        if (ticket != 0) {
            if (config.fsync() == FsyncPolicy.ALWAYS) {
                log.syncTo(ticket);
            } else {
                log.writeOut();
            }
            maybeSnapshot();
        }
        return last;
    }

    /** The locks of what a frame touches, in the store's lock order; every lock for ops it cannot place. */
    private Lock[] lockTouched(ByteBuffer payload) {
        FrameKeys.Touched t = FrameKeys.touched(payload);
        if (t.shards() == null) {
            return lockAll();
        }
        Lock[] shardLocks = lockShards(t.shards(), true);
        if (!t.documents()) {
            return shardLocks;
        }
        Lock[] locks = Arrays.copyOf(shardLocks, shardLocks.length + 1);
        locks[shardLocks.length] = documents.lock.writeLock();
        locks[shardLocks.length].lock();
        return locks;
    }

    /**
     * Writes a snapshot now (or joins the one running) and returns it with the position it covers, for a member
     * that must resynchronise. The file may be deleted by the next snapshot: copy or link it before that.
     */
    public SnapshotFile snapshotForTransfer() throws IOException {
        Path p = snapshotAsync().join();
        long[] pos = snapshotPosition(p);
        return new SnapshotFile(p, pos[0], pos[1]);
    }

    /** Reads the position a snapshot file covers (its first frame); {0, 0} for a snapshot written before positions. */
    public static long[] snapshotPosition(Path snapshot) throws IOException {
        try (FileChannel ch = FileChannel.open(snapshot, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(LogDescriptor.MAGIC_LENGTH + LogDescriptor.HEADER_LENGTH
                + LogDescriptor.POSITION_OP_LENGTH).order(LogDescriptor.ORDER);
            while (b.hasRemaining() && ch.read(b, b.position()) > 0) {
                // keep reading
            }
            if (b.position() == b.limit() && b.getInt(LogDescriptor.MAGIC_LENGTH) == LogDescriptor.POSITION_OP_LENGTH
                && b.get(LogDescriptor.MAGIC_LENGTH + LogDescriptor.HEADER_LENGTH) == LogDescriptor.OP_POSITION) {
                int at = LogDescriptor.MAGIC_LENGTH + LogDescriptor.HEADER_LENGTH + 1;
                return new long[] {b.getLong(at), b.getLong(at + 8)};
            }
            return new long[] {0, 0};
        }
    }

    /**
     * Replaces everything this store holds with a snapshot received from another member (a new or wiped member, or
     * one whose log diverged): the file is verified first, then, with every writer stopped, the keyspace and the
     * documents are emptied, the snapshot loaded, the log restarted after its position and the file kept as this
     * store's newest snapshot (older log files are deleted). Blob files it names must be in place already.
     *
     * @throws CorruptLogException when the file is damaged (nothing was changed)
     */
    public void installSnapshot(Path file) throws IOException {
        checkOpen();
        FrameScanner.Outcome check = FrameScanner.scan(file, LogDescriptor.SNAPSHOT_MAGIC, null);
        if (!check.clean() || check.lastOp() != LogDescriptor.OP_SNAPSHOT_END) {
            throw new CorruptLogException(file, check.clean() ? check.validEnd() : check.badOffset(),
                check.clean() ? "snapshot has no end record" : check.problem());
        }
        long[] pos = snapshotPosition(file);
        CompletableFuture<Path> running;
        synchronized (snapshotMonitor) {
            running = snapshotInFlight;
        }
        if (running != null) {
            // Let it finish first: its clean-up must not run after this one's.
            running.exceptionally(t -> null).join();
        }
        synchronized (snapshotMonitor) {
            Lock[] all = lockAll();
            try {
                keyspace.applyFlush();
                for (String name : new ArrayList<>(documents.collections.keySet())) {
                    documents.applyDrop(name);
                }
                FrameScanner.scan(file, LogDescriptor.SNAPSHOT_MAGIC, (payload, off) -> applyFrame(payload));
                // positions may go back: no segment may reuse a file that holds frames above them
                log.dropSpare();
                long base = log.rotate();
                Files.move(file, dir.resolve(LogDescriptor.snapshotName(base)), StandardCopyOption.ATOMIC_MOVE,
                    StandardCopyOption.REPLACE_EXISTING);
                retireOlderThan(base, false);
                log.resetPosition(pos[0], pos[1]);
                bytesSinceSnapshot.set(0);
                lastSnapshotMillis = System.currentTimeMillis();
            } finally {
                unlockAll(all);
            }
        }
        log.finishRotation();
        LOG.info("installed snapshot at position ({}, {}) from another member", pos[0], pos[1]);
    }

    /**
     * Keeps frames that this member logged but the set's primary does not have (a deposed primary's unreplicated
     * tail) in {@code <dataDir>/rollback/rollback-<millis>.rlog}, in the log's own format (check-log reads it).
     * Returns the file, or null when there is nothing to keep.
     */
    public Path writeRollback(List<Oplog.Entry> entries) throws IOException {
        if (entries.isEmpty()) {
            return null;
        }
        Path rollbackDir = dir.resolve("rollback");
        Files.createDirectories(rollbackDir);
        Path file = rollbackDir.resolve("rollback-" + System.currentTimeMillis() + ".rlog");
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            long at = 0;
            LogWriter.writeFully(ch, ByteBuffer.wrap(LogDescriptor.SEGMENT_MAGIC), at);
            at += LogDescriptor.MAGIC_LENGTH;
            for (Oplog.Entry e : entries) {
                LogWriter.writeFully(ch, ByteBuffer.wrap(e.frame()), at);
                at += e.frame().length;
            }
            ch.force(true);
        }
        LogWriter.syncDirectory(rollbackDir);
        LOG.warn("rolled back {} records ({}..{}) that the primary does not have: kept in {}", entries.size(),
            entries.getFirst().index(), entries.getLast().index(), file);
        return file;
    }

    // =====================================================================================================
    // Active expiry
    // =====================================================================================================

    /** Visits a bounded number of shards that hold keys with a TTL and deletes the expired ones (logged). */
    private void expiryTick() {
        if (!writesAllowed) {
            return;
        }
        try {
            long deadline = System.nanoTime() + 25_000_000L;
            int visited = 0;
            for (int n = 0; n < Keyspace.SHARDS && visited < EXPIRY_SHARDS_PER_TICK; n++) {
                int i = expiryCursor;
                expiryCursor = (expiryCursor + 1) & (Keyspace.SHARDS - 1);
                if (keyspace.shards[i].withTtl == 0) {
                    continue;
                }
                visited++;
                sweepShard(i, System.currentTimeMillis());
                if (System.nanoTime() > deadline || closed) {
                    break;
                }
            }
        } catch (RuntimeException e) {
            if (!closed) {
                LOG.warn("expiry sweep failed: {}", e.toString());
            }
        }
    }

    private void sweepShard(int i, long now) {
        Keyspace.Shard s = keyspace.shards[i];
        long ticket;
        s.lock.writeLock().lock();
        try {
            if (s.withTtl == 0) {
                return;
            }
            FrameBuilder f = frame();
            for (Map.Entry<Key, Keyspace.Entry> me : s.map.entrySet()) {
                if (me.getValue().expired(now)) {
                    f.op(LogDescriptor.OP_DELETE).putBytes(me.getKey().bytes);
                }
            }
            ticket = commit(f);
        } finally {
            s.lock.writeLock().unlock();
        }
        durable(ticket);
    }
}
