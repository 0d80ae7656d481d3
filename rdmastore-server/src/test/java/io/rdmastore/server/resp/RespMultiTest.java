package io.rdmastore.server.resp;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Response;
import redis.clients.jedis.Transaction;
import redis.clients.jedis.exceptions.JedisDataException;

import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** MULTI / EXEC / DISCARD / WATCH: queueing, EXECABORT, atomicity against other clients, WATCH aborts. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RespMultiTest {
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

    private static Jedis jedis() {
        return new Jedis("127.0.0.1", server.port(), DefaultJedisClientConfig.builder().socketTimeoutMillis(20_000)
            .build());
    }

    @Test
    void anExecIsOneLogRecord() {
        try (Jedis j = jedis()) {
            j.set("before", "x");
            long at = server.store.lastPosition()[1];
            Transaction t = j.multi();
            t.set("a", "1");
            t.rpush("l", "x", "y");
            t.zadd("z", 1, "m");
            t.del("before");
            t.get("a");
            List<Object> r = t.exec();
            assertEquals(5, r.size());
            assertEquals("1", r.get(4));
            // four writes, one frame at one oplog position
            assertEquals(at + 1, server.store.lastPosition()[1]);
            assertEquals(List.of("x", "y"), j.lrange("l", 0, -1));
            // a write outside EXEC is a record of its own again
            j.set("after", "1");
            assertEquals(at + 2, server.store.lastPosition()[1]);
        }
    }

    @Test
    void execRunsTheQueueAndDiscardDropsIt() {
        try (Jedis j = jedis()) {
            Transaction t = j.multi();
            Response<String> set = t.set("a", "1");
            Response<Long> incr = t.incr("a");
            Response<String> get = t.get("a");
            Response<String> bad = t.lpop("a");
            List<Object> r = t.exec();
            assertEquals(4, r.size());
            assertEquals("OK", set.get());
            assertEquals(2L, incr.get());
            assertEquals("2", get.get());
            // a failing command inside EXEC is one error in the reply; the others ran
            assertThrows(JedisDataException.class, bad::get);
            t = j.multi();
            t.set("a", "3");
            t.discard();
            assertEquals("2", j.get("a"));
        }
    }

    @Test
    void aQueueingErrorAbortsExec() {
        try (RawClient raw = new RawClient(server.address())) {
            raw.send("MULTI\r\nSET x 1\r\nNOSUCHCOMMAND\r\nSET y\r\nEXEC\r\nEXISTS x\r\nEXEC\r\nMULTI\r\nMULTI\r\n"
                + "WATCH a\r\nDISCARD\r\n");
            String out = raw.read(0, 500);
            assertTrue(out.startsWith("+OK\r\n+QUEUED\r\n-ERR unknown command 'NOSUCHCOMMAND'"), out);
            assertTrue(out.contains("-ERR wrong number of arguments for 'set' command\r\n"
                + "-EXECABORT Transaction discarded because of previous errors.\r\n:0\r\n-ERR EXEC without MULTI\r\n"
                + "+OK\r\n-ERR MULTI calls can not be nested\r\n-ERR WATCH inside MULTI is not allowed\r\n+OK\r\n"),
                out);
        }
    }

    @Test
    void watchAbortsWhenAnyoneChangesTheKey() throws Exception {
        try (Jedis j = jedis(); Jedis other = jedis()) {
            // another RESP client
            j.set("w", "0");
            j.watch("w");
            other.set("w", "1");
            Transaction t = j.multi();
            t.set("w", "mine");
            assertNull(t.exec());
            assertEquals("1", j.get("w"));
            // untouched: EXEC runs, and the key is no longer watched after it
            j.watch("w");
            t = j.multi();
            t.set("w", "mine");
            assertEquals(List.of("OK"), t.exec());
            other.set("w", "2");
            t = j.multi();
            t.get("w");
            assertEquals(List.of("2"), t.exec());
            // a write through the store's own API (as the native protocol writes)
            j.watch("w");
            server.store.set("w".getBytes(), "native".getBytes());
            t = j.multi();
            t.get("w");
            assertNull(t.exec());
            // FLUSHALL removes a watched key that exists; one that does not exist is not touched
            j.watch("w");
            other.flushAll();
            t = j.multi();
            t.exists("none");
            assertNull(t.exec());
            j.watch("missing");
            other.flushAll();
            t = j.multi();
            t.exists("none");
            assertEquals(List.of(false), t.exec());
            // expiry (the active sweep or a lazy one) counts as a change
            j.set("e", "v", redis.clients.jedis.params.SetParams.setParams().px(50));
            j.watch("e");
            Thread.sleep(300);
            t = j.multi();
            t.exists("none");
            assertNull(t.exec());
            // UNWATCH forgets
            j.watch("w");
            other.set("w", "x");
            j.unwatch();
            t = j.multi();
            t.exists("none");
            assertEquals(List.of(false), t.exec());
        }
    }

    @Test
    void execIsAtomicForOtherClients() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(2);
        AtomicBoolean stop = new AtomicBoolean();
        try {
            Future<Integer> writer = pool.submit(() -> {
                try (Jedis j = jedis()) {
                    for (int i = 0; i < 1500; i++) {
                        Transaction t = j.multi();
                        t.set("p", Integer.toString(i));
                        t.rpush("l", "x");
                        t.set("q", Integer.toString(i));
                        t.exec();
                    }
                }
                stop.set(true);
                return 1500;
            });
            Future<Integer> reader = pool.submit(() -> {
                int checks = 0;
                try (Jedis j = jedis()) {
                    while (!stop.get()) {
                        List<String> v = j.mget("p", "q");
                        assertEquals(v.get(0), v.get(1), "EXEC seen half done");
                        checks++;
                    }
                }
                return checks;
            });
            assertEquals(1500, writer.get(50, TimeUnit.SECONDS));
            assertTrue(reader.get(10, TimeUnit.SECONDS) > 0);
            try (Jedis j = jedis()) {
                assertEquals(1500, j.llen("l"));
            }
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
    }
}
