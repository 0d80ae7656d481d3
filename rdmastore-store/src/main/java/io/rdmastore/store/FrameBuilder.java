package io.rdmastore.store;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * Builds one log frame in a reusable heap buffer. Owned by one thread at a time (the store keeps one per thread);
 * the buffer returned by {@link #seal()} is valid until the next {@link #reset()}.
 *
 * <p>A positioned frame may leave its last field's bytes outside the buffer ({@link #putExternal}): a large value
 * already in off-heap memory is then written to the log from there, in a gathering write of {@link #pieces}, and
 * never copied into the heap. The frame's length and CRC cover it as if it were inline.
 */
final class FrameBuilder {
    private static final int INITIAL = 4096;
    private static final int KEEP_AT_MOST = 4 * 1024 * 1024;
    /** Bytes a growth leaves past what was asked for. */
    private static final int TAIL_ROOM = 256;
    private byte[] buf = new byte[INITIAL];
    private int pos = LogDescriptor.HEADER_LENGTH;
    private int ops;
    /** CRC of a positioned frame up to its position fields; finished by {@link #stamp}. */
    private final CRC32C crc = new CRC32C();
    /** Offset of the term field of a positioned frame, or -1. */
    private int positionAt = -1;
    private long index;
    /** The buffer was given away by {@link #detach}: read-only until the next {@link #reset}, which replaces it. */
    private boolean detached;
    /** Bytes of the frame kept outside the buffer ({@link #putExternal}), or null. */
    private MemorySegment external;
    /** Where the external bytes belong: they come before {@code buf[externalAt]}. */
    private int externalAt;

    FrameBuilder reset() {
        if (buf.length > KEEP_AT_MOST || detached) {
            // One huge value must not pin a huge buffer to a thread for ever.
            buf = new byte[INITIAL];
        }
        pos = LogDescriptor.HEADER_LENGTH;
        ops = 0;
        positionAt = -1;
        index = 0;
        detached = false;
        external = null;
        return this;
    }

    boolean isEmpty() {
        return ops == 0;
    }

    int ops() {
        return ops;
    }

    /** The buffer's size (tests: a large value must not make it grow twice). */
    int capacity() {
        return buf.length;
    }

    int payloadLength() {
        return pos - LogDescriptor.HEADER_LENGTH + externalLength();
    }

    private int externalLength() {
        return external == null ? 0 : (int) external.byteSize();
    }

    /** Whether part of the frame is outside the buffer ({@link #putExternal}). */
    boolean hasExternal() {
        return external != null;
    }

    /** The bytes given to {@link #putExternal}, or null. */
    MemorySegment external() {
        return external;
    }

    /** The whole frame's length in bytes (header included), external bytes too. */
    int frameLength() {
        return pos + externalLength();
    }

    private void ensure(long extra) {
        long need = pos + extra;
        if (need - LogDescriptor.HEADER_LENGTH > LogDescriptor.MAX_PAYLOAD) {
            throw new LimitExceededException("request too large for one log record (" + need + " bytes)");
        }
        if (need > buf.length) {
            // Room for the frame's tail too (its position op, a TTL): a large value that fills the buffer exactly
            // would otherwise double it once more at the seal, allocating and copying twice its size again.
            long doubled = Math.min((long) buf.length * 2, LogDescriptor.MAX_PAYLOAD + 64L);
            long n = Math.min(Math.max(need + TAIL_ROOM, doubled),
                LogDescriptor.HEADER_LENGTH + LogDescriptor.MAX_PAYLOAD + (long) TAIL_ROOM);
            byte[] b = new byte[(int) n];
            System.arraycopy(buf, 0, b, 0, pos);
            buf = b;
        }
    }

    FrameBuilder op(byte code) {
        ensure(1);
        buf[pos++] = code;
        ops++;
        return this;
    }

    FrameBuilder put(byte v) {
        ensure(1);
        buf[pos++] = v;
        return this;
    }

    FrameBuilder putInt(int v) {
        ensure(4);
        buf[pos] = (byte) v;
        buf[pos + 1] = (byte) (v >>> 8);
        buf[pos + 2] = (byte) (v >>> 16);
        buf[pos + 3] = (byte) (v >>> 24);
        pos += 4;
        return this;
    }

    FrameBuilder putLong(long v) {
        ensure(8);
        for (int i = 0; i < 8; i++) {
            buf[pos + i] = (byte) (v >>> (8 * i));
        }
        pos += 8;
        return this;
    }

    FrameBuilder putDouble(double v) {
        return putLong(Double.doubleToRawLongBits(v));
    }

    FrameBuilder putBytes(byte[] b) {
        return putBytes(b, 0, b.length);
    }

    FrameBuilder putBytes(byte[] b, int off, int len) {
        ensure(4L + len);
        putInt(len);
        System.arraycopy(b, off, buf, pos, len);
        pos += len;
        return this;
    }

    FrameBuilder putBytes(MemorySegment s, long len) {
        ensure(4L + len);
        putInt((int) len);
        MemorySegment.copy(s, ValueLayout.JAVA_BYTE, 0, buf, pos, (int) len);
        pos += (int) len;
        return this;
    }

    /**
     * Appends {@code bytes} as a {@code bytes} field whose data stays where it is: the frame's last field before
     * {@link #sealPositioned} (nothing but the position op may follow). The segment must stay unchanged until the
     * frame is written (the log then calls back) and is read here only by the CRC.
     */
    FrameBuilder putExternal(MemorySegment bytes) {
        if (external != null) {
            throw new IllegalStateException("one external field per frame");
        }
        if (pos - LogDescriptor.HEADER_LENGTH + 4L + bytes.byteSize() > LogDescriptor.MAX_PAYLOAD) {
            throw new LimitExceededException("request too large for one log record (" + bytes.byteSize()
                + " bytes)");
        }
        putInt((int) bytes.byteSize());
        external = bytes;
        externalAt = pos;
        return this;
    }

    /** Appends the ops of {@code other} (built, not sealed) after this frame's: one frame doing both, in order. */
    FrameBuilder append(FrameBuilder other) {
        if (other.external != null) {
            throw new IllegalStateException("a frame with an external field is logged alone");
        }
        int len = other.payloadLength();
        ensure(len);
        System.arraycopy(other.buf, LogDescriptor.HEADER_LENGTH, buf, pos, len);
        pos += len;
        ops += other.ops;
        return this;
    }

    /**
     * Fills in length and CRC and returns the whole frame (header and payload). With an external field the CRC covers
     * its bytes in their place, and the frame is written as its {@link #pieces}: the buffer returned holds the rest.
     */
    ByteBuffer seal() {
        int len = payloadLength();
        crcUpTo(len, pos);
        int p = pos;
        pos = 0;
        putInt(len);
        putInt((int) crc.getValue());
        pos = p;
        return ByteBuffer.wrap(buf, 0, pos).order(LogDescriptor.ORDER);
    }

    /**
     * Seals a log frame that ends with an {@link LogDescriptor#OP_POSITION} op whose term and index (and so the CRC)
     * are filled in by {@link #stamp} under the log's lock. The CRC of everything before them is computed here, outside
     * that lock. Returns the whole frame; its bytes change when it is stamped.
     */
    ByteBuffer sealPositioned() {
        ensure(LogDescriptor.POSITION_OP_LENGTH);
        buf[pos++] = LogDescriptor.OP_POSITION;
        positionAt = pos;
        pos += 16;
        int len = payloadLength();
        crcUpTo(len, positionAt);
        int p = pos;
        pos = 0;
        putInt(len);
        pos = p;
        return ByteBuffer.wrap(buf, 0, pos).order(LogDescriptor.ORDER);
    }

    /**
     * Restarts {@link #crc} over the frame's length field ({@code len}) and its payload up to {@code end} in the
     * buffer, the external bytes, if any, in their place.
     */
    private void crcUpTo(int len, int end) {
        crc.reset();
        for (int shift = 0; shift < 32; shift += 8) {
            crc.update((len >>> shift) & 0xff);
        }
        if (external == null) {
            crc.update(buf, LogDescriptor.HEADER_LENGTH, end - LogDescriptor.HEADER_LENGTH);
        } else {
            crc.update(buf, LogDescriptor.HEADER_LENGTH, externalAt - LogDescriptor.HEADER_LENGTH);
            crc.update(external.asByteBuffer());
            crc.update(buf, externalAt, end - externalAt);
        }
    }

    /** Fills in the position of a frame sealed by {@link #sealPositioned} and finishes its CRC. */
    void stamp(long term, long index) {
        int p = pos;
        pos = positionAt;
        putLong(term);
        putLong(index);
        crc.update(buf, positionAt, 16);
        pos = 4;
        putInt((int) crc.getValue());
        pos = p;
        this.index = index;
    }

    /** The oplog index given by the last {@link #stamp}, 0 if none. */
    long index() {
        return index;
    }

    /**
     * Gives away the array holding the stamped frame (its first {@code pos} bytes) instead of copying it: the caller
     * owns it from now on and this builder never writes it again ({@link #reset} takes a fresh one). Until then
     * {@link #payload} still reads it.
     */
    byte[] detach() {
        detached = true;
        return buf;
    }

    /** A copy of the sealed frame (header and payload, external bytes in their place). */
    byte[] frameCopy() {
        if (external == null) {
            return java.util.Arrays.copyOf(buf, pos);
        }
        byte[] out = new byte[frameLength()];
        System.arraycopy(buf, 0, out, 0, externalAt);
        MemorySegment.copy(external, ValueLayout.JAVA_BYTE, 0, out, externalAt, externalLength());
        System.arraycopy(buf, externalAt, out, externalAt + externalLength(), pos - externalAt);
        return out;
    }

    /**
     * The sealed or stamped frame of a builder with an external field, as the pieces to write in order: the buffer up
     * to the external bytes, those bytes (a direct view: no copy into the heap), the rest of the buffer. The buffer is
     * given away as by {@link #detach}.
     */
    ByteBuffer[] pieces() {
        detached = true;
        return new ByteBuffer[] {ByteBuffer.wrap(buf, 0, externalAt), external.asByteBuffer(),
            ByteBuffer.wrap(buf, externalAt, pos - externalAt)};
    }

    /**
     * The payload up to the external field's data (its length included), for applying a frame with an external field:
     * the caller applies the external bytes itself.
     */
    ByteBuffer headPayload() {
        return ByteBuffer.wrap(buf, LogDescriptor.HEADER_LENGTH, externalAt - LogDescriptor.HEADER_LENGTH).slice()
                .order(LogDescriptor.ORDER);
    }

    /** The payload alone, for applying the frame just sealed. */
    ByteBuffer payload() {
        return ByteBuffer.wrap(buf, LogDescriptor.HEADER_LENGTH, pos - LogDescriptor.HEADER_LENGTH).slice()
                .order(LogDescriptor.ORDER);
    }
}
