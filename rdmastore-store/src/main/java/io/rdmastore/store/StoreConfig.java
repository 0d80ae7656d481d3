package io.rdmastore.store;

import io.rdmastore.store.blob.BlobConfig;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Configuration of one {@link Store}: fluent setters with typed defaults, validated once by {@link #conclude()}
 * (which {@link Store#open(StoreConfig)} calls). Not thread-safe: fill it on one thread, then hand it to
 * {@code open}; the store keeps its own copy, so later changes have no effect.
 */
public final class StoreConfig implements Cloneable {
    /** Default largest key: 64 KiB. */
    public static final int DEFAULT_MAX_KEY_BYTES = 64 * 1024;
    /** Default largest string value: 512 MiB (Redis's limit). */
    public static final long DEFAULT_MAX_VALUE_BYTES = 512L * 1024 * 1024;
    /** Default largest BSON document: 16 MiB (MongoDB's limit). */
    public static final int DEFAULT_MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;
    /** Default log size since the last snapshot that triggers a background snapshot: 64 MiB. */
    public static final long DEFAULT_SNAPSHOT_LOG_BYTES = 64L * 1024 * 1024;
    /** A frame's length field is an int and each frame carries one value, so values stay below this. */
    static final long HARD_MAX_VALUE_BYTES = 1L << 30;

    private Path dataDir;
    private FsyncPolicy fsync = FsyncPolicy.EVERYSEC;
    private int maxKeyBytes = DEFAULT_MAX_KEY_BYTES;
    private long maxValueBytes = DEFAULT_MAX_VALUE_BYTES;
    private int maxDocumentBytes = DEFAULT_MAX_DOCUMENT_BYTES;
    private long snapshotLogBytes = DEFAULT_SNAPSHOT_LOG_BYTES;
    private boolean activeExpiry = true;
    private boolean replicaSetMember;
    private long oplogWindowBytes = -1;
    private BlobConfig blobs = new BlobConfig();
    private boolean concluded;

    /** The directory holding log segments and snapshots; created if missing. Required. */
    public StoreConfig dataDir(Path dataDir) {
        this.dataDir = dataDir;
        return this;
    }

    /** When the log is fsynced; default {@link FsyncPolicy#EVERYSEC}. */
    public StoreConfig fsync(FsyncPolicy fsync) {
        this.fsync = fsync;
        return this;
    }

    /** Largest key in bytes, 1 .. 512 MiB; default 64 KiB. */
    public StoreConfig maxKeyBytes(int maxKeyBytes) {
        this.maxKeyBytes = maxKeyBytes;
        return this;
    }

    /** Largest string value (and hash field value) in bytes, 1 .. 1 GiB - 1; default 512 MiB. */
    public StoreConfig maxValueBytes(long maxValueBytes) {
        this.maxValueBytes = maxValueBytes;
        return this;
    }

    /** Largest BSON document in bytes (encoded), 5 .. 1 GiB - 1; default 16 MiB. */
    public StoreConfig maxDocumentBytes(int maxDocumentBytes) {
        this.maxDocumentBytes = maxDocumentBytes;
        return this;
    }

    /**
     * Log bytes written since the last snapshot that trigger a background snapshot; 0 turns automatic snapshots
     * off. Default 64 MiB.
     */
    public StoreConfig snapshotLogBytes(long snapshotLogBytes) {
        this.snapshotLogBytes = snapshotLogBytes;
        return this;
    }

    /** Whether a background sweeper removes expired keys (besides lazy removal on access); default on. */
    public StoreConfig activeExpiry(boolean activeExpiry) {
        this.activeExpiry = activeExpiry;
        return this;
    }

    /**
     * Blob settings: the size from which string values go to blob files, the largest blob, the disk reserve, fsync.
     * The directory defaults to {@code <dataDir>/blobs}. The store keeps a copy.
     */
    public StoreConfig blobs(BlobConfig blobs) {
        this.blobs = Objects.requireNonNull(blobs, "blobs").clone();
        return this;
    }

    /** The blob settings (a copy). */
    public BlobConfig blobs() {
        return blobs.clone();
    }

    /**
     * Checks every setting once; throws {@link IllegalArgumentException} naming the first bad one.
     *
     * @return this
     */
    public StoreConfig conclude() {
        if (dataDir == null) {
            throw new IllegalArgumentException("dataDir is required");
        }
        Objects.requireNonNull(fsync, "fsync");
        if (maxKeyBytes < 1 || maxKeyBytes > 512 * 1024 * 1024) {
            throw new IllegalArgumentException("maxKeyBytes must be 1 .. 536870912, was " + maxKeyBytes);
        }
        if (maxValueBytes < 1 || maxValueBytes >= HARD_MAX_VALUE_BYTES) {
            throw new IllegalArgumentException("maxValueBytes must be 1 .. " + (HARD_MAX_VALUE_BYTES - 1)
                    + ", was " + maxValueBytes);
        }
        if (maxDocumentBytes < 5 || maxDocumentBytes >= HARD_MAX_VALUE_BYTES) {
            throw new IllegalArgumentException("maxDocumentBytes must be 5 .. " + (HARD_MAX_VALUE_BYTES - 1)
                    + ", was " + maxDocumentBytes);
        }
        if (snapshotLogBytes < 0) {
            throw new IllegalArgumentException("snapshotLogBytes must be >= 0 (0 = off), was " + snapshotLogBytes);
        }
        concluded = true;
        return this;
    }

    /**
     * A member of a replica set: the store opens refusing client writes (until {@link Store#allowWrites} says it is
     * the primary), runs no expiry of its own (the primary decides and its deletes arrive as records), and logs
     * nothing during recovery (every record comes from a primary, so positions stay the set's). Default false.
     */
    public StoreConfig replicaSetMember(boolean member) {
        this.replicaSetMember = member;
        return this;
    }

    public boolean replicaSetMember() {
        return replicaSetMember;
    }

    /**
     * Bytes of recent log frames kept in memory as the oplog window that secondaries read from (a secondary further
     * behind resynchronises from a snapshot). Default: 64 MiB for a replica-set member, 0 (only the position is
     * tracked) otherwise.
     */
    public StoreConfig oplogWindowBytes(long bytes) {
        this.oplogWindowBytes = bytes;
        return this;
    }

    public long oplogWindowBytes() {
        return oplogWindowBytes >= 0 ? oplogWindowBytes : replicaSetMember ? 64L * 1024 * 1024 : 0;
    }

    /** Whether {@link #conclude()} has passed since the last change. */
    public boolean isConcluded() {
        return concluded;
    }

    /** The data directory. */
    public Path dataDir() {
        return dataDir;
    }

    /** The fsync policy. */
    public FsyncPolicy fsync() {
        return fsync;
    }

    /** Largest key in bytes. */
    public int maxKeyBytes() {
        return maxKeyBytes;
    }

    /** Largest value in bytes. */
    public long maxValueBytes() {
        return maxValueBytes;
    }

    /** Largest encoded document in bytes. */
    public int maxDocumentBytes() {
        return maxDocumentBytes;
    }

    /** Log bytes that trigger a background snapshot, 0 = never. */
    public long snapshotLogBytes() {
        return snapshotLogBytes;
    }

    /** Whether the background expiry sweeper runs. */
    public boolean activeExpiry() {
        return activeExpiry;
    }

    @Override
    public StoreConfig clone() {
        try {
            StoreConfig c = (StoreConfig) super.clone();
            c.blobs = blobs.clone();
            return c;
        } catch (CloneNotSupportedException e) {
            throw new AssertionError(e);
        }
    }

    @Override
    public String toString() {
        return "StoreConfig{dataDir=" + dataDir + ", fsync=" + fsync + ", maxKeyBytes=" + maxKeyBytes
                + ", maxValueBytes=" + maxValueBytes + ", maxDocumentBytes=" + maxDocumentBytes
                + ", snapshotLogBytes=" + snapshotLogBytes + ", activeExpiry=" + activeExpiry + ", blobs=" + blobs
                + "}";
    }
}
