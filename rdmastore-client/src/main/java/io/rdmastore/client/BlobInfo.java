package io.rdmastore.client;

import java.util.List;

/**
 * What a blob get delivered or a put stored: the version (grows with every put on the server), the length and the
 * CRC32C that was verified end to end. Immutable; any thread.
 */
public record BlobInfo(long version, long length, int crc32c, List<Member> members) {
    /**
     * What one member of a replica set did with a put: how the bytes reached it ({@code path}: pulled from the client,
     * parallel pull from the client, pipeline, or pulled from the primary after the commit), whether it succeeded,
     * and where the time went. A member not listed receives the blob from the primary after the commit.
     */
    public record Member(String member, String path, boolean ok, String detail, long transferNanos, long crcNanos,
                         long syncNanos) {
    }

    public BlobInfo {
        members = members == null ? List.of() : List.copyOf(members);
    }

    public BlobInfo(long version, long length, int crc32c) {
        this(version, length, crc32c, List.of());
    }
}
