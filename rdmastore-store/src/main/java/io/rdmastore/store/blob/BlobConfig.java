package io.rdmastore.store.blob;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.ToLongFunction;

/**
 * Settings of a {@link BlobStore}: fluent setters, validated once by {@link #conclude()}.
 *
 * <p>Threads: configure on one thread before {@link BlobStore#open(BlobConfig)}; read-only afterwards.
 */
public final class BlobConfig implements Cloneable {
    /**
     * Default size from which a string value is stored as a blob file: 8 MiB, above the values SET routinely writes,
     * which stay in memory and in the log.
     */
    public static final long DEFAULT_THRESHOLD_BYTES = 8L << 20;
    /** Default largest blob: 8 GiB. */
    public static final long DEFAULT_MAX_BLOB_BYTES = 8L << 30;
    /** Default free space kept on the disk beyond a new blob: 64 MiB. */
    public static final long DEFAULT_RESERVE_BYTES = 64L << 20;
    private Path directory;
    private long thresholdBytes = DEFAULT_THRESHOLD_BYTES;
    private long maxBlobBytes = DEFAULT_MAX_BLOB_BYTES;
    private long reserveBytes = DEFAULT_RESERVE_BYTES;
    private boolean fsync = true;
    private ToLongFunction<Path> freeSpace = BlobConfig::usableSpace;

    /** The folder holding the blob files (created when missing); the store's default is {@code <dataDir>/blobs}. */
    public BlobConfig directory(Path directory) {
        this.directory = directory;
        return this;
    }

    /**
     * String values of at least this many bytes (written by SET, MSET, the RESP face or the blob API) are stored as
     * blob files and served from a mapping; smaller ones live in memory. At least 1; default 8 MiB.
     */
    public BlobConfig thresholdBytes(long thresholdBytes) {
        this.thresholdBytes = thresholdBytes;
        return this;
    }

    /** The largest blob accepted; larger ones are refused before any data moves. */
    public BlobConfig maxBlobBytes(long maxBlobBytes) {
        this.maxBlobBytes = maxBlobBytes;
        return this;
    }

    /** Free disk space that must remain after a new blob is written; a put that would eat into it is refused. */
    public BlobConfig reserveBytes(long reserveBytes) {
        this.reserveBytes = reserveBytes;
        return this;
    }

    /** Whether files and the directory are fsynced before a blob becomes visible (default true). */
    public BlobConfig fsync(boolean fsync) {
        this.fsync = fsync;
        return this;
    }

    /** How free space is measured; tests substitute a small figure to simulate a full disk. */
    public BlobConfig freeSpace(ToLongFunction<Path> freeSpace) {
        this.freeSpace = freeSpace;
        return this;
    }

    /** Validates the settings; call once before use. */
    public BlobConfig conclude() {
        if (directory == null) {
            throw new IllegalArgumentException("blob directory is required");
        }
        if (thresholdBytes < 1 || maxBlobBytes < 0 || reserveBytes < 0) {
            throw new IllegalArgumentException("blob threshold must be >= 1, maximum and reserve >= 0: " + this);
        }
        if (freeSpace == null) {
            throw new IllegalArgumentException("freeSpace probe is required");
        }
        return this;
    }

    public Path directory() {
        return directory;
    }

    public long thresholdBytes() {
        return thresholdBytes;
    }

    public long maxBlobBytes() {
        return maxBlobBytes;
    }

    public long reserveBytes() {
        return reserveBytes;
    }

    public boolean fsync() {
        return fsync;
    }

    long freeSpace(Path dir) {
        return freeSpace.applyAsLong(dir);
    }

    private static long usableSpace(Path dir) {
        try {
            return Files.getFileStore(dir).getUsableSpace();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public BlobConfig clone() {
        try {
            return (BlobConfig) super.clone();
        } catch (CloneNotSupportedException e) {
            throw new AssertionError(e);
        }
    }

    @Override
    public String toString() {
        return "BlobConfig{directory=" + directory + ", thresholdBytes=" + thresholdBytes + ", maxBlobBytes="
            + maxBlobBytes + ", reserveBytes=" + reserveBytes + ", fsync=" + fsync + "}";
    }
}
