package io.rdmastore.server.resp;

import io.netty.buffer.ByteBuf;

import java.lang.foreign.MemorySegment;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;

/**
 * Encodes replies into one output buffer in RESP2 or RESP3. The RESP3-only types (map, set, null, double, boolean,
 * verbatim string) fall back to their RESP2 forms when the connection speaks RESP2, so command code writes each reply
 * once.
 *
 * <p>Threads: confined to the connection's event loop. Buffers: the writer does not own {@link #out}; the connection
 * handler installs a fresh buffer per read batch and hands it to Netty (which releases it) on flush.
 */
final class RespWriter {
    private static final byte[] CRLF = {'\r', '\n'};
    private static final byte[] OK = "+OK\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] NULL2 = "$-1\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] NULL_ARRAY2 = "*-1\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] NULL3 = "_\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ZERO = ":0\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ONE = ":1\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] EMPTY_ARRAY = "*0\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] MIN_LONG = "-9223372036854775808".getBytes(StandardCharsets.US_ASCII);

    /** Bulk strings up to this size are framed in {@link #scratch} and copied with one call. */
    private static final int SMALL_BULK = 64;

    ByteBuf out;
    int proto = 2;
    /**
     * Where a header (type byte, decimal, CRLF) and a small bulk string are assembled, so that each costs one
     * {@code writeBytes} into {@link #out} rather than a call per byte (profiles of LRANGE at -P 16 showed the
     * per-digit {@code setByte} and its index and reference-count checks among the face's top costs).
     */
    private final byte[] scratch = new byte[1 + 20 + 2 + SMALL_BULK + 2];
    /** Error replies written so far, and where each is counted by its code (INFO errorstats); null: not counted. */
    long errors;
    java.util.function.Consumer<String> errorSink;

    boolean resp3() {
        return proto == 3;
    }

    void ok() {
        out.writeBytes(OK);
    }

    /** A simple string; {@code s} must be ASCII without CR or LF. */
    void simple(String s) {
        out.writeByte('+');
        ascii(s);
        out.writeBytes(CRLF);
    }

    /**
     * An error reply. {@code text} starts with its code ("ERR ...", "WRONGTYPE ..."); line breaks are replaced by
     * spaces because a raw CR or LF would break the client's framing.
     */
    void error(String text) {
        errors++;
        if (errorSink != null) {
            errorSink.accept(text);
        }
        out.writeByte('-');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            out.writeByte(c == '\r' || c == '\n' ? ' ' : (c < 0x80 ? c : '?'));
        }
        out.writeBytes(CRLF);
    }

    void integer(long v) {
        if (v == 0) {
            out.writeBytes(ZERO);
        } else if (v == 1) {
            out.writeBytes(ONE);
        } else {
            out.writeBytes(scratch, 0, header((byte) ':', v));
        }
    }

    /** An integer, or a null bulk when {@code v} is null (MEMORY USAGE of a missing key). */
    void integerOrNull(Long v) {
        if (v == null) {
            nullBulk();
        } else {
            integer(v);
        }
    }

    void bulk(byte[] v) {
        if (v == null) {
            nullBulk();
            return;
        }
        int n = header((byte) '$', v.length);
        if (v.length <= SMALL_BULK) {
            System.arraycopy(v, 0, scratch, n, v.length);
            n += v.length;
            scratch[n++] = '\r';
            scratch[n++] = '\n';
            out.writeBytes(scratch, 0, n);
            return;
        }
        out.writeBytes(scratch, 0, n);
        out.writeBytes(v);
        out.writeBytes(CRLF);
    }

    void bulk(byte[] v, int off, int len) {
        out.writeByte('$');
        decimal(len);
        out.writeBytes(CRLF);
        out.writeBytes(v, off, len);
        out.writeBytes(CRLF);
    }

    /** A bulk string copied from {@code v}, which the caller keeps owning. */
    void bulk(MemorySegment v) {
        if (v == null) {
            nullBulk();
            return;
        }
        long len = v.byteSize();
        out.writeByte('$');
        decimal(len);
        out.writeBytes(CRLF);
        if (len > 0) {
            out.writeBytes(v.asByteBuffer());
        }
        out.writeBytes(CRLF);
    }

    void bulk(String s) {
        if (s == null) {
            nullBulk();
            return;
        }
        bulk(s.getBytes(StandardCharsets.UTF_8));
    }

    /** A bulk string holding the decimal form of {@code v} (RESP2 has no typed double for HINCRBYFLOAT replies). */
    void bulkDecimal(long v) {
        int len = decimalLength(v);
        out.writeByte('$');
        decimal(len);
        out.writeBytes(CRLF);
        decimal(v);
        out.writeBytes(CRLF);
    }

    void nullBulk() {
        out.writeBytes(proto == 3 ? NULL3 : NULL2);
    }

    void nullArray() {
        out.writeBytes(proto == 3 ? NULL3 : NULL_ARRAY2);
    }

    void arrayHeader(long n) {
        if (n == 0) {
            out.writeBytes(EMPTY_ARRAY);
            return;
        }
        out.writeBytes(scratch, 0, header((byte) '*', n));
    }

    /** An out-of-band push of {@code n} elements (pub/sub): RESP3's {@code >}, an array in RESP2. */
    void pushHeader(long n) {
        out.writeByte(proto == 3 ? '>' : '*');
        decimal(n);
        out.writeBytes(CRLF);
    }

    /** A map of {@code n} pairs; RESP2 gets a flat array of 2n elements. */
    void mapHeader(long n) {
        if (proto == 3) {
            out.writeByte('%');
            decimal(n);
            out.writeBytes(CRLF);
        } else {
            arrayHeader(n * 2);
        }
    }

    void setHeader(long n) {
        if (proto == 3) {
            out.writeByte('~');
            decimal(n);
            out.writeBytes(CRLF);
        } else {
            arrayHeader(n);
        }
    }

    /** A double: RESP3 ',' type, RESP2 bulk string, both in Redis's shortest round-trip form. */
    void dbl(double v) {
        String s = formatDouble(v);
        if (proto == 3) {
            out.writeByte(',');
            ascii(s);
            out.writeBytes(CRLF);
        } else {
            bulk(s.getBytes(StandardCharsets.US_ASCII));
        }
    }

    /** A verbatim text (INFO, CLIENT LIST): RESP3 '=' with format "txt", RESP2 bulk string. */
    void verbatim(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        if (proto == 3) {
            out.writeByte('=');
            decimal(b.length + 4L);
            out.writeBytes(CRLF);
            out.writeBytes(new byte[] {'t', 'x', 't', ':'});
            out.writeBytes(b);
            out.writeBytes(CRLF);
        } else {
            bulk(b);
        }
    }

    /** Formats a double the way Redis prints INCRBYFLOAT results: no exponent, no trailing zeros. */
    static String formatDouble(double v) {
        if (Double.isInfinite(v)) {
            return v > 0 ? "inf" : "-inf";
        }
        if (v == Math.rint(v) && Math.abs(v) < 1e17) {
            return Long.toString((long) v);
        }
        return BigDecimal.valueOf(v).stripTrailingZeros().toPlainString();
    }

    private void ascii(String s) {
        for (int i = 0; i < s.length(); i++) {
            out.writeByte(s.charAt(i));
        }
    }

    static int decimalLength(long v) {
        if (v == Long.MIN_VALUE) {
            return 20;
        }
        int n = 1;
        if (v < 0) {
            n++;
            v = -v;
        }
        while (v >= 10) {
            v /= 10;
            n++;
        }
        return n;
    }

    /** {@code type}, the decimal form of {@code v} and CRLF into {@link #scratch}; returns the length. */
    private int header(byte type, long v) {
        byte[] b = scratch;
        b[0] = type;
        int n = 1;
        if (v < 0) {
            if (v == Long.MIN_VALUE) {
                System.arraycopy(MIN_LONG, 0, b, 1, MIN_LONG.length);
                n += MIN_LONG.length;
                b[n++] = '\r';
                b[n++] = '\n';
                return n;
            }
            b[n++] = '-';
            v = -v;
        }
        int end = n + decimalLength(v);
        for (int pos = end; pos > n; v /= 10) {
            b[--pos] = (byte) ('0' + v % 10);
        }
        b[end] = '\r';
        b[end + 1] = '\n';
        return end + 2;
    }

    /** Writes the ASCII decimal form of {@code v} without allocating. */
    private void decimal(long v) {
        if (v == Long.MIN_VALUE) {
            out.writeBytes(MIN_LONG);
            return;
        }
        if (v < 0) {
            out.writeByte('-');
            v = -v;
        }
        if (v < 10) {
            out.writeByte((int) ('0' + v));
            return;
        }
        int digits = decimalLength(v);
        int end = out.writerIndex() + digits;
        out.ensureWritable(digits);
        int pos = end;
        while (v > 0) {
            out.setByte(--pos, (int) ('0' + v % 10));
            v /= 10;
        }
        out.writerIndex(end);
    }
}
