package io.rdmastore.store.blob;

import io.rdmastore.store.LimitExceededException;
import io.rdmastore.store.StoreException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The files behind blob-sized values: {@code <version as 16 hex digits>.blob} in one directory, one file per stored
 * value, never changed after its commit. Which key holds which version is the store's business: its write-ahead log
 * carries a {@code STRING_BLOB} record naming the version, so the log alone decides what a restart brings back.
 *
 * <p>A write goes to a temporary file ({@code *.tmp}), is checked against the CRC32C its writer announced, fsynced,
 * renamed to its final name and the directory fsynced; only then does the store log the record that points at it.
 * A crash before the record leaves an unreferenced file, which the next start deletes. A version that no key and no
 * reader references any more is deleted by the reaper thread after the log is made durable (the record that dropped
 * it must survive a crash before the file may go).
 *
 * <p>Threads: thread-safe. {@link #commit} does the CRC and fsync outside any lock the store holds.
 */
public final class BlobStore implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(BlobStore.class);
    private static final HexFormat HEX = HexFormat.of();
    private static final String SUFFIX = ".blob";
    /** Where {@link #crc32c(FileChannel, long)} reads a file through: 1 MiB, touched once per thread. */
    private static final ThreadLocal<ByteBuffer> CRC_BUFFER = ThreadLocal.withInitial(
        () -> ByteBuffer.allocateDirect(1 << 20));
    /**
     * Suffix of the file beside the blob directory ({@code blobs.synced-through}) holding {@code syncedThrough}
     * (int64) and its complement (int64), little-endian. Beside it, not in it: the directory holds blob files only.
     */
    static final String SYNCED_FILE = ".synced-through";

    private final BlobConfig config;
    private final Path dir;
    /** Every version known: referenced, leased or waiting for the reaper. */
    private final Map<Long, BlobVersion> versions = new ConcurrentHashMap<>();
    /** Files found at open, by version, until recovery has matched them with the log. */
    private final Map<Long, Path> found = new HashMap<>();
    private final List<LegacyBlob> legacy = new ArrayList<>();
    private final BlockingQueue<BlobVersion> unreferenced = new LinkedBlockingQueue<>();
    private final int discardedAtOpen;
    private long lastVersion;
    private long tempCounter;
    private volatile boolean reaping;
    private boolean closed;
    private Thread reaper;
    private Runnable makeLogDurable;
    /** Versions committed without fsync ({@link #commit(BlobWrite, Integer, boolean)}), by version. Guarded by this. */
    private final Map<Long, Path> unsynced = new HashMap<>();
    private final Object syncing = new Object();
    /**
     * Every version up to this one is durable (or deleted), as the synced-through file says on disk; Long.MAX_VALUE
     * when that file is absent (no write was ever deferred). Guarded by this.
     */
    private long syncedThrough;
    /** What the file said at open: recovery checks the CRC of the versions above it. */
    private final long syncedThroughAtOpen;
    /** The open synced-through file, created before the first deferred write. Used under syncLock of the log. */
    private FileChannel syncedFile;

    /**
     * A blob file in the format written before blobs were named by the log ({@code <keyhex>.<version>.<crc>.blob},
     * the key in its name): adopted by the store at open when its key is free.
     */
    public record LegacyBlob(byte[] key, long version, long length, int crc32c, Path file) {
    }

    private BlobStore(BlobConfig config) throws IOException {
        this.config = config;
        this.dir = config.directory().toAbsolutePath();
        Files.createDirectories(dir);
        int discarded = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path p : files) {
                String name = p.getFileName().toString();
                if (name.endsWith(".tmp") || name.endsWith(".old")) {
                    // unfinished writes, and versions retired by the legacy format
                    Files.deleteIfExists(p);
                    discarded++;
                    continue;
                }
                if (!name.endsWith(SUFFIX)) {
                    LOG.warn("ignoring unexpected file {} in the blob directory", p);
                    continue;
                }
                String[] parts = name.substring(0, name.length() - SUFFIX.length()).split("\\.");
                try {
                    if (parts.length == 1 && parts[0].length() == 16) {
                        long version = Long.parseUnsignedLong(parts[0], 16);
                        found.put(version, p);
                        lastVersion = Math.max(lastVersion, version);
                    } else if (parts.length == 3) {
                        byte[] key = parts[0].equals("_") ? new byte[0] : HEX.parseHex(parts[0]);
                        long version = Long.parseLong(parts[1]);
                        legacy.add(new LegacyBlob(key, version, Files.size(p), (int) Long.parseLong(parts[2], 16), p));
                    } else {
                        LOG.warn("ignoring unexpected file {} in the blob directory", p);
                    }
                } catch (IllegalArgumentException e) {
                    LOG.warn("ignoring unexpected file {} in the blob directory", p);
                }
            }
        }
        legacy.sort(Comparator.comparingLong(LegacyBlob::version).reversed());
        discardedAtOpen = discarded;
        syncedThroughAtOpen = readSyncedThrough(syncedFilePath());
        syncedThrough = syncedThroughAtOpen;
    }

    private Path syncedFilePath() {
        return dir.resolveSibling(dir.getFileName() + SYNCED_FILE);
    }

    /** The mark in the synced-through file: Long.MAX_VALUE when absent, 0 (check everything) when unreadable. */
    private static long readSyncedThrough(Path file) throws IOException {
        if (!Files.exists(file)) {
            return Long.MAX_VALUE;
        }
        byte[] b = Files.readAllBytes(file);
        if (b.length >= 16) {
            java.nio.ByteBuffer bb = java.nio.ByteBuffer.wrap(b).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            long v = bb.getLong(0);
            if (bb.getLong(8) == ~v) {
                return v;
            }
        }
        LOG.warn("{} is damaged: the content of every blob file the log names is checked", file);
        return 0;
    }

    /**
     * Opens the blob directory (creating it) and deletes unfinished writes. The store then replays its log, which
     * {@link #resolve}s the versions it names, and calls {@link #startReaper} to delete the files nothing names.
     *
     * @throws StoreException when the directory cannot be read or created
     */
    public static BlobStore open(BlobConfig config) {
        config.conclude();
        try {
            return new BlobStore(config);
        } catch (IOException e) {
            throw new StoreException("cannot open blob directory " + config.directory() + ": " + e, e);
        }
    }

    /** The settings in use. */
    public BlobConfig config() {
        return config;
    }

    /** The blob directory. */
    public Path directory() {
        return dir;
    }

    /** Number of blob files held (current values, plus versions still leased or waiting for deletion). */
    public int count() {
        return versions.size();
    }

    /** Total bytes of the blob files held. */
    public long bytes() {
        long sum = 0;
        for (BlobVersion v : versions.values()) {
            sum += v.length();
        }
        return sum;
    }

    /** Whether a value of {@code length} bytes belongs in a blob file. */
    public boolean blobSized(long length) {
        return length >= config.thresholdBytes();
    }

    /**
     * The version a log record names. During recovery this matches it with a file found at open (a file that is
     * absent or of the wrong length gives a version marked {@link BlobVersion#missing()}); afterwards every version a
     * record can name is known already.
     */
    public synchronized BlobVersion resolve(long version, long length, int crc32c) {
        BlobVersion v = versions.get(version);
        if (v != null) {
            return v;
        }
        Path p = found.remove(version);
        boolean missing = p == null;
        if (p == null) {
            p = dir.resolve(name(version));
        } else {
            try {
                long size = Files.size(p);
                if (size != length) {
                    LOG.error("blob file {} holds {} bytes but the log says {}", p, size, length);
                    missing = true;
                } else if (version > syncedThroughAtOpen && !contentMatches(p, length, crc32c)) {
                    // written without fsync before a crash: the record reached the disk, the content did not all
                    LOG.error("blob file {} does not hold what the log says (CRC32C {}): its write was not durable"
                        + " when the machine stopped", p, String.format("%08x", crc32c));
                    missing = true;
                }
            } catch (IOException e) {
                LOG.error("cannot read blob file {}: {}", p, e.toString());
                missing = true;
            }
        }
        v = new BlobVersion(this, version, length, crc32c, p, missing);
        versions.put(version, v);
        lastVersion = Math.max(lastVersion, version);
        return v;
    }

    /**
     * Whether the file of {@code version} is here with this length and CRC (a replica set's secondary asks before it
     * applies a record that names a version written on its primary).
     */
    public synchronized boolean has(long version, long length, int crc32c) {
        BlobVersion v = versions.get(version);
        if (v != null) {
            return !v.missing() && v.length() == length && v.crc32c() == crc32c;
        }
        Path p = found.get(version);
        try {
            return p != null && Files.size(p) == length;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * One more reference on a version this store holds, or null (absent, missing or already deleted): a member lends it
     * to another and gives the reference back with {@link BlobVersion#release()} when the lease ends.
     */
    public BlobVersion acquire(long version) {
        BlobVersion v = versions.get(version);
        if (v == null || v.missing()) {
            return null;
        }
        try {
            v.retain();
            return v;
        } catch (IllegalStateException deleted) {
            return null;
        }
    }

    /** The file of a version this store holds, or null (to lend it to another member). */
    public Path fileOf(long version) {
        BlobVersion v = versions.get(version);
        return v == null || v.missing() ? null : v.file();
    }

    /**
     * A blob write made durable but not yet a version: its content checked, its file fsynced and closed, waiting under
     * its temporary name to be {@linkplain #installSealed installed} as a version another member numbered (a replica
     * set's secondary receives a blob before the record that names it). The next start deletes it if it never is.
     *
     * @param file the temporary file
     * @param crcNanos time spent computing the CRC32C
     * @param syncNanos time spent making the file durable (0 without fsync)
     */
    public record Sealed(Path file, long length, int crc32c, long crcNanos, long syncNanos) {
    }

    /**
     * Seals a write: checks its CRC32C against {@code expectedCrc32c}, fsyncs (per the configuration), unmaps and
     * closes it, leaving the file under its temporary name.
     *
     * @throws StoreException on a CRC mismatch or an I/O failure; the write is then aborted
     */
    public Sealed seal(BlobWrite w, int expectedCrc32c) {
        return seal(w, expectedCrc32c, false);
    }

    /** As {@link #seal(BlobWrite, int)}; {@code verified}: the caller checked the CRC32C as the bytes arrived. */
    public Sealed seal(BlobWrite w, int expectedCrc32c, boolean verified) {
        return sealWrite(w, expectedCrc32c, verified, true);
    }

    /** CRC check (against {@code expected} unless null), fsync, unmap, close; aborts the write on failure. */
    private Sealed sealWrite(BlobWrite w, Integer expected, boolean verified, boolean sync) {
        boolean fsync = sync && config.fsync();
        if (w.finished) {
            throw new IllegalStateException("blob write already finished");
        }
        try {
            long t0 = System.nanoTime();
            int crc = verified ? expected : verifiedCrc32c(w, expected);
            long t1 = System.nanoTime();
            if (fsync && w.length > 0) {
                w.segment.force();
            }
            w.finished = true;
            w.arena.close();
            if (fsync) {
                w.channel.force(true);
            }
            w.channel.close();
            w.crcNanos = t1 - t0;
            w.syncNanos = System.nanoTime() - t1;
            return new Sealed(w.temp, w.length, crc, w.crcNanos, w.syncNanos);
        } catch (IOException e) {
            abort(w);
            throw new StoreException("cannot store blob in " + dir + ": " + e + "; the old value is kept", e);
        } catch (RuntimeException e) {
            abort(w);
            throw e;
        }
    }

    /**
     * Installs a sealed write as {@code version} (numbered by the primary that wrote it): renames it to the version's
     * name and fsyncs the directory; the next {@link #resolve} of that version finds it.
     *
     * @throws StoreException when the version is known with other content, or on an I/O failure (the file is deleted)
     */
    public void installSealed(Sealed sealed, long version) {
        try {
            synchronized (this) {
                BlobVersion old = versions.get(version);
                if (old != null && !old.missing()) {
                    deleteQuietly(sealed.file());
                    if (old.crc32c() != sealed.crc32c() || old.length() != sealed.length()) {
                        throw new StoreException("blob version " + version + " is here with other content");
                    }
                    return;
                }
                if (old != null) {
                    versions.remove(version);
                }
                Path target = dir.resolve(name(version));
                Files.move(sealed.file(), target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                fsyncDirectory();
                found.put(version, target);
                lastVersion = Math.max(lastVersion, version);
            }
        } catch (IOException e) {
            deleteQuietly(sealed.file());
            throw new StoreException("cannot install replicated blob " + version + ": " + e, e);
        }
    }

    /** Deletes a sealed write that will not be installed. */
    public void drop(Sealed sealed) {
        deleteQuietly(sealed.file());
    }

    /**
     * New versions from now on are above {@code floor}: a primary of term T numbers its blobs from T << 32, so no two
     * primaries ever give one version number to different content.
     */
    public synchronized void versionFloor(long floor) {
        lastVersion = Math.max(lastVersion, floor);
    }

    /** Blob files of the legacy format found at open, highest version first. */
    public List<LegacyBlob> legacy() {
        return List.copyOf(legacy);
    }

    /**
     * Renames a legacy file to a new version's name; the caller holds the one reference and logs the record.
     *
     * @throws StoreException when the rename fails
     */
    public synchronized BlobVersion adopt(LegacyBlob old) {
        long version = ++lastVersion;
        Path target = dir.resolve(name(version));
        try {
            move(old.file(), target);
            fsyncDirectory();
        } catch (IOException e) {
            throw new StoreException("cannot adopt legacy blob file " + old.file() + ": " + e, e);
        }
        legacy.remove(old);
        BlobVersion v = new BlobVersion(this, version, old.length(), old.crc32c(), target, false);
        v.retain();
        versions.put(version, v);
        return v;
    }

    /**
     * Ends recovery: deletes every file the log does not name (after {@code makeLogDurable}, since the replayed log
     * is what says so) and starts the reaper, which from now on deletes versions whose last reference goes.
     */
    public void startReaper(Runnable makeLogDurable) {
        this.makeLogDurable = makeLogDurable;
        makeLogDurable.run();
        int deleted = 0;
        synchronized (this) {
            for (Path p : found.values()) {
                deleteQuietly(p);
                deleted++;
            }
            found.clear();
            for (BlobVersion v : List.copyOf(versions.values())) {
                if (deleteIfUnreferenced(v) && !v.missing()) {
                    deleted++;
                }
            }
        }
        if (deleted + discardedAtOpen > 0) {
            LOG.info("blob directory {}: {} files no record names and {} unfinished writes removed", dir, deleted,
                discardedAtOpen);
        }
        reaping = true;
        reaper = new Thread(this::reap, "rdmastore-blob-reaper");
        reaper.setDaemon(true);
        reaper.start();
    }

    /** Called by a version whose last reference went. */
    void unreferenced(BlobVersion v) {
        if (reaping) {
            unreferenced.add(v);
        }
    }

    private void reap() {
        List<BlobVersion> batch = new ArrayList<>();
        while (reaping) {
            try {
                // polled, not interrupted: an interrupt during the log's fsync would close the log's channel
                BlobVersion v = unreferenced.poll(100, java.util.concurrent.TimeUnit.MILLISECONDS);
                if (v == null) {
                    continue;
                }
                batch.add(v);
            } catch (InterruptedException e) {
                break;
            }
            unreferenced.drainTo(batch);
            bury(batch);
            batch.clear();
        }
    }

    /** Deletes the versions of {@code batch} that nobody took back, once the log that dropped them is durable. */
    private void bury(List<BlobVersion> batch) {
        try {
            makeLogDurable.run();
        } catch (RuntimeException e) {
            // Not sure the log says they are gone: keep the files. The next start deletes what nothing names.
            LOG.warn("not deleting {} unreferenced blob files: the log cannot be made durable: {}", batch.size(),
                e.toString());
            return;
        }
        batch.forEach(this::deleteIfUnreferenced);
    }

    /** Deletes the version's file unless someone took it back; true when it was deleted (or never existed). */
    private boolean deleteIfUnreferenced(BlobVersion v) {
        if (!v.bury()) {
            return false;
        }
        versions.remove(v.version(), v);
        synchronized (this) {
            unsynced.remove(v.version());
        }
        if (!v.missing()) {
            deleteQuietly(v.file());
        }
        return true;
    }

    /**
     * Forces the files committed without fsync so far, then their directory, then records that every version up to
     * the newest is durable. The store's log runs it before each fsync, and a snapshot before it is forced, so a
     * durable record never names a file that is not. Any thread; calls run one at a time.
     *
     * @throws StoreException when a file cannot be forced (the log then refuses writes)
     */
    public void syncUnsynced() {
        syncUnsynced(false);
    }

    /**
     * As {@link #syncUnsynced()}; with {@code skipUnreferenced} (the log's sync) a version no key holds any more is
     * not forced: the record that dropped it was appended before this sync, which makes it durable too, so recovery
     * never serves that version (a file it finds is checked against its CRC and deleted).
     */
    public void syncUnsynced(boolean skipUnreferenced) {
        // one at a time: a mark written by a later call must not cover files an earlier call still forces
        synchronized (syncing) {
            syncUnsyncedNow(skipUnreferenced);
        }
    }

    private void syncUnsyncedNow(boolean skipUnreferenced) {
        List<Path> files = new ArrayList<>();
        long through;
        synchronized (this) {
            if (unsynced.isEmpty() && (syncedFile == null || lastVersion <= syncedThrough)) {
                return;
            }
            for (Map.Entry<Long, Path> e : unsynced.entrySet()) {
                BlobVersion v = versions.get(e.getKey());
                if (!skipUnreferenced || v == null || v.references() > 0) {
                    files.add(e.getValue());
                }
            }
            unsynced.clear();
            through = lastVersion;
        }
        try {
            for (Path p : files) {
                try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
                    ch.force(true);
                } catch (java.nio.file.NoSuchFileException gone) {
                    // deleted by the reaper meanwhile: nothing names it durably
                }
            }
            fsyncDirectory();
            writeSyncedThrough(through);
        } catch (IOException e) {
            throw new StoreException("cannot make blob files durable in " + dir + ": " + e, e);
        }
    }

    /** Versions committed without fsync and not yet forced. */
    public synchronized int unsyncedCount() {
        return unsynced.size();
    }

    /**
     * Creates the synced-through file, durably, before the first write whose fsync is deferred, saying that every
     * version so far is durable (they were all forced at their commit).
     */
    private void openSyncedFile() throws IOException {
        long through;
        synchronized (this) {
            if (syncedFile != null) {
                return;
            }
            through = lastVersion;
        }
        FileChannel ch = FileChannel.open(syncedFilePath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        synchronized (this) {
            if (syncedFile != null) {
                ch.close();
                return;
            }
            syncedFile = ch;
            writeSyncedThroughLocked(Math.min(through, syncedThrough));
            fsyncDirectory(dir.getParent());
        }
    }

    private synchronized void writeSyncedThrough(long through) throws IOException {
        writeSyncedThroughLocked(through);
    }

    private void writeSyncedThroughLocked(long through) throws IOException {
        if (syncedFile == null || !syncedFile.isOpen()) {
            return;
        }
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(16).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        b.putLong(0, through).putLong(8, ~through);
        while (b.hasRemaining()) {
            syncedFile.write(b, b.position());
        }
        syncedFile.force(true);
        syncedThrough = through;
    }

    /** Whether the file holds {@code length} bytes whose CRC32C is {@code crc32c}. */
    private static boolean contentMatches(Path p, long length, int crc32c) {
        if (length == 0) {
            return true;
        }
        try (Arena a = Arena.ofConfined(); FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
            return crc32c(ch.map(FileChannel.MapMode.READ_ONLY, 0, length, a)) == crc32c;
        } catch (IOException e) {
            return false;
        }
    }

    /** Checks a blob's length against the limit. */
    public void checkLength(long length) {
        if (length < 0) {
            throw new StoreException("negative blob length " + length);
        }
        if (length > config.maxBlobBytes()) {
            throw new LimitExceededException("blob of " + length + " bytes exceeds limit of " + config.maxBlobBytes()
                + " bytes (max-blob-bytes)");
        }
    }

    /**
     * Starts a write of {@code length} bytes: checks the limit and the free space before anything is written, then
     * creates the temporary file, reserves its blocks and maps it.
     *
     * @throws LimitExceededException when the length is over the limit
     * @throws StoreException when the disk has no room for it (the old value is kept) or the file cannot be created
     */
    public BlobWrite begin(long length) {
        checkLength(length);
        long free;
        try {
            free = config.freeSpace(dir);
        } catch (RuntimeException e) {
            throw new StoreException("cannot measure free space in " + dir + ": " + e, e);
        }
        if (free - length < config.reserveBytes()) {
            throw new StoreException("disk full: blob of " + length + " bytes does not fit in " + dir + " ("
                + free + " bytes free, " + config.reserveBytes() + " kept in reserve); the old value is kept");
        }
        long n;
        synchronized (this) {
            if (closed) {
                throw new StoreException("blob store is closed");
            }
            n = ++tempCounter;
        }
        Path temp = dir.resolve("write-" + n + "." + System.nanoTime() + ".tmp");
        FileChannel ch = null;
        Arena arena = Arena.ofShared();
        try {
            ch = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE);
            // blocks first: a mapped write onto a full disk would kill the JVM with SIGBUS instead of failing
            int error = Preallocation.reserve(temp, length);
            if (Preallocation.diskFull(error)) {
                throw new StoreException("disk full: cannot reserve " + length + " bytes for a blob in " + dir
                    + "; the old value is kept");
            }
            MemorySegment seg = length == 0 ? MemorySegment.NULL.reinterpret(0)
                : ch.map(FileChannel.MapMode.READ_WRITE, 0, length, arena);
            return new BlobWrite(length, temp, ch, arena, seg);
        } catch (IOException | RuntimeException e) {
            arena.close();
            closeQuietly(ch);
            deleteQuietly(temp);
            if (e instanceof StoreException se) {
                throw se;
            }
            throw new StoreException("cannot create blob file in " + dir + ": " + e, e);
        }
    }

    /**
     * Makes a write a stored version: verifies the CRC32C of its content against {@code expectedCrc32c} (when not
     * null), fsyncs the file, renames it to its final name and fsyncs the directory. Nothing references it yet: the
     * caller holds the one reference, logs the record that gives it to a key, then releases its own.
     *
     * @throws StoreException on a CRC mismatch or an I/O failure; the write is then aborted and nothing stored
     */
    public BlobVersion commit(BlobWrite w, Integer expectedCrc32c) {
        return commit(w, expectedCrc32c, false);
    }

    /**
     * As {@link #commit(BlobWrite, Integer)}; with {@code deferSync} the file is written and renamed but not forced:
     * {@link #syncUnsynced()}, which the store's log runs before each of its fsyncs, forces it before any record
     * naming it can be durable, and recovery checks the content of the versions no sync covered.
     */
    public BlobVersion commit(BlobWrite w, Integer expectedCrc32c, boolean deferSync) {
        boolean defer = deferSync && config.fsync();
        if (defer) {
            try {
                openSyncedFile();
            } catch (IOException e) {
                abort(w);
                throw new StoreException("cannot store blob in " + dir + ": " + e + "; the old value is kept", e);
            }
        }
        Sealed sealed = sealWrite(w, expectedCrc32c, false, !defer);
        try {
            synchronized (this) {
                if (closed) {
                    throw new StoreException("blob store is closed");
                }
                long version = ++lastVersion;
                Path target = dir.resolve(name(version));
                move(w.temp, target);
                if (defer) {
                    unsynced.put(version, target);
                } else {
                    fsyncDirectory();
                }
                BlobVersion v = new BlobVersion(this, version, w.length, sealed.crc32c(), target, false);
                v.retain();
                versions.put(version, v);
                return v;
            }
        } catch (IOException e) {
            abort(w);
            throw new StoreException("cannot store blob in " + dir + ": " + e + "; the old value is kept", e);
        } catch (RuntimeException e) {
            abort(w);
            throw e;
        }
    }

    /**
     * Gives up a write whose memory may still be written by transfers that cannot be stopped (a peer that vanished):
     * the temporary file is deleted now, so nothing partial is ever visible; the mapping stays valid until
     * {@link #abort(BlobWrite)}, which the caller invokes once no transfer can touch it.
     */
    public void discard(BlobWrite w) {
        deleteQuietly(w.temp);
    }

    /** Drops a write: unmaps it and deletes its temporary file. Idempotent. */
    public void abort(BlobWrite w) {
        if (!w.finished) {
            w.finished = true;
            w.arena.close();
        }
        closeQuietly(w.channel);
        deleteQuietly(w.temp);
    }

    private static void move(Path from, Path to) throws IOException {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(from, to, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    private void fsyncDirectory() throws IOException {
        fsyncDirectory(dir);
    }

    private void fsyncDirectory(Path d) throws IOException {
        if (!config.fsync() || d == null) {
            return;
        }
        try (FileChannel ch = FileChannel.open(d, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException e) {
            // Some file systems refuse to open a directory; the rename is then as durable as they make it.
            if (!(e instanceof java.nio.file.AccessDeniedException)) {
                throw e;
            }
        }
    }

    static String name(long version) {
        return String.format("%016x", version) + SUFFIX;
    }

    /**
     * The CRC32C of a write's content, checked against {@code expected} when not null.
     *
     * @throws StoreException on a mismatch (nothing is stored)
     */
    public static int verifiedCrc32c(BlobWrite w, Integer expected) {
        int crc;
        try {
            crc = crc32c(w.channel, w.length);
        } catch (IOException e) {
            throw new StoreException("cannot read back blob file " + w.temp.getFileName() + ": " + e, e);
        }
        if (expected != null && crc != expected) {
            throw new StoreException(String.format("blob CRC32C mismatch: the client announced %08x but the"
                + " server received data with %08x; nothing was stored", expected, crc));
        }
        return crc;
    }

    /**
     * CRC32C of the first {@code length} bytes of a file, read through the file system into a per-thread buffer: a
     * fresh mapping of the same bytes would take a page fault per 4 KiB page first (404 ms against 41 ms for 256 MiB
     * on a virtual machine here).
     */
    private static int crc32c(FileChannel ch, long length) throws IOException {
        CRC32C crc = new CRC32C();
        ByteBuffer buf = CRC_BUFFER.get();
        for (long off = 0; off < length; ) {
            buf.clear().limit((int) Math.min(buf.capacity(), length - off));
            int n = ch.read(buf, off);
            if (n < 0) {
                throw new IOException("the file ends at " + off + " of " + length + " bytes");
            }
            off += n;
            crc.update(buf.flip());
        }
        return (int) crc.getValue();
    }

    /** CRC32C of a segment of any length (slices of 1 GiB, since a ByteBuffer holds at most 2 GiB). */
    public static int crc32c(MemorySegment segment) {
        CRC32C crc = new CRC32C();
        long size = segment.byteSize();
        for (long off = 0; off < size; off += 1L << 30) {
            crc.update(segment.asSlice(off, Math.min(1L << 30, size - off)).asByteBuffer());
        }
        return (int) crc.getValue();
    }

    private static void closeQuietly(FileChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException e) {
                LOG.debug("closing blob file failed: {}", e.toString());
            }
        }
    }

    private static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException e) {
            // The next start deletes what no record names, so this costs space until then only.
            LOG.warn("cannot delete blob file {}: {}", p, e.toString());
        }
    }

    /**
     * Stops the reaper and deletes what it still had queued; the store calls this after its log is closed (so
     * durable) and before it drops its keys' references, which must then delete nothing. Unmaps every version.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        boolean wasReaping = reaping;
        reaping = false;
        if (reaper != null) {
            try {
                reaper.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (wasReaping) {
            List<BlobVersion> rest = new ArrayList<>();
            unreferenced.drainTo(rest);
            rest.forEach(this::deleteIfUnreferenced);
        }
        for (BlobVersion v : versions.values()) {
            v.unmap();
        }
        synchronized (this) {
            closeQuietly(syncedFile);
        }
    }

    @Override
    public String toString() {
        return "BlobStore{" + dir + ", files=" + versions.size() + "}";
    }
}
