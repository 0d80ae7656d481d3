package io.rdmastore.server.resp;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Transaction;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Long commands run off the event loop (RespLongCommands): a held KEYS does not stall another client of the same loop,
 * pipelined commands after a long one run after it and reply in order, MULTI keeps it on the loop, pub/sub messages
 * and blocked-client wake-ups keep working. The server has one event loop, so every connection shares it, and a
 * threshold of 100 elements; a hook holds the long command on its pool thread with a latch.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RespLongCommandsTest {
    private static final int THRESHOLD = 100;
    private static RespTestServer server;

    /** Released by the test to let the held long command go on; counted down when one starts. */
    private CountDownLatch release;
    private CountDownLatch started;
    private final AtomicReference<String> thread = new AtomicReference<>();
    private final AtomicInteger runs = new AtomicInteger();

    @BeforeAll
    static void start() {
        server = RespTestServer.start(new RespFace.Context().longCommandElements(THRESHOLD), 1);
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    @BeforeEach
    void setUp() {
        server.store.flushAll();
        release = new CountDownLatch(0);
        started = new CountDownLatch(1);
        server.face.longCommands.beforeRun = () -> {
            thread.set(Thread.currentThread().getName());
            runs.incrementAndGet();
            started.countDown();
            try {
                assertTrue(release.await(30, TimeUnit.SECONDS), "the test never released the long command");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
    }

    @AfterEach
    void tearDown() {
        release.countDown();
        server.face.longCommands.beforeRun = null;
    }

    private static Jedis jedis() {
        return new Jedis("127.0.0.1", server.port(), DefaultJedisClientConfig.builder().build());
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Reads exactly as many bytes as {@code reply} has (10 s at most) and compares. */
    private static void expect(RawClient c, String reply) {
        assertEquals(reply, c.read(reply.length(), 10_000));
    }

    /** Members "0" .. n-1 in {@code key}. */
    private static Set<String> fillSet(String key, int n) {
        Set<String> members = new HashSet<>();
        String[] a = new String[n];
        for (int i = 0; i < n; i++) {
            a[i] = Integer.toString(i);
            members.add(a[i]);
        }
        try (Jedis j = jedis()) {
            j.sadd(key, a);
        }
        return members;
    }

    /** The bytes of an aggregate of bulk strings ({@code type} '*' or '~'), in any order. */
    private static int aggregateBytes(char type, Set<String> members) {
        int n = (type + Integer.toString(members.size()) + "\r\n").length();
        for (String m : members) {
            n += ("$" + m.length() + "\r\n" + m + "\r\n").length();
        }
        return n;
    }

    /** Parses an aggregate of bulk strings at {@code pos[0]} and moves it past. */
    private static List<String> parseAggregate(String s, int[] pos) {
        int i = pos[0];
        assertTrue(s.charAt(i) == '*' || s.charAt(i) == '~', () -> "not an aggregate at " + pos[0] + ": " + s);
        int eol = s.indexOf("\r\n", i);
        int count = Integer.parseInt(s.substring(i + 1, eol));
        i = eol + 2;
        List<String> out = new ArrayList<>();
        for (int k = 0; k < count; k++) {
            assertEquals('$', s.charAt(i));
            eol = s.indexOf("\r\n", i);
            int len = Integer.parseInt(s.substring(i + 1, eol));
            out.add(s.substring(eol + 2, eol + 2 + len));
            i = eol + 2 + len + 2;
        }
        pos[0] = i;
        return out;
    }

    @Test
    void aHeldKeysDoesNotStallAnotherClientOfItsEventLoop() throws Exception {
        Set<String> keys = new HashSet<>();
        for (int i = 0; i < 500; i++) {
            server.store.set(b("k" + i), b("v"));
            keys.add("k" + i);
        }
        release = new CountDownLatch(1);
        try (RawClient a = new RawClient(server.address()); RawClient other = new RawClient(server.address())) {
            a.send("KEYS *\r\nPING\r\n");
            assertTrue(started.await(10, TimeUnit.SECONDS), "KEYS over 500 keys did not reach the long-command pool");
            assertTrue(thread.get().startsWith("rdmastore-resp-long-"), thread.get());
            // KEYS is held mid-flight; the other client, on the same (only) event loop, is served (KEYS has not
            // walked the keyspace yet, so it sees x)
            other.send("PING\r\nSET x 1\r\nGET x\r\n");
            keys.add("x");
            expect(other, "+PONG\r\n+OK\r\n$1\r\n1\r\n");
            // and the PING pipelined behind KEYS waits for it
            assertEquals("", a.read(1, 200));
            release.countDown();
            String out = a.read(aggregateBytes('*', keys) + 7, 10_000);
            int[] pos = {0};
            assertEquals(keys, new HashSet<>(parseAggregate(out, pos)));
            assertEquals("+PONG\r\n", out.substring(pos[0]));
        }
    }

    @Test
    void commandsPipelinedAfterALongOneRunAfterItAndReplyInOrder() throws Exception {
        Set<String> members = fillSet("big", 200);
        members.add("extra");
        release = new CountDownLatch(1);
        try (RawClient a = new RawClient(server.address())) {
            a.send("SADD big extra\r\nSMEMBERS big\r\n");
            assertTrue(started.await(10, TimeUnit.SECONDS));
            // the reply of the command before the long one leaves at once
            expect(a, ":1\r\n");
            // sent while SMEMBERS is held: they must run after it, so it still sees the whole set
            a.send("DEL big\r\nEXISTS big\r\nSET after 1\r\nSCARD big\r\n");
            assertEquals("", a.read(1, 200));
            release.countDown();
            String tail = ":1\r\n:0\r\n+OK\r\n:0\r\n";
            String out = a.read(aggregateBytes('*', members) + tail.length(), 10_000);
            int[] pos = {0};
            assertEquals(members, new HashSet<>(parseAggregate(out, pos)));
            assertEquals(tail, out.substring(pos[0]));
        }
        // a long command that writes: later commands see its result
        fillSet("s1", 150);
        try (RawClient a = new RawClient(server.address())) {
            a.send("SADD s2 a b\r\nSUNIONSTORE u s1 s2\r\nSCARD u\r\nSISMEMBER u a\r\n");
            expect(a, ":2\r\n:152\r\n:152\r\n:1\r\n");
            assertEquals(2, runs.get());
        }
    }

    @Test
    void smallCollectionsAndTransactionsStayOnTheLoop() {
        fillSet("big", 200);
        fillSet("small", 10);
        try (Jedis j = jedis()) {
            long before = offloaded(j);
            assertEquals(10, j.smembers("small").size());
            String[] elements = new String[500];
            for (int i = 0; i < elements.length; i++) {
                elements[i] = Integer.toString(i);
            }
            j.rpush("list", elements);
            assertEquals(List.of("498", "499"), j.lrange("list", -2, -1));
            assertEquals(0, runs.get(), "a short range of a long list left the loop");
            assertEquals(500, j.lrange("list", 0, -1).size());
            assertEquals(1, runs.get());
            Transaction t = j.multi();
            t.smembers("big");
            t.scard("big");
            List<Object> r = t.exec();
            assertEquals(200, ((Set<?>) r.get(0)).size());
            assertEquals(200L, r.get(1));
            assertEquals(1, runs.get(), "a command inside EXEC left the loop");
            assertEquals(200, j.smembers("big").size());
            assertEquals(2, runs.get());
            assertEquals(before + 2, offloaded(j));
        }
    }

    private static boolean isLong(String... args) {
        byte[][] argv = new byte[args.length][];
        for (int i = 0; i < args.length; i++) {
            argv[i] = b(args[i]);
        }
        return server.face.longCommands.isLong(argv, argv.length);
    }

    @Test
    void theRuleEstimatesElementsBeforeTheCommandRuns() {
        fillSet("big", 150);
        fillSet("half", 60);
        try (Jedis j = jedis()) {
            for (int i = 0; i < 150; i++) {
                j.rpush("list", Integer.toString(i));
                j.zadd("z", i, Integer.toString(i));
                j.hset("h", Integer.toString(i), "v");
            }
        }
        // 5 keys, under the threshold of 100
        assertTrue(!isLong("KEYS", "*") && !isLong("FLUSHALL"));
        assertTrue(isLong("SMEMBERS", "big") && isLong("smembers", "big") && !isLong("SMEMBERS", "half"));
        assertTrue(isLong("HGETALL", "h") && isLong("HKEYS", "h") && isLong("HVALS", "h") && !isLong("HGETALL", "no"));
        assertTrue(isLong("SORT", "list") && isLong("SORT_RO", "big") && isLong("SSCAN", "big", "0"));
        assertTrue(isLong("SUNION", "half", "half") && !isLong("SUNION", "half") && isLong("SINTERSTORE", "d", "big"));
        assertTrue(!isLong("SINTERSTORE", "big", "half") && isLong("SINTERCARD", "2", "half", "half"));
        assertTrue(isLong("ZUNION", "1", "z") && isLong("ZUNIONSTORE", "d", "1", "z") && !isLong("ZUNION", "9", "z"));
        assertTrue(isLong("LRANGE", "list", "0", "-1") && !isLong("LRANGE", "list", "0", "98")
            && isLong("LRANGE", "list", "0", "99") && !isLong("LRANGE", "list", "-10", "-1")
            && !isLong("LRANGE", "list", "100", "1000") && !isLong("LRANGE", "list", "x", "-1"));
        assertTrue(isLong("ZRANGE", "z", "0", "-1") && !isLong("ZRANGE", "z", "0", "9")
            && isLong("ZRANGE", "z", "0", "10", "BYSCORE")
            && !isLong("ZRANGE", "z", "0", "10", "BYSCORE", "LIMIT", "0", "5")
            && isLong("ZRANGEBYSCORE", "z", "-inf", "+inf") && isLong("ZRANGESTORE", "d", "z", "0", "-1"));
        assertTrue(!isLong("GET", "big") && !isLong("SCARD", "big") && !isLong("SMEMBERS") && !isLong("NOSUCH", "big"));
        for (int i = 0; i < 100; i++) {
            server.store.set(b("k" + i), b("v"));
        }
        assertTrue(isLong("KEYS", "nomatch*") && isLong("FLUSHDB"));
    }

    private static long offloaded(Jedis j) {
        for (String line : j.info("stats").split("\r\n")) {
            if (line.startsWith("long_commands_offloaded:")) {
                return Long.parseLong(line.substring(line.indexOf(':') + 1));
            }
        }
        throw new AssertionError("INFO stats has no long_commands_offloaded");
    }

    @Test
    void aMessageForARunningLongCommandsClientFollowsItsReply() throws Exception {
        Set<String> members = fillSet("big", 200);
        release = new CountDownLatch(1);
        try (RawClient a = new RawClient(server.address()); Jedis pub = jedis()) {
            a.send("HELLO 3\r\n");
            a.read(0, 300);
            a.send("SUBSCRIBE ch\r\n");
            expect(a, ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
            a.send("SMEMBERS big\r\n");
            assertTrue(started.await(10, TimeUnit.SECONDS));
            assertEquals(1, pub.publish("ch", "m"));
            assertEquals("", a.read(1, 200));
            release.countDown();
            String push = ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n";
            String out = a.read(aggregateBytes('~', members) + push.length(), 10_000);
            int[] pos = {0};
            assertEquals(members, new HashSet<>(parseAggregate(out, pos)));
            assertEquals(push, out.substring(pos[0]));
        }
    }

    @Test
    void aLongSortStoreWakesABlockedClientAndSendsItsEvent() throws Exception {
        fillSet("big", 200);
        try (Jedis j = jedis(); RawClient waiter = new RawClient(server.address());
             RawClient sub = new RawClient(server.address())) {
            j.configSet("notify-keyspace-events", "KEA");
            sub.send("SUBSCRIBE __keyevent@0__:sortstore\r\n");
            expect(sub, "*3\r\n$9\r\nsubscribe\r\n$24\r\n__keyevent@0__:sortstore\r\n:1\r\n");
            waiter.send("BLPOP sorted 10\r\n");
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (server.face.blocking.blockedClients() == 0) {
                assertTrue(System.nanoTime() < end, "BLPOP did not block");
                Thread.onSpinWait();
            }
            assertEquals(200, j.sort("big", "sorted"));
            assertEquals(1, runs.get());
            expect(waiter, "*2\r\n$6\r\nsorted\r\n$1\r\n0\r\n");
            assertEquals(199, j.llen("sorted"));
            expect(sub, "*3\r\n$7\r\nmessage\r\n$24\r\n__keyevent@0__:sortstore\r\n$6\r\nsorted\r\n");
        } finally {
            try (Jedis j = jedis()) {
                j.configSet("notify-keyspace-events", "");
            }
        }
    }
}
