package io.rdmastore.server.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.rdmastore.server.RdmaStoreServer;
import io.rdmastore.server.ServerConfig;
import io.rdmastore.store.FsyncPolicy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisDataException;

/** The Redis face of a replica set, through Jedis: ROLE, INFO replication, READONLY, WAIT, Sentinel discovery. */
class ReplicaSetRespTest {
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

    private int primary() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < 3; i++) {
                if (servers[i].replicaSet().role() == ReplicaSet.Role.PRIMARY) {
                    return i;
                }
            }
            Thread.sleep(10);
        }
        fail("no primary within 15 s");
        return -1;
    }

    @Test
    @Timeout(60)
    void redisClientsSeeAPrimaryWithReplicas() throws Exception {
        int[] ports = ReplicaSetTest.freePorts(3);
        String members = "n1=127.0.0.1:" + ports[0] + ",n2=127.0.0.1:" + ports[1] + ",n3=127.0.0.1:" + ports[2];
        for (int i = 0; i < 3; i++) {
            servers[i] = new RdmaStoreServer(new ServerConfig().bind("127.0.0.1").port(ports[i])
                .dataDir(dir.resolve("n" + (i + 1))).fsync(FsyncPolicy.EVERYSEC).transport("tcp")
                .handshakeTimeout(Duration.ofSeconds(2)).replicaSet(new ReplicaSetConfig().setName("rs0")
                    .nodeId("n" + (i + 1)).members(members))).start();
        }
        int p = primary();
        int s = (p + 1) % 3;
        try (Jedis primary = new Jedis("127.0.0.1", ports[p]); Jedis secondary = new Jedis("127.0.0.1", ports[s])) {
            assertEquals("OK", primary.set("a", "1"));
            long acked = primary.waitReplicas(2, 5000);
            assertEquals(2, acked, "WAIT counts the secondaries that hold the client's writes");
            assertEquals("1", secondary.get("a"), "after WAIT 2 every secondary serves the write");

            List<Object> role = primary.role();
            assertEquals("master", String.valueOf(role.get(0)));
            assertEquals(2, ((List<?>) role.get(2)).size(), "ROLE lists both replicas: " + role);
            List<Object> srole = secondary.role();
            assertEquals("slave", String.valueOf(srole.get(0)));
            assertEquals(String.valueOf(ports[p]), String.valueOf(srole.get(2)));

            String info = primary.info("replication");
            assertTrue(info.contains("role:master") && info.contains("connected_slaves:2"), info);
            assertTrue(secondary.info("replication").contains("master_port:" + ports[p]));

            JedisDataException ro = assertThrows(JedisDataException.class, () -> secondary.set("b", "2"));
            assertTrue(ro.getMessage().startsWith("READONLY"), ro.getMessage());
            assertEquals("OK", secondary.readonly());

            List<String> addr = secondary.sentinelGetMasterAddrByName("rs0");
            assertEquals(List.of("127.0.0.1", Integer.toString(ports[p])), addr);

            assertEquals("OK", primary.configSet("min-replicas-to-write", "3"));
            Thread.sleep(300);
            JedisDataException no = assertThrows(JedisDataException.class, () -> primary.set("c", "3"));
            assertTrue(no.getMessage().startsWith("NOREPLICAS"), no.getMessage());
            assertEquals("OK", primary.configSet("min-replicas-to-write", "1"));
            Thread.sleep(300);
            assertEquals("OK", primary.set("c", "3"));
            // A WAIT that cannot be satisfied answers how many it reached when its time is up; the next command runs.
            servers[s].close();
            servers[s] = null;
            primary.set("d", "4");
            long reached = primary.waitReplicas(2, 300);
            assertTrue(reached <= 1, "WAIT reached " + reached);
            assertEquals("4", primary.get("d"));
        }
    }
}
