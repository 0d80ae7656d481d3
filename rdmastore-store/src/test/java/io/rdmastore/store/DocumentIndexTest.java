package io.rdmastore.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;

import org.bson.BsonArray;
import org.bson.BsonDecimal128;
import org.bson.BsonDocument;
import org.bson.BsonDouble;
import org.bson.BsonInt32;
import org.bson.BsonInt64;
import org.bson.BsonNull;
import org.bson.BsonString;
import org.bson.BsonValue;
import org.bson.types.Decimal128;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Secondary indexes: the same answers as a scan, fewer documents examined, kept across restarts and snapshots. */
@Timeout(60)
class DocumentIndexTest {
    @TempDir
    Path dir;
    @TempDir
    Path plainDir;
    Store store;
    Store plain;

    @AfterEach
    void close() {
        if (store != null) {
            store.close();
        }
        if (plain != null) {
            plain.close();
        }
    }

    private static BsonValue number(Random r) {
        int v = r.nextInt(6);
        return switch (r.nextInt(4)) {
            case 0 -> new BsonInt32(v);
            case 1 -> new BsonInt64(v);
            case 2 -> new BsonDouble(v);
            default -> new BsonDecimal128(new Decimal128(v));
        };
    }

    private static BsonValue value(Random r) {
        return switch (r.nextInt(6)) {
            case 0 -> new BsonString("s" + r.nextInt(4));
            case 1 -> new BsonArray(List.of(number(r), new BsonString("s" + r.nextInt(4))));
            case 2 -> BsonNull.VALUE;
            default -> number(r);
        };
    }

    private static BsonDocument document(Random r, int id) {
        BsonDocument d = new BsonDocument("_id", new BsonInt32(id));
        if (r.nextInt(5) > 0) {
            d.put("k", value(r));
        }
        if (r.nextBoolean()) {
            d.put("a", new BsonDocument("b", value(r)));
        } else if (r.nextBoolean()) {
            d.put("a", new BsonArray(List.of(new BsonDocument("b", value(r)), new BsonDocument("b", value(r)))));
        }
        d.put("n", number(r));
        return d;
    }

    private static Set<String> ids(List<BsonDocument> docs) {
        Set<String> out = new TreeSet<>();
        for (BsonDocument d : docs) {
            out.add(d.get("_id").toString());
        }
        return out;
    }

    private static BsonDocument filter(Random r) {
        BsonValue v = r.nextInt(8) == 0 ? BsonNull.VALUE : r.nextBoolean() ? number(r) : new BsonString("s" + r.nextInt(4));
        return switch (r.nextInt(5)) {
            case 0 -> new BsonDocument("k", v);
            case 1 -> new BsonDocument("a.b", v);
            case 2 -> new BsonDocument("k", new BsonDocument("$eq", v)).append("n", number(r));
            case 3 -> new BsonDocument("$and", new BsonArray(List.of(new BsonDocument("a.b", v),
                    new BsonDocument("n", new BsonDocument("$gte", number(r))))));
            default -> new BsonDocument("_id", new BsonInt32(r.nextInt(60))).append("k", v);
        };
    }

    /** A model check: an indexed store and a plain one take the same random changes and must answer alike. */
    @Test
    void indexedFindsAnswerAsScansDo() {
        store = TestSupport.open(dir);
        plain = TestSupport.open(plainDir);
        assertTrue(store.createIndex("c", "k"));
        Random r = new Random(42);
        for (int i = 0; i < 60; i++) {
            BsonDocument d = document(r, i);
            store.insertOne("c", d);
            plain.insertOne("c", d);
        }
        assertTrue(store.createIndex("c", "a.b"), "an index built over existing documents");
        long examinedIndexed = 0;
        long examinedPlain = 0;
        for (int round = 0; round < 400; round++) {
            BsonDocument f = filter(r);
            switch (r.nextInt(4)) {
                case 0 -> {
                    BsonDocument set = new BsonDocument("$set", r.nextBoolean() ? new BsonDocument("k", value(r))
                            : new BsonDocument("a", new BsonDocument("b", value(r))));
                    assertEquals(plain.updateMany("c", f, set, false).modified(),
                            store.updateMany("c", f, set, false).modified(), "update " + f + " " + set);
                }
                case 1 -> {
                    int id = r.nextInt(60);
                    BsonDocument by = new BsonDocument("_id", new BsonInt32(id));
                    assertEquals(plain.deleteOne("c", by), store.deleteOne("c", by));
                    BsonDocument d = document(r, id);
                    store.insertOne("c", d);
                    plain.insertOne("c", d);
                }
                default -> {
                    long before = store.documentsExamined();
                    long beforePlain = plain.documentsExamined();
                    assertEquals(ids(plain.find("c", f, 0)), ids(store.find("c", f, 0)), "find " + f);
                    assertEquals(plain.count("c", f), store.count("c", f), "count " + f);
                    examinedIndexed += store.documentsExamined() - before;
                    examinedPlain += plain.documentsExamined() - beforePlain;
                }
            }
        }
        assertTrue(examinedIndexed * 2 < examinedPlain, "the index examined " + examinedIndexed
                + " documents, the scans " + examinedPlain);
    }

    @Test
    void anIndexedEqualityExaminesOnlyItsMatches() {
        store = TestSupport.open(dir);
        List<BsonDocument> docs = new ArrayList<>();
        for (int i = 0; i < 2000; i++) {
            docs.add(new BsonDocument("_id", new BsonInt32(i)).append("k", new BsonInt32(i)));
        }
        store.insertMany("c", docs);
        BsonDocument f = new BsonDocument("k", new BsonInt64(1500));
        long before = store.documentsExamined();
        assertEquals(1, store.find("c", f, 1).size());
        assertTrue(store.documentsExamined() - before > 1000, "without an index the collection is scanned");
        assertTrue(store.createIndex("c", "k"));
        assertFalse(store.createIndex("c", "k"));
        assertEquals(List.of("_id", "k"), store.indexes("c"));
        before = store.documentsExamined();
        assertEquals(1500, store.find("c", f, 1).getFirst().getInt32("_id").getValue());
        assertEquals(1, store.updateOne("c", f, BsonDocument.parse("{$set: {k: -1}}"), false).modified());
        assertEquals(0, store.count("c", f));
        assertEquals(1, store.deleteOne("c", new BsonDocument("k", new BsonDouble(-1))));
        assertEquals(3, store.documentsExamined() - before,
                "one document for the find, the update and the delete, none for the count after it moved");
    }

    @Test
    void indexesSurviveRestartsAndSnapshots() {
        store = TestSupport.open(dir);
        store.createIndex("c", "k");
        store.createIndex("c", "x.y");
        store.createIndex("d", "k");
        store.insertOne("c", BsonDocument.parse("{_id: 1, k: 'a'}"));
        store.close();
        store = TestSupport.open(dir);
        assertEquals(List.of("_id", "k", "x.y"), store.indexes("c"));
        assertIndexed("a", 1);
        store.snapshot();
        store.insertOne("c", BsonDocument.parse("{_id: 2, k: 'b'}"));
        assertTrue(store.dropIndex("c", "x.y"));
        assertFalse(store.dropIndex("c", "x.y"));
        store.close();
        store = TestSupport.open(dir);
        assertEquals(List.of("_id", "k"), store.indexes("c"));
        assertEquals(List.of("_id", "k"), store.indexes("d"));
        assertIndexed("b", 2);
        store.snapshot();
        store.close();
        store = TestSupport.open(dir);
        assertEquals(List.of("_id", "k"), store.indexes("c"));
        assertIndexed("a", 1);
        assertTrue(store.dropCollection("c"));
        assertEquals(List.of("_id"), store.indexes("c"), "a dropped collection takes its indexes");
    }

    private void assertIndexed(String k, int id) {
        long before = store.documentsExamined();
        List<BsonDocument> found = store.find("c", new BsonDocument("k", new BsonString(k)), 0);
        assertEquals(1, found.size());
        assertEquals(id, found.getFirst().getInt32("_id").getValue());
        assertEquals(1, store.documentsExamined() - before);
    }

    @Test
    void badIndexRequestsAreRefusedClearly() {
        store = TestSupport.open(dir);
        assertFalse(store.createIndex("c", "_id"), "_id is always indexed");
        BadRequestException e = assertThrows(BadRequestException.class, () -> store.dropIndex("c", "_id"));
        assertTrue(e.getMessage().contains("_id"), e.getMessage());
        for (String bad : new String[] {"", ".a", "a.", "a..b", "$a", "a.$b"}) {
            e = assertThrows(BadRequestException.class, () -> store.createIndex("c", bad));
            assertTrue(e.getMessage().contains("invalid index field"), e.getMessage());
        }
        for (int i = 0; i < Store.MAX_INDEXES; i++) {
            assertTrue(store.createIndex("c", "f" + i));
        }
        LimitExceededException l = assertThrows(LimitExceededException.class, () -> store.createIndex("c", "more"));
        assertTrue(l.getMessage().contains("drop one first"), l.getMessage());
        assertEquals(Store.MAX_INDEXES + 1, store.indexes("c").size());
    }
}
