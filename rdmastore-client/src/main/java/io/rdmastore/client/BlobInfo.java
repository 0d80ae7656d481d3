package io.rdmastore.client;

/**
 * What a blob get delivered or a put stored: the version (grows with every put on the server), the length and the
 * CRC32C that was verified end to end. Immutable; any thread.
 */
public record BlobInfo(long version, long length, int crc32c) {
}
