package io.rdmastore.server.resp;

import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.server.RdmaStoreServer;
import io.rdmastore.server.ServerConfig;
import io.rdmastore.store.FsyncPolicy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The real server with both faces on one port: what RESP writes the native client reads, and the other way round;
 * CLIENT LIST shows the native client with its transport; the data survives a restart (RESP writes are logged).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RespNativeInteropTest {

    private static RdmaStoreServer server(Path dir) {
        return new RdmaStoreServer(new ServerConfig().bind("127.0.0.1").port(0).dataDir(dir).fsync(FsyncPolicy.ALWAYS)
            .transport("tcp").resp(true)).start();
    }

    @Test
    void respAndNativeShareOneKeyspaceAndOneLog(@TempDir Path dir) {
        try (RdmaStoreServer server = server(dir)) {
            String uri = "rdmastore://127.0.0.1:" + server.port() + "?transport=tcp";
            try (Jedis jedis = new Jedis("127.0.0.1", server.port());
                 RdmaStoreClient client = RdmaStoreClient.connect(uri)) {
                assertEquals("OK", jedis.set("from-resp", "written by Jedis"));
                assertEquals("written by Jedis", client.get("from-resp"));
                assertTrue(client.set("from-native", "written natively"));
                assertEquals("written natively", jedis.get("from-native"));
                assertEquals(1, jedis.hset("hash", "f", "v"));
                assertEquals("hash", jedis.type("hash"));
                assertEquals("v", client.hget("hash", "f"));
                client.hset("hash", "g", "w");
                assertEquals("w", jedis.hget("hash", "g"));
                String list = jedis.clientList();
                assertTrue(list.contains("transport=" + client.transport()), list);
                assertTrue(list.lines().count() >= 2, list);
                assertTrue(jedis.info("rdmastore").contains("connections_tcp:"));
            }
        }
        try (RdmaStoreServer server = server(dir);
             Jedis jedis = new Jedis("127.0.0.1", server.port())) {
            assertEquals("written by Jedis", jedis.get("from-resp"), "a RESP write must survive a restart");
            assertEquals("written natively", jedis.get("from-native"));
            assertEquals("v", jedis.hget("hash", "f"));
            jedis.set("ttl", "x", redis.clients.jedis.params.SetParams.setParams().px(Duration.ofSeconds(100).toMillis()));
            assertTrue(jedis.pttl("ttl") > 90_000);
        }
    }
}
