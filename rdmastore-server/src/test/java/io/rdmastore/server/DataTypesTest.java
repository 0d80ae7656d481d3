package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.ListEnd;
import io.rdmastore.client.PubSubMessage;
import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreServerException;
import io.rdmastore.client.ScoredMember;
import io.rdmastore.client.Subscription;
import io.rdmastore.client.Watch;
import io.rdmastore.client.ZAddOptions;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Lists, sets, sorted sets, transactions and pub/sub through the native client (opcodes 41-49), once per transport,
 * against a real server whose RESP face shares the same commands and pub/sub registry.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(120)
class DataTypesTest {
    private Path dir;
    private RdmaStoreServer server;

    @BeforeAll
    void start(@TempDir Path tempDir) {
        dir = tempDir;
        server = TestServers.start(dir, c -> { });
    }

    @AfterAll
    void stop() {
        if (server != null) {
            server.close();
        }
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

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @ParameterizedTest
    @MethodSource("transports")
    void lists(String t) {
        try (RdmaStoreClient c = client(t)) {
            String k = t + ":list";
            assertEquals(2, c.rpush(k, "b", "c"));
            assertEquals(3, c.lpush(k, "a"));
            assertEquals(List.of("a", "b", "c"), c.lrange(k, 0, -1));
            assertEquals(3, c.llen(k));
            assertEquals("b", c.lindex(k, 1));
            assertNull(c.lindex(k, 10));
            c.lset(k, 1, "B");
            assertEquals(4, c.linsert(k, true, "c", "x"));
            assertEquals(List.of("a", "B", "x", "c"), c.lrange(k, 0, -1));
            assertEquals(-1, c.linsert(k, false, "nope", "y"));
            assertEquals(1, c.lrem(k, 0, "x"));
            assertEquals("a", c.lpop(k));
            assertEquals("c", c.rpop(k));
            assertEquals(4, c.rpush(k, "1", "2", "3"));
            c.ltrim(k, 0, 2);
            assertEquals(List.of("B", "1", "2"), c.lrange(k, 0, -1));
            assertEquals(List.of("B", "1"), c.lpop(k, 2));
            assertEquals(List.of("2"), c.rpop(k, 5));
            assertEquals(0, c.llen(k), "the last pop deletes the list");
            assertNull(c.lpop(k));
            c.rpush(k + "a", "m1", "m2");
            assertEquals("m1", c.lmove(k + "a", k + "b", ListEnd.LEFT, ListEnd.RIGHT));
            assertEquals(List.of("m1"), c.lrange(k + "b", 0, -1));
            assertArrayEquals(b("m2"), c.lpopAsync(b(k + "a")).join());
            RdmaStoreServerException index = assertThrows(RdmaStoreServerException.class, () -> c.lset(k + "b", 9, "v"));
            assertTrue(index.getMessage().startsWith("ERR"), index.getMessage());

            c.set(k + "str", "v");
            RdmaStoreServerException e = assertThrows(RdmaStoreServerException.class, () -> c.lpush(k + "str", "x"));
            assertEquals("WRONGTYPE", e.code(), e.getMessage());
            assertThrows(RdmaStoreServerException.class, () -> c.sadd(k + "b", "x"), "a set command on a list");
        }
    }

    @ParameterizedTest
    @MethodSource("transports")
    void sets(String t) {
        try (RdmaStoreClient c = client(t)) {
            String k = t + ":set";
            assertEquals(3, c.sadd(k, "a", "b", "c"));
            assertEquals(0, c.sadd(k, "a"));
            assertEquals(Set.of("a", "b", "c"), c.smembers(k));
            assertTrue(c.sismember(k, "a"));
            assertFalse(c.sismember(k, "z"));
            assertEquals(3, c.scard(k));
            assertEquals(1, c.srem(k, "c", "z"));
            c.sadd(k + "2", "b", "x");
            assertEquals(Set.of("b"), c.sinter(k, k + "2"));
            assertEquals(Set.of("a", "b", "x"), c.sunion(k, k + "2"));
            assertEquals(Set.of("a"), c.sdiff(k, k + "2"));
            String r = c.srandmember(k);
            assertTrue(Set.of("a", "b").contains(r), r);
            assertEquals(2, c.srandmember(k, 5).size());
            String popped = c.spop(k);
            assertTrue(Set.of("a", "b").contains(popped));
            assertEquals(1, c.scard(k));
            assertEquals(1, c.spop(k, 3).size());
            assertNull(c.spop(k));
            c.rpush(k + "list", "v");
            assertEquals("WRONGTYPE", assertThrows(RdmaStoreServerException.class,
                () -> c.smembers(k + "list")).code());
        }
    }

    @ParameterizedTest
    @MethodSource("transports")
    void sortedSets(String t) {
        try (RdmaStoreClient c = client(t)) {
            String k = t + ":zset";
            Map<String, Double> scores = new LinkedHashMap<>();
            scores.put("a", 1.0);
            scores.put("b", 2.5);
            scores.put("c", 3.0);
            assertEquals(3, c.zadd(k, ZAddOptions.NONE, scores));
            assertEquals(0, c.zadd(k, ZAddOptions.NONE.nx(), Map.of("a", 9.0)), "NX leaves an existing member");
            assertEquals(1.0, c.zscore(k, "a"));
            assertEquals(0, c.zadd(k, ZAddOptions.NONE.xx(), Map.of("new", 1.0)), "XX adds nothing");
            assertNull(c.zscore(k, "new"));
            assertEquals(0, c.zadd(k, ZAddOptions.NONE.gt().ch(), Map.of("b", 1.0)), "GT refuses a smaller score");
            assertEquals(1, c.zadd(k, ZAddOptions.NONE.gt().ch(), Map.of("b", 4.0)), "CH counts the change");
            assertEquals(1, c.zadd(k, ZAddOptions.NONE.lt().ch(), Map.of("b", 2.0)));
            assertEquals(5.5, c.zincrby(k, 4.5, "a"));
            assertEquals(List.of("b", "c", "a"), c.zrange(k, 0, -1));
            assertEquals(0L, c.zrank(k, "b"));
            assertEquals(0L, c.zrevrank(k, "a"));
            assertNull(c.zrank(k, "none"));
            assertEquals(3, c.zcard(k));
            List<ScoredMember> ws = c.zrangeWithScores(k, 0, 1);
            assertEquals("b", ws.get(0).memberString());
            assertEquals(2.0, ws.get(0).score());
            assertEquals(3.0, ws.get(1).score());
            assertEquals(List.of("b", "c"), c.zrangeByScore(k, 2, 3));
            assertEquals(List.of("b", "c", "a"), c.zrangeByScore(k, Double.NEGATIVE_INFINITY,
                Double.POSITIVE_INFINITY));
            assertEquals(5.5, c.zrangeByScoreWithScores(k, 5, 10).get(0).score());
            assertEquals(2, c.zcount(k, 2, 3));
            assertEquals(1, c.zrem(k, "c", "zz"));
            List<ScoredMember> min = c.zpopmin(k, 1);
            assertEquals("b", min.get(0).memberString());
            c.zadd(k, 0.25, "q");
            List<ScoredMember> max = c.zpopmax(k, 5);
            assertEquals(List.of("a", "q"), max.stream().map(ScoredMember::memberString).toList());
            assertEquals(0.25, max.get(1).score());
            assertEquals(0, c.zcard(k));
            RdmaStoreServerException e = assertThrows(RdmaStoreServerException.class,
                () -> c.zadd(k, ZAddOptions.NONE.nx().xx(), Map.of("a", 1.0)));
            assertTrue(e.getMessage().startsWith("ERR"), e.getMessage());
            c.set(k + "s", "v");
            assertEquals("WRONGTYPE", assertThrows(RdmaStoreServerException.class,
                () -> c.zadd(k + "s", 1, "m")).code());
        }
    }

    @ParameterizedTest
    @MethodSource("transports")
    void commandsTheNativeProtocolRefuses(String t) {
        try (RdmaStoreClient c = client(t)) {
            for (Object[] refused : List.of(new Object[] {"CONFIG", "GET", "*"}, new Object[] {"SHUTDOWN"},
                new Object[] {"SUBSCRIBE", "x"}, new Object[] {"MULTI"}, new Object[] {"WAIT", "1", "1"},
                new Object[] {"NOSUCHCMD"})) {
                RdmaStoreServerException e = assertThrows(RdmaStoreServerException.class, () -> c.command(refused));
                assertEquals("ERR", e.code(), e.getMessage());
            }
            RdmaStoreServerException e = assertThrows(RdmaStoreServerException.class,
                () -> c.readCommand("LPUSH", t + ":ro", "x"));
            assertTrue(e.getMessage().contains("not a read-only command"), e.getMessage());
            assertEquals(0L, c.command("LLEN", t + ":ro"), "nothing was pushed");
            byte[] longKey = new byte[70_000];
            RdmaStoreServerException size = assertThrows(RdmaStoreServerException.class,
                () -> c.lpush(longKey, b("v")), "a key over maxKeyBytes");
            assertTrue(size.getMessage().contains("exceeds limit"), size.getMessage());
            assertEquals("OK", c.command("SET", t + ":cmd", "1"));
            assertEquals(2L, c.command("INCR", t + ":cmd"));
            assertEquals("2", new String((byte[]) c.readCommand("GET", t + ":cmd"), StandardCharsets.UTF_8));
        }
    }

    @ParameterizedTest
    @MethodSource("transports")
    void transactionsAreAtomic(String t) throws Exception {
        try (RdmaStoreClient c = client(t)) {
            String n = t + ":tx:n";
            List<Object> r = c.transaction(tx -> tx.lpush(t + ":tx:l", "a").incr(n).command("LRANGE", t + ":tx:l",
                0, -1).lpush(n, "x"));
            assertEquals(4, r.size());
            assertEquals(1L, r.get(0));
            assertEquals(1L, r.get(1));
            assertArrayEquals(b("a"), (byte[]) ((List<?>) r.get(2)).get(0));
            assertInstanceOf(RdmaStoreServerException.class, r.get(3), "a command failing at run time");
            RdmaStoreServerException abort = assertThrows(RdmaStoreServerException.class,
                () -> c.transaction(tx -> tx.incr(n).command("INCR")));
            assertEquals("EXECABORT", abort.code(), abort.getMessage());
            assertEquals("1", c.get(n), "an aborted transaction ran nothing");

            int perThread = 200;
            String counter = t + ":tx:counter";
            AtomicReference<Throwable> failed = new AtomicReference<>();
            List<Thread> threads = new ArrayList<>();
            try (RdmaStoreClient other = client(t)) {
                for (RdmaStoreClient each : List.of(c, other)) {
                    threads.add(Thread.ofPlatform().start(() -> {
                        try {
                            for (int i = 0; i < perThread; i++) {
                                List<Object> two = each.transaction(tx -> tx.incr(counter).incr(counter));
                                // nothing of the other thread's runs between the two INCRs of one transaction
                                assertEquals((Long) two.get(0) + 1, (Long) two.get(1));
                            }
                        } catch (Throwable e) {
                            failed.set(e);
                        }
                    }));
                }
                for (Thread th : threads) {
                    th.join(TimeUnit.SECONDS.toMillis(60));
                }
            }
            if (failed.get() != null) {
                throw new AssertionError("a transaction failed", failed.get());
            }
            assertEquals(String.valueOf(2 * 2 * perThread), c.get(counter));
        }
    }

    @ParameterizedTest
    @MethodSource("transports")
    void watchAbortsWhenAWatchedKeyChanges(String t) {
        try (RdmaStoreClient c = client(t); RdmaStoreClient other = client(t)) {
            String k = t + ":watch";
            c.set(k, "10");
            try (Watch w = c.watch(k)) {
                long v = Long.parseLong(c.get(k));
                other.set(k, "99");
                assertNull(w.transaction(tx -> tx.set(k, v - 1)), "the watched key changed: nothing runs");
            }
            assertEquals("99", c.get(k));
            try (Watch w = c.watch(k)) {
                long v = Long.parseLong(c.get(k));
                assertEquals(List.of("OK"), w.transaction(tx -> tx.set(k, v - 1)));
            }
            assertEquals("98", c.get(k));
            Watch unused = c.watch(k);
            unused.close();
            assertThrows(IllegalStateException.class, () -> unused.transaction(tx -> tx.incr(k)));
        }
    }

    @ParameterizedTest
    @MethodSource("transports")
    void blockingPopWaitsWithoutHoldingTheConnection(String t) throws Exception {
        try (RdmaStoreClient c = client(t); RdmaStoreClient pusher = client(t)) {
            String k = t + ":bl";
            long start = System.nanoTime();
            assertNull(c.blpop(Duration.ofMillis(300), k), "nothing arrives: null after the wait");
            long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(waited >= 250 && waited < 5_000, "waited " + waited + " ms");

            CompletableFuture<Map.Entry<byte[], byte[]>> pop = c.blpopAsync(Duration.ofSeconds(20), b(k), b(k + "2"));
            // the connection keeps serving while the pop waits
            assertEquals("PONG", c.ping());
            assertFalse(pop.isDone());
            Thread.sleep(100);
            pusher.rpush(k + "2", "hello");
            Map.Entry<byte[], byte[]> got = pop.get(10, TimeUnit.SECONDS);
            assertArrayEquals(b(k + "2"), got.getKey());
            assertArrayEquals(b("hello"), got.getValue());
            assertEquals(0, c.llen(k + "2"));

            pusher.rpush(k, "ready");
            Map.Entry<String, String> now = c.brpop(Duration.ofSeconds(5), k);
            assertEquals(Map.entry(k, "ready"), now, "an element already there is popped at once");
        }
    }

    @ParameterizedTest
    @MethodSource("transports")
    void pubSubReachesNativeSubscribersFromNativeAndResp(String t) throws Exception {
        try (RdmaStoreClient sub = client(t); RdmaStoreClient pub = client(t);
             redis.clients.jedis.Jedis jedis = new redis.clients.jedis.Jedis("127.0.0.1", server.port())) {
            String ch = t + ":news";
            BlockingQueue<PubSubMessage> got = new LinkedBlockingQueue<>();
            BlockingQueue<PubSubMessage> byPattern = new LinkedBlockingQueue<>();
            Subscription s = sub.subscribe(got::add, ch);
            Subscription p = sub.psubscribe(byPattern::add, t + ":n*");
            assertEquals(List.of(ch), s.names());
            int n = 50;
            for (int i = 0; i < n; i++) {
                if (i % 2 == 0) {
                    assertEquals(2, pub.publish(ch, "m" + i), "the channel and the pattern subscription");
                } else {
                    assertEquals(2, jedis.publish(ch, "m" + i));
                }
            }
            for (int i = 0; i < n; i++) {
                PubSubMessage m = got.poll(10, TimeUnit.SECONDS);
                assertNotNull(m, "message " + i);
                assertEquals(ch, m.channelString());
                assertEquals("m" + i, m.messageString(), "in the order published");
                assertNull(m.pattern());
                PubSubMessage pm = byPattern.poll(10, TimeUnit.SECONDS);
                assertNotNull(pm);
                assertEquals(t + ":n*", pm.patternString());
                assertEquals("m" + i, pm.messageString());
            }
            s.close();
            assertFalse(s.isOpen());
            assertEquals(1, pub.publish(ch, "after"), "only the pattern subscription is left");
            assertNotNull(byPattern.poll(10, TimeUnit.SECONDS));
            p.close();
            assertEquals(0, jedis.publish(ch, "gone"));
            Thread.sleep(100);
            assertTrue(got.isEmpty(), "nothing after unsubscribe: " + got);
            assertTrue(byPattern.isEmpty());
            // the connection still serves other calls
            assertEquals("PONG", sub.ping());
        }
    }

    @ParameterizedTest
    @MethodSource("transports")
    void nativePublishReachesRespSubscribers(String t) throws Exception {
        try (RdmaStoreClient pub = client(t);
             redis.clients.jedis.Jedis jedis = new redis.clients.jedis.Jedis("127.0.0.1", server.port())) {
            String ch = t + ":to-resp";
            BlockingQueue<String> got = new LinkedBlockingQueue<>();
            CountDownLatch subscribed = new CountDownLatch(1);
            redis.clients.jedis.JedisPubSub listener = new redis.clients.jedis.JedisPubSub() {
                @Override
                public void onSubscribe(String channel, int count) {
                    subscribed.countDown();
                }

                @Override
                public void onMessage(String channel, String message) {
                    got.add(message);
                    if (message.equals("last")) {
                        unsubscribe();
                    }
                }
            };
            Thread th = Thread.ofPlatform().start(() -> jedis.subscribe(listener, ch));
            assertTrue(subscribed.await(10, TimeUnit.SECONDS));
            assertEquals(1, pub.publish(ch, "first"));
            assertEquals(1, pub.publish(ch, "last"));
            assertEquals("first", got.poll(10, TimeUnit.SECONDS));
            assertEquals("last", got.poll(10, TimeUnit.SECONDS));
            th.join(10_000);
        }
    }

    @Test
    void dataTypesSurviveARestart(@TempDir Path own) {
        RdmaStoreServer s = TestServers.start(own, c -> { });
        try (RdmaStoreClient c = TestServers.client(s, "tcp")) {
            c.rpush("r:list", "a", "b");
            c.sadd("r:set", "x", "y");
            c.zadd("r:zset", 1.5, "m");
            c.transaction(tx -> tx.lpush("r:list", "first").incr("r:n"));
        } finally {
            s.close();
        }
        s = TestServers.start(own, c -> { });
        try (RdmaStoreClient c = TestServers.client(s, "tcp")) {
            assertEquals(List.of("first", "a", "b"), c.lrange("r:list", 0, -1));
            assertEquals(Set.of("x", "y"), c.smembers("r:set"));
            assertEquals(1.5, c.zscore("r:zset", "m"));
            assertEquals("1", c.get("r:n"));
        } finally {
            s.close();
        }
    }
}
