package io.rdmastore.server.resp;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Transaction;
import redis.clients.jedis.args.ListDirection;
import redis.clients.jedis.exceptions.JedisDataException;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Blocking list commands: FIFO wake-up, time-outs, wake by any writer, disconnects while blocked. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RespBlockingTest {
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

    private static Jedis jedis() {
        return new Jedis("127.0.0.1", server.port(), DefaultJedisClientConfig.builder().socketTimeoutMillis(20_000)
            .build());
    }

    /** Waits until the face counts {@code n} clients blocked on keys (at most 10 s). */
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

    @Test
    void clientsAreServedInTheOrderTheyBlocked() throws Exception {
        List<Future<List<String>>> waiting = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            waiting.add(async(j -> j.blpop(0, "q")));
            awaitBlocked(i + 1);
        }
        try (Jedis j = jedis()) {
            // one push of three elements wakes the first three, in order; the fourth stays blocked
            assertEquals(3, j.rpush("q", "a", "b", "c"));
            assertEquals(List.of("q", "a"), waiting.get(0).get(10, TimeUnit.SECONDS));
            assertEquals(List.of("q", "b"), waiting.get(1).get(10, TimeUnit.SECONDS));
            assertEquals(List.of("q", "c"), waiting.get(2).get(10, TimeUnit.SECONDS));
            assertEquals(0, j.llen("q"));
            awaitBlocked(1);
            assertFalse(waiting.get(3).isDone());
            j.lpush("q", "d");
            assertEquals(List.of("q", "d"), waiting.get(3).get(10, TimeUnit.SECONDS));
        }
    }

    @Test
    void timeOutsAnswerNullAfterTheirTime() throws Exception {
        try (Jedis j = jedis()) {
            long t0 = System.nanoTime();
            assertNull(j.blpop(0.3, "nothing"));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms >= 290 && ms < 5000, "took " + ms + " ms");
            assertNull(j.blmove("nothing", "dst", ListDirection.LEFT, ListDirection.RIGHT, 0.1));
            assertNull(j.blmpop(0.1, ListDirection.LEFT, "a", "b"));
            assertEquals(0, server.face.blocking.blockedClients());
            JedisDataException e = assertThrows(JedisDataException.class, () -> j.blpop(-1, "x"));
            assertEquals("ERR timeout is negative", e.getMessage());
            // the connection still works after its time-outs
            assertEquals("PONG", j.ping());
        }
    }

    @Test
    void aWriteFromOutsideRespWakesTheClient() throws Exception {
        Future<List<String>> f = async(j -> j.brpop(0, "k1", "k2"));
        awaitBlocked(1);
        // the store's own API stands for any other face (the native protocol): its write wakes the RESP client
        server.store.lists().push("k2".getBytes(), List.of("x".getBytes()), true, false);
        assertEquals(List.of("k2", "x"), f.get(10, TimeUnit.SECONDS));
    }

    @Test
    void execAndRenameWakeClients() throws Exception {
        Future<List<String>> f = async(j -> j.blpop(0, "dst"));
        awaitBlocked(1);
        try (Jedis j = jedis()) {
            Transaction t = j.multi();
            t.rpush("dst", "1");
            t.rpush("dst", "2");
            t.exec();
            assertEquals(List.of("dst", "1"), f.get(10, TimeUnit.SECONDS));
            Future<String> move = async(x -> x.brpoplpush("target", "out", 0));
            awaitBlocked(1);
            j.rpush("src", "r");
            j.rename("src", "target");
            assertEquals("r", move.get(10, TimeUnit.SECONDS));
            assertEquals(List.of("r"), j.lrange("out", 0, -1));
        }
    }

    @Test
    void aClientThatDisconnectsWhileBlockedIsForgotten() throws Exception {
        try (RawClient raw = new RawClient(server.address())) {
            raw.send("*3\r\n$5\r\nBLPOP\r\n$4\r\ngone\r\n$1\r\n0\r\n");
            awaitBlocked(1);
        }
        awaitBlocked(0);
        try (Jedis j = jedis()) {
            j.rpush("gone", "kept");
            // nobody took it
            assertEquals(List.of("kept"), j.lrange("gone", 0, -1));
        }
    }

    @Test
    void insideMultiBlockingCommandsDoNotBlock() {
        try (Jedis j = jedis()) {
            Transaction t = j.multi();
            t.blpop(0, "empty");
            t.brpoplpush("empty", "x", 0);
            List<Object> r = t.exec();
            assertEquals(2, r.size());
            assertNull(r.get(0));
            assertNull(r.get(1));
            assertEquals(0, server.face.blocking.blockedClients());
        }
    }

    @Test
    void wrongDestinationTypeFailsTheBlockedClientAndTheNextIsServed() throws Exception {
        try (Jedis j = jedis()) {
            j.set("bad", "string");
            Future<String> first = async(x -> x.brpoplpush("src", "bad", 0));
            awaitBlocked(1);
            Future<String> second = async(x -> x.brpoplpush("src", "good", 0));
            awaitBlocked(2);
            j.rpush("src", "v");
            var e = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> first.get(10, TimeUnit.SECONDS));
            assertTrue(e.getCause().getMessage().startsWith("WRONGTYPE"), e.getCause().getMessage());
            assertEquals("v", second.get(10, TimeUnit.SECONDS));
            assertEquals(List.of("v"), j.lrange("good", 0, -1));
        }
    }

    @Test
    void lmpopPopsFromTheFirstNonEmptyList() {
        try (Jedis j = jedis()) {
            j.rpush("b", "1", "2", "3");
            var r = j.lmpop(ListDirection.RIGHT, 2, "a", "b");
            assertEquals("b", r.getKey());
            assertEquals(List.of("3", "2"), r.getValue());
            assertNull(j.lmpop(ListDirection.LEFT, "x", "y"));
            JedisDataException e = assertThrows(JedisDataException.class,
                () -> j.sendCommand(redis.clients.jedis.Protocol.Command.LMPOP, "0", "a", "LEFT"));
            assertEquals("ERR numkeys should be greater than 0", e.getMessage());
        }
    }

    @Test
    void manyClientsEachGetOneElement() throws Exception {
        int n = 20;
        List<Future<List<String>>> waiting = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            waiting.add(async(j -> j.blpop(0, "many")));
        }
        awaitBlocked(n);
        try (Jedis j = jedis()) {
            for (int i = 0; i < n; i++) {
                j.rpush("many", Integer.toString(i));
            }
        }
        java.util.Set<String> got = new java.util.HashSet<>();
        for (Future<List<String>> f : waiting) {
            got.add(f.get(10, TimeUnit.SECONDS).get(1));
        }
        assertEquals(n, got.size());
        CompletableFuture.runAsync(pool::shutdownNow);
    }
}
