package io.rdmastore.store.doc;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.util.Iterator;
import java.util.Map;

import org.bson.BsonArray;
import org.bson.BsonBinaryReader;
import org.bson.BsonBinaryWriter;
import org.bson.BsonDocument;
import org.bson.BsonType;
import org.bson.BsonValue;
import org.bson.codecs.BsonDocumentCodec;
import org.bson.codecs.DecoderContext;
import org.bson.codecs.EncoderContext;
import org.bson.io.BasicOutputBuffer;
import org.bson.types.Decimal128;

/**
 * Value comparison with MongoDB's rules and BSON encoding. Stateless; any thread.
 */
public final class BsonValues {
    private static final BsonDocumentCodec CODEC = new BsonDocumentCodec();

    private BsonValues() {
    }

    /** Whether the value is int32, int64, double or decimal128. */
    public static boolean isNumber(BsonValue v) {
        BsonType t = v.getBsonType();
        return t == BsonType.INT32 || t == BsonType.INT64 || t == BsonType.DOUBLE || t == BsonType.DECIMAL128;
    }

    /** A number's exact value; null for NaN and infinities. */
    public static BigDecimal decimal(BsonValue v) {
        switch (v.getBsonType()) {
            case INT32:
                return BigDecimal.valueOf(v.asInt32().getValue());
            case INT64:
                return BigDecimal.valueOf(v.asInt64().getValue());
            case DOUBLE: {
                double d = v.asDouble().getValue();
                return Double.isFinite(d) ? new BigDecimal(d) : null;
            }
            case DECIMAL128: {
                Decimal128 d = v.asDecimal128().getValue();
                return d.isNaN() || d.isInfinite() ? null : d.bigDecimalValue();
            }
            default:
                throw new IllegalArgumentException("not a number: " + v.getBsonType());
        }
    }

    private static double approx(BsonValue v) {
        return switch (v.getBsonType()) {
            case DOUBLE -> v.asDouble().getValue();
            case DECIMAL128 -> v.asDecimal128().getValue().isNaN() ? Double.NaN
                    : v.asDecimal128().getValue().isNegative() ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
            default -> 0;
        };
    }

    /** Compares two numbers by value; NaN sorts below everything, as in MongoDB. */
    public static int compareNumbers(BsonValue a, BsonValue b) {
        BigDecimal x = decimal(a);
        BigDecimal y = decimal(b);
        if (x != null && y != null) {
            return x.compareTo(y);
        }
        double dx = x != null ? 0 : approx(a);
        double dy = y != null ? 0 : approx(b);
        if (x != null) {
            return Double.isNaN(dy) ? 1 : dy > 0 ? -1 : 1;
        }
        if (y != null) {
            return Double.isNaN(dx) ? -1 : dx > 0 ? 1 : -1;
        }
        if (Double.isNaN(dx)) {
            return Double.isNaN(dy) ? 0 : -1;
        }
        if (Double.isNaN(dy)) {
            return 1;
        }
        return Double.compare(dx, dy);
    }

    /** Equality with numbers compared by value, recursively through documents (field order matters) and arrays. */
    public static boolean equal(BsonValue a, BsonValue b) {
        if (isNumber(a) && isNumber(b)) {
            return compareNumbers(a, b) == 0;
        }
        if (a.getBsonType() != b.getBsonType()) {
            return false;
        }
        if (a.isDocument()) {
            BsonDocument x = a.asDocument();
            BsonDocument y = b.asDocument();
            if (x.size() != y.size()) {
                return false;
            }
            Iterator<Map.Entry<String, BsonValue>> i = x.entrySet().iterator();
            Iterator<Map.Entry<String, BsonValue>> j = y.entrySet().iterator();
            while (i.hasNext()) {
                Map.Entry<String, BsonValue> p = i.next();
                Map.Entry<String, BsonValue> q = j.next();
                if (!p.getKey().equals(q.getKey()) || !equal(p.getValue(), q.getValue())) {
                    return false;
                }
            }
            return true;
        }
        if (a.isArray()) {
            BsonArray x = a.asArray();
            BsonArray y = b.asArray();
            if (x.size() != y.size()) {
                return false;
            }
            for (int k = 0; k < x.size(); k++) {
                if (!equal(x.get(k), y.get(k))) {
                    return false;
                }
            }
            return true;
        }
        return a.equals(b);
    }

    /**
     * Orders two values of the same comparison class (numbers, strings, dates, ...) for $gt/$lt; returns null when
     * MongoDB would not compare them (different classes), so the condition does not match.
     */
    public static Integer compareSameClass(BsonValue a, BsonValue b) {
        if (isNumber(a) && isNumber(b)) {
            return compareNumbers(a, b);
        }
        if (a.getBsonType() != b.getBsonType()) {
            return null;
        }
        return switch (a.getBsonType()) {
            case STRING -> a.asString().getValue().compareTo(b.asString().getValue());
            case DATE_TIME -> Long.compare(a.asDateTime().getValue(), b.asDateTime().getValue());
            case TIMESTAMP -> a.asTimestamp().compareTo(b.asTimestamp());
            case OBJECT_ID -> a.asObjectId().getValue().compareTo(b.asObjectId().getValue());
            case BOOLEAN -> Boolean.compare(a.asBoolean().getValue(), b.asBoolean().getValue());
            case NULL, MIN_KEY, MAX_KEY -> 0;
            default -> equal(a, b) ? Integer.valueOf(0) : null;
        };
    }

    /** Encoding buffers kept per thread up to this size (larger ones are dropped after use). */
    private static final int KEPT_BUFFER_BYTES = 64 * 1024;
    /**
     * Each thread's encoding buffer, reused: a fresh one per document (1 KiB to start, grown by copying) was a third
     * of the server's allocation in a document update loop.
     */
    private static final ThreadLocal<BasicOutputBuffer> ENCODING = ThreadLocal.withInitial(BasicOutputBuffer::new);
    private static final EncoderContext ENCODER_CONTEXT = EncoderContext.builder().build();
    private static final DecoderContext DECODER_CONTEXT = DecoderContext.builder().build();

    /** The document's BSON encoding. */
    public static byte[] encode(BsonDocument d) {
        BasicOutputBuffer out = ENCODING.get();
        out.truncateToPosition(0);
        try {
            // closing the writer only marks it closed; the buffer stays this thread's
            try (BsonBinaryWriter w = new BsonBinaryWriter(out)) {
                CODEC.encode(w, d, ENCODER_CONTEXT);
            }
            // not toByteArray(), which copies twice (through a ByteArrayOutputStream)
            return java.util.Arrays.copyOf(out.getInternalBuffer(), out.getPosition());
        } finally {
            if (out.getInternalBuffer().length > KEPT_BUFFER_BYTES) {
                ENCODING.remove();
            }
        }
    }

    /** Decodes one BSON document from the buffer's remaining bytes. */
    public static BsonDocument decode(ByteBuffer b) {
        try (BsonBinaryReader r = new BsonBinaryReader(b.slice().order(java.nio.ByteOrder.LITTLE_ENDIAN))) {
            return CODEC.decode(r, DECODER_CONTEXT);
        }
    }

    /** A key under which ids equal by {@link #equal} are equal: numbers by value, anything else by BSON equality. */
    public static Object idKey(BsonValue id) {
        if (isNumber(id)) {
            BigDecimal d = decimal(id);
            return d == null ? Double.valueOf(approx(id)) : d.stripTrailingZeros();
        }
        return id;
    }

    /** A dotted-path segment as an array index (digits only, at most 9), or -1 when it is a field name. */
    static int arrayIndex(String segment) {
        if (segment.isEmpty() || segment.length() > 9) {
            return -1;
        }
        for (int k = 0; k < segment.length(); k++) {
            if (segment.charAt(k) < '0' || segment.charAt(k) > '9') {
                return -1;
            }
        }
        return Integer.parseInt(segment);
    }
}
