package io.rdmastore.store.blob;

import io.rdmastore.store.StoreException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One stored version of one blob: its file, length, CRC32C and, once asked for, a read-only memory mapping of it.
 *
 * <p>Lifetime: reference counted. The store holds one reference while the version is current; every reader holds one
 * from {@link BlobStore#acquire(byte[])} until it calls {@link #release()}. When the version is overwritten or deleted
 * its file is renamed out of the way at once (so a restart never brings it back) and is unmapped and deleted when the
 * last reference goes; until then {@link #segment()} stays valid and unchanged.
 *
 * <p>Threads: thread-safe. The segment may be read from any thread while the caller holds a reference.
 */
public final class BlobVersion {
    private static final Logger LOG = LoggerFactory.getLogger(BlobVersion.class);

    private final byte[] key;
    private final long version;
    private final long length;
    private final int crc32c;
    private final AtomicInteger refs = new AtomicInteger(1);
    private volatile Path file;
    private volatile boolean retired;
    private Arena arena;
    private MemorySegment segment;

    BlobVersion(byte[] key, long version, long length, int crc32c, Path file) {
        this.key = key;
        this.version = version;
        this.length = length;
        this.crc32c = crc32c;
        this.file = file;
    }

    /** The key (do not modify). */
    public byte[] key() {
        return key;
    }

    /** The version number: grows with every put to the store, unique across keys. */
    public long version() {
        return version;
    }

    /** Length in bytes. */
    public long length() {
        return length;
    }

    /** CRC32C of the whole content, as verified when it was stored. */
    public int crc32c() {
        return crc32c;
    }

    /** The file holding the content (renamed to {@code *.old} once the version is retired). */
    public Path file() {
        return file;
    }

    /**
     * The content, mapped read-only on first use. Valid until the caller's reference is released; the caller must not
     * use it afterwards.
     *
     * @throws StoreException when the file cannot be mapped
     */
    public synchronized MemorySegment segment() {
        if (refs.get() <= 0) {
            throw new IllegalStateException("blob version " + version + " is released");
        }
        if (segment == null) {
            if (length == 0) {
                segment = MemorySegment.NULL.reinterpret(0);
            } else {
                Arena a = Arena.ofShared();
                try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
                    segment = ch.map(FileChannel.MapMode.READ_ONLY, 0, length, a);
                    arena = a;
                } catch (IOException | RuntimeException e) {
                    a.close();
                    throw new StoreException("cannot map blob file " + file + ": " + e, e);
                }
            }
        }
        return segment;
    }

    /** Takes one more reference; false when the version is already gone. */
    boolean retain() {
        while (true) {
            int r = refs.get();
            if (r <= 0) {
                return false;
            }
            if (refs.compareAndSet(r, r + 1)) {
                return true;
            }
        }
    }

    /** Number of references held (the store's own while current, plus readers). */
    public int references() {
        return Math.max(0, refs.get());
    }

    /** Gives back one reference; the last one unmaps the content and deletes a retired file. Idempotent per holder. */
    public void release() {
        int r = refs.decrementAndGet();
        if (r == 0) {
            free();
        } else if (r < 0) {
            refs.set(0);
            throw new IllegalStateException("blob version " + version + " released more often than acquired");
        }
    }

    void retiredTo(Path renamed) {
        this.file = renamed;
        this.retired = true;
    }

    private synchronized void free() {
        if (arena != null) {
            arena.close();
            arena = null;
        }
        segment = null;
        if (!retired) {
            return;
        }
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            // Recovery deletes retired files too, so a failure here costs disk space until the next start only.
            LOG.warn("cannot delete retired blob file {}: {}", file, e.toString());
        }
    }

    @Override
    public String toString() {
        return "BlobVersion{version=" + version + ", length=" + length + ", crc32c="
            + String.format("%08x", crc32c) + ", file=" + file.getFileName() + "}";
    }
}
