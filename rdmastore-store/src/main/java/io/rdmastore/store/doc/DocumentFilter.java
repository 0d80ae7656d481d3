package io.rdmastore.store.doc;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.bson.BsonArray;
import org.bson.BsonDocument;
import org.bson.BsonValue;

import io.rdmastore.store.BadRequestException;

/**
 * A compiled MongoDB-style filter: {@code $eq $ne $gt $gte $lt $lte $in $nin $exists} on fields (dotted paths into
 * sub-documents and arrays), implicit equality, and {@code $and $or $nor} at any level. {@link #compile} checks the
 * whole filter up front and throws {@link BadRequestException} naming an unknown operator or a malformed argument.
 * Immutable; any thread.
 */
public final class DocumentFilter {
    private static final DocumentFilter ALL = new DocumentFilter(new And(List.of()), null, List.of());

    private final Node root;
    private final BsonValue idEquals;
    private final List<Map.Entry<String, BsonValue>> equalities;

    private DocumentFilter(Node root, BsonValue idEquals, List<Map.Entry<String, BsonValue>> equalities) {
        this.root = root;
        this.idEquals = idEquals;
        this.equalities = equalities;
    }

    /** Compiles a filter; null or empty matches everything. */
    public static DocumentFilter compile(BsonDocument filter) {
        if (filter == null || filter.isEmpty()) {
            return ALL;
        }
        List<Map.Entry<String, BsonValue>> eq = new ArrayList<>();
        Node root = compileDocument(filter, eq, true);
        BsonValue id = null;
        if (filter.size() == 1 && filter.containsKey("_id")) {
            BsonValue v = filter.get("_id");
            if (!isOperatorDocument(v)) {
                id = v;
            } else if (v.asDocument().size() == 1 && v.asDocument().containsKey("$eq")) {
                id = v.asDocument().get("$eq");
            }
        }
        return new DocumentFilter(root, id, List.copyOf(eq));
    }

    /** Whether the document matches. */
    public boolean matches(BsonDocument doc) {
        return root.test(doc);
    }

    /** The value when the filter is exactly {@code {_id: v}} (so one index lookup answers it), else null. */
    public BsonValue idEquals() {
        return idEquals;
    }

    /** Field equalities an upsert copies into the new document (top level and inside top-level $and). */
    public List<Map.Entry<String, BsonValue>> equalities() {
        return equalities;
    }

    private interface Node {
        boolean test(BsonDocument doc);
    }

    private record And(List<Node> nodes) implements Node {
        public boolean test(BsonDocument doc) {
            for (Node n : nodes) {
                if (!n.test(doc)) {
                    return false;
                }
            }
            return true;
        }
    }

    private record Or(List<Node> nodes) implements Node {
        public boolean test(BsonDocument doc) {
            for (Node n : nodes) {
                if (n.test(doc)) {
                    return true;
                }
            }
            return false;
        }
    }

    private record Not(Node node) implements Node {
        public boolean test(BsonDocument doc) {
            return !node.test(doc);
        }
    }

    private enum Op { EQ, NE, GT, GTE, LT, LTE, IN, NIN, EXISTS }

    private record Cond(Op op, BsonValue arg) {
    }

    private record Field(String[] path, List<Cond> conds) implements Node {
        public boolean test(BsonDocument doc) {
            List<BsonValue> values = new ArrayList<>(2);
            collect(doc, path, 0, values);
            for (Cond c : conds) {
                if (!check(c, values)) {
                    return false;
                }
            }
            return true;
        }
    }

    private static boolean isOperatorDocument(BsonValue v) {
        return v.isDocument() && !v.asDocument().isEmpty() && v.asDocument().getFirstKey().startsWith("$");
    }

    private static Node compileDocument(BsonDocument filter, List<Map.Entry<String, BsonValue>> eq, boolean top) {
        List<Node> nodes = new ArrayList<>();
        for (Map.Entry<String, BsonValue> e : filter.entrySet()) {
            String k = e.getKey();
            BsonValue v = e.getValue();
            if (k.startsWith("$")) {
                switch (k) {
                    case "$and", "$or", "$nor" -> {
                        if (!v.isArray() || v.asArray().isEmpty()) {
                            throw new BadRequestException(k + " argument must be a non-empty array");
                        }
                        List<Node> sub = new ArrayList<>();
                        for (BsonValue s : v.asArray()) {
                            if (!s.isDocument()) {
                                throw new BadRequestException(k + " argument's entries must be objects");
                            }
                            sub.add(compileDocument(s.asDocument(), k.equals("$and") && top ? eq : null, false));
                        }
                        nodes.add(switch (k) {
                            case "$and" -> new And(sub);
                            case "$or" -> new Or(sub);
                            default -> new Not(new Or(sub));
                        });
                    }
                    default -> throw new BadRequestException("unknown top level operator: " + k);
                }
                continue;
            }
            if (k.isEmpty() || k.startsWith(".") || k.endsWith(".") || k.contains("..")) {
                throw new BadRequestException("bad field path in filter: '" + k + "'");
            }
            String[] path = k.split("\\.");
            List<Cond> conds = new ArrayList<>();
            if (isOperatorDocument(v)) {
                for (Map.Entry<String, BsonValue> o : v.asDocument().entrySet()) {
                    conds.add(compileCondition(o.getKey(), o.getValue()));
                    if (o.getKey().equals("$eq") && eq != null) {
                        eq.add(Map.entry(k, o.getValue()));
                    }
                }
            } else {
                conds.add(new Cond(Op.EQ, v));
                if (eq != null) {
                    eq.add(Map.entry(k, v));
                }
            }
            nodes.add(new Field(path, conds));
        }
        return nodes.size() == 1 ? nodes.get(0) : new And(nodes);
    }

    private static Cond compileCondition(String op, BsonValue arg) {
        return switch (op) {
            case "$eq" -> new Cond(Op.EQ, arg);
            case "$ne" -> new Cond(Op.NE, arg);
            case "$gt" -> new Cond(Op.GT, arg);
            case "$gte" -> new Cond(Op.GTE, arg);
            case "$lt" -> new Cond(Op.LT, arg);
            case "$lte" -> new Cond(Op.LTE, arg);
            case "$in", "$nin" -> {
                if (!arg.isArray()) {
                    throw new BadRequestException(op + " needs an array");
                }
                yield new Cond(op.equals("$in") ? Op.IN : Op.NIN, arg);
            }
            case "$exists" -> new Cond(Op.EXISTS, arg);
            default -> throw new BadRequestException("unknown operator: " + op);
        };
    }

    /**
     * The values a filter on the dotted {@code path} compares with: descends documents, and arrays by index or
     * through each element (an array found at the end is one value; equality also looks at its elements).
     */
    public static void valuesAt(BsonDocument doc, String[] path, List<BsonValue> out) {
        collect(doc, path, 0, out);
    }

    /** The values at {@code path}: descends documents, and arrays by index or through each element. */
    private static void collect(BsonValue cur, String[] path, int i, List<BsonValue> out) {
        if (i == path.length) {
            out.add(cur);
            return;
        }
        if (cur.isDocument()) {
            BsonValue n = cur.asDocument().get(path[i]);
            if (n != null) {
                collect(n, path, i + 1, out);
            }
        } else if (cur.isArray()) {
            BsonArray a = cur.asArray();
            int idx = BsonValues.arrayIndex(path[i]);
            if (idx >= 0 && idx < a.size()) {
                collect(a.get(idx), path, i + 1, out);
            }
            for (BsonValue el : a) {
                if (el.isDocument()) {
                    collect(el, path, i, out);
                }
            }
        }
    }


    private static boolean truthy(BsonValue v) {
        if (v.isBoolean()) {
            return v.asBoolean().getValue();
        }
        if (BsonValues.isNumber(v)) {
            java.math.BigDecimal d = BsonValues.decimal(v);
            return d == null || d.signum() != 0;
        }
        return !v.isNull();
    }

    private static boolean check(Cond c, List<BsonValue> values) {
        return switch (c.op) {
            case EQ -> equalsAny(values, c.arg);
            case NE -> !equalsAny(values, c.arg);
            case IN -> inAny(values, c.arg.asArray());
            case NIN -> !inAny(values, c.arg.asArray());
            case EXISTS -> values.isEmpty() != truthy(c.arg);
            case GT, GTE, LT, LTE -> compareAny(values, c.op, c.arg);
        };
    }

    private static boolean inAny(List<BsonValue> values, BsonArray set) {
        for (BsonValue s : set) {
            if (equalsAny(values, s)) {
                return true;
            }
        }
        return false;
    }

    private static boolean equalsAny(List<BsonValue> values, BsonValue arg) {
        if (arg.isNull() && (values.isEmpty())) {
            return true;
        }
        for (BsonValue v : values) {
            if (BsonValues.equal(v, arg)) {
                return true;
            }
            if (v.isArray()) {
                for (BsonValue el : v.asArray()) {
                    if (BsonValues.equal(el, arg)) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    private static boolean compareAny(List<BsonValue> values, Op op, BsonValue arg) {
        for (BsonValue v : values) {
            if (compareOne(v, op, arg)) {
                return true;
            }
            if (v.isArray()) {
                for (BsonValue el : v.asArray()) {
                    if (compareOne(el, op, arg)) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    private static boolean compareOne(BsonValue v, Op op, BsonValue arg) {
        Integer c = BsonValues.compareSameClass(v, arg);
        if (c == null) {
            return false;
        }
        return switch (op) {
            case GT -> c > 0;
            case GTE -> c >= 0;
            case LT -> c < 0;
            default -> c <= 0;
        };
    }
}
