package io.rdmastore.store;

import java.nio.file.Path;

/**
 * What {@link Store#open(StoreConfig)} found and did while recovering. Immutable; any thread.
 *
 * @param snapshotUsed      the snapshot loaded, or null when none existed
 * @param snapshotRecords   records loaded from that snapshot
 * @param segmentsReplayed  log segments replayed after the snapshot
 * @param recordsReplayed   log records (frames) replayed after the snapshot
 * @param tornTailBytesCut  bytes cut from the end of the last segment because its last record was incomplete or
 *                          failed its CRC (0 when the log ended cleanly)
 * @param durationMillis    wall time of the recovery
 */
public record RecoveryReport(Path snapshotUsed, long snapshotRecords, int segmentsReplayed, long recordsReplayed,
                             long tornTailBytesCut, long durationMillis) {
}
