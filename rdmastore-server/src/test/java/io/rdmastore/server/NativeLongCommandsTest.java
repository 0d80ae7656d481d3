package io.rdmastore.server;

import io.rdmastore.client.RdmaStoreClient;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A native session's long command (SMEMBERS of a large set) runs off the transport thread: another connection is served
 * while it runs, and the requests its own connection sent after it run after it, their replies after its reply.
 */
class NativeLongCommandsTest {
    static List<String> transports() {
        return TestServers.transports();
    }

    @ParameterizedTest
    @MethodSource("transports")
    @Timeout(60)
    void aHeldLongCommandStallsNeitherAnotherConnectionNorTheOrderOfItsOwn(String transport, @TempDir Path dir)
        throws Exception {
        try (RdmaStoreServer server = TestServers.start(dir, c -> { });
             RdmaStoreClient a = TestServers.client(server, transport);
             RdmaStoreClient b = TestServers.client(server, transport)) {
            int members = 3000;
            List<byte[]> all = new ArrayList<>();
            for (int i = 0; i < members; i++) {
                all.add(TestServers.key("m" + i));
            }
            for (int i = 0; i < members; i += 500) {
                a.sadd(TestServers.key("big"), all.subList(i, i + 500).toArray(new byte[0][]));
            }
            CountDownLatch started = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            List<String> poolThreads = new CopyOnWriteArrayList<>();
            server.respFace().beforeLongCommand(() -> {
                poolThreads.add(Thread.currentThread().getName());
                started.countDown();
                try {
                    release.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            try {
                List<String> order = new CopyOnWriteArrayList<>();
                CompletableFuture<Object> smembers = a.commandAsync("SMEMBERS", "big")
                    .whenComplete((v, e) -> order.add("smembers"));
                assertTrue(started.await(10, TimeUnit.SECONDS), "SMEMBERS of 3000 members did not leave the thread");
                // sent after it on the same connection: held until it has replied
                CompletableFuture<Boolean> set = a.setAsync(TestServers.key("after"), TestServers.key("1"))
                    .whenComplete((v, e) -> order.add("set"));
                CompletableFuture<byte[]> get = a.getAsync(TestServers.key("after"))
                    .whenComplete((v, e) -> order.add("get"));
                // another connection is served meanwhile (over ucx it shares the server's worker thread)
                b.set(TestServers.key("other"), TestServers.key("x"));
                assertArrayEquals(TestServers.key("x"), b.get(TestServers.key("other")));
                assertFalse(smembers.isDone(), "the long command replied while held");
                assertFalse(set.isDone(), "a request sent after the long command ran before it");
                release.countDown();
                Object reply = smembers.get(20, TimeUnit.SECONDS);
                assertEquals(members, ((List<?>) reply).size());
                assertTrue(set.get(20, TimeUnit.SECONDS));
                assertArrayEquals(TestServers.key("1"), get.get(20, TimeUnit.SECONDS));
                assertEquals(List.of("smembers", "set", "get"), order);
                assertEquals(1, poolThreads.size());
                assertTrue(poolThreads.getFirst().startsWith("rdmastore-resp-long"), poolThreads.getFirst());
                // and the connection is back to normal
                assertEquals(members, a.smembers(TestServers.key("big")).size());
            } finally {
                release.countDown();
                server.respFace().beforeLongCommand(null);
            }
        }
    }
}
