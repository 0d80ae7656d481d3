package io.rdmastore.server.resp;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.params.ZAddParams;
import redis.clients.jedis.params.ZParams;
import redis.clients.jedis.params.ZRangeParams;
import redis.clients.jedis.resps.ScanResult;
import redis.clients.jedis.resps.Tuple;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Jedis against the RESP face's sorted set commands, in RESP2 and RESP3. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RespZSetJedisTest {
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

    private static String flat(List<Tuple> l) {
        StringBuilder sb = new StringBuilder();
        for (Tuple t : l) {
            sb.append(t.getElement()).append('=').append(t.getScore()).append(' ');
        }
        return sb.toString().trim();
    }

    private static String raw(Object reply) {
        return reply instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(reply);
    }

    @ParameterizedTest
    @EnumSource(RedisProtocol.class)
    void sortedSetCommands(RedisProtocol protocol) {
        try (Jedis j = jedis(protocol)) {
            assertEquals(3, j.zadd("z", Map.of("a", 1.0, "b", 2.0, "c", 3.0)));
            assertEquals("zset", j.type("z"));
            assertEquals(0, j.zadd("z", 10, "a", ZAddParams.zAddParams().lt()));
            assertEquals(1, j.zadd("z", 0.5, "a", ZAddParams.zAddParams().lt().ch()));
            assertEquals(3, j.zcard("z"));
            assertEquals(0.5, j.zscore("z", "a"));
            assertNull(j.zscore("z", "nope"));
            assertEquals(List.of(0.5, 3.0), j.zmscore("z", "a", "c"));
            assertEquals(5.5, j.zincrby("z", 2.5, "c"));
            assertEquals(2L, j.zrank("z", "c"));
            assertEquals(0L, j.zrevrank("z", "c"));
            assertEquals(List.of("a", "b", "c"), j.zrange("z", 0, -1));
            assertEquals("c=5.5 b=2.0", flat(j.zrevrangeWithScores("z", 0, 1)));
            assertEquals(2, j.zcount("z", "(0.5", "+inf"));
            assertEquals(List.of("b"), j.zrangeByScore("z", "1", "(4.5"));
            assertEquals("b=2.0 a=0.5", flat(j.zrangeWithScores("z",
                ZRangeParams.zrangeByScoreParams(3, 0).rev().limit(0, 5))));
            assertEquals(1, j.zrangestore("dst", "z", ZRangeParams.zrangeByScoreParams(2, 3)));
            assertEquals(List.of("b"), j.zrange("dst", 0, -1));
            assertEquals("a=0.5", flat(j.zpopmin("z", 1)));
            Tuple top = j.zpopmax("z");
            assertEquals("c", top.getElement());
            assertEquals(5.5, top.getScore());
            assertEquals(1, j.zcard("z"));

            j.zadd("lex", Map.of("a", 0.0, "b", 0.0, "c", 0.0, "d", 0.0));
            assertEquals(List.of("b", "c"), j.zrangeByLex("lex", "[b", "(d"));
            assertEquals(List.of("d", "c"), j.zrevrangeByLex("lex", "+", "(b"));
            assertEquals(4, j.zlexcount("lex", "-", "+"));
            assertEquals(2, j.zremrangeByLex("lex", "[a", "[b"));
            assertEquals(1, j.zremrangeByRank("lex", 0, 0));
            assertEquals(1, j.zremrangeByScore("lex", "-inf", "inf"));
            assertEquals(false, j.exists("lex"));

            j.zadd("x", Map.of("a", 1.0, "b", 2.0));
            j.zadd("y", Map.of("b", 10.0, "c", 20.0));
            assertEquals("a=1.0 b=12.0 c=20.0", flat(j.zunionWithScores(new ZParams(), "x", "y")));
            assertEquals("b=10.0", flat(j.zinterWithScores(new ZParams().aggregate(ZParams.Aggregate.MAX), "x", "y")));
            assertEquals(Set.of("a"), new HashSet<>(j.zdiff("x", "y")));
            assertEquals(1, j.zintercard("x", "y"));
            assertEquals(3, j.zunionstore("u", new ZParams().weights(2, 1), "x", "y"));
            assertEquals("a=2.0 b=14.0 c=20.0", flat(j.zrangeWithScores("u", 0, -1)));
            assertEquals(1, j.zinterstore("i", "x", "y"));
            assertEquals(1, j.zdiffstore("d", "x", "y"));
            assertEquals(2, j.zrandmember("u", 2).size());
            assertEquals(5, j.zrandmemberWithScores("u", -5).size());

            List<String> seen = new ArrayList<>();
            String cursor = ScanParams.SCAN_POINTER_START;
            do {
                ScanResult<Tuple> r = j.zscan("u", cursor, new ScanParams().count(1));
                for (Tuple t : r.getResult()) {
                    seen.add(t.getElement());
                }
                cursor = r.getCursor();
            } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
            assertEquals(Set.of("a", "b", "c"), new HashSet<>(seen));
            j.set("plain", "v");
            assertEquals(Set.of("d", "x", "dst", "z", "i", "u", "y"),
                new HashSet<>(j.scan("0", new ScanParams().count(1000), "zset").getResult()));

            // Redis 7.0's score text: %.17g (RESP2's bulk string; RESP3's double reaches us parsed)
            Object r1 = j.sendCommand(Protocol.Command.ZINCRBY, "f", "0.1", "m");
            Object r2 = j.sendCommand(Protocol.Command.ZINCRBY, "f", "16.9", "m");
            Object r3 = j.sendCommand(Protocol.Command.ZINCRBY, "f", "+inf", "m");
            if (protocol != RedisProtocol.RESP3) {
                assertEquals("0.10000000000000001", raw(r1));
                assertEquals("17", raw(r2));
                assertEquals("inf", raw(r3));
            } else {
                assertEquals(17.0, (Double) r2);
                assertEquals(Double.POSITIVE_INFINITY, (Double) r3);
            }

            j.set("str", "v");
            JedisDataException e = assertThrows(JedisDataException.class, () -> j.zadd("str", 1, "a"));
            assertTrue(e.getMessage().startsWith("WRONGTYPE"), e.getMessage());
            e = assertThrows(JedisDataException.class, () -> j.sendCommand(Protocol.Command.ZADD, "z", "nan", "a"));
            assertEquals("ERR value is not a valid float", e.getMessage());
            e = assertThrows(JedisDataException.class,
                () -> j.sendCommand(Protocol.Command.ZADD, "z", "NX", "XX", "1", "a"));
            assertEquals("ERR XX and NX options at the same time are not compatible", e.getMessage());
            e = assertThrows(JedisDataException.class,
                () -> j.sendCommand(Protocol.Command.ZINCRBY, "f", "-inf", "m"));
            assertEquals("ERR resulting score is not a number (NaN)", e.getMessage());
            e = assertThrows(JedisDataException.class,
                () -> j.sendCommand(Protocol.Command.ZRANGEBYSCORE, "z", "x", "1"));
            assertEquals("ERR min or max is not a float", e.getMessage());
            e = assertThrows(JedisDataException.class,
                () -> j.sendCommand(Protocol.Command.ZRANGEBYLEX, "z", "a", "[b"));
            assertEquals("ERR min or max not valid string range item", e.getMessage());
        }
    }

    @Test
    void dumpRestoreCopyRenameAndEncodingKeepTheSortedSet() {
        try (Jedis j = jedis(RedisProtocol.RESP2)) {
            j.zadd("z", Map.of("a", 1.5, "b", -2.0, "c", Double.POSITIVE_INFINITY));
            byte[] dump = j.dump("z");
            assertEquals("OK", j.restore("r", 0, dump));
            assertEquals("b=-2.0 a=1.5 c=Infinity", flat(j.zrangeWithScores("r", 0, -1)));
            assertTrue(j.copy("z", "copy", false));
            j.rename("copy", "renamed");
            assertEquals(3, j.zcard("renamed"));
            assertEquals("listpack", j.objectEncoding("z"));
            assertTrue(j.memoryUsage("z") > 0);
            j.expire("z", 100);
            assertTrue(j.ttl("z") > 0);
            assertEquals(1, j.del("z"));
            assertEquals(false, j.exists("z"));
        }
    }
}
