package io.rdmastore.server.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreClusterClient;
import io.rdmastore.client.RdmaStoreServerException;
import io.rdmastore.client.cluster.SlotMap;
import io.rdmastore.server.RdmaStoreServer;
import io.rdmastore.server.ServerConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The native data-type commands (opcodes 41-49) in cluster mode: MOVED, CROSSSLOT and the cluster client's routing. */
@Timeout(60)
class ClusterDataTypesTest {
    private static final int SHARDS = 3;

    @TempDir
    Path tmp;
    private final List<RdmaStoreServer> servers = new ArrayList<>();

    @BeforeEach
    void start() {
        for (int i = 0; i < SHARDS; i++) {
            servers.add(new RdmaStoreServer(new ServerConfig().bind("127.0.0.1").port(0).dataDir(tmp.resolve("n" + i))
                .transport("tcp").cluster(true).handshakeTimeout(Duration.ofSeconds(2))).start());
        }
        List<SlotMap.Shard> shards = new ArrayList<>();
        List<SlotMap.Range> ranges = SlotMap.evenRanges(SHARDS);
        for (int i = 0; i < SHARDS; i++) {
            shards.add(new SlotMap.Shard("s" + i, List.of(ranges.get(i)),
                List.of(new SlotMap.Node(id(servers.get(i)), "127.0.0.1", servers.get(i).port()))));
        }
        SlotMap map = new SlotMap(1, shards);
        for (RdmaStoreServer s : servers) {
            s.cluster().install(map, id(s)).join();
        }
    }

    @AfterEach
    void stop() {
        for (RdmaStoreServer s : servers) {
            s.close();
        }
    }

    private static String id(RdmaStoreServer s) {
        return "127.0.0.1:" + s.port();
    }

    @Test
    void aNodeRedirectsDataTypeCommandsForOtherSlots() {
        try (RdmaStoreClient c = RdmaStoreClient.builder().port(servers.get(0).port()).transport("tcp")
            .timeout(Duration.ofSeconds(10)).connect()) {
            assertEquals(1, c.rpush("bar", "here"), "slot 5061 is served here");
            RdmaStoreServerException moved = assertThrows(RdmaStoreServerException.class, () -> c.lpush("foo", "x"));
            assertEquals("MOVED 12182 127.0.0.1:" + servers.get(2).port(), moved.getMessage());
            assertEquals("MOVED", assertThrows(RdmaStoreServerException.class, () -> c.llen("foo")).code());
            assertEquals("CROSSSLOT", assertThrows(RdmaStoreServerException.class,
                () -> c.sunion("bar", "foo")).code());
            assertEquals("CROSSSLOT", assertThrows(RdmaStoreServerException.class,
                () -> c.transaction(tx -> tx.lpush("bar", "1").lpush("foo", "2"))).code());
            assertEquals(List.of("here"), c.lrange("bar", 0, -1), "nothing of the refused transaction ran");
        }
    }

    @Test
    void theClusterClientRoutesDataTypeCommandsBySlot() {
        try (RdmaStoreClusterClient c = RdmaStoreClusterClient.connect(RdmaStoreClient.builder()
            .seeds("127.0.0.1:" + servers.get(1).port()).transport("tcp").timeout(Duration.ofSeconds(10)).build())) {
            for (int i = 0; i < 90; i++) {
                c.rpush("list:" + i, "a", "b");
                c.sadd("set:" + i, "m");
                c.zadd("zset:" + i, i, "z");
            }
            for (int i = 0; i < 90; i++) {
                assertEquals(List.of("a", "b"), c.lrange("list:" + i, 0, -1));
                assertEquals(Set.of("m"), c.smembers("set:" + i));
                assertEquals((double) i, c.zscore("zset:" + i, "z"));
            }
            assertEquals(0, c.redirects());
            for (RdmaStoreServer s : servers) {
                assertTrue(s.store().size() > 30, "every shard holds some of the keys");
            }
            List<Object> r = c.transaction("{t}a", tx -> tx.lpush("{t}a", "1").lpush("{t}b", "2"));
            assertEquals(List.of(1L, 1L), r);
            assertEquals("a", c.lpop("list:7"));
            assertEquals(1L, c.command("list:7", "LLEN", "list:7"));
        }
    }
}
