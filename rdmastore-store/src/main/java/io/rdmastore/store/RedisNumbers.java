package io.rdmastore.store;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;

/**
 * Number parsing and formatting with Redis's rules, so INCRBY and INCRBYFLOAT accept and print what Redis does.
 * Stateless; any thread.
 */
final class RedisNumbers {
    private static final BigDecimal MAX_DOUBLE = new BigDecimal(Double.MAX_VALUE);

    private RedisNumbers() {
    }

    /** Redis {@code string2ll}: optional '-', digits, no '+', no spaces, no leading zeros, fits 64 bits. */
    static long parseLong(byte[] b) {
        int n = b.length;
        if (n == 0 || n > 20) {
            throw new NotANumberException(NotANumberException.NOT_AN_INTEGER);
        }
        int i = 0;
        boolean negative = false;
        if (b[0] == '-') {
            negative = true;
            i = 1;
            if (n == 1) {
                throw new NotANumberException(NotANumberException.NOT_AN_INTEGER);
            }
        }
        if (b[i] == '0' && n > i + 1) {
            throw new NotANumberException(NotANumberException.NOT_AN_INTEGER);
        }
        if (b[i] == '0' && negative) {
            throw new NotANumberException(NotANumberException.NOT_AN_INTEGER);
        }
        long v = 0;
        for (; i < n; i++) {
            int d = b[i] - '0';
            if (d < 0 || d > 9) {
                throw new NotANumberException(NotANumberException.NOT_AN_INTEGER);
            }
            // Accumulate negatively: the negative range is one larger.
            if (v < (Long.MIN_VALUE + d) / 10) {
                throw new NotANumberException(NotANumberException.NOT_AN_INTEGER);
            }
            v = v * 10 - d;
        }
        if (!negative) {
            if (v == Long.MIN_VALUE) {
                throw new NotANumberException(NotANumberException.NOT_AN_INTEGER);
            }
            v = -v;
        }
        return v;
    }

    static byte[] formatLong(long v) {
        return Long.toString(v).getBytes(StandardCharsets.US_ASCII);
    }

    static long addExact(long a, long b) {
        long r = a + b;
        if (((a ^ r) & (b ^ r)) < 0) {
            throw new NotANumberException(NotANumberException.OVERFLOW);
        }
        return r;
    }

    /** A float as Redis's {@code strtold} sees it, finite only; decimal so that 10.5 + 0.1 prints 10.6 as in Redis. */
    static BigDecimal parseFloat(byte[] b) {
        return parseFloat(new String(b, StandardCharsets.ISO_8859_1));
    }

    static BigDecimal parseFloat(String s) {
        if (s.isEmpty() || s.length() > 5000 || Character.isWhitespace(s.charAt(0))
                || Character.isWhitespace(s.charAt(s.length() - 1))) {
            throw new NotANumberException(NotANumberException.NOT_A_FLOAT);
        }
        try {
            BigDecimal v = new BigDecimal(s);
            if (v.abs().compareTo(MAX_DOUBLE) > 0) {
                throw new NotANumberException(NotANumberException.NOT_A_FLOAT);
            }
            return v;
        } catch (NumberFormatException e) {
            throw new NotANumberException(NotANumberException.NOT_A_FLOAT);
        }
    }

    static BigDecimal fromDouble(double d) {
        if (Double.isNaN(d) || Double.isInfinite(d)) {
            throw new NotANumberException(NotANumberException.NAN_OR_INFINITY);
        }
        return BigDecimal.valueOf(d);
    }

    /** Adds and formats like Redis ({@code %.17Lf}, trailing zeros and point removed). */
    static String addFloat(BigDecimal current, BigDecimal delta) {
        BigDecimal r = current.add(delta);
        if (r.abs().compareTo(MAX_DOUBLE) > 0) {
            throw new NotANumberException(NotANumberException.NAN_OR_INFINITY);
        }
        if (r.scale() > 17) {
            r = r.setScale(17, RoundingMode.HALF_EVEN);
        }
        r = r.stripTrailingZeros();
        if (r.signum() == 0) {
            return "0";
        }
        return r.toPlainString();
    }
}
