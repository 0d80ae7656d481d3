package io.rdmastore.transport;

import java.lang.foreign.MemorySegment;

/** The bounds check every provider applies to a one-sided read or write before any byte moves. Thread-safe. */
public final class MemoryRanges {
    private MemoryRanges() {
    }

    /**
     * Returns null when {@code length} bytes fit at {@code remoteOffset} of {@code remote} and at {@code localOffset}
     * of {@code local}'s segment, otherwise what does not fit, in words. Overflow-safe.
     */
    public static String check(RemoteMemory remote, long remoteOffset, RegisteredMemory local, long localOffset,
                               long length) {
        return check(remote, remoteOffset, local.segment(), "registered segment", localOffset, length);
    }

    /** As {@link #check(RemoteMemory, long, RegisteredMemory, long, long)}, for a destination not registered. */
    public static String check(RemoteMemory remote, long remoteOffset, MemorySegment local,
                               long localOffset, long length) {
        return check(remote, remoteOffset, local, "destination", localOffset, length);
    }

    private static String check(RemoteMemory remote, long remoteOffset, MemorySegment local,
                                String localName, long localOffset, long length) {
        if (length < 0) {
            return "negative length " + length;
        }
        if (remoteOffset < 0 || remoteOffset > remote.length() - length) {
            return "remote range [" + remoteOffset + ", +" + length + ") is outside the peer's region of "
                + remote.length() + " bytes";
        }
        long localLength = local.byteSize();
        if (localOffset < 0 || localOffset > localLength - length) {
            return "local range [" + localOffset + ", +" + length + ") is outside the " + localName + " of "
                + localLength + " bytes";
        }
        return null;
    }
}
