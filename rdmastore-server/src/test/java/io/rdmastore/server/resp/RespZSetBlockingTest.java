package io.rdmastore.server.resp;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPubSub;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.params.SortingParams;
import redis.clients.jedis.Transaction;
import redis.clients.jedis.args.SortedSetOption;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.resps.Tuple;
import redis.clients.jedis.util.KeyValue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Jedis against the blocking sorted set commands (BZPOPMIN, BZPOPMAX, BZMPOP: FIFO wake-up, time-outs, wake by any
 * writer, MULTI, a key of the other type), the sorted set commands' keyspace events, and SORT over a sorted set.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RespZSetBlockingTest {
    private static RespTestServer server;
    private final ExecutorService pool = Executors.newCachedThreadPool();

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
            .socketTimeoutMillis(20_000).build());
    }

    private static Jedis jedis() {
        return jedis(RedisProtocol.RESP2);
    }

    private static void awaitBlocked(int n) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (server.face.blocking.blockedClients() != n) {
            assertTrue(System.nanoTime() < end, "blocked clients: " + server.face.blocking.blockedClients()
                + ", expected " + n);
            Thread.sleep(5);
        }
    }

    private <T> Future<T> async(Function<Jedis, T> call) {
        return pool.submit(() -> {
            try (Jedis j = jedis()) {
                return call.apply(j);
            }
        });
    }

    private static String str(KeyValue<String, Tuple> kv) {
        return kv == null ? null : kv.getKey() + ":" + kv.getValue().getElement() + ":" + kv.getValue().getScore();
    }

    @Test
    void bzpopminServesClientsInTheOrderTheyBlockedWithTheLowestMembers() throws Exception {
        List<Future<KeyValue<String, Tuple>>> waiting = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            waiting.add(async(j -> j.bzpopmin(0, "z1", "z2")));
            awaitBlocked(i + 1);
        }
        try (Jedis j = jedis()) {
            // one variadic ZADD of four members wakes all three, lowest scores first, in the order they blocked
            assertEquals(4, j.zadd("z2", java.util.Map.of("d", 4.0, "a", 1.0, "c", 3.0, "b", 2.5)));
            assertEquals("z2:a:1.0", str(waiting.get(0).get(10, TimeUnit.SECONDS)));
            assertEquals("z2:b:2.5", str(waiting.get(1).get(10, TimeUnit.SECONDS)));
            assertEquals("z2:c:3.0", str(waiting.get(2).get(10, TimeUnit.SECONDS)));
            assertEquals(List.of("d"), j.zrange("z2", 0, -1));
            // not blocking when a key has members: BZPOPMAX takes the highest of the first non-empty key
            j.zadd("z1", 7, "x");
            j.zadd("z1", 9, "y");
            assertEquals("z1:y:9.0", str(j.bzpopmax(1, "missing", "z1", "z2")));
            assertEquals(0, server.face.blocking.blockedClients());
        }
    }

    @Test
    void timeOutsAndErrors() throws Exception {
        try (Jedis j = jedis()) {
            long t0 = System.nanoTime();
            assertNull(j.bzpopmin(0.3, "nothing"));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms >= 290 && ms < 5000, "took " + ms + " ms");
            assertNull(j.bzmpop(0.1, SortedSetOption.MAX, "a", "b"));
            assertEquals(0, server.face.blocking.blockedClients());
            JedisDataException e = assertThrows(JedisDataException.class, () -> j.bzpopmax(-1, "x"));
            assertEquals("ERR timeout is negative", e.getMessage());
            j.rpush("list", "v");
            e = assertThrows(JedisDataException.class, () -> j.bzpopmin(0, "list"));
            assertTrue(e.getMessage().startsWith("WRONGTYPE"), e.getMessage());
            e = assertThrows(JedisDataException.class,
                () -> j.sendCommand(redis.clients.jedis.Protocol.Command.BZMPOP, "0", "0", "a", "MIN"));
            assertEquals("ERR numkeys should be greater than 0", e.getMessage());
            e = assertThrows(JedisDataException.class,
                () -> j.sendCommand(redis.clients.jedis.Protocol.Command.BZMPOP, "0", "1", "a", "LEFT"));
            assertEquals("ERR syntax error", e.getMessage());
            e = assertThrows(JedisDataException.class,
                () -> j.sendCommand(redis.clients.jedis.Protocol.Command.BZMPOP, "0", "1", "a", "MIN", "COUNT",
                    "0"));
            assertEquals("ERR count should be greater than 0", e.getMessage());
            assertEquals("PONG", j.ping());
        }
    }

    @Test
    void bzmpopWaitsAndTakesCountMembers() throws Exception {
        Future<KeyValue<String, List<Tuple>>> f = async(j -> j.bzmpop(0, SortedSetOption.MAX, 2, "a", "b"));
        awaitBlocked(1);
        // the store's own API stands for any other face (the native protocol): its write wakes the RESP client
        server.store.sortedSets().add("b".getBytes(StandardCharsets.UTF_8), new double[] {1, 2, 3},
            List.of("m1".getBytes(), "m2".getBytes(), "m3".getBytes()), 0);
        KeyValue<String, List<Tuple>> r = f.get(10, TimeUnit.SECONDS);
        assertEquals("b", r.getKey());
        assertEquals(List.of(new Tuple("m3", 3.0), new Tuple("m2", 2.0)), r.getValue());
        try (Jedis j = jedis()) {
            assertEquals(List.of("m1"), j.zrange("b", 0, -1));
        }
    }

    @Test
    void resp3RepliesScoresAsDoubles() throws Exception {
        try (Jedis j = jedis(RedisProtocol.RESP3)) {
            j.zadd("z", 1.5, "a");
            Object raw = j.sendCommand(redis.clients.jedis.Protocol.Command.BZPOPMIN, "z", "0");
            List<?> l = (List<?>) raw;
            assertEquals(3, l.size());
            assertEquals(1.5, l.get(2));
            j.zadd("z", 2.5, "b");
            raw = j.sendCommand(redis.clients.jedis.Protocol.Command.BZMPOP, "0", "1", "z", "MIN");
            List<?> pair = (List<?>) ((List<?>) ((List<?>) raw).get(1)).get(0);
            assertEquals(2.5, pair.get(1));
        }
    }

    @Test
    void insideMultiTheyDoNotBlockAndAnExecWakesWaiters() throws Exception {
        try (Jedis j = jedis()) {
            Transaction t = j.multi();
            t.bzpopmin(0, "empty");
            t.bzmpop(0, SortedSetOption.MIN, "empty");
            List<Object> r = t.exec();
            assertEquals(2, r.size());
            assertNull(r.get(0));
            assertNull(r.get(1));
            assertEquals(0, server.face.blocking.blockedClients());

            Future<KeyValue<String, Tuple>> f = async(x -> x.bzpopmin(0, "zs"));
            awaitBlocked(1);
            // ZADD then DEL in one EXEC: the key is empty once EXEC ends, so the waiter keeps waiting
            t = j.multi();
            t.zadd("zs", 1, "gone");
            t.del("zs");
            t.exec();
            Thread.sleep(100);
            assertFalse(f.isDone());
            t = j.multi();
            t.zadd("zs", 3, "c");
            t.zadd("zs", 1, "a");
            t.zadd("zs", 2, "b");
            t.exec();
            assertEquals("zs:a:1.0", str(f.get(10, TimeUnit.SECONDS)));
        }
    }

    @Test
    void aListWaiterAndASortedSetWaiterOnOneKeyEachGetTheirType() throws Exception {
        Future<List<String>> list = async(j -> j.blpop(0, "k"));
        awaitBlocked(1);
        Future<KeyValue<String, Tuple>> zset = async(j -> j.bzpopmin(0, "k"));
        awaitBlocked(2);
        try (Jedis j = jedis()) {
            // the list client blocked first; a sorted set on the key serves the second client
            j.zadd("k", 1, "m");
            assertEquals("k:m:1.0", str(zset.get(10, TimeUnit.SECONDS)));
            assertFalse(list.isDone());
            j.rpush("k", "v");
            assertEquals(List.of("k", "v"), list.get(10, TimeUnit.SECONDS));
        }
        awaitBlocked(0);
    }

    @Test
    void sortedSetCommandsSendRedisKeyspaceEvents() throws Exception {
        ExecutorService one = Executors.newSingleThreadExecutor();
        BlockingQueue<String> got = new LinkedBlockingQueue<>();
        BlockingQueue<Integer> subscribed = new LinkedBlockingQueue<>();
        JedisPubSub sub = new JedisPubSub() {
            @Override
            public void onPMessage(String pattern, String channel, String message) {
                got.add(channel.substring("__keyspace@0__:".length()) + " " + message);
            }

            @Override
            public void onPSubscribe(String pattern, int count) {
                subscribed.add(count);
            }
        };
        try (Jedis s = jedis(); Jedis j = jedis()) {
            j.configSet("notify-keyspace-events", "Kgz");
            one.submit(() -> s.psubscribe(sub, "__keyspace@0__:*"));
            assertEquals(1, subscribed.poll(10, TimeUnit.SECONDS));
            j.zadd("z", 1, "a");
            j.zrem("z", "nothing");
            j.zincrby("z", 2, "a");
            j.zaddIncr("z", 1, "a", new redis.clients.jedis.params.ZAddParams());
            j.zadd("z", java.util.Map.of("b", 5.0, "c", 6.0, "d", 7.0, "e", 8.0, "f", 9.0));
            j.zrem("z", "b");
            j.zremrangeByScore("z", 6, 6);
            j.zremrangeByRank("z", 0, 0);
            j.zremrangeByLex("z", "[e", "[e");
            j.zpopmin("z", 2);
            j.zadd("y", 1, "m");
            j.zunionstore("u", "y");
            j.zinterstore("i", "y");
            j.zdiffstore("d", "y", "nothing");
            j.zrangestore("r", "y", new redis.clients.jedis.params.ZRangeParams(0, -1));
            j.zmpop(SortedSetOption.MAX, "y");
            j.zadd("w", 1, "m");
            j.bzpopmax(0, "w");
            List<String> expected = List.of("z zadd", "z zincr", "z zincr", "z zadd", "z zrem", "z zremrangebyscore",
                "z zremrangebyrank", "z zremrangebylex", "z zpopmin", "z del", "y zadd", "u zunionstore",
                "i zinterstore", "d zdiffstore", "r zrangestore", "y zpopmax", "y del", "w zadd", "w zpopmax", "w del");
            List<String> seen = new ArrayList<>();
            for (int i = 0; i < expected.size(); i++) {
                String m = got.poll(10, TimeUnit.SECONDS);
                assertTrue(m != null, "no event after " + seen);
                seen.add(m);
            }
            assertEquals(expected, seen);
            assertNull(got.poll(200, TimeUnit.MILLISECONDS));
            j.configSet("notify-keyspace-events", "");
            sub.punsubscribe();
        } finally {
            one.shutdownNow();
        }
    }

    @Test
    void sortWorksOverSortedSets() {
        try (Jedis j = jedis()) {
            j.zadd("z", java.util.Map.of("10", 1.0, "2", 2.0, "-3", 3.0, "b", 4.0));
            assertEquals(List.of("10", "2", "-3", "b"), j.sort("z", new SortingParams().by("nosort")));
            assertEquals(List.of("b", "-3", "2", "10"), j.sort("z", new SortingParams().by("nosort").desc()));
            assertEquals(List.of("-3", "10", "2", "b"), j.sort("z", new SortingParams().alpha()));
            JedisDataException e = assertThrows(JedisDataException.class, () -> j.sort("z"));
            assertEquals("ERR One or more scores can't be converted into double", e.getMessage());
            j.zrem("z", "b");
            assertEquals(List.of("-3", "2", "10"), j.sort("z"));
            assertEquals(3, j.sort("z", new SortingParams().desc(), "out"));
            assertEquals(List.of("10", "2", "-3"), j.lrange("out", 0, -1));
        }
    }
}
