package io.rdmastore.server.cluster;

import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.sync.RedisAdvancedClusterCommands;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreClusterClient;
import io.rdmastore.client.RdmaStoreServerException;
import io.rdmastore.client.cluster.HashSlot;
import io.rdmastore.client.cluster.SlotMap;
import io.rdmastore.server.RdmaStoreServer;
import io.rdmastore.server.ServerConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisMovedDataException;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Three one-member shards on loopback (tcp), the slot map installed on each as {@code rdmastore cluster create}
 * does: routing seen by a plain client (MOVED, CROSSSLOT, CLUSTER ...), Jedis's and Lettuce's cluster clients
 * spreading keys over all shards, a newer map followed after MOVED, a stale map refused, the map kept across a
 * restart, and the native protocol's MOVED.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ClusterRespTest {
    private static final int SHARDS = 3;

    @TempDir
    Path tmp;
    private final List<RdmaStoreServer> servers = new ArrayList<>();

    @BeforeEach
    void start() {
        for (int i = 0; i < SHARDS; i++) {
            servers.add(server(tmp.resolve("n" + i), 0));
        }
        install(map(1, SlotMap.evenRanges(SHARDS)));
    }

    @AfterEach
    void stop() {
        for (RdmaStoreServer s : servers) {
            s.close();
        }
    }

    private static RdmaStoreServer server(Path dir, int port) {
        return new RdmaStoreServer(new ServerConfig().bind("127.0.0.1").port(port).dataDir(dir).transport("tcp")
            .cluster(true).handshakeTimeout(Duration.ofSeconds(2))).start();
    }

    private static String id(RdmaStoreServer s) {
        return "127.0.0.1:" + s.port();
    }

    /** Shard i gets ranges.get(i) and server i as its member. */
    private SlotMap map(long epoch, List<SlotMap.Range> ranges) {
        List<SlotMap.Shard> shards = new ArrayList<>();
        for (int i = 0; i < SHARDS; i++) {
            shards.add(new SlotMap.Shard("s" + i, List.of(ranges.get(i)),
                List.of(new SlotMap.Node(id(servers.get(i)), "127.0.0.1", servers.get(i).port()))));
        }
        return new SlotMap(epoch, shards);
    }

    private void install(SlotMap map) {
        for (RdmaStoreServer s : servers) {
            s.cluster().install(map, id(s)).join();
        }
    }

    private int owner(int slot) {
        String addr = servers.get(0).cluster().map().owner(slot).first().address();
        for (int i = 0; i < SHARDS; i++) {
            if (id(servers.get(i)).equals(addr)) {
                return i;
            }
        }
        throw new AssertionError("no server for " + addr);
    }

    @Test
    void plainClientSeesRedirectsAndTopology() {
        try (Jedis j = new Jedis("127.0.0.1", servers.get(0).port())) {
            assertEquals(12182, j.clusterKeySlot("foo"));
            String info = j.clusterInfo();
            assertTrue(info.contains("cluster_state:ok"), info);
            assertTrue(info.contains("cluster_slots_assigned:16384"), info);
            assertTrue(info.contains("cluster_known_nodes:3"), info);
            assertTrue(info.contains("cluster_current_epoch:1"), info);
            assertTrue(j.info("cluster").contains("cluster_enabled:1"));
            assertTrue(j.info("server").contains("redis_mode:cluster"));
            assertEquals(ClusterNode.redisId(id(servers.get(0))), j.clusterMyId());
            assertTrue(j.clusterMyId().matches("[0-9a-f]{40}"));

            // "foo" is slot 12182: the third shard's
            JedisMovedDataException moved = assertThrows(JedisMovedDataException.class, () -> j.get("foo"));
            assertEquals(12182, moved.getSlot());
            assertEquals(servers.get(2).port(), moved.getTargetNode().getPort());
            assertThrows(JedisMovedDataException.class, () -> j.set("foo", "x"));
            // "bar" (5061) is served here
            assertEquals("OK", j.set("bar", "1"));
            assertEquals("1", j.get("bar"));
            JedisDataException cross = assertThrows(JedisDataException.class, () -> j.mset("bar", "1", "foo", "2"));
            assertTrue(cross.getMessage().startsWith("CROSSSLOT"), cross.getMessage());
            assertEquals("OK", j.mset("{bar}a", "1", "{bar}b", "2"));
            assertEquals(List.of("1", "2"), j.mget("{bar}a", "{bar}b"));
            assertEquals(3, j.clusterCountKeysInSlot(5061));
            assertEquals(Set.of("bar", "{bar}a", "{bar}b"), Set.copyOf(j.clusterGetKeysInSlot(5061, 10)));
            assertEquals(1, j.clusterGetKeysInSlot(5061, 1).size());

            String nodes = j.clusterNodes();
            String[] lines = nodes.split("\n");
            assertEquals(3, lines.length, nodes);
            for (String line : lines) {
                String[] f = line.split(" ");
                assertTrue(f[0].matches("[0-9a-f]{40}"), line);
                assertTrue(f[2].contains("master"), line);
                assertEquals(f[1].contains(":" + servers.get(0).port() + "@"), f[2].startsWith("myself,"), line);
            }
            assertTrue(nodes.contains(" 0-5460"), nodes);
            assertTrue(nodes.contains(" 10923-16383"), nodes);
            List<?> slots = (List<?>) j.sendCommand(redis.clients.jedis.Protocol.Command.CLUSTER, "SLOTS");
            assertEquals(3, slots.size());
            List<?> first = (List<?>) slots.get(0);
            assertEquals(0L, first.get(0));
            assertEquals(5460L, first.get(1));
            List<?> node = (List<?>) first.get(2);
            assertEquals("127.0.0.1", text(node.get(0)));
            assertEquals((long) servers.get(0).port(), node.get(1));
            assertEquals(ClusterNode.redisId(id(servers.get(0))), text(node.get(2)));
            assertEquals(3, j.clusterShards().size());
        }
    }

    @Test
    void jedisClusterRoutesToEveryShardAndFollowsANewerMap() {
        int n = 600;
        try (JedisCluster jc = new JedisCluster(Set.of(new HostAndPort("127.0.0.1", servers.get(0).port())),
            DefaultJedisClientConfig.builder().timeoutMillis(10_000).build(), 5, new ConnectionPoolConfig())) {
            for (int i = 0; i < n; i++) {
                jc.set("key:" + i, "v" + i);
            }
            for (int i = 0; i < n; i++) {
                assertEquals("v" + i, jc.get("key:" + i));
            }
            long total = 0;
            for (int s = 0; s < SHARDS; s++) {
                long size = servers.get(s).store().size();
                assertTrue(size > n / 6, "shard " + s + " holds " + size + " keys");
                total += size;
            }
            assertEquals(n, total);
            // each key is on its slot's owner only
            for (int i = 0; i < n; i++) {
                byte[] k = ("key:" + i).getBytes(StandardCharsets.UTF_8);
                int owner = owner(HashSlot.of(k));
                for (int s = 0; s < SHARDS; s++) {
                    assertEquals(s == owner ? 1 : 0, servers.get(s).store().exists(new byte[][] {k}), "key:" + i);
                }
            }
            // Jedis refuses keys of two slots itself (the server's CROSSSLOT is tested with a plain client); tagged
            // keys share a slot and go to its owner in one command
            assertEquals("OK", jc.mset("{user7}.a", "1", "{user7}.b", "2"));
            assertEquals(List.of("1", "2"), jc.mget("{user7}.a", "{user7}.b"));

            // A newer map moves slots 0-999 from s0 to s1 (no keys move in this slice: new keys are written after).
            install(twoRangeMap(2));
            Map<String, Integer> moved = new HashMap<>();
            for (int i = 0; moved.size() < 50; i++) {
                String k = "moved:" + i;
                if (HashSlot.of(k) < 1000) {
                    moved.put(k, i);
                }
            }
            for (Map.Entry<String, Integer> e : moved.entrySet()) {
                jc.set(e.getKey(), "m" + e.getValue());
            }
            for (Map.Entry<String, Integer> e : moved.entrySet()) {
                assertEquals("m" + e.getValue(), jc.get(e.getKey()));
                byte[] k = e.getKey().getBytes(StandardCharsets.UTF_8);
                assertEquals(1, servers.get(1).store().exists(new byte[][] {k}), e.getKey());
                assertEquals(0, servers.get(0).store().exists(new byte[][] {k}), e.getKey());
            }
        }
    }

    /** The map after slots 0-999 moved from s0 to s1: s0 1000-5460, s1 0-999 and 5461-10922, s2 10923-16383. */
    private SlotMap twoRangeMap(long epoch) {
        List<SlotMap.Shard> shards = List.of(
            new SlotMap.Shard("s0", List.of(new SlotMap.Range(1000, 5460)), List.of(node(0))),
            new SlotMap.Shard("s1", List.of(new SlotMap.Range(0, 999), new SlotMap.Range(5461, 10922)),
                List.of(node(1))),
            new SlotMap.Shard("s2", List.of(new SlotMap.Range(10923, 16383)), List.of(node(2))));
        return new SlotMap(epoch, shards);
    }

    private SlotMap.Node node(int i) {
        return new SlotMap.Node(id(servers.get(i)), "127.0.0.1", servers.get(i).port());
    }

    @Test
    void lettuceClusterClientRoutes() {
        ClientResources resources = DefaultClientResources.create();
        RedisClusterClient client = RedisClusterClient.create(resources,
            RedisURI.create("127.0.0.1", servers.get(1).port()));
        try (StatefulRedisClusterConnection<String, String> conn = client.connect()) {
            RedisAdvancedClusterCommands<String, String> cmd = conn.sync();
            for (int i = 0; i < 300; i++) {
                cmd.set("lettuce:" + i, "v" + i);
            }
            for (int i = 0; i < 300; i++) {
                assertEquals("v" + i, cmd.get("lettuce:" + i));
            }
            assertEquals(3, client.getPartitions().size());
            for (int s = 0; s < SHARDS; s++) {
                assertTrue(servers.get(s).store().size() > 30, "shard " + s);
            }
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            resources.shutdown(0, 1, TimeUnit.SECONDS);
        }
    }

    @Test
    void staleEpochRefusedAndMapSurvivesRestart() {
        SlotMap current = servers.get(0).cluster().map();
        // the same map again is harmless; an older epoch or another map of the same epoch is refused
        servers.get(0).cluster().install(current, id(servers.get(0))).join();
        CompletionException older = assertThrows(CompletionException.class,
            () -> servers.get(0).cluster().install(new SlotMap(0, current.shards()), id(servers.get(0))).join());
        assertTrue(older.getCause().getMessage().contains("refused"), older.getCause().getMessage());
        assertThrows(CompletionException.class,
            () -> servers.get(0).cluster().install(twoRangeMap(1), id(servers.get(0))).join());
        // a map that does not name the node is refused
        assertThrows(CompletionException.class,
            () -> servers.get(0).cluster().install(twoRangeMap(5), "elsewhere:1").join());

        RdmaStoreServer first = servers.get(0);
        int port = first.port();
        first.close();
        RdmaStoreServer again = server(tmp.resolve("n0"), port);
        servers.set(0, again);
        assertEquals(current, again.cluster().map());
        assertEquals(id(again), again.cluster().selfId());
        try (Jedis j = new Jedis("127.0.0.1", port)) {
            assertEquals("OK", j.set("bar", "after restart"));
            assertThrows(JedisMovedDataException.class, () -> j.get("foo"));
        }
    }

    @Test
    void nativeClientGetsMoved() {
        try (RdmaStoreClient c = RdmaStoreClient.builder().port(servers.get(0).port()).transport("tcp")
            .timeout(Duration.ofSeconds(10)).connect()) {
            c.set("bar", "here");
            assertEquals("here", c.get("bar"));
            RdmaStoreServerException e = assertThrows(RdmaStoreServerException.class, () -> c.get("foo"));
            assertEquals("MOVED 12182 127.0.0.1:" + servers.get(2).port(), e.getMessage());
            RdmaStoreServerException cross = assertThrows(RdmaStoreServerException.class,
                () -> c.mget("bar", "foo"));
            assertTrue(cross.getMessage().startsWith("CROSSSLOT"), cross.getMessage());
            assertNull(c.get("{bar}absent"));
        }
    }

    @Test
    void nativeClusterClientRoutesByItselfAndRefreshesOnMoved() {
        try (RdmaStoreClusterClient c = RdmaStoreClusterClient.connect(RdmaStoreClient.builder()
            .seeds("127.0.0.1:" + servers.get(2).port(), "127.0.0.1:" + servers.get(0).port()).transport("tcp")
            .timeout(Duration.ofSeconds(10)).build())) {
            assertEquals(1, c.slotMap().epoch());
            for (int i = 0; i < 300; i++) {
                c.set("native:" + i, "v" + i);
            }
            for (int i = 0; i < 300; i++) {
                assertEquals("v" + i, c.get("native:" + i));
            }
            assertEquals(0, c.redirects(), "a fresh map routes every key to its owner");
            for (int s = 0; s < SHARDS; s++) {
                assertTrue(servers.get(s).store().size() > 30, "shard " + s);
            }
            c.mset(Map.of("{n}.a", "1", "{n}.b", "2"));
            assertEquals(List.of("1", "2"), c.mget("{n}.a", "{n}.b"));
            RdmaStoreServerException cross = assertThrows(RdmaStoreServerException.class, () -> c.mget("a", "b"));
            assertEquals("CROSSSLOT", cross.code());

            // slots 0-999 move to s1: the first command on one of them is redirected once, the map is refreshed,
            // and every later one goes to the new owner directly
            install(twoRangeMap(2));
            int written = 0;
            for (int i = 0; written < 40; i++) {
                String k = "native-moved:" + i;
                if (HashSlot.of(k) < 1000) {
                    c.set(k, "m" + i);
                    assertEquals("m" + i, c.get(k));
                    assertEquals(1, servers.get(1).store().exists(new byte[][] {k.getBytes(StandardCharsets.UTF_8)}));
                    written++;
                }
            }
            assertEquals(1, c.redirects());
            assertEquals(2, c.slotMap().epoch());
        }
    }

    @Test
    void askDuringAMigrationAndMigrateMovesKeys() {
        int src = owner(HashSlot.of("bar"));
        assertEquals(0, src);
        try (Jedis a = new Jedis("127.0.0.1", servers.get(0).port());
             Jedis b = new Jedis("127.0.0.1", servers.get(1).port())) {
            a.set("bar", "1");
            a.set("{bar}x", "2");
            JedisDataException notOwner = assertThrows(JedisDataException.class,
                () -> b.sendCommand(redis.clients.jedis.Protocol.Command.CLUSTER, "SETSLOT", "5061", "MIGRATING",
                    id(servers.get(0))));
            assertTrue(notOwner.getMessage().contains("not the owner"), notOwner.getMessage());
            assertEquals("OK", text(b.sendCommand(redis.clients.jedis.Protocol.Command.CLUSTER, "SETSLOT", "5061",
                "IMPORTING", id(servers.get(0)))));
            assertEquals("OK", a.clusterSetSlotMigrating(5061, ClusterNode.redisId(id(servers.get(1)))));

            // existing keys are served by the source; a missing one is sent to the target with ASK
            assertEquals("1", a.get("bar"));
            redis.clients.jedis.exceptions.JedisAskDataException ask = assertThrows(
                redis.clients.jedis.exceptions.JedisAskDataException.class, () -> a.get("{bar}missing"));
            assertEquals(servers.get(1).port(), ask.getTargetNode().getPort());
            assertEquals(5061, ask.getSlot());
            // the target serves the slot only right after ASKING
            assertThrows(JedisMovedDataException.class, () -> b.get("{bar}missing"));
            assertEquals("OK", b.asking());
            assertEquals("OK", b.set("{bar}missing", "new"));
            assertThrows(JedisMovedDataException.class, () -> b.get("{bar}missing"));

            // MIGRATE moves the existing keys; afterwards the source sends every key of the slot on with ASK
            Object moved = a.sendCommand(redis.clients.jedis.Protocol.Command.MIGRATE, "127.0.0.1",
                String.valueOf(servers.get(1).port()), "", "0", "5000", "REPLACE", "KEYS", "bar", "{bar}x");
            assertEquals("OK", text(moved));
            assertEquals(0, servers.get(0).store().exists(new byte[][] {"bar".getBytes(StandardCharsets.UTF_8)}));
            assertEquals(1, servers.get(1).store().exists(new byte[][] {"bar".getBytes(StandardCharsets.UTF_8)}));
            assertThrows(redis.clients.jedis.exceptions.JedisAskDataException.class, () -> a.get("bar"));
            assertEquals("OK", b.asking());
            assertEquals("1", b.get("bar"));
            Object none = a.sendCommand(redis.clients.jedis.Protocol.Command.MIGRATE, "127.0.0.1",
                String.valueOf(servers.get(1).port()), "bar", "0", "5000");
            assertEquals("NOKEY", text(none));
        }
        // the states are durable records (cluster.slots): both nodes restarted answer for the move as before
        for (int i = 0; i < 2; i++) {
            int port = servers.get(i).port();
            servers.get(i).close();
            servers.set(i, server(tmp.resolve("n" + i), port));
        }
        try (Jedis a = new Jedis("127.0.0.1", servers.get(0).port());
             Jedis b = new Jedis("127.0.0.1", servers.get(1).port())) {
            assertThrows(redis.clients.jedis.exceptions.JedisAskDataException.class, () -> a.get("bar"));
            assertThrows(JedisMovedDataException.class, () -> b.get("bar"));
            assertEquals("OK", b.asking());
            assertEquals("1", b.get("bar"));

            // a map of a higher epoch giving the slot to the target ends both states
            List<SlotMap.Shard> shards = new ArrayList<>();
            shards.add(new SlotMap.Shard("s0", List.of(new SlotMap.Range(0, 5060), new SlotMap.Range(5062, 5460)),
                List.of(node(0))));
            shards.add(new SlotMap.Shard("s1", List.of(new SlotMap.Range(5061, 5061), new SlotMap.Range(5461, 10922)),
                List.of(node(1))));
            shards.add(new SlotMap.Shard("s2", List.of(new SlotMap.Range(10923, 16383)), List.of(node(2))));
            install(new SlotMap(2, shards));
            assertEquals("1", b.get("bar"));
            assertEquals("new", b.get("{bar}missing"));
            JedisMovedDataException after = assertThrows(JedisMovedDataException.class, () -> a.get("bar"));
            assertEquals(servers.get(1).port(), after.getTargetNode().getPort());
            assertNull(servers.get(0).cluster().migratingTo(5061));
            assertNull(servers.get(1).cluster().importingFrom(5061));
        }
    }

    private static String text(Object reply) {
        return new String((byte[]) reply, StandardCharsets.UTF_8);
    }

    /** redis-cli in cluster mode (-c) follows MOVED to the owner; without -c it shows the redirect. */
    @Test
    void redisCliFollowsMoved() throws Exception {
        java.nio.file.Path cli = java.nio.file.Path.of("/usr/bin/redis-cli");
        if (!java.nio.file.Files.isExecutable(cli)) {
            org.junit.jupiter.api.Assertions.fail(cli + " is missing: apt-get install redis-tools");
        }
        String port = String.valueOf(servers.get(0).port());
        String set = redisCli(cli.toString(), "-c", "-p", port, "set", "foo", "from-redis-cli");
        assertTrue(set.contains("OK"), set);
        byte[] stored = servers.get(2).store().get("foo".getBytes(StandardCharsets.UTF_8));
        assertEquals("from-redis-cli", stored == null ? null : new String(stored, StandardCharsets.UTF_8));
        String get = redisCli(cli.toString(), "-c", "-p", port, "get", "foo");
        assertTrue(get.contains("from-redis-cli"), get);
        String plain = redisCli(cli.toString(), "-p", port, "get", "foo");
        assertTrue(plain.contains("MOVED 12182 127.0.0.1:" + servers.get(2).port()), plain);
    }

    /**
     * {@code redis-cli --cluster check} and {@code info} read the topology from CLUSTER NODES, CLUSTER INFO and each
     * node's own view, compare them, look for open (migrating/importing) slots and check the coverage: all of it must
     * agree with the slot map.
     */
    @Test
    void redisCliClusterCheckAgreesWithTheMap() throws Exception {
        java.nio.file.Path cli = java.nio.file.Path.of("/usr/bin/redis-cli");
        if (!java.nio.file.Files.isExecutable(cli)) {
            org.junit.jupiter.api.Assertions.fail(cli + " is missing: apt-get install redis-tools");
        }
        String node = "127.0.0.1:" + servers.get(0).port();
        String check = redisCli(cli.toString(), "--no-raw", "--cluster", "check", node);
        assertTrue(check.contains("[OK] All nodes agree about slots configuration."), check);
        assertTrue(check.contains("[OK] All 16384 slots covered."), check);
        assertFalse(check.contains("[ERR]") || check.contains("[WARNING]"), check);
        String info = redisCli(cli.toString(), "--cluster", "info", node);
        assertTrue(info.contains("3 masters"), info);
    }

    private static String redisCli(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        p.getOutputStream().close();
        if (!p.waitFor(20, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(String.join(" ", command) + " did not finish in 20 s");
        }
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
}
