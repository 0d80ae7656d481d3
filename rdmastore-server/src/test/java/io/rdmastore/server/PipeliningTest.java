package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.RdmaStoreClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Many requests in flight on one connection: every one answered, in request order. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(60)
class PipeliningTest {
    private Path dir;
    private RdmaStoreServer server;

    @BeforeAll
    void start(@TempDir Path tempDir) {
        dir = tempDir;
        server = TestServers.start(dir, c -> { });
    }

    @AfterAll
    void stop() {
        server.close();
    }

    static List<String> transports() {
        return TestServers.transports();
    }

    @ParameterizedTest
    @MethodSource("transports")
    void thousandAsyncRequestsInFlightAnswerInOrder(String t) throws Exception {
        try (RdmaStoreClient c = TestServers.client(server, t)) {
            assertEquals(t, c.transport());
            byte[] counter = (t + ":counter").getBytes(StandardCharsets.UTF_8);
            List<CompletableFuture<Long>> incs = new ArrayList<>();
            List<CompletableFuture<byte[]>> gets = new ArrayList<>();
            for (int i = 0; i < 1000; i++) {
                incs.add(c.incrByAsync(counter, 1));
                byte[] k = (t + ":p" + i).getBytes(StandardCharsets.UTF_8);
                c.setAsync(k, ("v" + i).getBytes(StandardCharsets.UTF_8));
                gets.add(c.getAsync(k));
            }
            CompletableFuture.allOf(incs.toArray(new CompletableFuture<?>[0])).get(30, TimeUnit.SECONDS);
            CompletableFuture.allOf(gets.toArray(new CompletableFuture<?>[0])).get(30, TimeUnit.SECONDS);
            // Executed in issue order: the i-th increment saw exactly i earlier ones.
            for (int i = 0; i < 1000; i++) {
                assertEquals(i + 1, incs.get(i).join(), "increment " + i + " out of order");
                assertArrayEquals(("v" + i).getBytes(StandardCharsets.UTF_8), gets.get(i).join(),
                    "GET " + i + " did not see its preceding SET");
            }
            assertTrue(c.info().contains("process_count:"));
        }
    }

    /**
     * A reply that no thread of the client waits for in the client's own loop (a future joined directly), right after
     * synchronous calls: over ucx the client's agent may be sleeping unrung just then (the synchronous caller drove the
     * worker and was about to poll again), and must still deliver it.
     */
    @ParameterizedTest
    @MethodSource("transports")
    void anAsyncReplyRightAfterSyncCallsIsDelivered(String t) throws Exception {
        try (RdmaStoreClient c = TestServers.client(server, t)) {
            long slowest = 0;
            for (int i = 0; i < 200; i++) {
                byte[] k = (t + ":a" + i).getBytes(StandardCharsets.UTF_8);
                byte[] v = ("value " + i).getBytes(StandardCharsets.UTF_8);
                assertTrue(c.set(k, v));
                assertArrayEquals(v, c.get(k));
                long t0 = System.nanoTime();
                // CompletableFuture.get drives nothing: the transport must deliver the reply by itself
                assertArrayEquals(v, c.getAsync(k).get(10, TimeUnit.SECONDS), "async GET " + i);
                slowest = Math.max(slowest, System.nanoTime() - t0);
            }
            System.out.printf("%s: slowest async GET after synchronous calls %.1f ms%n", t, slowest / 1e6);
        }
    }
}
