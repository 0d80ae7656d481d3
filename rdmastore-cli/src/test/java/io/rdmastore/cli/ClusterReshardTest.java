package io.rdmastore.cli;

import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreClusterClient;
import io.rdmastore.client.RdmaStoreException;
import io.rdmastore.client.cluster.HashSlot;
import io.rdmastore.client.cluster.SlotMap;
import io.rdmastore.server.RdmaStoreServer;
import io.rdmastore.server.ServerConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.exceptions.JedisException;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code rdmastore cluster reshard} over three one-node shards in this JVM while two JedisCluster clients and an
 * {@link RdmaStoreClusterClient} increment counters in the slots being moved: afterwards every key is on its new owner only, every preloaded value is intact,
 * and every counter holds at least its acknowledged increments and at most those plus the ones whose outcome is
 * unknown (none is expected: ASK and TRYAGAIN are answered before anything is applied).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ClusterReshardTest {
    @TempDir
    Path dir;
    private final List<RdmaStoreServer> servers = new ArrayList<>();

    @AfterEach
    void stop() {
        for (RdmaStoreServer s : servers) {
            s.close();
        }
    }

    private static boolean moving(String key) {
        int slot = HashSlot.of(key);
        return slot >= 5161 && slot <= 5460;
    }

    @Test
    void reshardUnderConcurrentWritersLosesAndDuplicatesNothing() throws Exception {
        for (int i = 0; i < 3; i++) {
            servers.add(new RdmaStoreServer(new ServerConfig().bind("127.0.0.1").port(0).transport("tcp")
                .dataDir(dir.resolve("n" + i)).cluster(true).handshakeTimeout(Duration.ofSeconds(2))).start());
        }
        List<String> addresses = new ArrayList<>();
        for (RdmaStoreServer s : servers) {
            addresses.add("127.0.0.1:" + s.port());
        }
        Run create = Run.of("cluster", "create", addresses.get(0), addresses.get(1), addresses.get(2));
        assertEquals(0, create.exitCode(), create::toString);

        List<String> preloaded = new ArrayList<>();
        List<String> counters = new ArrayList<>();
        for (int i = 0; preloaded.size() < 1500; i++) {
            if (moving("k:" + i) || i % 20 == 0) {
                preloaded.add("k:" + i);
            }
        }
        for (int i = 0; counters.size() < 40; i++) {
            if (moving("c:" + i)) {
                counters.add("c:" + i);
            }
        }
        for (int i = 0; counters.size() < 60; i++) {
            if (!moving("c:" + i)) {
                counters.add("c:" + i);
            }
        }
        List<String> nativeCounters = new ArrayList<>();
        for (int i = 0; nativeCounters.size() < 20; i++) {
            if (moving("nc:" + i)) {
                nativeCounters.add("nc:" + i);
            }
        }
        AtomicLongArray nativeAcked = new AtomicLongArray(nativeCounters.size());
        AtomicLongArray nativeUnknown = new AtomicLongArray(nativeCounters.size());
        AtomicLongArray acked = new AtomicLongArray(counters.size());
        AtomicLongArray unknown = new AtomicLongArray(counters.size());
        AtomicLong retried = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        Set<String> failures = ConcurrentHashMap.newKeySet();
        HostAndPort seed = new HostAndPort("127.0.0.1", servers.get(1).port());
        DefaultJedisClientConfig cfg = DefaultJedisClientConfig.builder().timeoutMillis(10_000).build();
        try (JedisCluster jc = new JedisCluster(Set.of(seed), cfg, 10, new ConnectionPoolConfig());
             RdmaStoreClusterClient nc = RdmaStoreClusterClient.connect(RdmaStoreClient.builder()
                 .seeds(addresses.get(0)).transport("tcp").timeout(Duration.ofSeconds(20)).build())) {
            for (String k : preloaded) {
                jc.set(k, "v-" + k);
            }
            List<Thread> writers = new ArrayList<>();
            for (int w = 0; w < 2; w++) {
                int first = w;
                writers.add(Thread.ofPlatform().name("writer-" + w).start(() -> {
                    int n = first;
                    while (!stop.get()) {
                        int i = n++ % counters.size();
                        try {
                            jc.incr(counters.get(i));
                            acked.incrementAndGet(i);
                        } catch (JedisException e) {
                            String m = String.valueOf(e.getMessage());
                            if (m.startsWith("TRYAGAIN")) {
                                retried.incrementAndGet();
                            } else {
                                unknown.incrementAndGet(i);
                                failures.add(e.toString());
                            }
                        }
                    }
                }));
            }
            writers.add(Thread.ofPlatform().name("native-writer").start(() -> {
                int n = 0;
                while (!stop.get()) {
                    int i = n++ % nativeCounters.size();
                    try {
                        nc.incrBy(nativeCounters.get(i), 1);
                        nativeAcked.incrementAndGet(i);
                    } catch (RdmaStoreException e) {
                        nativeUnknown.incrementAndGet(i);
                        failures.add(e.toString());
                    }
                }
            }));
            Thread.sleep(300);
            Run reshard = Run.of("cluster", "reshard", "-p", String.valueOf(servers.get(0).port()), "--from",
                "shard-1", "--to", "shard-3", "--slots", "300", "--batch", "50");
            Thread.sleep(300);
            stop.set(true);
            for (Thread t : writers) {
                t.join(30_000);
            }
            assertEquals(0, reshard.exitCode(), reshard::toString);
            assertTrue(reshard.out().contains("resharded: 300 slots from shard-1 to shard-3, map epoch 2"),
                reshard::toString);

            SlotMap map = servers.get(0).cluster().map();
            assertEquals(2, map.epoch());
            for (RdmaStoreServer s : servers) {
                assertEquals(map, s.cluster().map());
            }
            assertEquals("shard-3", map.owner(5161).name());
            assertEquals("shard-3", map.owner(5460).name());
            assertEquals("shard-1", map.owner(5160).name());

            for (String k : preloaded) {
                assertEquals("v-" + k, jc.get(k), k);
            }
            long total = 0;
            for (int i = 0; i < counters.size(); i++) {
                String v = jc.get(counters.get(i));
                long value = v == null ? 0 : Long.parseLong(v);
                total += acked.get(i);
                assertTrue(value >= acked.get(i) && value <= acked.get(i) + unknown.get(i), counters.get(i) + ": "
                    + value + ", acknowledged " + acked.get(i) + ", unknown " + unknown.get(i) + "; " + failures);
            }
            assertTrue(total > 100, "the writers made progress during the reshard: " + total);
            long nativeTotal = 0;
            for (int i = 0; i < nativeCounters.size(); i++) {
                String v = jc.get(nativeCounters.get(i));
                long value = v == null ? 0 : Long.parseLong(v);
                nativeTotal += nativeAcked.get(i);
                assertTrue(value >= nativeAcked.get(i) && value <= nativeAcked.get(i) + nativeUnknown.get(i),
                    nativeCounters.get(i) + ": " + value + ", acknowledged " + nativeAcked.get(i));
            }
            assertTrue(nativeTotal > 50, "the native writer made progress: " + nativeTotal);
            assertTrue(nc.redirects() >= 1, "the native client learned the new map from a MOVED");
            System.out.println("reshard under load: " + total + " acknowledged increments (Jedis), " + nativeTotal
                + " (native), " + retried.get()
                + " TRYAGAIN, failures " + failures);
        }
        // every key on exactly one node: the owner of its slot by the new map
        int movedKeys = 0;
        for (String k : preloaded) {
            byte[] key = k.getBytes(StandardCharsets.UTF_8);
            int holders = 0;
            for (int s = 0; s < 3; s++) {
                if (servers.get(s).store().exists(new byte[][] {key}) == 1) {
                    holders++;
                    if (moving(k)) {
                        assertEquals(2, s, k + " moved to shard-3");
                        movedKeys++;
                    }
                    assertEquals(servers.get(s).cluster().selfId(),
                        servers.get(s).cluster().map().owner(HashSlot.of(key)).first().id(), k);
                }
            }
            assertEquals(1, holders, k);
        }
        assertTrue(movedKeys > 300, "keys in the moved slots: " + movedKeys);
    }
}
