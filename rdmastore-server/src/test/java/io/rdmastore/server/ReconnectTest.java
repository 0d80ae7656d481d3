package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreConnectionException;
import io.rdmastore.client.RdmaStoreException;
import io.rdmastore.store.FsyncPolicy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A server restart: calls in flight fail clearly, the next call after the server is back reconnects. */
@Timeout(60)
class ReconnectTest {
    @TempDir
    Path dir;

    @Test
    void clientReconnectsAfterServerRestart() throws Exception {
        RdmaStoreServer first = TestServers.start(dir, c -> c.fsync(FsyncPolicy.ALWAYS));
        int port = first.port();
        try (RdmaStoreClient client = RdmaStoreClient.builder().port(port).transport("tcp")
            .timeout(Duration.ofSeconds(5)).connect()) {
            assertTrue(client.set("before", "restart"));
            List<CompletableFuture<Boolean>> inFlight = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                inFlight.add(client.setAsync(("f" + i).getBytes(StandardCharsets.UTF_8), new byte[1000]));
            }
            first.close();
            int failed = 0;
            for (CompletableFuture<Boolean> f : inFlight) {
                try {
                    assertTrue(f.get(10, TimeUnit.SECONDS));
                } catch (ExecutionException e) {
                    assertTrue(e.getCause() instanceof RdmaStoreConnectionException, "in-flight call failed with "
                        + e.getCause());
                    failed++;
                }
            }
            System.out.println(failed + " of 200 in-flight calls failed at the restart, the rest were answered");
            RdmaStoreException down = assertThrows(RdmaStoreException.class, () -> client.get("before"));
            assertTrue(down instanceof RdmaStoreConnectionException, "while down: " + down);

            try (RdmaStoreServer second = TestServers.start(dir, c -> c.port(port).fsync(FsyncPolicy.ALWAYS))) {
                assertEquals("restart", client.get("before"), "the call after the restart reconnects");
                assertEquals("tcp", client.transport());
                assertEquals(1, second.nativeConnections());
            }
        } catch (RdmaStoreException e) {
            fail("unexpected failure: " + e, e);
        }
    }
}
