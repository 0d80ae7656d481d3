package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static io.rdmastore.store.TestSupport.s;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;

import org.bson.BsonBinary;
import org.bson.BsonDocument;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class BadInputTest {
    @TempDir
    Path dir;
    Store store;

    @BeforeEach
    void open() {
        store = Store.open(TestSupport.config(dir).maxKeyBytes(16).maxValueBytes(100).maxDocumentBytes(200));
        store.set(b("k"), b("v"));
        store.hset(b("h"), List.of(b("f"), b("v")));
        store.insertOne("c", BsonDocument.parse("{_id: 1, a: 1}"));
    }

    @AfterEach
    void close() {
        store.close();
    }

    private void assertUnchanged() {
        assertEquals(2, store.size());
        assertEquals("v", s(store.get(b("k"))));
        assertEquals("v", s(store.hget(b("h"), b("f"))));
        assertEquals(1, store.hlen(b("h")));
        assertEquals(BsonDocument.parse("{_id: 1, a: 1}"), store.findOne("c", null));
        assertEquals(1, store.count("c", null));
    }

    @Test
    void oversizeKeysValuesAndDocuments() {
        LimitExceededException e = assertThrows(LimitExceededException.class,
                () -> store.set(new byte[17], b("v")));
        assertTrue(e.getMessage().contains("limit of 16"), e.getMessage());
        assertThrows(LimitExceededException.class, () -> store.set(b("k"), new byte[101]));
        assertThrows(LimitExceededException.class, () -> store.append(b("k"), new byte[100]));
        assertThrows(LimitExceededException.class, () -> store.setRange(b("k"), 99, b("xx")));
        assertThrows(LimitExceededException.class, () -> store.hset(b("h"), List.of(b("f"), new byte[101])));
        assertThrows(LimitExceededException.class, () -> store.hset(b("h"), List.of(new byte[17], b("x"))));
        assertThrows(LimitExceededException.class,
                () -> store.mset(List.of(b("a"), b("1"), b("k"), new byte[101]), false));
        BsonDocument big = new BsonDocument("blob", new BsonBinary(new byte[300]));
        assertThrows(LimitExceededException.class, () -> store.insertOne("c", big));
        assertThrows(LimitExceededException.class, () -> store.updateOne("c", BsonDocument.parse("{_id: 1}"),
                new BsonDocument("$set", big), false));
        assertUnchanged();
    }

    @Test
    void malformedFiltersAndUpdates() {
        BadRequestException e = assertThrows(BadRequestException.class,
                () -> store.find("c", BsonDocument.parse("{a: {$regexx: 'x'}}"), 0));
        assertTrue(e.getMessage().contains("$regexx"), e.getMessage());
        e = assertThrows(BadRequestException.class, () -> store.count("c", BsonDocument.parse("{$xor: []}")));
        assertTrue(e.getMessage().contains("$xor"), e.getMessage());
        assertThrows(BadRequestException.class, () -> store.find("c", BsonDocument.parse("{a: {$in: 5}}"), 0));
        assertThrows(BadRequestException.class, () -> store.find("c", BsonDocument.parse("{$or: {}}"), 0));
        e = assertThrows(BadRequestException.class, () -> store.updateMany("c", null,
                BsonDocument.parse("{$push: {a: 1}}"), false));
        assertTrue(e.getMessage().contains("$push"), e.getMessage());
        assertThrows(BadRequestException.class, () -> store.updateOne("c", null, BsonDocument.parse("{a: 2}"), false));
        assertThrows(BadRequestException.class, () -> store.updateOne("c", null, BsonDocument.parse("{$inc: {a: 'x'}}"),
                false));
        assertThrows(BadRequestException.class, () -> store.updateOne("c", null,
                BsonDocument.parse("{$set: {a: 1}, $unset: {a: ''}}"), false));
        store.insertOne("c", BsonDocument.parse("{_id: 2, s: 'str'}"));
        assertThrows(BadRequestException.class, () -> store.updateMany("c", null,
                BsonDocument.parse("{$inc: {s: 1}}"), false));
        assertEquals(BsonDocument.parse("{_id: 2, s: 'str'}"), store.findOne("c", BsonDocument.parse("{_id: 2}")),
                "a failing updateMany changes no document, not even the ones before the failure");
        store.deleteOne("c", BsonDocument.parse("{_id: 2}"));
        assertThrows(BadRequestException.class, () -> store.insertOne("c", BsonDocument.parse("{_id: [1]}")));
        assertThrows(BadRequestException.class, () -> store.insertOne("bad$name", BsonDocument.parse("{}")));
        assertThrows(BadRequestException.class, () -> store.insertOne("", BsonDocument.parse("{}")));
        assertThrows(BadRequestException.class, () -> store.hset(b("h"), List.of(b("f"))));
        assertThrows(BadRequestException.class, () -> store.mset(List.of(b("a")), false));
        assertThrows(BadRequestException.class, () -> store.scan(0, null, 0, null));
        assertThrows(BadRequestException.class, () -> store.getEx(b("k"), 0));
        assertUnchanged();
    }

    @Test
    void badConfigurationIsRejectedOnce() {
        assertThrows(IllegalArgumentException.class, () -> new StoreConfig().conclude());
        assertThrows(IllegalArgumentException.class, () -> new StoreConfig().dataDir(dir).maxValueBytes(0).conclude());
        assertThrows(IllegalArgumentException.class, () -> new StoreConfig().dataDir(dir).snapshotLogBytes(-1).conclude());
        StoreException e = assertThrows(StoreException.class, () -> TestSupport.open(dir));
        assertTrue(e.getMessage().contains("in use"), e.getMessage());
    }
}
