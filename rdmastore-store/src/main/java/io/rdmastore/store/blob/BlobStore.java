package io.rdmastore.store.blob;

import io.rdmastore.store.LimitExceededException;
import io.rdmastore.store.StoreException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Blobs as files: {@code <keyhex>.<version>.<crc32c>.blob} in one directory. A put writes a temporary file
 * ({@code *.tmp}), checks its CRC32C against the one the writer announced, fsyncs it, renames it to its final name and
 * fsyncs the directory: the rename is the commit record, so a blob is either wholly there after a crash or not at all.
 * An overwritten or deleted version is renamed to {@code *.old} at once and deleted when its last reader lets go.
 * Recovery (in {@link #open}) deletes {@code *.tmp} and {@code *.old} files and keeps the highest version of each key.
 *
 * <p>Threads: thread-safe. {@link #commit} does the CRC and fsync outside the store's lock; only the rename and the
 * switch of the current version hold it. Memory: versions are mapped lazily and unmapped by reference counting
 * ({@link BlobVersion}).
 */
public final class BlobStore implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(BlobStore.class);
    private static final HexFormat HEX = HexFormat.of();
    private static final String SUFFIX = ".blob";

    private final BlobConfig config;
    private final Path dir;
    private final Map<String, BlobVersion> current = new ConcurrentHashMap<>();
    private long lastVersion;
    private long tempCounter;
    private boolean closed;
    private final int recoveredFiles;
    private final int recoveredDiscarded;

    private BlobStore(BlobConfig config) throws IOException {
        this.config = config;
        this.dir = config.directory().toAbsolutePath();
        Files.createDirectories(dir);
        int discarded = 0;
        Map<String, BlobVersion> found = new HashMap<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path p : files) {
                String name = p.getFileName().toString();
                if (name.endsWith(".tmp") || name.endsWith(".old")) {
                    Files.deleteIfExists(p);
                    discarded++;
                    continue;
                }
                BlobVersion v = parse(p, name);
                if (v == null) {
                    LOG.warn("ignoring unexpected file {} in the blob directory", p);
                    continue;
                }
                lastVersion = Math.max(lastVersion, v.version());
                String k = HEX.formatHex(v.key());
                BlobVersion other = found.get(k);
                if (other == null || other.version() < v.version()) {
                    found.put(k, v);
                    if (other != null) {
                        Files.deleteIfExists(other.file());
                        discarded++;
                    }
                } else {
                    Files.deleteIfExists(p);
                    discarded++;
                }
            }
        }
        current.putAll(found);
        recoveredFiles = found.size();
        recoveredDiscarded = discarded;
        if (discarded > 0) {
            fsyncDirectory();
        }
    }

    /**
     * Opens (and recovers) the blob directory.
     *
     * @throws StoreException when the directory cannot be read or created
     */
    public static BlobStore open(BlobConfig config) {
        config.conclude();
        try {
            BlobStore s = new BlobStore(config);
            LOG.info("blob store {}: {} blobs, {} unfinished or retired files removed", s.dir, s.recoveredFiles,
                s.recoveredDiscarded);
            return s;
        } catch (IOException e) {
            throw new StoreException("cannot open blob directory " + config.directory() + ": " + e, e);
        }
    }

    private static BlobVersion parse(Path p, String name) throws IOException {
        if (!name.endsWith(SUFFIX)) {
            return null;
        }
        String[] parts = name.substring(0, name.length() - SUFFIX.length()).split("\\.");
        if (parts.length != 3) {
            return null;
        }
        try {
            byte[] key = parts[0].equals("_") ? new byte[0] : HEX.parseHex(parts[0]);
            long version = Long.parseLong(parts[1]);
            int crc = (int) Long.parseLong(parts[2], 16);
            return new BlobVersion(key, version, Files.size(p), crc, p);
        } catch (IllegalArgumentException e) {
            return null;
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

    /** Blobs recovered at open. */
    public int recoveredBlobs() {
        return recoveredFiles;
    }

    /** Number of blobs stored. */
    public int count() {
        return current.size();
    }

    /** Total bytes of the current versions. */
    public long bytes() {
        long sum = 0;
        for (BlobVersion v : current.values()) {
            sum += v.length();
        }
        return sum;
    }

    /** Checks a blob key against the limits. */
    public static void checkKey(byte[] key) {
        if (key.length > BlobConfig.MAX_KEY_BYTES) {
            throw new LimitExceededException("blob key of " + key.length + " bytes exceeds limit of "
                + BlobConfig.MAX_KEY_BYTES + " bytes");
        }
    }

    /**
     * The current version of {@code key}, with a reference the caller must {@link BlobVersion#release()}; null when
     * there is no such blob.
     */
    public BlobVersion acquire(byte[] key) {
        checkKey(key);
        String k = HEX.formatHex(key);
        while (true) {
            BlobVersion v = current.get(k);
            if (v == null) {
                return null;
            }
            if (v.retain()) {
                return v;
            }
            // Retired between the lookup and the retain: the map already holds its successor (or nothing).
            Thread.onSpinWait();
        }
    }

    /**
     * Starts a put of {@code length} bytes: checks the limits and the free space before anything is written, then
     * creates and maps the temporary file.
     *
     * @throws LimitExceededException when the key or the length is over the limit
     * @throws StoreException when the disk has no room for it (the old value is kept) or the file cannot be created
     */
    public BlobWrite begin(byte[] key, long length) {
        checkKey(key);
        if (length < 0) {
            throw new StoreException("negative blob length " + length);
        }
        if (length > config.maxBlobBytes()) {
            throw new LimitExceededException("blob of " + length + " bytes exceeds limit of " + config.maxBlobBytes()
                + " bytes (max-blob-bytes)");
        }
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
        Path temp = dir.resolve(name(key) + "." + n + "." + System.nanoTime() + ".tmp");
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
            return new BlobWrite(key.clone(), length, temp, ch, arena, seg);
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
     * Makes a write visible: verifies the CRC32C of its content against {@code expectedCrc32c}, fsyncs, renames, and
     * retires the previous version (whose readers keep it until they release it).
     *
     * @return the new current version (no reference is taken for the caller)
     * @throws StoreException on a CRC mismatch or an I/O failure; the write is then aborted and the old value kept
     */
    public BlobVersion commit(BlobWrite w, int expectedCrc32c) {
        if (w.finished) {
            throw new IllegalStateException("blob write already finished");
        }
        try {
            int crc = crc32c(w.segment);
            if (crc != expectedCrc32c) {
                throw new StoreException(String.format("blob CRC32C mismatch: the client announced %08x but the"
                    + " server received data with %08x; nothing was stored", expectedCrc32c, crc));
            }
            if (config.fsync() && w.length > 0) {
                w.segment.force();
            }
            w.finished = true;
            w.arena.close();
            if (config.fsync()) {
                w.channel.force(true);
            }
            w.channel.close();
            synchronized (this) {
                if (closed) {
                    throw new StoreException("blob store is closed");
                }
                long version = ++lastVersion;
                Path target = dir.resolve(name(w.key) + "." + version + "." + String.format("%08x", crc) + SUFFIX);
                move(w.temp, target);
                BlobVersion v = new BlobVersion(w.key, version, w.length, crc, target);
                BlobVersion old = current.put(HEX.formatHex(w.key), v);
                if (old != null) {
                    retire(old);
                }
                fsyncDirectory();
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

    /** Drops a write: deletes its temporary file. Idempotent. */
    /**
     * Gives up a write whose memory may still be written by transfers that cannot be stopped (a peer that vanished):
     * the temporary file is deleted now, so nothing partial is ever visible; the mapping stays valid until
     * {@link #abort(BlobWrite)}, which the caller invokes once no transfer can touch it.
     */
    public void discard(BlobWrite w) {
        deleteQuietly(w.temp);
    }

    public void abort(BlobWrite w) {
        if (!w.finished) {
            w.finished = true;
            w.arena.close();
        }
        closeQuietly(w.channel);
        deleteQuietly(w.temp);
    }

    /**
     * Deletes a blob; its readers keep their version until they release it.
     *
     * @return whether the blob existed
     */
    public boolean delete(byte[] key) {
        checkKey(key);
        synchronized (this) {
            BlobVersion old = current.remove(HEX.formatHex(key));
            if (old == null) {
                return false;
            }
            retire(old);
            try {
                fsyncDirectory();
            } catch (IOException e) {
                throw new StoreException("cannot sync blob directory " + dir + ": " + e, e);
            }
            return true;
        }
    }

    /** Renames a replaced version out of the way and drops the store's reference. Caller holds the lock. */
    private void retire(BlobVersion old) {
        Path renamed = old.file().resolveSibling(old.file().getFileName() + ".old");
        try {
            move(old.file(), renamed);
            old.retiredTo(renamed);
        } catch (IOException e) {
            // Left under its name, a restart would bring it back: that must not pass silently.
            throw new StoreException("cannot retire blob file " + old.file() + ": " + e, e);
        }
        old.release();
    }

    private static void move(Path from, Path to) throws IOException {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(from, to, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    private void fsyncDirectory() throws IOException {
        if (!config.fsync()) {
            return;
        }
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException e) {
            // Some file systems refuse to open a directory; the rename is then as durable as they make it.
            if (!(e instanceof java.nio.file.AccessDeniedException)) {
                throw e;
            }
        }
    }

    private static String name(byte[] key) {
        return key.length == 0 ? "_" : HEX.formatHex(key);
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
            // Recovery removes *.tmp files, so this costs space until the next start only.
            LOG.warn("cannot delete temporary blob file {}: {}", p, e.toString());
        }
    }

    /** Drops the store's references; versions still leased stay mapped until released. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (BlobVersion v : current.values()) {
            // Not retired: the file stays; only the mapping goes once readers are done.
            v.release();
        }
        current.clear();
    }

    @Override
    public String toString() {
        return "BlobStore{" + dir + ", blobs=" + current.size() + "}";
    }
}
