package io.rdmastore.cli;

import io.rdmastore.client.cluster.SlotMap;
import io.rdmastore.server.RdmaStoreServer;
import io.rdmastore.server.ServerConfig;
import io.rdmastore.server.replication.ReplicaSetConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code rdmastore cluster create} and {@code status} against three nodes in this JVM (loopback, tcp): two nodes
 * without a replica set and a one-member replica set, so both homes of the slot map (a node's file, a set's control
 * plane) are exercised; refusals for a node not in cluster mode, a second create without --force, and --replicas.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class ClusterCommandTest {
    @TempDir
    Path dir;
    private final List<RdmaStoreServer> servers = new ArrayList<>();

    @AfterEach
    void stop() {
        for (RdmaStoreServer s : servers) {
            s.close();
        }
    }

    private RdmaStoreServer start(ServerConfig c) {
        RdmaStoreServer s = new RdmaStoreServer(c.bind("127.0.0.1").transport("tcp")
            .handshakeTimeout(Duration.ofSeconds(2))).start();
        servers.add(s);
        return s;
    }

    @Test
    void createsAClusterOfSingleNodesAndAReplicaSetAndShowsItsStatus() throws Exception {
        RdmaStoreServer a = start(new ServerConfig().port(0).dataDir(dir.resolve("a")).cluster(true));
        RdmaStoreServer b = start(new ServerConfig().port(0).dataDir(dir.resolve("b")).cluster(true));
        int port = MemberProcess.freePorts(1, ReplicaSetConfig.DEFAULT_RAFT_PORT_OFFSET).get(0);
        ReplicaSetConfig rs = new ReplicaSetConfig().setName("rs9").nodeId("m1").members("m1=127.0.0.1:" + port);
        rs.conclude();
        RdmaStoreServer c = start(new ServerConfig().port(port).dataDir(dir.resolve("c")).cluster(true)
            .replicaSet(rs));
        RdmaStoreServer plain = start(new ServerConfig().port(0).dataDir(dir.resolve("plain")));
        String aa = "127.0.0.1:" + a.port();
        String ba = "127.0.0.1:" + b.port();
        String ca = "127.0.0.1:" + port;

        Run notCluster = Run.of("cluster", "create", aa, "127.0.0.1:" + plain.port());
        assertEquals(1, notCluster.exitCode(), notCluster::toString);
        assertTrue(notCluster.err().contains("does not run in cluster mode"), notCluster::toString);
        Run replicas = Run.of("cluster", "create", aa, ba, "--replicas", "1");
        assertEquals(1, replicas.exitCode(), replicas::toString);
        assertTrue(replicas.err().contains("--replicas asks for 1"), replicas::toString);

        // the one-member set must have elected itself before it can record the map
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (c.replicaSet().role() != io.rdmastore.server.replication.ReplicaSet.Role.PRIMARY
            && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        Run create = Run.of("cluster", "create", aa, ba, ca);
        assertEquals(0, create.exitCode(), create::toString);
        assertTrue(create.out().contains("cluster created: epoch 1, 3 shards, 16384 slots"), create::toString);
        SlotMap expected = SlotMap.parse(create.out().substring(0, create.out().indexOf("cluster created")));
        assertEquals(expected, a.cluster().map());
        assertEquals(expected, b.cluster().map());
        assertEquals(expected, c.cluster().map());
        assertEquals("rs9", expected.shardOfNode("m1").name());
        assertEquals(aa, a.cluster().selfId());
        assertEquals("m1", c.cluster().selfId());

        Run status = Run.of("cluster", "status", "-p", String.valueOf(b.port()));
        assertEquals(0, status.exitCode(), status::toString);
        assertTrue(status.out().contains("epoch 1, 3 shards, 16384 of 16384 slots assigned"), status::toString);
        assertTrue(status.out().matches("(?s).*rs9 +10923-16383 +m1 +127\\.0\\.0\\.1:" + port + " +primary +1\n.*"),
            status::toString);
        assertTrue(status.out().contains("state: ok"), status::toString);

        Run again = Run.of("cluster", "create", aa, ba, ca);
        assertEquals(1, again.exitCode(), again::toString);
        assertTrue(again.err().contains("is in a cluster already (map epoch 1)"), again::toString);
        Run forced = Run.of("cluster", "create", ba, aa, ca, "--force");
        assertEquals(0, forced.exitCode(), forced::toString);
        assertEquals(2, c.cluster().map().epoch());
        // b came first this time: it owns the first third
        assertEquals(ba, a.cluster().map().owner(0).first().id());

        // reshard into the replica-set shard: its primary imports, the map reaches its control plane
        List<String> keys = new ArrayList<>();
        for (int i = 0; keys.size() < 30; i++) {
            int slot = io.rdmastore.client.cluster.HashSlot.of("r:" + i);
            if (slot >= 5451 && slot <= 5460) {
                keys.add("r:" + i);
            }
        }
        try (redis.clients.jedis.Jedis j = new redis.clients.jedis.Jedis("127.0.0.1", b.port())) {
            for (String k : keys) {
                assertEquals("OK", j.set(k, "v" + k));
            }
        }
        Run reshard = Run.of("cluster", "reshard", "-p", String.valueOf(a.port()), "--from", "shard-1", "--to", "rs9",
            "--slots", "10");
        assertEquals(0, reshard.exitCode(), reshard::toString);
        assertTrue(reshard.out().contains("moved 30 keys in 10 slots"), reshard::toString);
        assertEquals(3, c.cluster().map().epoch());
        assertEquals("rs9", a.cluster().map().owner(5455).name());
        for (String k : keys) {
            byte[] key = k.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            assertEquals(0, b.store().exists(new byte[][] {key}), k);
            assertEquals("v" + k, new String(c.store().get(key), java.nio.charset.StandardCharsets.UTF_8), k);
        }

        // rebalance evens the slots out again (rs9 has 10 more than its share, shard-1 10 fewer)
        Run rebalance = Run.of("cluster", "rebalance", "-p", String.valueOf(b.port()));
        assertEquals(0, rebalance.exitCode(), rebalance::toString);
        assertTrue(rebalance.out().contains("rebalanced in 1 moves: map epoch 4"), rebalance::toString);
        SlotMap balanced = b.cluster().map();
        assertEquals(balanced, c.cluster().map());
        for (SlotMap.Shard sh : balanced.shards()) {
            assertTrue(Math.abs(sh.slotCount() - 16384 / 3) <= 1, sh.name() + " has " + sh.slotCount() + " slots");
        }
        Run again2 = Run.of("cluster", "rebalance", "-p", String.valueOf(b.port()));
        assertTrue(again2.out().contains("balanced already: map epoch 4"), again2::toString);
        for (String k : keys) {
            assertEquals("v" + k, new String(c.store().get(k.getBytes(java.nio.charset.StandardCharsets.UTF_8)),
                java.nio.charset.StandardCharsets.UTF_8), k);
        }

        // a node that missed the newer map shows up as degraded
        a.close();
        Run degraded = Run.of("cluster", "status", "-p", String.valueOf(b.port()), "--timeout", "3s");
        assertEquals(1, degraded.exitCode(), degraded::toString);
        assertTrue(degraded.out().contains("state: degraded: " + aa + " unreachable"), degraded::toString);
    }

    @Test
    void serverCommandTakesClusterAndSaysSo() throws Exception {
        assertTrue(ServerCommand.toConfig(java.util.Map.of("cluster", "true", "data-dir", dir.toString())).cluster());
        java.io.StringWriter out = new java.io.StringWriter();
        picocli.CommandLine cl = Main.commandLine(new java.io.ByteArrayInputStream(new byte[0]), false);
        cl.setOut(new java.io.PrintWriter(out, true));
        cl.setErr(new java.io.PrintWriter(out, true));
        Thread t = new Thread(() -> cl.execute("server", "--cluster", "--port", "0", "--transport", "tcp",
            "--data-dir", dir.resolve("s").toString()), "server-cluster");
        t.start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            String banner;
            do {
                Thread.sleep(20);
                synchronized (out) {
                    banner = out.toString();
                }
            } while (!banner.contains("stop with Ctrl-C") && t.isAlive() && System.nanoTime() < deadline);
            assertTrue(banner.contains("cluster     mode on, no slot map yet: 'rdmastore cluster create"), banner);
        } finally {
            t.interrupt();
            t.join(30_000);
        }
    }
}
