package io.rdmastore.store.doc;

import java.math.BigDecimal;
import java.math.MathContext;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.bson.BsonArray;
import org.bson.BsonDecimal128;
import org.bson.BsonDocument;
import org.bson.BsonDouble;
import org.bson.BsonInt32;
import org.bson.BsonInt64;
import org.bson.BsonNull;
import org.bson.BsonValue;
import org.bson.types.Decimal128;

import io.rdmastore.store.BadRequestException;

/**
 * A compiled update of {@code $set}, {@code $unset} and {@code $inc} operators over dotted paths. {@link #compile}
 * rejects unknown operators (naming them), non-document arguments, non-numeric {@code $inc} amounts and paths that
 * conflict. {@link #apply} returns a changed deep copy and never touches its argument. Immutable; any thread.
 */
public final class DocumentUpdate {
    private enum Kind { SET, UNSET, INC }

    private record Change(Kind kind, String path, String[] parts, BsonValue value) {
    }

    private final List<Change> changes;

    private DocumentUpdate(List<Change> changes) {
        this.changes = changes;
    }

    /** Compiles an update document; every top-level key must be an operator. */
    public static DocumentUpdate compile(BsonDocument update) {
        if (update == null || update.isEmpty()) {
            throw new BadRequestException("update document must not be empty; use $set, $unset or $inc");
        }
        List<Change> changes = new ArrayList<>();
        for (Map.Entry<String, BsonValue> e : update.entrySet()) {
            String op = e.getKey();
            if (!op.startsWith("$")) {
                throw new BadRequestException("update document requires update operators ($set, $unset, $inc),"
                        + " found field '" + op + "'; use replaceOne to replace a whole document");
            }
            Kind kind = switch (op) {
                case "$set" -> Kind.SET;
                case "$unset" -> Kind.UNSET;
                case "$inc" -> Kind.INC;
                default -> throw new BadRequestException("unknown update operator: " + op);
            };
            if (!e.getValue().isDocument()) {
                throw new BadRequestException("the argument of " + op + " must be a document");
            }
            for (Map.Entry<String, BsonValue> f : e.getValue().asDocument().entrySet()) {
                String path = f.getKey();
                if (path.isEmpty() || path.startsWith(".") || path.endsWith(".") || path.contains("..")) {
                    throw new BadRequestException("bad field path in " + op + ": '" + path + "'");
                }
                String[] parts = path.split("\\.");
                for (String p : parts) {
                    if (p.startsWith("$")) {
                        throw new BadRequestException("field names in " + op + " must not start with '$': '"
                                + path + "'");
                    }
                }
                if (kind == Kind.INC && !BsonValues.isNumber(f.getValue())) {
                    throw new BadRequestException("Cannot increment with non-numeric argument: {" + path + ": "
                            + f.getValue() + "}");
                }
                changes.add(new Change(kind, path, parts, f.getValue()));
            }
        }
        for (int i = 0; i < changes.size(); i++) {
            for (int j = i + 1; j < changes.size(); j++) {
                String a = changes.get(i).path;
                String b = changes.get(j).path;
                if (a.equals(b) || a.startsWith(b + ".") || b.startsWith(a + ".")) {
                    throw new BadRequestException("Updating the path '" + b + "' would create a conflict at '"
                            + a + "'");
                }
            }
        }
        return new DocumentUpdate(List.copyOf(changes));
    }

    /** A deep copy of {@code doc} with the changes applied. */
    public BsonDocument apply(BsonDocument doc) {
        BsonDocument d = doc.clone();
        for (Change c : changes) {
            switch (c.kind) {
                case SET -> set(d, c.parts, copy(c.value), c.path);
                case UNSET -> unset(d, c.parts);
                case INC -> {
                    BsonValue cur = get(d, c.parts);
                    if (cur == null) {
                        set(d, c.parts, c.value, c.path);
                    } else if (!BsonValues.isNumber(cur)) {
                        throw new BadRequestException("Cannot apply $inc to a value of non-numeric type: field '"
                                + c.path + "' has type " + cur.getBsonType().name().toLowerCase());
                    } else {
                        set(d, c.parts, add(cur, c.value, c.path), c.path);
                    }
                }
            }
        }
        return d;
    }

    /** Sets a value at a dotted path, creating sub-documents as needed. */
    public static void set(BsonDocument root, String[] parts, BsonValue value, String path) {
        BsonValue cur = root;
        for (int i = 0; i < parts.length; i++) {
            boolean last = i == parts.length - 1;
            String p = parts[i];
            if (cur.isDocument()) {
                BsonDocument d = cur.asDocument();
                if (last) {
                    d.put(p, value);
                    return;
                }
                BsonValue next = d.get(p);
                if (next == null) {
                    next = new BsonDocument();
                    d.put(p, next);
                }
                cur = next;
            } else if (cur.isArray() && BsonValues.arrayIndex(p) >= 0) {
                BsonArray a = cur.asArray();
                int idx = BsonValues.arrayIndex(p);
                while (a.size() <= idx) {
                    a.add(BsonNull.VALUE);
                }
                if (last) {
                    a.set(idx, value);
                    return;
                }
                if (a.get(idx).isNull()) {
                    a.set(idx, new BsonDocument());
                }
                cur = a.get(idx);
            } else {
                throw new BadRequestException("Cannot create field '" + p + "' in element of type "
                        + cur.getBsonType().name().toLowerCase() + " (path '" + path + "')");
            }
        }
    }

    private static void unset(BsonDocument root, String[] parts) {
        BsonValue cur = root;
        for (int i = 0; i < parts.length; i++) {
            boolean last = i == parts.length - 1;
            String p = parts[i];
            if (cur.isDocument()) {
                if (last) {
                    cur.asDocument().remove(p);
                    return;
                }
                cur = cur.asDocument().get(p);
            } else if (cur.isArray() && BsonValues.arrayIndex(p) >= 0 && BsonValues.arrayIndex(p) < cur.asArray().size()) {
                if (last) {
                    // MongoDB keeps array positions stable: $unset of an element sets it to null.
                    cur.asArray().set(BsonValues.arrayIndex(p), BsonNull.VALUE);
                    return;
                }
                cur = cur.asArray().get(BsonValues.arrayIndex(p));
            } else {
                return;
            }
            if (cur == null) {
                return;
            }
        }
    }

    /** The value at a dotted path (documents and array indexes only), or null. */
    public static BsonValue get(BsonDocument root, String[] parts) {
        BsonValue cur = root;
        for (String p : parts) {
            if (cur.isDocument()) {
                cur = cur.asDocument().get(p);
            } else if (cur.isArray() && BsonValues.arrayIndex(p) >= 0 && BsonValues.arrayIndex(p) < cur.asArray().size()) {
                cur = cur.asArray().get(BsonValues.arrayIndex(p));
            } else {
                return null;
            }
            if (cur == null) {
                return null;
            }
        }
        return cur;
    }

    private static BsonValue copy(BsonValue v) {
        if (v.isDocument()) {
            return v.asDocument().clone();
        }
        if (v.isArray()) {
            return v.asArray().clone();
        }
        return v;
    }


    private static BsonValue add(BsonValue a, BsonValue b, String path) {
        if (a.isDecimal128() || b.isDecimal128()) {
            BigDecimal x = BsonValues.decimal(a);
            BigDecimal y = BsonValues.decimal(b);
            if (x == null || y == null) {
                return new BsonDecimal128(Decimal128.NaN);
            }
            return new BsonDecimal128(new Decimal128(x.add(y).round(MathContext.DECIMAL128)));
        }
        if (a.isDouble() || b.isDouble()) {
            return new BsonDouble(a.asNumber().doubleValue() + b.asNumber().doubleValue());
        }
        if (a.isInt32() && b.isInt32()) {
            long r = (long) a.asInt32().getValue() + b.asInt32().getValue();
            // MongoDB widens an int32 that overflows to int64.
            return r == (int) r ? new BsonInt32((int) r) : new BsonInt64(r);
        }
        long x = a.asNumber().longValue();
        long y = b.asNumber().longValue();
        long r = x + y;
        if (((x ^ r) & (y ^ r)) < 0) {
            throw new BadRequestException("$inc on field '" + path + "' would overflow a 64-bit integer");
        }
        return new BsonInt64(r);
    }
}
