package io.rdmastore.server.resp;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.KeyValue;
import io.lettuce.core.LMoveArgs;
import io.lettuce.core.Limit;
import io.lettuce.core.Range;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScoredValue;
import io.lettuce.core.TransactionResult;
import io.lettuce.core.ZAddArgs;
import io.lettuce.core.ZStoreArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.protocol.ProtocolVersion;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.lettuce.core.pubsub.api.async.RedisPubSubAsyncCommands;
import io.lettuce.core.pubsub.api.sync.RedisPubSubCommands;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Lettuce against the RESP face for the data types of issue 14: lists (with BLPOP), sets, sorted sets, MULTI/EXEC/WATCH
 * and pub/sub, through Lettuce's synchronous and asynchronous APIs, in RESP2 and RESP3. Runs on the JUnit thread;
 * Lettuce's replies arrive on its one I/O thread and are handed over through futures and queues.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RespLettuceTypesTest {
    private static final Duration WAIT = Duration.ofSeconds(10);

    private static RespTestServer server;
    private static ClientResources resources;

    @BeforeAll
    static void start() {
        server = RespTestServer.start();
        resources = DefaultClientResources.builder().ioThreadPoolSize(2).computationThreadPoolSize(1).build();
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

    private static RedisClient client(ProtocolVersion version) {
        RedisURI uri = RedisURI.builder().withHost("127.0.0.1").withPort(server.port()).withTimeout(WAIT).build();
        RedisClient c = RedisClient.create(resources, uri);
        c.setOptions(ClientOptions.builder().protocolVersion(version).build());
        return c;
    }

    private static <T> T get(RedisFuture<T> f) {
        try {
            return f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /** INFO's blocked_clients, to know a blocking pop has reached the server before the push that should wake it. */
    private static void awaitBlocked(RedisCommands<String, String> r, int n) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!r.info("clients").contains("blocked_clients:" + n + "\r\n")) {
            assertTrue(System.nanoTime() < deadline, "no blocked client after " + WAIT);
            Thread.sleep(5);
        }
    }

    @ParameterizedTest
    @EnumSource(value = ProtocolVersion.class, names = {"RESP2", "RESP3"})
    void lists(ProtocolVersion version) throws InterruptedException {
        RedisClient client = client(version);
        try (StatefulRedisConnection<String, String> c1 = client.connect();
             StatefulRedisConnection<String, String> c2 = client.connect()) {
            RedisCommands<String, String> r = c1.sync();
            assertEquals(3, r.rpush("l", "b", "c", "d"));
            assertEquals(5, r.lpush("l", "a", "z"));
            assertEquals(List.of("z", "a", "b", "c", "d"), r.lrange("l", 0, -1));
            assertEquals(List.of("z", "a"), r.lpop("l", 2));
            assertEquals(List.of("d", "c"), r.rpop("l", 2));
            assertEquals("b", r.lindex("l", 0));
            assertNull(r.lindex("l", 5));
            assertEquals(2, r.linsert("l", true, "b", "x"));
            assertEquals(3, r.linsert("l", false, "b", "y"));
            assertEquals(-1, r.linsert("l", true, "nope", "q"));
            assertEquals(List.of("x", "b", "y"), r.lrange("l", 0, -1));
            assertEquals("x", r.lmove("l", "m", LMoveArgs.Builder.leftRight()));
            assertEquals("y", r.lmove("l", "m", LMoveArgs.Builder.rightLeft()));
            assertEquals(List.of("y", "x"), r.lrange("m", 0, -1));
            assertEquals(List.of("b"), r.lrange("l", 0, -1));
            assertNull(r.lpop("absent"));
            assertEquals("list", r.type("m"));

            RedisAsyncCommands<String, String> a = c1.async();
            RedisFuture<Long> pushed = a.rpush("al", "1", "2", "3", "4");
            RedisFuture<List<String>> range = a.lrange("al", 1, 2);
            RedisFuture<List<String>> popped = a.lpop("al", 3);
            RedisFuture<String> last = a.rpop("al");
            RedisFuture<Long> len = a.llen("al");
            assertEquals(4L, get(pushed));
            assertEquals(List.of("2", "3"), get(range));
            assertEquals(List.of("1", "2", "3"), get(popped));
            assertEquals("4", get(last));
            assertEquals(0L, get(len));

            // BLPOP on c2 blocks; a push from c1 wakes it within its timeout
            RedisFuture<KeyValue<String, String>> blocked = c2.async().blpop(5, "q1", "q2");
            awaitBlocked(r, 1);
            assertFalse(blocked.isDone());
            long t0 = System.nanoTime();
            assertEquals(1, r.rpush("q2", "woken"));
            KeyValue<String, String> kv = get(blocked);
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(4), "woken by the push, not the timeout");
            assertEquals(KeyValue.just("q2", "woken"), kv);
            assertEquals(0, r.exists("q2"));
            awaitBlocked(r, 0);

            // a timeout with nothing pushed: a null reply
            t0 = System.nanoTime();
            assertNull(c2.sync().blpop(0.3, "q1"));
            long waited = System.nanoTime() - t0;
            assertTrue(waited >= TimeUnit.MILLISECONDS.toNanos(250), "waited " + waited + " ns");
            assertNull(get(c2.async().blpop(0.2, "q1", "q2")));
            // the connection is usable after the timed-out pops
            assertEquals("PONG", c2.sync().ping());
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    @ParameterizedTest
    @EnumSource(value = ProtocolVersion.class, names = {"RESP2", "RESP3"})
    void sets(ProtocolVersion version) {
        RedisClient client = client(version);
        try (StatefulRedisConnection<String, String> conn = client.connect()) {
            RedisCommands<String, String> r = conn.sync();
            assertEquals(3, r.sadd("s1", "a", "b", "c"));
            assertEquals(1, r.sadd("s1", "a", "d"));
            assertEquals(3, r.sadd("s2", "c", "d", "e"));
            assertEquals(Set.of("a", "b", "c", "d"), r.smembers("s1"));
            assertTrue(r.sismember("s1", "a"));
            assertFalse(r.sismember("s1", "e"));
            assertFalse(r.sismember("absent", "a"));
            assertEquals(Set.of("c", "d"), r.sinter("s1", "s2"));
            assertEquals(Set.of(), r.sinter("s1", "absent"));
            assertEquals(5, r.sunionstore("u", "s1", "s2"));
            assertEquals(Set.of("a", "b", "c", "d", "e"), r.smembers("u"));
            assertEquals("set", r.type("u"));

            String one = r.srandmember("u");
            assertTrue(Set.of("a", "b", "c", "d", "e").contains(one), one);
            List<String> three = r.srandmember("u", 3);
            assertEquals(3, three.size());
            assertEquals(3, new HashSet<>(three).size(), "a positive count gives distinct members");
            assertTrue(Set.of("a", "b", "c", "d", "e").containsAll(three), three.toString());
            List<String> repeats = r.srandmember("u", -8);
            assertEquals(8, repeats.size(), "a negative count may repeat members");
            assertTrue(Set.of("a", "b", "c", "d", "e").containsAll(repeats), repeats.toString());
            assertEquals(5, r.scard("u"), "SRANDMEMBER removes nothing");

            String popped = r.spop("u");
            Set<String> rest = r.spop("u", 2);
            assertEquals(2, rest.size());
            assertFalse(rest.contains(popped));
            Set<String> left = r.smembers("u");
            assertEquals(2, left.size());
            Set<String> all = new HashSet<>(left);
            all.add(popped);
            all.addAll(rest);
            assertEquals(Set.of("a", "b", "c", "d", "e"), all);
            assertNull(r.spop("absent"));
            assertEquals(Set.of(), r.spop("absent", 2));

            RedisAsyncCommands<String, String> a = conn.async();
            RedisFuture<Long> added = a.sadd("as", "x", "y", "z");
            RedisFuture<Boolean> isMember = a.sismember("as", "y");
            RedisFuture<Set<String>> inter = a.sinter("as", "s2");
            RedisFuture<Long> stored = a.sunionstore("au", "as", "s2");
            RedisFuture<Set<String>> members = a.smembers("au");
            RedisFuture<List<String>> random = a.srandmember("as", 10);
            RedisFuture<Set<String>> spop = a.spop("as", 3);
            RedisFuture<Long> card = a.scard("as");
            assertEquals(3L, get(added));
            assertTrue(get(isMember));
            assertEquals(Set.of(), get(inter));
            assertEquals(6L, get(stored));
            assertEquals(Set.of("x", "y", "z", "c", "d", "e"), get(members));
            assertEquals(Set.of("x", "y", "z"), new HashSet<>(get(random)));
            assertEquals(3, get(random).size());
            assertEquals(Set.of("x", "y", "z"), get(spop));
            assertEquals(0L, get(card));
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    @ParameterizedTest
    @EnumSource(value = ProtocolVersion.class, names = {"RESP2", "RESP3"})
    void sortedSets(ProtocolVersion version) {
        RedisClient client = client(version);
        try (StatefulRedisConnection<String, String> conn = client.connect()) {
            RedisCommands<String, String> r = conn.sync();
            assertEquals(3, r.zadd("z", 1.0, "a", 2.0, "b", 3.0, "c"));
            assertEquals(1, r.zadd("z", ZAddArgs.Builder.nx(), 10.0, "a", 4.0, "d"));
            assertEquals(1.0, r.zscore("z", "a"));
            // GT: only raises; CH counts the changed members, not only the added ones
            assertEquals(1, r.zadd("z", ZAddArgs.Builder.gt().ch(), 0.5, "a", 5.0, "b"));
            assertEquals(1.0, r.zscore("z", "a"));
            assertEquals(5.0, r.zscore("z", "b"));
            assertEquals(2, r.zadd("z", ZAddArgs.Builder.ch(), 1.5, "a", 6.0, "e"));
            assertEquals(0, r.zadd("z", ZAddArgs.Builder.gt(), 7.0, "e"), "without CH only the added count");
            assertEquals(7.0, r.zscore("z", "e"));
            assertEquals(List.of(ScoredValue.just(1.5, "a"), ScoredValue.just(3.0, "c"), ScoredValue.just(4.0, "d"),
                ScoredValue.just(5.0, "b"), ScoredValue.just(7.0, "e")), r.zrangeWithScores("z", 0, -1));
            assertEquals(List.of("d", "b"),
                r.zrangebyscore("z", Range.create(2, 6), Limit.create(1, 2)));
            assertEquals(List.of("c", "d"),
                r.zrangebyscore("z", Range.from(Range.Boundary.excluding(1.5), Range.Boundary.including(4)),
                    Limit.unlimited()));
            assertEquals(0L, r.zrevrank("z", "e"));
            assertEquals(4L, r.zrevrank("z", "a"));
            assertNull(r.zrevrank("z", "nope"));
            assertEquals(2.25, r.zincrby("z", 0.75, "a"));
            assertEquals(0.1, r.zincrby("z", 0.1, "new"));
            assertEquals(0.1, r.zscore("z", "new"), "a double that is not a binary fraction round-trips");
            assertEquals(ScoredValue.just(0.1, "new"), r.zpopmin("z"));
            assertEquals(List.of(ScoredValue.just(2.25, "a"), ScoredValue.just(3.0, "c")), r.zpopmin("z", 2));
            assertEquals(3, r.zcard("z"));

            assertEquals(2, r.zadd("w", 1.0, "d", 10.0, "x"));
            assertEquals(4, r.zunionstore("zu", ZStoreArgs.Builder.weights(2, 3), "z", "w"));
            // z: d 4, b 5, e 7; w: d 1, x 10 -> d 2*4+3*1 = 11, b 10, e 14, x 30
            assertEquals(List.of(ScoredValue.just(10.0, "b"), ScoredValue.just(11.0, "d"), ScoredValue.just(14.0, "e"),
                ScoredValue.just(30.0, "x")), r.zrangeWithScores("zu", 0, -1));
            assertEquals("zset", r.type("zu"));
            assertNull(r.zscore("zu", "nope"));

            RedisAsyncCommands<String, String> a = conn.async();
            RedisFuture<Long> added = a.zadd("az", ZAddArgs.Builder.nx(), ScoredValue.just(0.3, "p"),
                ScoredValue.just(-2.5, "q"), ScoredValue.just(1e20, "r"));
            RedisFuture<Double> score = a.zscore("az", "p");
            RedisFuture<List<ScoredValue<String>>> range = a.zrangeWithScores("az", 0, -1);
            RedisFuture<List<String>> byScore = a.zrangebyscore("az", Range.create(-3, 1), Limit.create(0, 1));
            RedisFuture<Long> rev = a.zrevrank("az", "q");
            RedisFuture<Double> incr = a.zincrby("az", -0.5, "q");
            RedisFuture<Long> union = a.zunionstore("azu", ZStoreArgs.Builder.weights(-1), "az");
            RedisFuture<List<ScoredValue<String>>> pop = a.zpopmin("azu", 2);
            assertEquals(3L, get(added));
            assertEquals(0.3, get(score));
            assertEquals(List.of(ScoredValue.just(-2.5, "q"), ScoredValue.just(0.3, "p"), ScoredValue.just(1e20, "r")),
                get(range));
            assertEquals(List.of("q"), get(byScore));
            assertEquals(2L, get(rev));
            assertEquals(-3.0, get(incr));
            assertEquals(3L, get(union));
            assertEquals(List.of(ScoredValue.just(-1e20, "r"), ScoredValue.just(-0.3, "p")), get(pop));
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    @ParameterizedTest
    @EnumSource(value = ProtocolVersion.class, names = {"RESP2", "RESP3"})
    void transactions(ProtocolVersion version) throws InterruptedException, ExecutionException {
        RedisClient client = client(version);
        try (StatefulRedisConnection<String, String> c1 = client.connect();
             StatefulRedisConnection<String, String> c2 = client.connect()) {
            RedisCommands<String, String> r = c1.sync();
            assertEquals("OK", r.multi());
            assertNull(r.set("k", "1"), "a queued command's sync call returns null");
            r.incr("k");
            r.rpush("l", "a", "b");
            r.sadd("s", "x");
            r.zadd("z", 2.5, "m");
            r.get("k");
            r.lrange("l", 0, -1);
            TransactionResult res = r.exec();
            assertFalse(res.wasDiscarded());
            assertEquals(7, res.size());
            assertEquals("OK", res.get(0));
            assertEquals(2L, (Long) res.get(1));
            assertEquals(2L, (Long) res.get(2));
            assertEquals(1L, (Long) res.get(3));
            assertEquals(1L, (Long) res.get(4));
            assertEquals("2", res.get(5));
            assertEquals(List.of("a", "b"), res.get(6));

            // async: the queued commands' futures complete with their results when EXEC's reply arrives
            RedisAsyncCommands<String, String> a = c1.async();
            RedisFuture<String> multi = a.multi();
            RedisFuture<Long> incr = a.incrby("k", 10);
            RedisFuture<String> lpop = a.lpop("l");
            RedisFuture<Double> zscore = a.zscore("z", "m");
            RedisFuture<TransactionResult> exec = a.exec();
            assertEquals("OK", get(multi));
            TransactionResult ar = get(exec);
            assertFalse(ar.wasDiscarded());
            assertEquals(List.of(12L, "a", 2.5), ar.stream().toList());
            assertEquals(12L, get(incr));
            assertEquals("a", get(lpop));
            assertEquals(2.5, get(zscore));

            // WATCH, then a write from another connection: EXEC discards
            assertEquals("OK", r.watch("k"));
            assertEquals("OK", c2.sync().set("k", "other"));
            r.multi();
            r.set("k", "mine");
            r.set("untouched", "1");
            TransactionResult discarded = r.exec();
            assertTrue(discarded.wasDiscarded());
            assertEquals(0, discarded.size());
            assertEquals("other", r.get("k"));
            assertEquals(0, r.exists("untouched"));
            // the watch is gone after EXEC: the next transaction runs
            r.multi();
            r.set("k", "mine");
            assertFalse(r.exec().wasDiscarded());
            assertEquals("mine", r.get("k"));
            // an unmodified watched key lets EXEC run
            assertEquals("OK", a.watch("k").get());
            a.multi();
            RedisFuture<String> got = a.get("k");
            assertFalse(get(a.exec()).wasDiscarded());
            assertEquals("mine", get(got));

            // a queued command with the wrong arity: its error right away, EXECABORT on EXEC, nothing applied
            assertEquals("OK", r.multi());
            r.set("applied", "no");
            RedisFuture<String> bad = a.dispatch(CommandType.SET, new StatusOutput<>(StringCodec.UTF8),
                new CommandArgs<>(StringCodec.UTF8).addKey("only-a-key"));
            RedisCommandExecutionException abort = assertThrows(RedisCommandExecutionException.class, r::exec);
            assertTrue(abort.getMessage().startsWith("EXECABORT"), abort.getMessage());
            // Lettuce completes a queued command only with EXEC's reply: then with the error its queueing got
            ExecutionException arity = assertThrows(ExecutionException.class,
                () -> bad.get(WAIT.toSeconds(), TimeUnit.SECONDS));
            assertTrue(arity.getCause().getMessage().startsWith("ERR wrong number of arguments"),
                arity.getCause().getMessage());
            assertEquals(0, r.exists("applied"));
            // the connection left MULTI
            assertEquals("PONG", r.ping());
            assertEquals("mine", r.get("k"));
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    /** Collects what a pub/sub connection receives, as "channel:message" or "pattern|channel:message". */
    private static final class Recorder extends RedisPubSubAdapter<String, String> {
        final BlockingQueue<String> messages = new LinkedBlockingQueue<>();
        final BlockingQueue<String> events = new LinkedBlockingQueue<>();

        @Override
        public void message(String channel, String message) {
            messages.add(channel + ":" + message);
        }

        @Override
        public void message(String pattern, String channel, String message) {
            messages.add(pattern + "|" + channel + ":" + message);
        }

        @Override
        public void subscribed(String channel, long count) {
            events.add("subscribe " + channel + " " + count);
        }

        @Override
        public void psubscribed(String pattern, long count) {
            events.add("psubscribe " + pattern + " " + count);
        }

        @Override
        public void unsubscribed(String channel, long count) {
            events.add("unsubscribe " + channel + " " + count);
        }

        @Override
        public void punsubscribed(String pattern, long count) {
            events.add("punsubscribe " + pattern + " " + count);
        }

        String next() throws InterruptedException {
            String m = messages.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
            assertTrue(m != null, "no message within " + WAIT);
            return m;
        }

        String nextEvent() throws InterruptedException {
            String m = events.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
            assertTrue(m != null, "no event within " + WAIT);
            return m;
        }
    }

    @ParameterizedTest
    @EnumSource(value = ProtocolVersion.class, names = {"RESP2", "RESP3"})
    void pubSub(ProtocolVersion version) throws InterruptedException {
        RedisClient client = client(version);
        try (StatefulRedisPubSubConnection<String, String> subConn = client.connectPubSub();
             StatefulRedisPubSubConnection<String, String> asyncSubConn = client.connectPubSub();
             StatefulRedisConnection<String, String> pubConn = client.connect()) {
            Recorder rec = new Recorder();
            subConn.addListener(rec);
            RedisPubSubCommands<String, String> sub = subConn.sync();
            RedisCommands<String, String> pub = pubConn.sync();

            sub.subscribe("news", "sport");
            assertEquals("subscribe news 1", rec.nextEvent());
            assertEquals("subscribe sport 2", rec.nextEvent());
            sub.psubscribe("ne*");
            assertEquals("psubscribe ne* 3", rec.nextEvent());

            // async subscriber on a second connection
            Recorder arec = new Recorder();
            asyncSubConn.addListener(arec);
            RedisPubSubAsyncCommands<String, String> asub = asyncSubConn.async();
            get(asub.psubscribe("sp?rt"));
            assertEquals("psubscribe sp?rt 1", arec.nextEvent());

            assertEquals(2, pub.publish("news", "n1"), "the channel and the pattern");
            assertEquals(2, pub.publish("sport", "s1"), "one channel subscriber, one pattern on the other connection");
            assertEquals(1, pub.publish("nether", "x1"));
            assertEquals(0, pub.publish("weather", "w1"));
            RedisAsyncCommands<String, String> apub = pubConn.async();
            RedisFuture<Long> p1 = apub.publish("news", "n2");
            RedisFuture<Long> p2 = apub.publish("sport", "s2");
            assertEquals(2L, get(p1));
            assertEquals(2L, get(p2));

            // in publication order; a channel subscription is delivered before the pattern match of the same message
            assertEquals("news:n1", rec.next());
            assertEquals("ne*|news:n1", rec.next());
            assertEquals("sport:s1", rec.next());
            assertEquals("ne*|nether:x1", rec.next());
            assertEquals("news:n2", rec.next());
            assertEquals("ne*|news:n2", rec.next());
            assertEquals("sport:s2", rec.next());
            assertEquals("sp?rt|sport:s1", arec.next());
            assertEquals("sp?rt|sport:s2", arec.next());

            assertEquals(Map.of("news", 1L, "sport", 1L, "weather", 0L), pub.pubsubNumsub("news", "sport", "weather"));
            assertEquals(Set.of("news", "sport"), new HashSet<>(pub.pubsubChannels()));
            assertEquals(List.of("news"), pub.pubsubChannels("n*"));
            assertEquals(2L, pub.pubsubNumpat());
            assertEquals(Map.of("news", 1L), get(apub.pubsubNumsub("news")));
            assertEquals(List.of("sport"), get(apub.pubsubChannels("s*")));

            // unsubscribing stops the messages: the next one is the marker published after
            sub.unsubscribe("news");
            assertEquals("unsubscribe news 2", rec.nextEvent());
            sub.punsubscribe("ne*");
            assertEquals("punsubscribe ne* 1", rec.nextEvent());
            get(asub.punsubscribe("sp?rt"));
            assertEquals("punsubscribe sp?rt 0", arec.nextEvent());
            assertEquals(0, pub.publish("news", "gone"));
            assertEquals(1, pub.publish("sport", "marker"));
            assertEquals("sport:marker", rec.next());
            assertTrue(rec.messages.isEmpty(), rec.messages.toString());
            assertTrue(arec.messages.isEmpty(), arec.messages.toString());
            assertEquals(Map.of("news", 0L, "sport", 1L), pub.pubsubNumsub("news", "sport"));
            assertEquals(List.of("sport"), pub.pubsubChannels());
            assertEquals(0L, pub.pubsubNumpat());

            // a subscription made through the async API receives too
            RedisFuture<Void> subscribed = asub.subscribe("async");
            get(subscribed);
            assertEquals("subscribe async 1", arec.nextEvent());
            CompletableFuture<Long> receivers = apub.publish("async", "a1").toCompletableFuture();
            assertEquals(1L, receivers.join());
            assertEquals("async:a1", arec.next());
            sub.unsubscribe();
            assertEquals("unsubscribe sport 0", rec.nextEvent());
            assertEquals(0, pub.publish("sport", "after"));
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }
}
