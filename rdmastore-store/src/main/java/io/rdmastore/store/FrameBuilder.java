package io.rdmastore.store;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * Builds one log frame in a reusable heap buffer. Owned by one thread at a time (the store keeps one per thread);
 * the buffer returned by {@link #seal()} is valid until the next {@link #reset()}.
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
        return pos - LogDescriptor.HEADER_LENGTH;
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

    /** Appends the ops of {@code other} (built, not sealed) after this frame's: one frame doing both, in order. */
    FrameBuilder append(FrameBuilder other) {
        int len = other.payloadLength();
        ensure(len);
        System.arraycopy(other.buf, LogDescriptor.HEADER_LENGTH, buf, pos, len);
        pos += len;
        ops += other.ops;
        return this;
    }

    /** Fills in length and CRC and returns the whole frame (header and payload). */
    ByteBuffer seal() {
        int len = pos - LogDescriptor.HEADER_LENGTH;
        int crc = LogDescriptor.crc(len, buf, LogDescriptor.HEADER_LENGTH, len);
        int p = pos;
        pos = 0;
        putInt(len);
        putInt(crc);
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
        int len = pos - LogDescriptor.HEADER_LENGTH;
        crc.reset();
        crc.update(len & 0xff);
        crc.update((len >>> 8) & 0xff);
        crc.update((len >>> 16) & 0xff);
        crc.update((len >>> 24) & 0xff);
        crc.update(buf, LogDescriptor.HEADER_LENGTH, len - 16);
        int p = pos;
        pos = 0;
        putInt(len);
        pos = p;
        return ByteBuffer.wrap(buf, 0, pos).order(LogDescriptor.ORDER);
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

    /** A copy of the sealed frame (header and payload). */
    byte[] frameCopy() {
        return java.util.Arrays.copyOf(buf, pos);
    }

    /** The payload alone, for applying the frame just sealed. */
    ByteBuffer payload() {
        return ByteBuffer.wrap(buf, LogDescriptor.HEADER_LENGTH, pos - LogDescriptor.HEADER_LENGTH).slice()
                .order(LogDescriptor.ORDER);
    }
}
