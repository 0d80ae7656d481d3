package io.rdmastore.store;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;

/**
 * Builds one log frame in a reusable heap buffer. Owned by one thread at a time (the store keeps one per thread);
 * the buffer returned by {@link #seal()} is valid until the next {@link #reset()}.
 */
final class FrameBuilder {
    private static final int INITIAL = 4096;
    private static final int KEEP_AT_MOST = 4 * 1024 * 1024;
    private byte[] buf = new byte[INITIAL];
    private int pos = LogDescriptor.HEADER_LENGTH;
    private int ops;

    FrameBuilder reset() {
        if (buf.length > KEEP_AT_MOST) {
            // One huge value must not pin a huge buffer to a thread for ever.
            buf = new byte[INITIAL];
        }
        pos = LogDescriptor.HEADER_LENGTH;
        ops = 0;
        return this;
    }

    boolean isEmpty() {
        return ops == 0;
    }

    int ops() {
        return ops;
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
            long n = Math.max(need, Math.min((long) buf.length * 2, LogDescriptor.MAX_PAYLOAD + 64L));
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

    /** The payload alone, for applying the frame just sealed. */
    ByteBuffer payload() {
        return ByteBuffer.wrap(buf, LogDescriptor.HEADER_LENGTH, pos - LogDescriptor.HEADER_LENGTH).slice()
                .order(LogDescriptor.ORDER);
    }
}
