package io.rdmastore.store.blob;

/**
 * A string value taken for a transfer ({@link io.rdmastore.store.Store#acquireBlob}): either a blob file's version,
 * referenced for the caller until it calls {@link BlobVersion#release()}, or a copy of a value small enough to be
 * kept in memory.
 *
 * @param blob   the referenced version, or null for a value kept in memory
 * @param inline the value's bytes when {@code blob} is null
 */
public record BlobValue(BlobVersion blob, byte[] inline) {
}
