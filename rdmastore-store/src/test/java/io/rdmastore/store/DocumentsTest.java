package io.rdmastore.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;

import org.bson.BsonDocument;
import org.bson.BsonInt32;
import org.bson.BsonInt64;
import org.bson.BsonObjectId;
import org.bson.BsonString;
import org.bson.BsonValue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class DocumentsTest {
    @TempDir
    Path dir;
    Store store;

    @BeforeEach
    void open() {
        store = TestSupport.open(dir);
        store.insertMany("people", List.of(
                BsonDocument.parse("{_id: 1, name: 'ann', age: 31, address: {city: 'Oslo', zip: '0150'}, tags: ['a', 'b']}"),
                BsonDocument.parse("{_id: 2, name: 'bob', age: {$numberLong: '25'}, address: {city: 'Bergen'}}"),
                BsonDocument.parse("{_id: 3, name: 'cid', age: 40.5, tags: ['b']}"),
                BsonDocument.parse("{_id: 4, name: 'dee', age: {$numberDecimal: '31'}}")));
    }

    @AfterEach
    void close() {
        store.close();
    }

    private long count(String filter) {
        return store.count("people", BsonDocument.parse(filter));
    }

    @Test
    void filters() {
        assertEquals(4, store.count("people", null));
        assertEquals(2, count("{age: 31}"), "int32 31 equals decimal128 31");
        assertEquals(2, count("{age: {$numberLong: '31'}}"));
        assertEquals(3, count("{age: {$gt: 25}}"));
        assertEquals(4, count("{age: {$gte: 25}}"));
        assertEquals(1, count("{age: {$lt: 30}}"));
        assertEquals(3, count("{age: {$lte: 31}}"));
        assertEquals(3, count("{age: {$ne: 40.5}}"));
        assertEquals(2, count("{name: {$in: ['ann', 'cid', 'zed']}}"));
        assertEquals(2, count("{name: {$nin: ['ann', 'cid']}}"));
        assertEquals(2, count("{address: {$exists: true}}"));
        assertEquals(2, count("{address: {$exists: false}}"));
        assertEquals(1, count("{'address.city': 'Oslo'}"));
        assertEquals(1, count("{'address.city': {$gt: 'Nar'}}"));
        assertEquals(2, count("{tags: 'b'}"), "equality matches array elements");
        assertEquals(1, count("{'tags.0': 'a'}"));
        assertEquals(2, count("{$or: [{name: 'ann'}, {age: {$gt: 40}}]}"));
        assertEquals(1, count("{$and: [{age: 31}, {name: 'dee'}]}"));
        assertEquals(1, count("{age: {$gt: 30, $lt: 31.5}, name: 'ann'}"));
        assertEquals(2, count("{address: null}"), "null matches missing");
        assertEquals(0, count("{name: {$gt: 5}}"), "different types do not compare");
        assertEquals(1, count("{address: {city: 'Bergen'}}"), "whole sub-document equality");
    }

    @Test
    void findByIdAndLimits() {
        BsonDocument d = store.findOne("people", BsonDocument.parse("{_id: {$numberLong: '2'}}"));
        assertNotNull(d);
        assertEquals("bob", d.getString("name").getValue());
        assertEquals(2, store.find("people", null, 2).size());
        assertEquals(4, store.find("people", new BsonDocument(), 0).size());
        d.put("name", new BsonString("mutated"));
        assertEquals("bob", store.findOne("people", BsonDocument.parse("{_id: 2}")).getString("name").getValue(),
                "returned documents are copies");
        assertNull(store.findOne("nothing", null));
    }

    @Test
    void insertGeneratesIdsAndRejectsDuplicates() {
        BsonDocument doc = BsonDocument.parse("{x: 1}");
        BsonValue id = store.insertOne("c", doc);
        assertTrue(id instanceof BsonObjectId);
        assertFalse(doc.containsKey("_id"), "the caller's document is not modified");
        assertEquals("_id", store.findOne("c", null).getFirstKey());
        BadRequestException e = assertThrows(BadRequestException.class,
                () -> store.insertOne("people", BsonDocument.parse("{_id: {$numberLong: '1'}, name: 'dup'}")));
        assertTrue(e.getMessage().contains("duplicate key"), e.getMessage());
        assertThrows(BadRequestException.class, () -> store.insertMany("c2",
                List.of(BsonDocument.parse("{_id: 7}"), BsonDocument.parse("{_id: 7}"))));
        assertEquals(0, store.count("c2", null), "insertMany is all or nothing");
    }

    @Test
    void updates() {
        UpdateResult r = store.updateOne("people", BsonDocument.parse("{name: 'ann'}"),
                BsonDocument.parse("{$set: {'address.city': 'Tromso', nick: 'a'}, $inc: {age: 1}, $unset: {tags: ''}}"),
                false);
        assertEquals(new UpdateResult(1, 1, null), r);
        BsonDocument ann = store.findOne("people", BsonDocument.parse("{_id: 1}"));
        assertEquals("Tromso", ann.getDocument("address").getString("city").getValue());
        assertEquals("0150", ann.getDocument("address").getString("zip").getValue());
        assertEquals(new BsonInt32(32), ann.get("age"));
        assertFalse(ann.containsKey("tags"));
        r = store.updateMany("people", BsonDocument.parse("{}"), BsonDocument.parse("{$set: {seen: true}}"), false);
        assertEquals(4, r.matched());
        assertEquals(4, r.modified());
        r = store.updateMany("people", BsonDocument.parse("{}"), BsonDocument.parse("{$set: {seen: true}}"), false);
        assertEquals(0, r.modified(), "same values are not a modification");
        store.updateOne("people", BsonDocument.parse("{_id: 2}"),
                BsonDocument.parse("{$inc: {age: 2147483647}}"), false);
        assertEquals(new BsonInt64(25L + Integer.MAX_VALUE),
                store.findOne("people", BsonDocument.parse("{_id: 2}")).get("age"));
        r = store.updateOne("people", BsonDocument.parse("{name: 'zed', 'address.city': 'Rome'}"),
                BsonDocument.parse("{$set: {age: 50}}"), true);
        assertEquals(0, r.matched());
        assertNotNull(r.upsertedId());
        BsonDocument zed = store.findOne("people", BsonDocument.parse("{name: 'zed'}"));
        assertEquals("Rome", zed.getDocument("address").getString("city").getValue());
        assertEquals(50, zed.getInt32("age").getValue());
        assertThrows(BadRequestException.class, () -> store.updateOne("people", BsonDocument.parse("{_id: 1}"),
                BsonDocument.parse("{$set: {_id: 99}}"), false));
        r = store.replaceOne("people", BsonDocument.parse("{_id: 3}"), BsonDocument.parse("{name: 'new'}"), false);
        assertEquals(1, r.modified());
        assertEquals(BsonDocument.parse("{_id: 3, name: 'new'}"), store.findOne("people", BsonDocument.parse("{_id: 3}")));
    }

    @Test
    void deletesDropsAndPersistence() {
        assertEquals(1, store.deleteOne("people", BsonDocument.parse("{age: {$gte: 31}}")));
        assertEquals(2, store.deleteMany("people", BsonDocument.parse("{age: {$gte: 31}}")));
        assertEquals(1, store.count("people", null));
        assertTrue(store.createCollection("empty"));
        assertFalse(store.createCollection("empty"));
        assertEquals(List.of("empty", "people"), store.collections());
        store.close();
        store = TestSupport.open(dir);
        assertEquals(List.of("empty", "people"), store.collections());
        assertEquals("bob", store.findOne("people", null).getString("name").getValue());
        store.snapshot();
        store.close();
        store = TestSupport.open(dir);
        assertEquals(List.of("empty", "people"), store.collections());
        assertTrue(store.dropCollection("people"));
        assertFalse(store.dropCollection("people"));
        assertEquals(0, store.count("people", null));
        store.close();
        store = TestSupport.open(dir);
        assertEquals(List.of("empty"), store.collections());
    }
}
