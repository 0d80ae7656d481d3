package io.rdmastore.server.resp;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.params.SortingParams;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** SORT / SORT_RO: numeric and ALPHA order, LIMIT, BY and GET patterns, STORE. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class RespSortTest {
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
        return new Jedis("127.0.0.1", server.port(), DefaultJedisClientConfig.builder().build());
    }

    @Test
    void sortsListsAndSets() {
        try (Jedis j = jedis()) {
            j.rpush("l", "10", "2", "-1.5", "2");
            assertEquals(List.of("-1.5", "2", "2", "10"), j.sort("l"));
            assertEquals(List.of("10", "2", "2", "-1.5"), j.sort("l", new SortingParams().desc()));
            assertEquals(List.of("-1.5", "10", "2", "2"), j.sort("l", new SortingParams().alpha()));
            assertEquals(List.of("2", "2"), j.sort("l", new SortingParams().limit(1, 2)));
            assertEquals(List.of(), j.sort("nothing"));
            j.rpush("words", "b", "a");
            JedisDataException e = assertThrows(JedisDataException.class, () -> j.sort("words"));
            assertEquals("ERR One or more scores can't be converted into double", e.getMessage());
            j.sadd("s", "3", "1", "2");
            assertEquals(List.of("1", "2", "3"), j.sortReadonly("s", new SortingParams()));
            j.set("str", "x");
            assertThrows(JedisDataException.class, () -> j.sort("str"));
        }
    }

    @Test
    void byAndGetPatternsAndStore() {
        try (Jedis j = jedis()) {
            j.rpush("ids", "1", "2", "3");
            j.set("w_1", "30");
            j.set("w_2", "10");
            j.set("w_3", "20");
            j.hset("o_1", "name", "one");
            j.hset("o_3", "name", "three");
            assertEquals(List.of("2", "3", "1"), j.sort("ids", new SortingParams().by("w_*")));
            assertEquals(Arrays.asList("2", null, "3", "three", "1", "one"),
                j.sort("ids", new SortingParams().by("w_*").get("#", "o_*->name")));
            // a BY pattern without '*' keeps the list's order
            assertEquals(List.of("1", "2", "3"), j.sort("ids", new SortingParams().by("nosort").desc()));
            assertEquals(3, j.sort("ids", new SortingParams().desc(), "dst"));
            assertEquals(List.of("3", "2", "1"), j.lrange("dst", 0, -1));
            // an empty result deletes the destination
            assertEquals(0, j.sort("nothing", "dst"));
            assertEquals(0, j.exists("dst") ? 1 : 0);
        }
    }
}
