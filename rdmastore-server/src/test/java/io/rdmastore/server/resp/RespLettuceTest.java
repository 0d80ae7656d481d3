package io.rdmastore.server.resp;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.ExpireArgs;
import io.lettuce.core.GetExArgs;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.KeyValue;
import io.lettuce.core.LettuceFutures;
import io.lettuce.core.MapScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.protocol.ProtocolVersion;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Lettuce against the RESP face: Lettuce sends HELLO 3 on connect (RESP3) unless told to speak RESP2; every supported
 * command runs synchronously and pipelined (auto-flush off) in both protocols, and with a password.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RespLettuceTest {
    private static RespTestServer server;
    private static ClientResources resources;

    @BeforeAll
    static void start() {
        server = RespTestServer.start();
        resources = DefaultClientResources.builder().ioThreadPoolSize(1).computationThreadPoolSize(1).build();
    }

    @AfterAll
    static void stop() {
        resources.shutdown(0, 1, TimeUnit.SECONDS);
        server.close();
    }

    @BeforeEach
    void flush() {
        server.store.flushAll();
    }

    private static RedisClient client(ProtocolVersion version, RespTestServer s, String password) {
        RedisURI.Builder uri = RedisURI.builder().withHost("127.0.0.1").withPort(s.port())
            .withTimeout(Duration.ofSeconds(10));
        if (password != null) {
            uri.withPassword(password.toCharArray());
        }
        RedisClient c = RedisClient.create(resources, uri.build());
        c.setOptions(ClientOptions.builder().protocolVersion(version).build());
        return c;
    }

    @ParameterizedTest
    @EnumSource(value = ProtocolVersion.class, names = {"RESP2", "RESP3"})
    void everyCommandSynchronously(ProtocolVersion version) throws InterruptedException {
        RedisClient client = client(version, server, null);
        try (StatefulRedisConnection<String, String> conn = client.connect()) {
            RedisCommands<String, String> r = conn.sync();
            assertEquals("PONG", r.ping());
            assertEquals("x", r.echo("x"));
            assertEquals("OK", r.select(0));
            long id = r.clientId();
            assertEquals("OK", r.clientSetname("lettuce"));
            assertEquals("lettuce", r.clientGetname());
            assertTrue(r.clientList().contains("id=" + id + " "));
            assertTrue(r.clientList().contains("resp=" + (version == ProtocolVersion.RESP3 ? 3 : 2)));
            assertTrue(r.clientInfo().contains("name=lettuce"));
            assertTrue(r.info().contains("# Rdmastore"));
            assertTrue(r.info("server").contains("redis_version:"));
            assertEquals(Map.of("databases", "1"), r.configGet("databases"));
            assertEquals("OK", r.configSet("proto-max-bulk-len", "536870912"));
            assertTrue(r.commandCount() > 60);
            assertEquals(2, r.time().size());
            assertEquals("OK", r.save());
            assertTrue(r.lastsave().getTime() > 0);
            assertTrue(r.bgsave().startsWith("Background saving started"));

            assertEquals("OK", r.set("s", "1", SetArgs.Builder.ex(100).nx()));
            assertNull(r.set("s", "2", SetArgs.Builder.nx()));
            assertEquals("1", r.setGet("s", "2"));
            assertEquals(-1, r.ttl("s"), "SET without KEEPTTL drops the TTL");
            assertEquals("OK", r.set("s", "3", SetArgs.Builder.ex(100).xx()));
            assertEquals("OK", r.set("s", "3", SetArgs.Builder.keepttl().xx()));
            assertTrue(r.ttl("s") > 90);
            assertEquals("3", r.get("s"));
            assertEquals("3", r.getex("s", GetExArgs.Builder.persist()));
            assertEquals(-1, r.ttl("s"));
            assertEquals("3", r.getdel("s"));
            assertTrue(r.setnx("s", "a"));
            assertFalse(r.setnx("s", "b"));
            assertEquals("OK", r.setex("sx", 100, "v"));
            assertEquals("OK", r.psetex("psx", 100_000, "v"));
            assertEquals("OK", r.mset(Map.of("m1", "1", "m2", "2")));
            List<KeyValue<String, String>> mget = r.mget("m1", "nope");
            assertEquals("1", mget.get(0).getValue());
            assertFalse(mget.get(1).hasValue());
            assertFalse(r.msetnx(Map.of("m1", "x", "m9", "9")));
            assertTrue(r.msetnx(Map.of("m8", "8", "m9", "9")));
            assertEquals(1, r.incr("n"));
            assertEquals(4, r.incrby("n", 3));
            assertEquals(3, r.decr("n"));
            assertEquals(0, r.decrby("n", 3));
            assertEquals(1.5, r.incrbyfloat("n", 1.5), 1e-9);
            assertEquals(2, r.append("ap", "ab"));
            assertEquals(2, r.strlen("ap"));
            assertEquals("b", r.getrange("ap", 1, 5));
            assertEquals(4, r.setrange("ap", 2, "cd"));

            assertEquals(2, r.del("m1", "m2"));
            assertEquals(1, r.unlink("m8"));
            assertEquals(1, r.exists("m9"));
            assertEquals("string", r.type("m9"));
            assertTrue(r.expire("m9", 100));
            assertFalse(r.expire("m9", 10, ExpireArgs.Builder.gt()));
            assertTrue(r.pexpire("m9", 100_000));
            assertTrue(r.expireat("m9", System.currentTimeMillis() / 1000 + 100));
            assertTrue(r.pttl("m9") > 0);
            assertTrue(r.persist("m9"));
            assertEquals("OK", r.rename("m9", "m10"));
            assertTrue(r.renamenx("m10", "m11"));
            assertTrue(r.keys("m1*").contains("m11"));
            Set<String> scanned = new HashSet<>();
            KeyScanCursor<String> sc = r.scan(ScanArgs.Builder.matches("m*").limit(100));
            scanned.addAll(sc.getKeys());
            for (int i = 0; i < 1000 && !sc.isFinished(); i++) {
                sc = r.scan(sc, ScanArgs.Builder.matches("m*").limit(100));
                scanned.addAll(sc.getKeys());
            }
            assertTrue(sc.isFinished());
            assertTrue(scanned.contains("m11"), scanned.toString());
            assertTrue(r.exists(r.randomkey()) == 1);

            assertEquals(2, r.hset("h", Map.of("a", "1", "b", "2")));
            assertTrue(r.hset("h", "c", "3"));
            assertTrue(r.hsetnx("h", "d", "4"));
            assertEquals("1", r.hget("h", "a"));
            assertEquals("OK", r.hmset("h", Map.of("e", "5")));
            assertEquals("5", r.hmget("h", "e", "zz").get(0).getValue());
            Map<String, String> all = r.hgetall("h");
            assertEquals(5, all.size());
            assertEquals("4", all.get("d"));
            assertEquals(1, r.hdel("h", "e"));
            assertTrue(r.hexists("h", "a"));
            assertEquals(4, r.hlen("h"));
            assertEquals(Set.of("a", "b", "c", "d"), new HashSet<>(r.hkeys("h")));
            assertEquals(4, r.hvals("h").size());
            assertEquals(11, r.hincrby("h", "a", 10));
            assertEquals(2.25, r.hincrbyfloat("h", "b", 0.25), 1e-9);
            MapScanCursor<String, String> hs = r.hscan("h", ScanCursor.INITIAL, ScanArgs.Builder.limit(100));
            assertEquals(4, hs.getMap().size());
            RedisCommandExecutionException e = assertThrows(RedisCommandExecutionException.class,
                () -> r.get("h"));
            assertTrue(e.getMessage().startsWith("WRONGTYPE"), e.getMessage());
            assertEquals(7, r.dbsize(), "s sx psx n ap m11 h");
            assertEquals("OK", r.flushdb());
            assertEquals("OK", r.flushall());
            assertEquals(0, r.dbsize());
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    @ParameterizedTest
    @EnumSource(value = ProtocolVersion.class, names = {"RESP2", "RESP3"})
    void pipelinedWithAutoFlushOff(ProtocolVersion version) {
        RedisClient client = client(version, server, null);
        try (StatefulRedisConnection<String, String> conn = client.connect()) {
            // a command's time-out runs from when it is queued: 9000 queued commands on a loaded machine may take
            // longer than the URI's 10 s; the bound here is the awaitAll below
            conn.setTimeout(Duration.ofSeconds(40));
            RedisAsyncCommands<String, String> a = conn.async();
            conn.setAutoFlushCommands(false);
            List<RedisFuture<?>> futures = new ArrayList<>();
            for (int i = 0; i < 3000; i++) {
                futures.add(a.set("k" + i, "v" + i));
                futures.add(a.hset("h", "f" + i, "v" + i));
                futures.add(a.incr("c"));
            }
            RedisFuture<String> last = a.get("k2999");
            RedisFuture<Map<String, String>> hash = a.hgetall("h");
            RedisFuture<Long> count = a.incr("c");
            conn.flushCommands();
            assertTrue(LettuceFutures.awaitAll(Duration.ofSeconds(40), futures.toArray(new RedisFuture<?>[0])));
            assertEquals("v2999", last.toCompletableFuture().join());
            assertEquals(3000, hash.toCompletableFuture().join().size());
            assertEquals(3001L, count.toCompletableFuture().join());
            conn.setAutoFlushCommands(true);
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    @Test
    void helloWithAuthOnAPasswordProtectedServer() {
        try (RespTestServer s = RespTestServer.start(new RespFace.Context().password("s3cret"))) {
            RedisClient good = client(ProtocolVersion.RESP3, s, "s3cret");
            try (StatefulRedisConnection<String, String> conn = good.connect()) {
                assertEquals("OK", conn.sync().set("a", "b"));
                assertEquals("b", conn.sync().get("a"));
            } finally {
                good.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
            RedisClient bad = client(ProtocolVersion.RESP3, s, "wrong");
            try {
                Exception e = assertThrows(Exception.class, () -> bad.connect().close());
                Throwable t = e;
                StringBuilder chain = new StringBuilder();
                while (t != null) {
                    chain.append(t.getMessage()).append(" | ");
                    t = t.getCause();
                }
                assertTrue(chain.toString().contains("WRONGPASS"), chain.toString());
            } finally {
                bad.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }
}
