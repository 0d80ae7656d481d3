package io.rdmastore.store;

/**
 * When the log is forced to stable storage, with Redis {@code appendfsync} semantics. Immutable; any thread.
 */
public enum FsyncPolicy {
    /** fsync before a write call returns: an acknowledged write survives a power cut. Slowest. */
    ALWAYS,
    /**
     * A background thread fsyncs once a second: a crash of the machine loses at most about a second of writes. Writes
     * reach the OS in batches about a millisecond apart, so a crash of the process alone loses at most that batch.
     */
    EVERYSEC,
    /**
     * Never fsync explicitly; the operating system writes back when it likes. Writes reach the OS in batches about a
     * millisecond apart, so a crash of the process alone loses at most that batch.
     */
    NO
}
