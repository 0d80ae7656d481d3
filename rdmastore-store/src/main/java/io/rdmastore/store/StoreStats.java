package io.rdmastore.store;

/**
 * A point-in-time summary for INFO. Immutable; any thread. Counters are read without a global lock, so they are
 * each exact but not mutually consistent under concurrent writes.
 *
 * @param keys                    keys in the keyspace (may include expired keys not yet swept, as Redis's DBSIZE)
 * @param expires                 keys with a TTL
 * @param usedOffHeapBytes        bytes of off-heap memory holding string values
 * @param logBytes                bytes in the log segments that the next recovery would replay
 * @param lastSnapshotEpochMillis when the last snapshot became durable, 0 if never
 * @param fsync                   the fsync policy
 * @param changesSinceLastSave    log records written since the last snapshot started
 * @param collections             document collections
 * @param documents               documents over all collections
 * @param snapshotInProgress      whether a snapshot is being written now
 * @param logAppendWaits          appends that waited for the log writer (every append buffer queued), since open
 * @param largeValueMappedBytes   bytes mapped for values from 256 KiB (huge pages) in this process, used or kept
 *                                for reuse
 */
public record StoreStats(long keys, long expires, long usedOffHeapBytes, long logBytes, long lastSnapshotEpochMillis,
                         FsyncPolicy fsync, long changesSinceLastSave, long collections, long documents,
                         boolean snapshotInProgress, long logAppendWaits,
                         long largeValueMappedBytes) {
}
