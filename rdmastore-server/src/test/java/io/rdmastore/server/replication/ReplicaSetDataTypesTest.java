package io.rdmastore.server.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreServerException;
import io.rdmastore.client.WriteConcern;
import io.rdmastore.server.RdmaStoreServer;
import io.rdmastore.server.ServerConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The native data-type commands (opcodes 41-49) in a replica set: a secondary refuses their writes with NOTPRIMARY
 * and serves their reads; a replica-set client sends writes to the primary with w=majority (the pipelined WAIT covers
 * them) and the secondaries apply them.
 */
@Timeout(90)
class ReplicaSetDataTypesTest {
    @TempDir
    Path dir;
    private final RdmaStoreServer[] servers = new RdmaStoreServer[3];

    @AfterEach
    void stopAll() {
        for (RdmaStoreServer s : servers) {
            if (s != null) {
                s.close();
            }
        }
    }

    @Test
    void writesGoToThePrimaryAndSecondariesServeReads() throws Exception {
        int[] ports = ReplicaSetTest.freePorts(3);
        String members = "n1=127.0.0.1:" + ports[0] + ",n2=127.0.0.1:" + ports[1] + ",n3=127.0.0.1:" + ports[2];
        for (int i = 0; i < 3; i++) {
            ReplicaSetConfig rs = new ReplicaSetConfig().setName("rs0").nodeId("n" + (i + 1)).members(members)
                .key("secret").peerTransport("tcp");
            servers[i] = new RdmaStoreServer(new ServerConfig().bind("127.0.0.1").port(ports[i])
                .dataDir(dir.resolve("n" + (i + 1))).transport("tcp").resp(false)
                .handshakeTimeout(Duration.ofSeconds(2)).replicaSet(rs)).start();
        }
        int[] primary = {-1};
        ReplicaSetTest.await("one member is primary", 20_000, () -> {
            for (int i = 0; i < 3; i++) {
                if (servers[i].replicaSet().role() == ReplicaSet.Role.PRIMARY) {
                    primary[0] = i;
                    return true;
                }
            }
            return false;
        });
        int secondary = (primary[0] + 1) % 3;
        try (RdmaStoreClient set = RdmaStoreClient.builder()
                .seeds("127.0.0.1:" + ports[0], "127.0.0.1:" + ports[1], "127.0.0.1:" + ports[2]).replicaSet("rs0")
                .writeConcern(WriteConcern.MAJORITY).transport("tcp").timeout(Duration.ofSeconds(10)).connect();
             RdmaStoreClient direct = RdmaStoreClient.builder().port(ports[secondary]).transport("tcp")
                .timeout(Duration.ofSeconds(10)).connect()) {
            RdmaStoreServerException refused = assertThrows(RdmaStoreServerException.class,
                () -> direct.rpush("rs:list", "x"));
            assertEquals("NOTPRIMARY", refused.code(), refused.getMessage());
            assertEquals("NOTPRIMARY", assertThrows(RdmaStoreServerException.class,
                () -> direct.transaction(tx -> tx.sadd("rs:set", "m"))).code());

            assertEquals(2, set.rpush("rs:list", "a", "b"));
            assertEquals(List.of(1L, 1L), set.transaction(tx -> tx.sadd("rs:set", "m").zadd("rs:z", 2, "q")));
            // w=majority: a majority holds the writes when the calls return; the secondary applies them shortly
            ReplicaSetTest.await("the secondary applied the writes", 10_000,
                () -> direct.llen("rs:list") == 2 && direct.scard("rs:set") == 1);
            assertEquals(List.of("a", "b"), direct.lrange("rs:list", 0, -1));
            assertEquals(2.0, direct.zscore("rs:z", "q"));
            assertTrue(direct.sismember("rs:set", "m"));
        }
    }
}
