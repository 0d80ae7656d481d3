package io.rdmastore.server.resp;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.commands.ProtocolCommand;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.util.SafeEncoder;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fixes and commands that Redis's own suite showed missing: each with Redis's reply or error text (the suite's
 * units check the rest, see bin/redis-tests).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RespRedisCompatTest {
    private static RespTestServer server;

    @BeforeAll
    static void start() {
        server = RespTestServer.start(new RespFace.Context().port(0).version("9.9.9"));
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    @BeforeEach
    void flush() {
        server.store.flushAll();
    }

    private static Jedis jedis() {
        return new Jedis("127.0.0.1", server.port(), DefaultJedisClientConfig.builder().socketTimeoutMillis(20_000)
            .build());
    }

    private static ProtocolCommand cmd(String name) {
        byte[] raw = name.getBytes(StandardCharsets.US_ASCII);
        return () -> raw;
    }

    private static Object call(Jedis j, String name, String... args) {
        return j.sendCommand(cmd(name), args);
    }

    private static String str(Object reply) {
        return reply == null ? null : SafeEncoder.encode((byte[]) reply);
    }

    private static String error(Jedis j, String name, String... args) {
        return assertThrows(JedisDataException.class, () -> call(j, name, args)).getMessage();
    }

    @Test
    void emptyStringAndHugeSetRangeOffset() {
        try (Jedis j = jedis()) {
            assertEquals("OK", j.set("k", ""));
            assertEquals("", j.get("k"));
            assertEquals("ERR string exceeds maximum allowed size (proto-max-bulk-len)",
                error(j, "SETRANGE", "k", "9223372036854775807", "A"));
            assertEquals("ERR string exceeds maximum allowed size (proto-max-bulk-len)",
                error(j, "SETRANGE", "k", "536870911", "AB"));
            // nothing to write: Redis answers the length without checking the offset
            assertEquals(0L, call(j, "SETRANGE", "k", "9223372036854775807", ""));
        }
    }

    @Test
    void infinitiesAreRefusedWithRedisText() {
        try (Jedis j = jedis()) {
            j.set("f", "1");
            assertEquals("ERR increment would produce NaN or Infinity", error(j, "INCRBYFLOAT", "f", "+inf"));
            assertEquals("ERR increment would produce NaN or Infinity", error(j, "INCRBYFLOAT", "f", "-Infinity"));
            assertEquals("ERR value is NaN or Infinity", error(j, "HINCRBYFLOAT", "h", "f", "+inf"));
            assertEquals("1", j.get("f"));
        }
    }

    /** CVE-2022-36021: KEYS with a*a*...*b took minutes on the I/O thread; now it ends at once. */
    @Test
    void keysWithManyStarsEndsQuickly() throws Exception {
        try (Jedis j = jedis(); Jedis other = jedis()) {
            j.set("a".repeat(5000), "v");
            String pattern = "a*".repeat(40) + "b";
            CompletableFuture<Object> keys = CompletableFuture.supplyAsync(() -> call(j, "KEYS", pattern));
            long t0 = System.nanoTime();
            assertEquals("PONG", other.ping());
            assertEquals(List.of(), keys.get(10, TimeUnit.SECONDS));
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(10));
            assertEquals(List.of("0", List.of()), decode(call(j, "SCAN", "0", "MATCH", pattern, "COUNT", "1000")));
        }
    }

    private static Object decode(Object o) {
        if (o instanceof byte[] b) {
            return SafeEncoder.encode(b);
        }
        if (o instanceof List<?> l) {
            List<Object> out = new ArrayList<>();
            for (Object x : l) {
                out.add(decode(x));
            }
            return out;
        }
        return o;
    }

    @Test
    void configAcceptsSettingsThatDoNotApply() {
        try (Jedis j = jedis()) {
            assertEquals("OK", str(call(j, "CONFIG", "SET", "save", "")));
            assertEquals("OK", str(call(j, "CONFIG", "SET", "maxmemory", "100mb", "notify-keyspace-events", "KEA")));
            assertEquals(List.of("maxmemory", "104857600"), decode(call(j, "CONFIG", "GET", "maxmemory")));
            // applied now (keyspace notifications), and shown in Redis's canonical order
            assertEquals(List.of("notify-keyspace-events", "AKE"),
                decode(call(j, "CONFIG", "GET", "notify-keyspace-events")));
            assertTrue(error(j, "CONFIG", "SET", "notify-keyspace-events", "KQ").contains("Invalid event class"));
            // maxmemory is applied too (eviction and OOM): back to none for the other tests
            assertEquals("OK", str(call(j, "CONFIG", "SET", "maxmemory", "0", "notify-keyspace-events", "")));
            assertEquals("OK", str(call(j, "CONFIG", "SET", "hash-max-ziplist-entries", "7")));
            assertEquals(List.of("hash-max-listpack-entries", "7"),
                decode(call(j, "CONFIG", "GET", "hash-max-listpack-entries")));
            assertEquals("OK", str(call(j, "CONFIG", "SET", "appendonly", "yes")));
            assertTrue(error(j, "CONFIG", "SET", "appendonly", "no").contains("appendonly is always yes"));
            assertTrue(error(j, "CONFIG", "SET", "maxmemory", "lots").contains("memory value"));
            assertTrue(error(j, "CONFIG", "SET", "replica-read-only", "maybe").contains("'yes' or 'no'"));
            assertTrue(error(j, "CONFIG", "SET", "no-such-setting", "1").startsWith("ERR Unknown option"));
            assertEquals("OK", str(call(j, "CONFIG", "SET", "save", "3600 1 300 100")));
            assertEquals(List.of("save", "3600 1 300 100"), decode(call(j, "CONFIG", "GET", "sa?e")));
        }
    }

    @Test
    void infoSections() {
        try (Jedis j = jedis()) {
            assertEquals("OK", j.configResetStat());
            j.set("x", "1");
            error(j, "INCR", "nope", "extra");
            assertThrows(JedisDataException.class, () -> j.hget("x", "f"));
            String info = j.info();
            assertTrue(info.contains("rdmastore_version:9.9.9\r\n"), info);
            assertTrue(info.contains("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"), info);
            assertTrue(info.contains("master_repl_offset:0\r\n"), info);
            assertTrue(info.contains("# Cpu\r\nused_cpu_sys:"), info);
            assertTrue(info.contains("errorstat_WRONGTYPE:count=1\r\n"), info);
            assertTrue(info.contains("total_error_replies:2\r\n"), info);
            assertTrue(info.contains("errorstat_ERR:count="), info);
            assertTrue(!info.contains("# Commandstats"), "commandstats is not in the default set");
            String stats = j.info("commandstats");
            assertTrue(stats.contains("cmdstat_set:calls=1,usec="), stats);
            assertTrue(stats.contains("cmdstat_hget:calls=1,") && stats.contains("failed_calls=1"), stats);
            assertEquals("OK", j.configResetStat());
            assertTrue(!j.info("commandstats").contains("cmdstat_set"));
        }
    }

    @Test
    void functionsAnswerAsAServerWithNone() {
        try (Jedis j = jedis()) {
            assertEquals("OK", str(call(j, "FUNCTION", "FLUSH")));
            assertEquals("OK", str(call(j, "FUNCTION", "FLUSH", "ASYNC")));
            assertEquals(List.of(), call(j, "FUNCTION", "LIST"));
            assertEquals(List.of(), call(j, "FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "x*"));
            assertEquals("ERR Library not found", error(j, "FUNCTION", "DELETE", "lib"));
        }
    }

    @Test
    void bits() {
        try (Jedis j = jedis()) {
            assertEquals(0L, call(j, "SETBIT", "b", "7", "1"));
            assertEquals(1L, call(j, "SETBIT", "b", "7", "1"));
            assertEquals(1L, call(j, "GETBIT", "b", "7"));
            assertEquals(0L, call(j, "GETBIT", "b", "1000"));
            assertEquals("ERR bit is not an integer or out of range", error(j, "SETBIT", "b", "1", "2"));
            assertEquals("ERR bit offset is not an integer or out of range", error(j, "SETBIT", "b", "-1", "1"));
            j.set("s", "foobar");
            assertEquals(26L, call(j, "BITCOUNT", "s"));
            assertEquals(4L, call(j, "BITCOUNT", "s", "0", "0"));
            assertEquals(6L, call(j, "BITCOUNT", "s", "1", "1"));
            assertEquals(17L, call(j, "BITCOUNT", "s", "5", "30", "BIT"));
            j.set("p".getBytes(StandardCharsets.US_ASCII), new byte[] {(byte) 0xff, (byte) 0xf0, 0});
            assertEquals(12L, call(j, "BITPOS", "p", "0"));
            assertEquals(8L, call(j, "BITPOS", "p", "1", "1"));
            assertEquals(-1L, call(j, "BITPOS", "p", "1", "2"));
            assertEquals(7L, call(j, "BITPOS", "p", "1", "7", "15", "BIT"));
            assertEquals(0L, call(j, "BITPOS", "missing", "0"));
            assertEquals(-1L, call(j, "BITPOS", "missing", "1"));
            j.set("x1", "abc");
            j.set("x2", "ab");
            assertEquals(3L, call(j, "BITOP", "AND", "dest", "x1", "x2"));
            assertEquals("ab\u0000", j.get("dest"));
            assertEquals(3L, call(j, "BITOP", "XOR", "dest", "x1", "x2"));
            assertEquals("\u0000\u0000c", j.get("dest"));
            assertEquals("ERR BITOP NOT must be called with a single source key.",
                error(j, "BITOP", "NOT", "dest", "x1", "x2"));
            assertEquals(0L, call(j, "BITOP", "OR", "dest", "none1", "none2"));
            assertEquals(false, j.exists("dest"));
        }
    }

    @Test
    void stringsAndKeys() {
        try (Jedis j = jedis()) {
            j.setex("g", 100, "old");
            assertEquals("old", str(call(j, "GETSET", "g", "new")));
            assertEquals(-1L, j.ttl("g"));
            j.set("key1", "ohmytext");
            j.set("key2", "mynewtext");
            assertEquals("mytext", str(call(j, "LCS", "key1", "key2")));
            assertEquals(6L, call(j, "LCS", "key1", "key2", "LEN"));
            assertEquals(List.of("matches", List.of(List.of(List.of(4L, 7L), List.of(5L, 8L), 4L)), "len", 6L),
                decode(call(j, "LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN")));
            long at = System.currentTimeMillis() / 1000 + 1000;
            j.expireAt("key1", at);
            assertEquals(at, call(j, "EXPIRETIME", "key1"));
            assertEquals(at * 1000, call(j, "PEXPIRETIME", "key1"));
            assertEquals(-1L, call(j, "EXPIRETIME", "key2"));
            assertEquals(-2L, call(j, "EXPIRETIME", "nope"));
            assertEquals(1L, call(j, "COPY", "key1", "key3"));
            assertEquals("ohmytext", j.get("key3"));
            assertEquals(at, call(j, "EXPIRETIME", "key3"));
            assertEquals(0L, call(j, "COPY", "key2", "key3"));
            assertEquals(1L, call(j, "COPY", "key2", "key3", "REPLACE"));
            assertEquals("ERR DB index is out of range", error(j, "COPY", "key2", "key3", "DB", "1"));
            assertEquals(2L, call(j, "TOUCH", "key1", "key2", "nope"));
            j.set("n", "12345");
            assertEquals("int", str(call(j, "OBJECT", "ENCODING", "n")));
            assertEquals("embstr", str(call(j, "OBJECT", "ENCODING", "key1")));
            assertNull(call(j, "OBJECT", "ENCODING", "nope"));
            assertEquals(1L, call(j, "OBJECT", "REFCOUNT", "n"));
            assertTrue((Long) call(j, "MEMORY", "USAGE", "key1") > 8);
            assertNull(call(j, "MEMORY", "USAGE", "nope"));
        }
    }

    @Test
    void hashes() {
        try (Jedis j = jedis()) {
            j.hset("h", "a", "1");
            j.hset("h", "b", "22");
            assertEquals(2L, call(j, "HSTRLEN", "h", "b"));
            assertEquals(0L, call(j, "HSTRLEN", "h", "zz"));
            String f = str(call(j, "HRANDFIELD", "h"));
            assertTrue(f.equals("a") || f.equals("b"));
            assertEquals(2, ((List<?>) call(j, "HRANDFIELD", "h", "5")).size());
            assertEquals(7, ((List<?>) call(j, "HRANDFIELD", "h", "-7")).size());
            assertEquals(4, ((List<?>) call(j, "HRANDFIELD", "h", "2", "WITHVALUES")).size());
            assertEquals(List.of(), call(j, "HRANDFIELD", "none", "3"));
            assertNull(call(j, "HRANDFIELD", "none"));
            assertEquals("ERR value is out of range",
                error(j, "HRANDFIELD", "h", "-9223372036854775808"));
            assertEquals("listpack", str(call(j, "OBJECT", "ENCODING", "h")));
        }
    }

    @Test
    void dumpAndRestore() {
        try (Jedis j = jedis()) {
            j.set("s", "value");
            j.hset("h", "f", "v");
            byte[] ds = j.dump("s");
            byte[] dh = j.dump("h");
            assertNull(j.dump("none"));
            assertEquals("BUSYKEY Target key name already exists.",
                assertThrows(JedisDataException.class, () -> j.restore("s", 0, ds)).getMessage());
            assertEquals("OK", j.restore("s2", 5000, ds));
            assertEquals("value", j.get("s2"));
            assertTrue(j.pttl("s2") > 3000 && j.pttl("s2") <= 5000);
            assertEquals("OK", j.restore("h2", 0, dh));
            assertEquals("v", j.hget("h2", "f"));
            assertEquals(-1L, j.ttl("h2"));
            assertEquals("OK", str(j.sendCommand(Protocol.Command.RESTORE, "h2".getBytes(), "0".getBytes(), ds,
                "REPLACE".getBytes())));
            assertEquals("value", j.get("h2"));
            assertEquals("ERR DUMP payload version or checksum are wrong",
                assertThrows(JedisDataException.class, () -> j.restore("x", 0, new byte[20])).getMessage());
        }
    }

    @Test
    void sets() {
        try (Jedis j = jedis(); Jedis j3 = new Jedis("127.0.0.1", server.port(),
            DefaultJedisClientConfig.builder().protocol(RedisProtocol.RESP3).build())) {
            assertEquals(3L, j.sadd("s1", "a", "b", "c"));
            assertEquals(0L, j.sadd("s1", "a"));
            j.sadd("s2", "b", "c", "d");
            assertEquals("set", j.type("s1"));
            assertEquals(java.util.Set.of("a", "b", "c"), j.smembers("s1"));
            assertEquals(java.util.Set.of("a", "b", "c"), j3.smembers("s1"));
            assertTrue(j.sismember("s1", "a"));
            assertEquals(List.of(true, false), j.smismember("s1", "a", "z"));
            assertEquals(java.util.Set.of("b", "c"), j.sinter("s1", "s2"));
            assertEquals(java.util.Set.of("a", "b", "c", "d"), j.sunion("s1", "s2"));
            assertEquals(java.util.Set.of("a"), j.sdiff("s1", "s2"));
            assertEquals(2L, j.sinterstore("s3", "s1", "s2"));
            assertEquals(1L, call(j, "SINTERCARD", "2", "s1", "s2", "LIMIT", "1"));
            assertEquals("ERR numkeys should be greater than 0", error(j, "SINTERCARD", "0", "s1"));
            assertEquals(1L, j.smove("s1", "s2", "a"));
            assertEquals(2L, j.scard("s1"));
            assertEquals(1L, j.srem("s1", "b", "zz"));
            assertEquals(2, j.srandmember("s2", 2).size());
            assertEquals(5, j.srandmember("s2", -5).size());
            assertEquals(2, j.spop("s2", 2).size());
            assertEquals(2L, j.scard("s2"));
            assertEquals("ERR value is out of range, must be positive", error(j, "SPOP", "s2", "-1"));
            j.set("str", "v");
            assertTrue(error(j, "SADD", "str", "x").startsWith("WRONGTYPE"));
            assertEquals(List.of("str"), j.scan("0", new redis.clients.jedis.params.ScanParams().count(1000),
                "string").getResult());
            assertTrue(j.scan("0", new redis.clients.jedis.params.ScanParams().count(1000), "set").getResult()
                .contains("s3"));
            assertEquals(2, j.sscan("s3", "0").getResult().size());
            assertEquals("hashtable", str(call(j, "OBJECT", "ENCODING", "s3")));
            j.sadd("ints", "1", "2", "-3");
            assertEquals("intset", str(call(j, "OBJECT", "ENCODING", "ints")));
            byte[] d = j.dump("s3");
            assertEquals("OK", j.restore("s4", 0, d));
            assertEquals(java.util.Set.of("b", "c"), j.smembers("s4"));
        }
    }

    @Test
    void lists() {
        try (Jedis j = jedis()) {
            assertEquals(3L, j.rpush("l", "a", "b", "c"));
            assertEquals(4L, j.lpush("l", "z"));
            assertEquals(List.of("z", "a", "b", "c"), j.lrange("l", 0, -1));
            assertEquals("list", j.type("l"));
            assertEquals(0L, j.lpushx("none", "x"));
            assertEquals("b", j.lindex("l", -2));
            assertEquals("OK", j.lset("l", 0, "Z"));
            assertEquals("ERR index out of range", error(j, "LSET", "l", "10", "x"));
            assertEquals("ERR no such key", error(j, "LSET", "none", "0", "x"));
            assertEquals(5L, call(j, "LINSERT", "l", "AFTER", "a", "a2"));
            assertEquals(2L, call(j, "LPOS", "l", "a2"));
            assertEquals(List.of(1L), call(j, "LPOS", "l", "a", "COUNT", "0"));
            assertEquals(1L, j.lrem("l", 0, "a2"));
            assertEquals("OK", j.ltrim("l", 1, -1));
            assertEquals(List.of("a", "b"), j.lpop("l", 2));
            assertEquals("c", str(call(j, "RPOPLPUSH", "l", "l2")));
            assertNull(call(j, "LPOP", "l", "1"));
            assertEquals("c", str(call(j, "LMOVE", "l2", "l3", "LEFT", "RIGHT")));
            assertEquals(1L, j.llen("l3"));
            assertEquals("ERR value is out of range, must be positive", error(j, "LPOP", "l3", "-1"));
            byte[] d = j.dump("l3");
            assertEquals("OK", j.restore("l4", 0, d));
            assertEquals(List.of("c"), j.lrange("l4", 0, -1));
        }
    }

    @Test
    void resetGoesBackToAFreshConnection() {
        try (Jedis j = new Jedis("127.0.0.1", server.port(),
            DefaultJedisClientConfig.builder().protocol(RedisProtocol.RESP3).build())) {
            j.clientSetname("named");
            assertEquals("RESET", str(j.sendCommand(Protocol.Command.RESET)));
            assertNull(j.clientGetname());
            assertNotEquals("", j.ping());
        }
    }
}
