package io.rdmastore.store;

import java.util.List;

/**
 * One step of a cursor iteration ({@link Store#scan}, {@link Store#hscan}). Immutable; any thread; the byte arrays
 * are fresh copies owned by the caller.
 *
 * @param nextCursor the cursor for the next call; 0 when the iteration is complete
 * @param keys       keys for SCAN; alternating field, value for HSCAN
 */
public record ScanResult(long nextCursor, List<byte[]> keys) {
}
