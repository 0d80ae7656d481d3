package io.rdmastore.client.protocol;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Encodes one message at a time into a growable heap buffer that is reused for the next message, so a steady stream
 * of requests or replies of similar size allocates nothing.
 *
 * <p>Threads: not thread-safe; one writer per connection (server) or per thread (client). Memory: the writer owns its
 * buffer; {@link #message()} is a view valid until the next {@link #reset()} or write, which is enough for
 * {@code Connection.offer}, which copies before it returns.
 */
public final class WireWriter {
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private final int initialCapacity;
    private byte[] array;
    private MemorySegment buffer;
    private int position;

    public WireWriter(int initialCapacity) {
        this.initialCapacity = initialCapacity;
        this.array = new byte[initialCapacity];
        this.buffer = MemorySegment.ofArray(array);
    }

    /**
     * Starts a new message. A buffer that grew past 1 MiB for one large value is given back, so an idle connection
     * does not pin the largest message it ever sent.
     */
    public WireWriter reset() {
        if (array.length > (1 << 20)) {
            array = new byte[initialCapacity];
            buffer = MemorySegment.ofArray(array);
        }
        position = 0;
        return this;
    }

    /** Starts a message with the 9-byte header {@code [type:u8][requestId:i64]}. */
    public WireWriter header(byte type, long requestId) {
        reset();
        return u8(type).i64(requestId);
    }

    private void ensure(long extra) {
        long needed = position + extra;
        if (needed > array.length) {
            if (needed > Integer.MAX_VALUE - 16) {
                throw new ProtocolException("message of " + needed + " bytes is too large to encode");
            }
            long grown = Math.max(needed, Math.min((long) array.length * 2, Integer.MAX_VALUE - 16));
            byte[] next = new byte[(int) grown];
            System.arraycopy(array, 0, next, 0, position);
            array = next;
            buffer = MemorySegment.ofArray(array);
        }
    }

    public int position() {
        return position;
    }

    public WireWriter u8(int v) {
        ensure(1);
        array[position++] = (byte) v;
        return this;
    }

    public WireWriter i32(int v) {
        ensure(4);
        buffer.set(INT, position, v);
        position += 4;
        return this;
    }

    /** Overwrites an i32 written earlier at {@code at} (a count known only at the end). */
    public WireWriter i32At(int at, int v) {
        buffer.set(INT, at, v);
        return this;
    }

    /** Overwrites a byte written earlier at {@code at} (the status, once the outcome is known). */
    public WireWriter u8At(int at, int v) {
        array[at] = (byte) v;
        return this;
    }

    /** Moves the end of the message back to {@code at}, dropping what was written after it. */
    public WireWriter truncate(int at) {
        if (at < 0 || at > position) {
            throw new IllegalArgumentException("truncate to " + at + " outside 0.." + position);
        }
        position = at;
        return this;
    }

    public WireWriter i64(long v) {
        ensure(8);
        buffer.set(LONG, position, v);
        position += 8;
        return this;
    }

    /** {@code [length:i32][bytes]}. */
    public WireWriter bytes(byte[] v) {
        ensure(4L + v.length);
        i32(v.length);
        System.arraycopy(v, 0, array, position, v.length);
        position += v.length;
        return this;
    }

    /** {@code [length:i32][bytes]}, or {@code [-1]} for null. */
    public WireWriter nullableBytes(byte[] v) {
        return v == null ? i32(-1) : bytes(v);
    }

    /** {@code [length:i32][bytes]} from a segment. */
    public WireWriter bytes(MemorySegment v) {
        i32(Math.toIntExact(v.byteSize()));
        return raw(v);
    }

    /** Bytes without a length prefix (the last field of a message runs to its end). */
    public WireWriter raw(byte[] v) {
        ensure(v.length);
        System.arraycopy(v, 0, array, position, v.length);
        position += v.length;
        return this;
    }

    /** Bytes of a segment without a length prefix. */
    public WireWriter raw(MemorySegment v) {
        int len = Math.toIntExact(v.byteSize());
        ensure(len);
        MemorySegment.copy(v, ValueLayout.JAVA_BYTE, 0, array, position, len);
        position += len;
        return this;
    }

    /** {@code [length:i32][utf8]}. */
    public WireWriter string(String v) {
        return bytes(v.getBytes(StandardCharsets.UTF_8));
    }

    /** UTF-8 text without a length prefix. */
    public WireWriter rawString(String v) {
        return raw(v.getBytes(StandardCharsets.UTF_8));
    }

    /** The message written since the last reset, as a view of this writer's buffer. */
    public MemorySegment message() {
        return buffer.asSlice(0, position);
    }

    /** A copy of the message written since the last reset. */
    public byte[] toByteArray() {
        return java.util.Arrays.copyOf(array, position);
    }
}
