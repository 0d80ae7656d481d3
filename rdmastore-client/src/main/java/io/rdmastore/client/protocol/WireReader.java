package io.rdmastore.client.protocol;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * A cursor over one received message, decoding the big-endian primitives of {@link ProtocolDescriptor}. Every read
 * checks bounds and throws {@link ProtocolException} with the offset and what was expected, never reading past the
 * message.
 *
 * <p>Threads: not thread-safe; one reader per thread or per connection, re-{@link #wrap wrapped} for each message.
 * Memory: the reader does not own the segment; it is valid only while the message is (the transport callback), so
 * anything kept is copied out ({@link #bytes()}) or sliced for immediate use ({@link #slice()}).
 */
public final class WireReader {
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private MemorySegment segment = MemorySegment.NULL;
    private long position;

    /** Points this reader at {@code message}, positioned at {@code offset}. */
    public WireReader wrap(MemorySegment message, long offset) {
        segment = message;
        position = offset;
        return this;
    }

    /** Drops the reference to the last message so it can be freed. */
    public void clear() {
        segment = MemorySegment.NULL;
        position = 0;
    }

    public long position() {
        return position;
    }

    public long remaining() {
        return segment.byteSize() - position;
    }

    public boolean hasRemaining() {
        return position < segment.byteSize();
    }

    private void need(long n, String what) {
        if (n > segment.byteSize() - position) {
            throw new ProtocolException("truncated message: " + what + " needs " + n + " bytes at offset " + position
                + " but the message has " + segment.byteSize() + " bytes");
        }
    }

    public int u8(String what) {
        need(1, what);
        return segment.get(ValueLayout.JAVA_BYTE, position++) & 0xFF;
    }

    public int i32(String what) {
        need(4, what);
        int v = segment.get(INT, position);
        position += 4;
        return v;
    }

    public long i64(String what) {
        need(8, what);
        long v = segment.get(LONG, position);
        position += 8;
        return v;
    }

    /** Reads a length prefix for {@code what} and checks it fits the rest of the message and {@code limit}. */
    public int length(String what, long limit) {
        int len = i32(what + " length");
        if (len < 0) {
            throw new ProtocolException("negative " + what + " length " + len + " at offset " + (position - 4));
        }
        if (len > limit) {
            throw new LimitException(what + " of " + len + " bytes exceeds limit of " + limit + " bytes");
        }
        need(len, what);
        return len;
    }

    /** A length-prefixed byte string, copied out. */
    public byte[] bytes(String what, long limit) {
        int len = length(what, limit);
        byte[] out = new byte[len];
        MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, position, out, 0, len);
        position += len;
        return out;
    }

    /** A length-prefixed byte string, or null when the prefix is -1 (nil in replies). */
    public byte[] nullableBytes(String what, long limit) {
        need(4, what + " length");
        if (segment.get(INT, position) == -1) {
            position += 4;
            return null;
        }
        return bytes(what, limit);
    }

    /** A length-prefixed UTF-8 string. */
    public String string(String what, long limit) {
        return new String(bytes(what, limit), StandardCharsets.UTF_8);
    }

    /** A length-prefixed byte string as a view into the message (valid as long as the message). */
    public MemorySegment slice(String what, long limit) {
        int len = length(what, limit);
        MemorySegment s = segment.asSlice(position, len);
        position += len;
        return s;
    }

    /** Everything from the position to the end, copied out. */
    public byte[] rest() {
        byte[] out = new byte[(int) remaining()];
        MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, position, out, 0, out.length);
        position = segment.byteSize();
        return out;
    }

    /** Everything from the position to the end as a view. */
    public MemorySegment restSlice() {
        MemorySegment s = segment.asSlice(position);
        position = segment.byteSize();
        return s;
    }

    /** Everything from the position to the end as UTF-8 text. */
    public String restString() {
        return new String(rest(), StandardCharsets.UTF_8);
    }

    /** Throws when bytes are left over: a request with trailing bytes is malformed. */
    public void end() {
        if (hasRemaining()) {
            throw new ProtocolException(remaining() + " unexpected trailing bytes at offset " + position);
        }
    }

    /** A length prefix that exceeded its configured limit; the server replies "ERR ... exceeds limit ...". */
    public static final class LimitException extends RuntimeException {
        @java.io.Serial
        private static final long serialVersionUID = 1L;

        public LimitException(String message) {
            super(message);
        }
    }
}
