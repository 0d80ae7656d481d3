package io.rdmastore.server.cluster;

import io.rdmastore.client.cluster.HashSlot;
import io.rdmastore.client.cluster.SlotMap;
import io.rdmastore.server.RdmaStoreServer;
import io.rdmastore.server.ServerConfig;
import io.rdmastore.server.replication.ReplicaSet;
import io.rdmastore.server.replication.ReplicaSetConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.exceptions.JedisException;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A cluster whose first shard is a three-member replica set (one JVM, tcp) and whose two others are single nodes:
 * JedisCluster writes keys to every shard, the set's primary is closed, the set elects another, and the other shards'
 * nodes name the new primary (CLUSTER SLOTS, MOVED) from what the set's members say, so JedisCluster reads every key
 * and writes again without a new slot map.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class ClusterFailoverTest {
    @TempDir
    Path dir;
    private final RdmaStoreServer[] set = new RdmaStoreServer[3];
    private final List<RdmaStoreServer> singles = new ArrayList<>();

    @AfterEach
    void stop() {
        for (RdmaStoreServer s : set) {
            if (s != null) {
                s.close();
            }
        }
        singles.forEach(RdmaStoreServer::close);
    }

    /** Ports p with p + 10000 free as well (Ratis's default), below the ephemeral range (ReplicaSetProcesses). */
    private static int[] freePorts(int n) {
        return io.rdmastore.server.replication.ReplicaSetProcesses.freePorts(n, true).stream()
            .mapToInt(Integer::intValue).toArray();
    }

    private int primary() {
        for (int i = 0; i < 3; i++) {
            if (set[i] != null && set[i].replicaSet().role() == ReplicaSet.Role.PRIMARY) {
                return i;
            }
        }
        return -1;
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("not within 30 s: " + what);
            }
            Thread.sleep(20);
        }
    }

    @Test
    void otherShardsNameTheNewPrimaryAndJedisClusterKeepsWorking() throws Exception {
        int[] ports = freePorts(3);
        String members = "n1=127.0.0.1:" + ports[0] + ",n2=127.0.0.1:" + ports[1] + ",n3=127.0.0.1:" + ports[2];
        for (int i = 0; i < 3; i++) {
            set[i] = new RdmaStoreServer(new ServerConfig().bind("127.0.0.1").port(ports[i]).transport("tcp")
                .dataDir(dir.resolve("n" + (i + 1))).cluster(true).handshakeTimeout(Duration.ofSeconds(2))
                .replicaSet(new ReplicaSetConfig().setName("rs0").nodeId("n" + (i + 1)).members(members))).start();
        }
        for (int i = 0; i < 2; i++) {
            singles.add(new RdmaStoreServer(new ServerConfig().bind("127.0.0.1").port(0).transport("tcp")
                .dataDir(dir.resolve("s" + i)).cluster(true).handshakeTimeout(Duration.ofSeconds(2))).start());
        }
        await(() -> primary() >= 0, "a primary");
        // the primary first, as 'cluster create' lists it: once it is closed, the map names a dead member first
        List<SlotMap.Node> rsNodes = new ArrayList<>();
        int firstPrimary = primary();
        for (int k = 0; k < 3; k++) {
            int i = (firstPrimary + k) % 3;
            rsNodes.add(new SlotMap.Node("n" + (i + 1), "127.0.0.1", ports[i]));
        }
        List<SlotMap.Shard> shards = new ArrayList<>();
        List<SlotMap.Range> ranges = SlotMap.evenRanges(3);
        shards.add(new SlotMap.Shard("rs0", List.of(ranges.get(0)), rsNodes));
        for (int i = 0; i < 2; i++) {
            String id = "127.0.0.1:" + singles.get(i).port();
            shards.add(new SlotMap.Shard("s" + i, List.of(ranges.get(i + 1)),
                List.of(new SlotMap.Node(id, "127.0.0.1", singles.get(i).port()))));
        }
        SlotMap map = new SlotMap(1, shards);
        set[(primary() + 1) % 3].cluster().install(map, "").join();
        for (int i = 0; i < 2; i++) {
            singles.get(i).cluster().install(map, "127.0.0.1:" + singles.get(i).port()).join();
        }
        await(() -> set[0].cluster().map().equals(map) && set[1].cluster().map().equals(map)
            && set[2].cluster().map().equals(map), "the map on every member of the set");

        int n = 300;
        DefaultJedisClientConfig cfg = DefaultJedisClientConfig.builder().timeoutMillis(5_000).build();
        try (JedisCluster jc = new JedisCluster(Set.of(new HostAndPort("127.0.0.1", singles.get(0).port())), cfg, 10,
            Duration.ofSeconds(30), new ConnectionPoolConfig())) {
            int inSet = 0;
            for (int i = 0; i < n; i++) {
                String k = "f:" + i;
                String v = "v" + i;
                retrying(() -> jc.set(k, v));
                if (HashSlot.of("f:" + i) <= 5460) {
                    inSet++;
                }
            }
            assertTrue(inSet > 50, "keys in the set's slots: " + inSet);
            int old = primary();
            if (old != firstPrimary) {
                // a spurious election on a loaded host: the map's first member is then a live secondary
                System.out.println("the set changed primary before the test closed one; the map's first is alive");
            }
            long expected = set[old].store().size();
            assertEquals(inSet, expected);
            await(() -> set[(old + 1) % 3].store().size() == expected && set[(old + 2) % 3].store().size() == expected,
                "the secondaries hold every key");

            set[old].close();
            set[old] = null;
            await(() -> primary() >= 0, "a new primary");
            String newPrimary = "n" + (primary() + 1);
            // the single-node shards learn it from the set's members
            try (Jedis j = new Jedis("127.0.0.1", singles.get(1).port())) {
                await(() -> {
                    List<?> slots = (List<?>) j.sendCommand(redis.clients.jedis.Protocol.Command.CLUSTER, "SLOTS");
                    for (Object range : slots) {
                        List<?> r = (List<?>) range;
                        if ((Long) r.get(0) == 0L) {
                            List<?> first = (List<?>) r.get(2);
                            return ClusterNode.redisId(newPrimary).equals(
                                new String((byte[]) first.get(2), StandardCharsets.UTF_8));
                        }
                    }
                    return false;
                }, "CLUSTER SLOTS on another shard names " + newPrimary + " first");
            }

            for (int i = 0; i < n; i++) {
                String k = "f:" + i;
                assertEquals("v" + i, retrying(() -> jc.get(k)), k);
            }
            for (int i = 0; i < 50; i++) {
                String k = "after:" + i;
                String v = "a" + i;
                retrying(() -> jc.set(k, v));
                assertEquals(v, retrying(() -> jc.get(k)));
            }
        }
    }

    /**
     * A call with a few retries, as an application does around an election: calls in the window answer READONLY,
     * CLUSTERDOWN or reach the closed member.
     */
    private static String retrying(java.util.function.Supplier<String> call) throws InterruptedException {
        JedisException last = null;
        for (int attempt = 0; attempt < 30; attempt++) {
            try {
                return call.get();
            } catch (JedisException e) {
                last = e;
                Thread.sleep(100);
            }
        }
        throw last;
    }
}
