/**
 * Blob storage: large values kept as one file each in the data directory's {@code blobs} folder, written durably
 * (temporary file, CRC32C check, fsync, rename, directory fsync) and memory-mapped for serving, with reference-counted
 * versions so a reader keeps the version it started with while the key is overwritten or deleted. No network code.
 */
package io.rdmastore.store.blob;
