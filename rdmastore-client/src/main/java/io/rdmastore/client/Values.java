package io.rdmastore.client;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.ProtocolException;
import io.rdmastore.client.protocol.WireReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Decodes the native protocol's values (the reply body of COMMAND and TRANSACTION, and of pushes; docs/protocol.md)
 * into Java objects, and converts them to the types the typed methods return: nil is {@code null}, an integer a
 * {@link Long}, a double a {@link Double}, a bulk string a {@code byte[]}, a status a {@link String}, an array a
 * {@link List} of these, and an error inside an array an {@link RdmaStoreServerException} (not thrown).
 *
 * <p>Threads: stateless; any thread.
 */
final class Values {
    /** Arrays nest at most this deep; deeper ones are malformed. */
    private static final int MAX_DEPTH = 32;

    private Values() {
    }

    static Object read(WireReader r) {
        return read(r, 0);
    }

    private static Object read(WireReader r, int depth) {
        int type = r.u8("value type");
        return switch (type) {
            case ProtocolDescriptor.VALUE_NIL -> null;
            case ProtocolDescriptor.VALUE_INTEGER -> r.i64("integer");
            case ProtocolDescriptor.VALUE_DOUBLE -> Double.longBitsToDouble(r.i64("double"));
            case ProtocolDescriptor.VALUE_BULK -> r.bytes("bulk", Integer.MAX_VALUE);
            case ProtocolDescriptor.VALUE_STATUS -> r.string("status", Integer.MAX_VALUE);
            case ProtocolDescriptor.VALUE_ERROR -> new RdmaStoreServerException(r.string("error", Integer.MAX_VALUE));
            case ProtocolDescriptor.VALUE_ARRAY -> {
                int n = r.i32("array count");
                if (n < 0 || n > r.remaining() || depth > MAX_DEPTH) {
                    throw new ProtocolException("array of " + n + " values does not fit the " + r.remaining()
                        + " remaining bytes, or nests too deep");
                }
                List<Object> out = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    out.add(read(r, depth + 1));
                }
                yield out;
            }
            default -> throw new ProtocolException("unknown value type " + type);
        };
    }

    // ---- conversions for the typed methods; a reply of another shape is a protocol error ----

    static long asLong(Object v) {
        if (v instanceof Long l) {
            return l;
        }
        throw unexpected("an integer", v);
    }

    static Long asLongOrNull(Object v) {
        return v == null ? null : asLong(v);
    }

    static boolean asBoolean(Object v) {
        return asLong(v) != 0;
    }

    static byte[] asBytes(Object v) {
        if (v == null || v instanceof byte[]) {
            return (byte[]) v;
        }
        throw unexpected("a bulk string", v);
    }

    static String asString(Object v) {
        byte[] b = asBytes(v);
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    /** A score: a double, or (from a RESP2-shaped reply) its decimal text. */
    static Double asDouble(Object v) {
        if (v == null || v instanceof Double) {
            return (Double) v;
        }
        if (v instanceof byte[] b) {
            String s = new String(b, StandardCharsets.US_ASCII);
            return switch (s) {
                case "inf", "+inf" -> Double.POSITIVE_INFINITY;
                case "-inf" -> Double.NEGATIVE_INFINITY;
                default -> Double.parseDouble(s);
            };
        }
        if (v instanceof Long l) {
            return l.doubleValue();
        }
        throw unexpected("a double", v);
    }

    static List<Object> asList(Object v) {
        if (v == null) {
            return List.of();
        }
        if (v instanceof List<?> l) {
            @SuppressWarnings("unchecked")
            List<Object> list = (List<Object>) l;
            return list;
        }
        throw unexpected("an array", v);
    }

    static List<byte[]> asBytesList(Object v) {
        List<Object> l = asList(v);
        List<byte[]> out = new ArrayList<>(l.size());
        for (Object o : l) {
            out.add(asBytes(o));
        }
        return out;
    }

    static List<String> strings(List<byte[]> l) {
        List<String> out = new ArrayList<>(l.size());
        for (byte[] b : l) {
            out.add(b == null ? null : new String(b, StandardCharsets.UTF_8));
        }
        return out;
    }

    static Set<String> stringSet(List<byte[]> l) {
        return new LinkedHashSet<>(strings(l));
    }

    /** {@code [[member, score], ...]} (or a flat {@code [member, score, ...]}) as scored members. */
    static List<ScoredMember> asScored(Object v) {
        List<Object> l = asList(v);
        List<ScoredMember> out = new ArrayList<>(l.size());
        if (!l.isEmpty() && !(l.get(0) instanceof List)) {
            for (int i = 0; i + 1 < l.size(); i += 2) {
                out.add(new ScoredMember(asBytes(l.get(i)), asDouble(l.get(i + 1))));
            }
            return out;
        }
        for (Object o : l) {
            List<Object> pair = asList(o);
            out.add(new ScoredMember(asBytes(pair.get(0)), asDouble(pair.get(1))));
        }
        return out;
    }

    /** BLPOP's {@code [key, value]}, or null when it timed out. */
    static Map.Entry<byte[], byte[]> asKeyValue(Object v) {
        if (v == null) {
            return null;
        }
        List<Object> l = asList(v);
        return Map.entry(asBytes(l.get(0)), asBytes(l.get(1)));
    }

    private static ProtocolException unexpected(String what, Object v) {
        return new ProtocolException("expected " + what + " but the reply holds "
            + (v == null ? "nil" : v.getClass().getSimpleName()));
    }
}
