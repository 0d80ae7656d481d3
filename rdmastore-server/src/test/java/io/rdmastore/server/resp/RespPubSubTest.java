package io.rdmastore.server.resp;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPubSub;
import redis.clients.jedis.RedisProtocol;

import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Pub/sub: delivery, patterns, PUBSUB introspection, subscribed mode, keyspace events, the slow-subscriber limit. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RespPubSubTest {
    private static RespTestServer server;

    @BeforeAll
    static void start() {
        server = RespTestServer.start(new RespFace.Context().port(0));
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private static Jedis jedis(RedisProtocol protocol) {
        return new Jedis("127.0.0.1", server.port(), DefaultJedisClientConfig.builder().protocol(protocol)
            .socketTimeoutMillis(20_000).build());
    }

    /** Collects what a subscriber receives, as "channel|message" or "pattern|channel|message". */
    private static final class Collector extends JedisPubSub {
        final BlockingQueue<String> got = new LinkedBlockingQueue<>();
        final BlockingQueue<Integer> subscribed = new LinkedBlockingQueue<>();

        @Override
        public void onMessage(String channel, String message) {
            got.add(channel + "|" + message);
        }

        @Override
        public void onPMessage(String pattern, String channel, String message) {
            got.add(pattern + "|" + channel + "|" + message);
        }

        @Override
        public void onSubscribe(String channel, int count) {
            subscribed.add(count);
        }

        @Override
        public void onPSubscribe(String pattern, int count) {
            subscribed.add(count);
        }

        String next() throws InterruptedException {
            String s = got.poll(10, TimeUnit.SECONDS);
            assertTrue(s != null, "no message within 10 s");
            return s;
        }
    }

    @ParameterizedTest
    @EnumSource(RedisProtocol.class)
    void messagesReachChannelAndPatternSubscribers(RedisProtocol protocol) throws Exception {
        ExecutorService pool = Executors.newSingleThreadExecutor();
        Collector c = new Collector();
        try (Jedis sub = jedis(protocol); Jedis pub = jedis(protocol)) {
            pool.submit(() -> sub.subscribe(c, "news", "sport"));
            assertEquals(1, c.subscribed.poll(10, TimeUnit.SECONDS));
            assertEquals(2, c.subscribed.poll(10, TimeUnit.SECONDS));
            c.psubscribe("n*s", "x?");
            assertEquals(3, c.subscribed.poll(10, TimeUnit.SECONDS));
            assertEquals(4, c.subscribed.poll(10, TimeUnit.SECONDS));
            assertEquals(2, pub.publish("news", "hello"));
            assertEquals("news|hello", c.next());
            assertEquals("n*s|news|hello", c.next());
            assertEquals(1, pub.publish("xy", "p"));
            assertEquals("x?|xy|p", c.next());
            assertEquals(0, pub.publish("xyz", "none"));
            assertEquals(Map.of("news", 1L, "other", 0L), pub.pubsubNumSub("news", "other"));
            assertEquals(2, pub.pubsubNumPat());
            assertEquals(List.of("news"), pub.pubsubChannels("ne*"));
            c.unsubscribe("news");
            c.punsubscribe();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (pub.pubsubNumPat() != 0 || pub.pubsubNumSub("news").get("news") != 0) {
                assertTrue(System.nanoTime() < end);
                Thread.sleep(5);
            }
            assertEquals(1, pub.publish("sport", "goal"));
            assertEquals("sport|goal", c.next());
            c.unsubscribe();
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void resp2SubscribedModeAllowsOnlyPubSubCommands() {
        try (RawClient raw = new RawClient(server.address())) {
            raw.send("SUBSCRIBE ch\r\nGET x\r\nPING\r\nUNSUBSCRIBE\r\nGET x\r\n");
            String out = raw.read(0, 500);
            assertEquals("*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
                + "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed"
                + " in this context\r\n*2\r\n$4\r\npong\r\n$0\r\n\r\n*3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:0\r\n$-1\r\n",
                out);
        }
    }

    @Test
    void resp3SubscribersGetPushFrames() {
        try (RawClient raw = new RawClient(server.address()); Jedis pub = jedis(RedisProtocol.RESP2)) {
            raw.send("HELLO 3\r\n");
            raw.read(0, 300);
            raw.send("SUBSCRIBE ch\r\n");
            assertEquals(">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", raw.read(0, 300));
            pub.publish("ch", "m");
            assertEquals(">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n", raw.read(0, 300));
            // RESP3 keeps every command usable while subscribed
            raw.send("GET nothing\r\n");
            assertEquals("_\r\n", raw.read(0, 300));
        }
    }

    @Test
    void keyspaceNotifications() throws Exception {
        ExecutorService pool = Executors.newSingleThreadExecutor();
        Collector c = new Collector();
        try (Jedis sub = jedis(RedisProtocol.RESP2); Jedis j = jedis(RedisProtocol.RESP2)) {
            j.configSet("notify-keyspace-events", "KEA");
            assertEquals("AKE", j.configGet("notify-keyspace-events").get("notify-keyspace-events"));
            pool.submit(() -> sub.psubscribe(c, "__key*__:*"));
            assertEquals(1, c.subscribed.poll(10, TimeUnit.SECONDS));
            j.rpush("l", "a");
            assertEquals("__key*__:*|__keyspace@0__:l|rpush", c.next());
            assertEquals("__key*__:*|__keyevent@0__:rpush|l", c.next());
            j.srem("nothing", "x");
            j.rpop("l");
            assertEquals("__key*__:*|__keyspace@0__:l|rpop", c.next());
            assertEquals("__key*__:*|__keyevent@0__:rpop|l", c.next());
            assertEquals("__key*__:*|__keyspace@0__:l|del", c.next());
            assertEquals("__key*__:*|__keyevent@0__:del|l", c.next());
            j.psetex("t", 50, "v");
            c.next();
            c.next();
            c.next();
            c.next();
            // the sweep deletes it: "expired"
            assertEquals("__key*__:*|__keyspace@0__:t|expired", c.next());
            assertEquals("__key*__:*|__keyevent@0__:expired|t", c.next());
            j.configSet("notify-keyspace-events", "");
            j.set("quiet", "1");
            assertNull(c.got.poll(200, TimeUnit.MILLISECONDS));
            c.punsubscribe();
        } finally {
            pool.shutdownNow();
        }
    }

    /** A pop made for a blocked client emits the pop's events (and del when it empties the key), as in Redis. */
    @Test
    void popsServedToBlockedClientsEmitTheirEvents() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(2);
        Collector c = new Collector();
        try (Jedis sub = jedis(RedisProtocol.RESP2); Jedis j = jedis(RedisProtocol.RESP2);
             Jedis blocked = jedis(RedisProtocol.RESP2)) {
            j.configSet("notify-keyspace-events", "Elg");
            pool.submit(() -> sub.psubscribe(c, "__keyevent@0__:*"));
            assertEquals(1, c.subscribed.poll(10, TimeUnit.SECONDS));
            var pop = pool.submit(() -> blocked.blpop(10, "bl"));
            // the pop is blocked once the server lists it among blocked clients
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!j.info("clients").contains("blocked_clients:1")) {
                assertTrue(System.nanoTime() < deadline, "BLPOP did not block");
                Thread.sleep(10);
            }
            j.rpush("bl", "x");
            assertEquals(List.of("bl", "x"), pop.get(10, TimeUnit.SECONDS));
            assertEquals("__keyevent@0__:*|__keyevent@0__:rpush|bl", c.next());
            assertEquals("__keyevent@0__:*|__keyevent@0__:lpop|bl", c.next());
            assertEquals("__keyevent@0__:*|__keyevent@0__:del|bl", c.next());
            j.configSet("notify-keyspace-events", "");
            c.punsubscribe();
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aSubscriberThatDoesNotReadIsDisconnectedAtTheLimit() throws Exception {
        try (Jedis pub = jedis(RedisProtocol.RESP2); Socket slow = new Socket()) {
            pub.configSet("client-output-buffer-limit", "pubsub 1mb 0 0");
            slow.setReceiveBufferSize(4096);
            slow.connect(new InetSocketAddress("127.0.0.1", server.port()), 2000);
            slow.getOutputStream().write("SUBSCRIBE firehose\r\n".getBytes(StandardCharsets.US_ASCII));
            slow.getOutputStream().flush();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (pub.pubsubNumSub("firehose").get("firehose") != 1) {
                assertTrue(System.nanoTime() < end);
                Thread.sleep(5);
            }
            String payload = "x".repeat(64 * 1024);
            int sent = 0;
            // at most 64 MB published; the subscriber reads nothing, so past 1 MB queued it must be dropped
            while (pub.pubsubNumSub("firehose").get("firehose") == 1 && sent < 1024) {
                pub.publish("firehose", payload);
                sent++;
            }
            assertTrue(sent < 1024, "the slow subscriber was never disconnected");
            // the server closed it: reading drains what was sent and then ends
            slow.setSoTimeout(10_000);
            InputStream in = slow.getInputStream();
            byte[] buf = new byte[1 << 16];
            long total = 0;
            int n;
            while ((n = in.read(buf)) >= 0) {
                total += n;
                assertTrue(total < 64L << 20);
            }
            assertTrue(total < (long) sent * payload.length(), "everything arrived: " + total);
        } finally {
            try (Jedis j = jedis(RedisProtocol.RESP2)) {
                j.configSet("client-output-buffer-limit", "normal 0 0 0 slave 268435456 67108864 60 "
                    + "pubsub 33554432 8388608 60");
            }
        }
    }
}
