package io.rdmastore.server.resp;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.Response;
import redis.clients.jedis.args.ExpiryOption;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.params.GetExParams;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.params.SetParams;
import redis.clients.jedis.resps.ScanResult;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Jedis against the RESP face: every supported command, in RESP2 and RESP3, one by one and pipelined. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RespJedisTest {
    private static RespTestServer server;

    @BeforeAll
    static void start() {
        server = RespTestServer.start(new RespFace.Context().port(0));
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    @BeforeEach
    void flush() {
        server.store.flushAll();
    }

    private static Jedis jedis(RedisProtocol protocol) {
        return new Jedis("127.0.0.1", server.port(), DefaultJedisClientConfig.builder().protocol(protocol)
            .socketTimeoutMillis(10_000).build());
    }

    @ParameterizedTest
    @EnumSource(RedisProtocol.class)
    void connectionAndServerCommands(RedisProtocol protocol) {
        try (Jedis j = jedis(protocol)) {
            assertEquals("PONG", j.ping());
            assertEquals("hi", j.ping("hi"));
            assertEquals("echo", j.echo("echo"));
            assertEquals("OK", j.select(0));
            assertThrows(JedisDataException.class, () -> j.select(1));
            JedisDataException e = assertThrows(JedisDataException.class, () -> j.auth("x"));
            assertTrue(e.getMessage().startsWith("ERR AUTH <password> called without any password"), e.getMessage());
            assertEquals("OK", j.auth("default", "anything"));
            long id = j.clientId();
            assertTrue(id > 0);
            assertNull(j.clientGetname());
            assertEquals("OK", j.clientSetname("jedis-" + protocol));
            assertEquals("jedis-" + protocol, j.clientGetname());
            String list = j.clientList();
            assertTrue(list.contains("id=" + id + " ") && list.contains("name=jedis-" + protocol)
                && list.contains("transport=tcp") && list.contains("resp=" + (protocol == RedisProtocol.RESP3 ? 3 : 2)),
                list);
            assertTrue(j.clientInfo().contains("id=" + id + " "));
            j.set("k1", "v");
            String info = j.info();
            for (String section : List.of("# Server", "# Clients", "# Memory", "# Persistence", "# Stats",
                "# Keyspace", "# Rdmastore")) {
                assertTrue(info.contains(section), section + " missing from INFO");
            }
            assertTrue(info.contains("db0:keys=1,"), info);
            assertTrue(info.contains("connections_tcp:"), info);
            assertTrue(info.contains("tcp_port:" + server.port() + "\r\n"), info);
            // RESP3 sends INFO as a verbatim string; Jedis keeps its "txt:" format prefix (it does so with Redis too).
            String keyspace = j.info("keyspace");
            assertTrue(keyspace.startsWith(protocol == RedisProtocol.RESP3 ? "txt:# Keyspace" : "# Keyspace"), keyspace);
            Map<String, String> cfg = j.configGet("proto-max-bulk-len");
            assertEquals(Map.of("proto-max-bulk-len", "536870912"), cfg);
            assertTrue(j.configGet("*").containsKey("appendfsync"));
            assertEquals("OK", j.configSet("proto-max-bulk-len", "64mb"));
            assertEquals("67108864", j.configGet("proto-max-bulk-len").get("proto-max-bulk-len"));
            assertEquals("OK", j.configSet("proto-max-bulk-len", "512mb"));
            assertThrows(JedisDataException.class, () -> j.configSet("no-such-setting", "1"));
            assertEquals(RespCommand.count(), j.commandCount());
            assertEquals(1, j.dbSize());
            List<String> time = j.time();
            assertEquals(2, time.size());
            assertTrue(Math.abs(Long.parseLong(time.get(0)) - System.currentTimeMillis() / 1000) < 5);
            assertEquals("OK", j.save());
            assertTrue(j.lastsave() >= System.currentTimeMillis() / 1000 - 5);
            assertTrue(j.bgsave().contains("Background saving started"));
            assertEquals("OK", j.flushDB());
            assertEquals(0, j.dbSize());
            j.set("k2", "v");
            assertEquals("OK", j.flushAll());
            assertEquals(0, j.dbSize());
            e = assertThrows(JedisDataException.class, () -> j.sendCommand(() -> "NOSUCHCMD".getBytes(), "a"));
            assertTrue(e.getMessage().startsWith("ERR unknown command 'NOSUCHCMD'"), e.getMessage());
        }
    }

    @ParameterizedTest
    @EnumSource(RedisProtocol.class)
    void stringCommands(RedisProtocol protocol) throws InterruptedException {
        try (Jedis j = jedis(protocol)) {
            assertEquals("OK", j.set("s", "v1"));
            assertEquals("v1", j.get("s"));
            assertNull(j.get("missing"));
            assertNull(j.set("s", "v2", SetParams.setParams().nx()));
            assertEquals("OK", j.set("s", "v2", SetParams.setParams().xx()));
            assertNull(j.set("nx", "v", SetParams.setParams().xx()));
            assertEquals("v2", j.setGet("s", "v3"));
            assertEquals("OK", j.set("s", "v4", SetParams.setParams().ex(100)));
            assertTrue(j.ttl("s") > 90);
            assertEquals("OK", j.set("s", "v5", SetParams.setParams().keepTtl()));
            assertTrue(j.ttl("s") > 90);
            assertEquals("OK", j.set("s", "v6", SetParams.setParams().px(100_000)));
            assertTrue(j.pttl("s") > 90_000);
            assertEquals("OK", j.set("s", "v7", SetParams.setParams().exAt(System.currentTimeMillis() / 1000 + 200)));
            assertTrue(j.ttl("s") > 150);
            assertEquals("OK", j.set("s", "v8", SetParams.setParams().pxAt(System.currentTimeMillis() + 300_000)));
            assertTrue(j.ttl("s") > 250);
            assertEquals("OK", j.set("s", "v9"));
            assertEquals(-1, j.ttl("s"));
            JedisDataException e = assertThrows(JedisDataException.class,
                () -> j.set("s", "v", SetParams.setParams().ex(0)));
            assertEquals("ERR invalid expire time in 'set' command", e.getMessage());
            e = assertThrows(JedisDataException.class, () -> j.sendCommand(Protocol.Command.SET, "s", "v", "NX", "XX"));
            assertEquals("ERR syntax error", e.getMessage());
            assertEquals("v9", j.getDel("s"));
            assertNull(j.get("s"));
            j.set("gx", "v");
            assertEquals("v", j.getEx("gx", GetExParams.getExParams().ex(50)));
            assertTrue(j.ttl("gx") > 40);
            assertEquals("v", j.getEx("gx", GetExParams.getExParams().persist()));
            assertEquals(-1, j.ttl("gx"));
            assertEquals(1, j.setnx("snx", "a"));
            assertEquals(0, j.setnx("snx", "b"));
            assertEquals("OK", j.setex("sex", 100, "a"));
            assertTrue(j.ttl("sex") > 90);
            assertEquals("OK", j.psetex("psex", 100_000, "a"));
            assertTrue(j.pttl("psex") > 90_000);
            assertEquals("OK", j.mset("m1", "1", "m2", "2"));
            assertEquals(java.util.Arrays.asList("1", "2", null), j.mget("m1", "m2", "m3"));
            assertEquals(0, j.msetnx("m1", "x", "m3", "3"));
            assertEquals(1, j.msetnx("m3", "3", "m4", "4"));
            assertEquals(1, j.incr("n"));
            assertEquals(11, j.incrBy("n", 10));
            assertEquals(10, j.decr("n"));
            assertEquals(5, j.decrBy("n", 5));
            assertEquals(5.5, j.incrByFloat("n", 0.5), 1e-9);
            j.set("f", "10.50");
            assertEquals("10.6", j.sendCommand(Protocol.Command.INCRBYFLOAT, "f", "0.1") instanceof byte[] b
                ? new String(b) : null);
            e = assertThrows(JedisDataException.class, () -> j.incr("f"));
            assertEquals("ERR value is not an integer or out of range", e.getMessage());
            assertEquals(5, j.append("ap", "hello"));
            assertEquals(11, j.append("ap", " world"));
            assertEquals(11, j.strlen("ap"));
            assertEquals("world", j.getrange("ap", 6, -1));
            assertEquals(11, j.setrange("ap", 6, "there"));
            assertEquals("hello there", j.get("ap"));
            assertEquals(7, j.setrange("pad", 2, "abcde"));
            assertEquals("\0\0abcde", j.get("pad"));
            j.hset("h", "f", "v");
            e = assertThrows(JedisDataException.class, () -> j.get("h"));
            assertEquals("WRONGTYPE Operation against a key holding the wrong kind of value", e.getMessage());
            assertEquals("OK", j.set("short", "v", SetParams.setParams().px(30)));
            Thread.sleep(120);
            assertNull(j.get("short"));
            assertFalse(j.exists("short"));
        }
    }

    @ParameterizedTest
    @EnumSource(RedisProtocol.class)
    void keyCommands(RedisProtocol protocol) {
        try (Jedis j = jedis(protocol)) {
            j.mset("a", "1", "b", "2", "c", "3", "d", "4");
            j.hset("hh", "f", "v");
            assertEquals(2, j.del("a", "zz", "b"));
            assertEquals(1, j.unlink("c"));
            assertEquals(2, j.exists("d", "d", "zz"));
            assertEquals("string", j.type("d"));
            assertEquals("hash", j.type("hh"));
            assertEquals("none", j.type("zz"));
            assertEquals(1, j.expire("d", 100));
            assertEquals(0, j.expire("d", 200, ExpiryOption.NX));
            assertEquals(1, j.expire("d", 200, ExpiryOption.GT));
            assertEquals(0, j.expire("d", 50, ExpiryOption.GT));
            assertEquals(1, j.expire("d", 50, ExpiryOption.LT));
            assertEquals(0, j.expire("hh", 50, ExpiryOption.XX));
            assertEquals(0, j.expire("zz", 50));
            assertTrue(j.ttl("d") <= 50 && j.ttl("d") > 40);
            assertEquals(1, j.pexpire("d", 100_000));
            assertTrue(j.pttl("d") > 90_000);
            assertEquals(1, j.expireAt("d", System.currentTimeMillis() / 1000 + 1000));
            assertTrue(j.ttl("d") > 900);
            assertEquals(1, j.persist("d"));
            assertEquals(0, j.persist("d"));
            assertEquals(-1, j.ttl("d"));
            assertEquals(-2, j.ttl("zz"));
            assertEquals(-2, j.pttl("zz"));
            assertEquals("OK", j.rename("d", "e"));
            assertEquals("4", j.get("e"));
            JedisDataException e = assertThrows(JedisDataException.class, () -> j.rename("zz", "y"));
            assertEquals("ERR no such key", e.getMessage());
            j.set("f", "5");
            assertEquals(0, j.renamenx("e", "f"));
            assertEquals(1, j.renamenx("e", "g"));
            assertEquals(new TreeSet<>(List.of("f", "g", "hh")), new TreeSet<>(j.keys("*")));
            assertEquals(Set.of("hh"), j.keys("h?"));
            for (int i = 0; i < 100; i++) {
                j.set("scan:" + i, "x");
            }
            Set<String> seen = new HashSet<>();
            String cursor = ScanParams.SCAN_POINTER_START;
            int rounds = 0;
            do {
                ScanResult<String> r = j.scan(cursor, new ScanParams().match("scan:*").count(20));
                seen.addAll(r.getResult());
                cursor = r.getCursor();
                rounds++;
            } while (!cursor.equals("0") && rounds < 1000);
            assertEquals(100, seen.size());
            ScanResult<String> typed = j.scan("0", new ScanParams().count(1000), "hash");
            assertEquals(List.of("hh"), typed.getResult());
            assertTrue(j.scan("0", new ScanParams().count(1000), "list").getResult().isEmpty());
            assertTrue(j.exists(j.randomKey()));
            j.flushAll();
            assertNull(j.randomKey());
        }
    }

    @ParameterizedTest
    @EnumSource(RedisProtocol.class)
    void hashCommands(RedisProtocol protocol) {
        try (Jedis j = jedis(protocol)) {
            assertEquals(2, j.hset("h", Map.of("a", "1", "b", "2")));
            assertEquals(0, j.hset("h", "a", "10"));
            assertEquals(1, j.hsetnx("h", "c", "3"));
            assertEquals(0, j.hsetnx("h", "c", "30"));
            assertEquals("10", j.hget("h", "a"));
            assertNull(j.hget("h", "zz"));
            assertEquals("OK", j.hmset("h", Map.of("d", "4")));
            assertEquals(java.util.Arrays.asList("10", null, "4"), j.hmget("h", "a", "zz", "d"));
            assertEquals(Map.of("a", "10", "b", "2", "c", "3", "d", "4"), j.hgetAll("h"));
            assertEquals(Map.of(), j.hgetAll("nohash"));
            assertEquals(1, j.hdel("h", "d", "zz"));
            assertTrue(j.hexists("h", "a"));
            assertFalse(j.hexists("h", "d"));
            assertEquals(3, j.hlen("h"));
            assertEquals(Set.of("a", "b", "c"), j.hkeys("h"));
            assertEquals(new TreeSet<>(List.of("10", "2", "3")), new TreeSet<>(j.hvals("h")));
            assertEquals(15, j.hincrBy("h", "a", 5));
            assertEquals(2.5, j.hincrByFloat("h", "b", 0.5), 1e-9);
            JedisDataException e = assertThrows(JedisDataException.class, () -> j.hincrBy("h", "b", 1));
            assertTrue(e.getMessage().startsWith("ERR hash value is not an integer")
                || e.getMessage().startsWith("ERR value is not an integer"), e.getMessage());
            for (int i = 0; i < 50; i++) {
                j.hset("big", "f" + i, "v" + i);
            }
            Map<String, String> seen = new java.util.HashMap<>();
            String cursor = "0";
            int rounds = 0;
            do {
                ScanResult<Map.Entry<String, String>> r = j.hscan("big", cursor, new ScanParams().count(10));
                for (Map.Entry<String, String> en : r.getResult()) {
                    seen.put(en.getKey(), en.getValue());
                }
                cursor = r.getCursor();
                rounds++;
            } while (!cursor.equals("0") && rounds < 1000);
            assertEquals(50, seen.size());
            assertEquals("v7", seen.get("f7"));
            j.set("str", "x");
            e = assertThrows(JedisDataException.class, () -> j.hget("str", "f"));
            assertEquals("WRONGTYPE Operation against a key holding the wrong kind of value", e.getMessage());
            assertEquals(3, j.hdel("h", "a", "b", "c"));
            assertFalse(j.exists("h"));
        }
    }

    @org.junit.jupiter.api.Test
    void expiredKeysVanishActivelyWithoutBeingTouched() throws InterruptedException {
        try (Jedis j = jedis(RedisProtocol.RESP2)) {
            for (int i = 0; i < 200; i++) {
                j.set("exp:" + i, "v", SetParams.setParams().px(50));
            }
            j.set("keeper", "v");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            long size = j.dbSize();
            while (size > 1 && System.nanoTime() < deadline) {
                Thread.sleep(100);
                size = j.dbSize();
            }
            assertEquals(1, size, "expired keys must be removed by active expiry");
            assertTrue(j.info("keyspace").contains("db0:keys=1,"));
        }
    }

    @ParameterizedTest
    @EnumSource(RedisProtocol.class)
    void pipelined(RedisProtocol protocol) {
        try (Jedis j = jedis(protocol)) {
            Pipeline p = j.pipelined();
            List<Response<String>> sets = new ArrayList<>();
            List<Response<Long>> incrs = new ArrayList<>();
            for (int i = 0; i < 2000; i++) {
                sets.add(p.set("p:" + i, "v" + i));
                incrs.add(p.incr("counter"));
            }
            Response<String> get = p.get("p:1999");
            Response<Map<String, String>> all = p.hgetAll("none");
            Response<Long> hset = p.hset("ph", "f", "v");
            Response<String> hget = p.hget("ph", "f");
            Response<Long> size = p.dbSize();
            Response<String> bad = p.get("ph");
            p.sync();
            assertEquals("OK", sets.get(1999).get());
            assertEquals(2000L, incrs.get(1999).get());
            assertEquals("v1999", get.get());
            assertEquals(Map.of(), all.get());
            assertEquals(1L, hset.get());
            assertEquals("v", hget.get());
            assertEquals(2002L, size.get());
            assertThrows(JedisDataException.class, bad::get);
            assertEquals("PONG", j.ping());
        }
    }
}
