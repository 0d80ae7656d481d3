package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.DocumentCollection;
import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreServerException;
import io.rdmastore.client.SetOptions;
import io.rdmastore.client.UpdateResult;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.bson.BsonDocument;
import org.bson.BsonInt32;
import org.bson.BsonString;
import org.bson.BsonValue;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Every native operation through the client, once per transport. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(60)
class RoundTripTest {
    private Path dir;
    private RdmaStoreServer server;

    @BeforeAll
    void start(@TempDir Path tempDir) {
        dir = tempDir;
        server = TestServers.start(dir, c -> { });
    }

    @AfterAll
    void stop() {
        server.close();
    }

    static List<String> transports() {
        return TestServers.transports();
    }

    private RdmaStoreClient client(String transport) {
        RdmaStoreClient c = TestServers.client(server, transport);
        assertEquals(transport, c.transport(), "connection must really run on " + transport + ": "
            + c.transportReason());
        return c;
    }

    @ParameterizedTest
    @MethodSource("transports")
    void strings(String t) {
        try (RdmaStoreClient c = client(t)) {
            String k = t + ":s";
            assertEquals("PONG", c.ping());
            assertNull(c.get(k));
            assertTrue(c.set(k, "v1"));
            assertEquals("v1", c.get(k));
            assertFalse(c.set(k, "v2", SetOptions.nx()), "NX on an existing key");
            assertEquals("v1", c.get(k));
            assertTrue(c.set(k, "v3", SetOptions.xx()));
            assertEquals("v3", c.get(k));
            assertFalse(c.set(t + ":absent", "x", SetOptions.xx()), "XX on a missing key");
            assertEquals(0, c.exists(t + ":absent"));

            byte[] binary = new byte[70_000];
            Arrays.fill(binary, (byte) 0xA5);
            binary[0] = 0;
            assertTrue(c.set((t + ":bin").getBytes(StandardCharsets.UTF_8), binary));
            assertArrayEquals(binary, c.get((t + ":bin").getBytes(StandardCharsets.UTF_8)));

            assertEquals(-1, c.pttl(k));
            assertEquals(-2, c.pttl(t + ":absent"));
            assertTrue(c.expire(k, Duration.ofSeconds(100)));
            long pttl = c.pttl(k);
            assertTrue(pttl > 90_000 && pttl <= 100_000, "pttl " + pttl);
            assertFalse(c.expire(t + ":absent", Duration.ofSeconds(1)));
            assertTrue(c.set(t + ":ttl", "x", SetOptions.ttl(Duration.ofMillis(150))));
            assertTrue(c.pttl(t + ":ttl") > 0);

            assertEquals(5, c.incrBy(t + ":n", 5));
            assertEquals(3, c.incrBy(t + ":n", -2));
            assertEquals(4, c.incr(t + ":n"));
            RdmaStoreServerException notNumber = assertThrows(RdmaStoreServerException.class, () -> c.incr(k));
            assertEquals("ERR", notNumber.code());

            Map<String, String> kv = new LinkedHashMap<>();
            kv.put(t + ":m1", "a");
            kv.put(t + ":m2", "b");
            c.mset(kv);
            assertEquals(Arrays.asList("a", null, "b"), c.mget(t + ":m1", t + ":absent", t + ":m2"));
            assertEquals(2, c.exists(t + ":m1", t + ":m2"));
            assertEquals(2, c.del(t + ":m1", t + ":m2", t + ":absent"));
            assertEquals(0, c.exists(t + ":m1", t + ":m2"));
            long deadline = System.currentTimeMillis() + 5000;
            while (c.get(t + ":ttl") != null && System.currentTimeMillis() < deadline) {
                Thread.onSpinWait();
            }
            assertNull(c.get(t + ":ttl"), "key with a 150 ms TTL must expire");
        }
    }

    @ParameterizedTest
    @MethodSource("transports")
    void hashes(String t) {
        try (RdmaStoreClient c = client(t)) {
            String h = t + ":h";
            assertEquals(2, c.hset(h, Map.of("f1", "1", "f2", "2")));
            assertEquals(0, c.hset(h, "f1", "one"));
            assertEquals("one", c.hget(h, "f1"));
            assertNull(c.hget(h, "nope"));
            assertEquals(Map.of("f1", "one", "f2", "2"), c.hgetAll(h));
            assertEquals(Map.of(), c.hgetAll(t + ":nohash"));
            RdmaStoreServerException e = assertThrows(RdmaStoreServerException.class, () -> c.get(h));
            assertEquals("WRONGTYPE", e.code());
            assertTrue(e.getMessage().startsWith("WRONGTYPE Operation against a key holding the wrong kind"));
            assertEquals(1, c.hdel(h, "f1", "nope"));
            assertEquals(1, c.hdel(h, "f2"));
            assertEquals(0, c.exists(h), "deleting the last field deletes the key");
        }
    }

    @ParameterizedTest
    @MethodSource("transports")
    void documents(String t) {
        try (RdmaStoreClient c = client(t)) {
            DocumentCollection users = c.collection(t + "-users");
            BsonValue id = users.insertOne(BsonDocument.parse("{name: 'ada', age: 36, addr: {city: 'London'}}"));
            assertNotNull(id);
            List<BsonValue> ids = users.insertMany(List.of(BsonDocument.parse("{_id: 7, name: 'bob', age: 17}"),
                BsonDocument.parse("{name: 'cy', age: 52}")));
            assertEquals(new BsonInt32(7), ids.get(0));
            assertEquals(3, users.countDocuments());
            assertEquals(2, users.countDocuments(BsonDocument.parse("{age: {$gte: 18}}")));
            assertEquals("ada", users.findOne(BsonDocument.parse("{'addr.city': 'London'}")).getString("name")
                .getValue());
            assertEquals(1, users.find(BsonDocument.parse("{}"), 1).size());
            assertEquals(3, users.find().size());
            RdmaStoreServerException dup = assertThrows(RdmaStoreServerException.class,
                () -> users.insertOne(BsonDocument.parse("{_id: 7}")));
            assertTrue(dup.getMessage().contains("duplicate"), dup.getMessage());

            UpdateResult one = users.updateOne(BsonDocument.parse("{name: 'bob'}"),
                BsonDocument.parse("{$inc: {age: 1}, $set: {adult: true}}"));
            assertEquals(1, one.matched());
            assertEquals(1, one.modified());
            assertEquals(18, users.findOne(BsonDocument.parse("{_id: 7}")).getInt32("age").getValue());
            UpdateResult many = users.updateMany(BsonDocument.parse("{age: {$gt: 0}}"),
                BsonDocument.parse("{$set: {seen: 1}}"));
            assertEquals(3, many.matched());
            UpdateResult up = users.updateOne(BsonDocument.parse("{name: 'dee'}"),
                BsonDocument.parse("{$set: {age: 3}}"), true);
            assertEquals(0, up.matched());
            assertNotNull(up.upsertedId());
            assertEquals(new BsonString("dee"), users.findOne(BsonDocument.parse("{age: 3}")).get("name"));

            assertEquals(1, users.deleteOne(BsonDocument.parse("{seen: 1}")));
            assertEquals(2, users.deleteMany(BsonDocument.parse("{seen: 1}")));
            assertEquals(1, users.countDocuments());
        }
    }

    @ParameterizedTest
    @MethodSource("transports")
    void documentIndexes(String t) {
        try (RdmaStoreClient c = client(t)) {
            DocumentCollection items = c.collection(t + "-items");
            assertEquals(List.of("_id"), items.listIndexes());
            assertTrue(items.createIndex("sku"));
            assertFalse(items.createIndex("sku"), "it existed");
            assertTrue(items.createIndex("dims.w"));
            assertEquals(List.of("_id", "sku", "dims.w"), items.listIndexes());
            items.insertMany(List.of(BsonDocument.parse("{_id: 1, sku: 'a', dims: {w: 3}}"),
                BsonDocument.parse("{_id: 2, sku: ['a', 'b'], dims: {w: 3.0}}"),
                BsonDocument.parse("{_id: 3, sku: 'c'}")));
            long examined = server.store().documentsExamined();
            assertEquals(2, items.countDocuments(BsonDocument.parse("{sku: 'a'}")));
            assertEquals(2, items.find(BsonDocument.parse("{'dims.w': {$numberLong: '3'}}")).size());
            assertEquals(1, items.updateOne(BsonDocument.parse("{sku: 'c'}"), BsonDocument.parse("{$set: {sku: 'a'}}"))
                .modified());
            assertEquals(3, items.countDocuments(BsonDocument.parse("{sku: 'a'}")));
            assertEquals(2 + 2 + 1 + 3, server.store().documentsExamined() - examined,
                "only the documents holding the value are examined");
            assertTrue(c.info().contains("documents_examined:" + server.store().documentsExamined()), "INFO shows it");
            assertTrue(items.dropIndex("dims.w"));
            assertFalse(items.dropIndex("dims.w"));
            RdmaStoreServerException id = assertThrows(RdmaStoreServerException.class, () -> items.dropIndex("_id"));
            assertTrue(id.getMessage().contains("cannot drop _id index"), id.getMessage());
            RdmaStoreServerException bad = assertThrows(RdmaStoreServerException.class, () -> items.createIndex("a..b"));
            assertTrue(bad.getMessage().contains("invalid index field"), bad.getMessage());
            assertEquals(List.of("_id", "sku"), items.listIndexes());
        }
    }

    @ParameterizedTest
    @MethodSource("transports")
    void asyncAndServerOps(String t) throws Exception {
        try (RdmaStoreClient c = client(t)) {
            byte[] k = (t + ":async").getBytes(StandardCharsets.UTF_8);
            CompletableFuture<Boolean> set = c.setAsync(k, "v".getBytes(StandardCharsets.UTF_8));
            CompletableFuture<byte[]> get = c.getAsync(k);
            CompletableFuture<Long> del = c.delAsync(k);
            CompletableFuture<Long> exists = c.existsAsync(k);
            assertTrue(set.get(10, TimeUnit.SECONDS));
            assertArrayEquals("v".getBytes(StandardCharsets.UTF_8), get.get(10, TimeUnit.SECONDS));
            assertEquals(1L, del.get(10, TimeUnit.SECONDS));
            assertEquals(0L, exists.get(10, TimeUnit.SECONDS));
            assertEquals("PONG", c.pingAsync().get(10, TimeUnit.SECONDS));
            assertEquals(1L, c.collection(t + "-async").countDocumentsAsync(new BsonDocument()).thenCompose(
                n -> c.collection(t + "-async").insertOneAsync(new BsonDocument("x", new BsonInt32(1)))
                    .thenCompose(id -> c.collection(t + "-async").countDocumentsAsync(new BsonDocument())))
                .get(10, TimeUnit.SECONDS));

            String info = c.info();
            assertTrue(info.contains("transport:" + t + "\r\n"), info);
            assertTrue(info.contains("transport_reason:"), info);
            assertTrue(info.contains("process_p99_ns:"), info);
            assertTrue(info.contains("tcp_port:" + server.port()), info);
            long before = System.currentTimeMillis();
            long at = c.snapshot();
            assertTrue(at >= before - 1000, "snapshot time " + at + " before request " + before);
        }
    }
}
