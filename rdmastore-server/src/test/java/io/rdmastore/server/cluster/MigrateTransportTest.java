package io.rdmastore.server.cluster;

import io.rdmastore.client.cluster.HashSlot;
import io.rdmastore.client.cluster.SlotMap;
import io.rdmastore.server.RdmaStoreServer;
import io.rdmastore.server.ServerConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.exceptions.JedisDataException;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How MIGRATE moves a batch (docs/cluster.md, "How keys move"): between nodes that reach each other over ucx the
 * source lends the batch and the target pulls it one-sided ({@code MIGRATE_PULL}); between tcp-only nodes it goes as
 * RESP commands. Two one-member shards on loopback, once per transport (ucx unless {@code -Drdmastore.test.ucx=false};
 * a ucx run that cannot use ucx fails): every type DUMP covers, a key with a TTL, a 1 MiB value and 500 small keys
 * move in batches larger than a ring frame; each arrives whole on the target, none is left on the source, and INFO
 * says which path carried them. A batch for a slot the target does not import is refused and leaves every key on the
 * source.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class MigrateTransportTest {
    @TempDir
    Path tmp;
    private final List<RdmaStoreServer> servers = new ArrayList<>();

    @AfterEach
    void stop() {
        servers.forEach(RdmaStoreServer::close);
    }

    @Test
    void keysMoveOneSidedOverUcxAndAsRespOverTcp() throws Exception {
        List<String> transports = new ArrayList<>(List.of("tcp"));
        if (Boolean.parseBoolean(System.getProperty("rdmastore.test.ucx", "true"))) {
            transports.add("ucx");
        }
        for (String transport : transports) {
            move(transport);
            stop();
            servers.clear();
        }
    }

    private void move(String transport) throws Exception {
        for (int i = 0; i < 2; i++) {
            servers.add(new RdmaStoreServer(new ServerConfig().bind("127.0.0.1").port(0)
                .dataDir(tmp.resolve(transport + i)).transport(transport.equals("tcp") ? "tcp" : "auto")
                .cluster(true).handshakeTimeout(Duration.ofSeconds(2))).start());
        }
        RdmaStoreServer a = servers.get(0);
        RdmaStoreServer b = servers.get(1);
        SlotMap map = new SlotMap(1, List.of(
            new SlotMap.Shard("s0", List.of(new SlotMap.Range(0, 8191)), List.of(node(a))),
            new SlotMap.Shard("s1", List.of(new SlotMap.Range(8192, 16383)), List.of(node(b)))));
        for (RdmaStoreServer s : servers) {
            s.cluster().install(map, id(s)).join();
        }
        String tag = tag(0, 8191, "");
        String other = tag(0, 8191, tag);
        int slot = HashSlot.of(tag);
        int otherSlot = HashSlot.of(other);
        byte[] big = new byte[1 << 20];
        for (int i = 0; i < big.length; i++) {
            big[i] = (byte) (i * 31 + 7);
        }
        try (Jedis ja = new Jedis("127.0.0.1", a.port()); Jedis jb = new Jedis("127.0.0.1", b.port())) {
            List<String> keys = new ArrayList<>();
            for (int i = 0; i < 500; i++) {
                String k = "{" + tag + "}k" + i;
                ja.set(k, "value-" + i);
                keys.add(k);
            }
            String h = "{" + tag + "}hash";
            String l = "{" + tag + "}list";
            String st = "{" + tag + "}set";
            String z = "{" + tag + "}zset";
            String ttl = "{" + tag + "}ttl";
            String bigKey = "{" + tag + "}big";
            ja.hset(h, Map.of("f1", "v1", "f2", "v2"));
            ja.rpush(l, "x", "y", "z");
            ja.sadd(st, "m1", "m2");
            ja.zadd(z, Map.of("a", 1.5, "b", -2.0));
            ja.psetex(ttl, 600_000, "expiring");
            ja.set(bigKey.getBytes(StandardCharsets.UTF_8), big);
            keys.addAll(List.of(h, l, st, z, ttl, bigKey));
            String stay = "{" + other + "}stays";
            ja.set(stay, "here");

            // refused: the target does not import that slot; nothing moves
            JedisDataException refused = assertThrows(JedisDataException.class, () -> migrate(ja, b, List.of(stay)));
            assertTrue(refused.getMessage().contains("ERR") || refused.getMessage().contains("IOERR"),
                refused.getMessage());
            assertEquals("here", ja.get(stay));
            assertEquals(0L, (Long) jb.sendCommand(Protocol.Command.CLUSTER, "COUNTKEYSINSLOT",
                Integer.toString(otherSlot)));

            jb.sendCommand(Protocol.Command.CLUSTER, "SETSLOT", Integer.toString(slot), "IMPORTING", id(a));
            ja.sendCommand(Protocol.Command.CLUSTER, "SETSLOT", Integer.toString(slot), "MIGRATING", id(b));
            for (int from = 0; from < keys.size(); from += 100) {
                assertEquals("OK", migrate(ja, b, keys.subList(from, Math.min(keys.size(), from + 100))));
            }
            assertEquals(0L, (Long) ja.sendCommand(Protocol.Command.CLUSTER, "COUNTKEYSINSLOT",
                Integer.toString(slot)), "no key of the slot left on the source");
            assertEquals((long) keys.size(), (Long) jb.sendCommand(Protocol.Command.CLUSTER, "COUNTKEYSINSLOT",
                Integer.toString(slot)));

            jb.asking();
            assertEquals("value-123", jb.get("{" + tag + "}k123"));
            jb.asking();
            assertEquals(Map.of("f1", "v1", "f2", "v2"), jb.hgetAll(h));
            jb.asking();
            assertEquals(List.of("x", "y", "z"), jb.lrange(l, 0, -1));
            jb.asking();
            assertEquals(Set.of("m1", "m2"), jb.smembers(st));
            jb.asking();
            assertEquals(List.of("b", "a"), jb.zrange(z, 0, -1));
            jb.asking();
            assertEquals(1.5, jb.zscore(z, "a"));
            jb.asking();
            long left = jb.pttl(ttl);
            assertTrue(left > 500_000 && left <= 600_000, "the TTL moved with the key: " + left);
            jb.asking();
            assertArrayEquals(big, jb.get(bigKey.getBytes(StandardCharsets.UTF_8)), "the 1 MiB value arrived whole");

            Map<String, String> source = info(ja);
            Map<String, String> target = info(jb);
            if (transport.equals("ucx")) {
                assertEquals("one-sided pull over ucx", source.get("migrate_last_path"), source.toString());
                assertEquals(Long.toString(keys.size()), source.get("migrate_keys_one_sided"));
                assertEquals(Long.toString(keys.size()), target.get("migrate_pulled_keys"));
                assertTrue(Long.parseLong(source.get("migrate_bytes_one_sided")) > big.length);
                assertEquals(source.get("migrate_bytes_one_sided"), target.get("migrate_pulled_bytes"));
            } else {
                assertEquals("resp over tcp", source.get("migrate_last_path"), source.toString());
                assertEquals("0", source.get("migrate_keys_one_sided"));
                assertEquals("0", target.get("migrate_pulled_keys"));
            }
            System.out.printf("%s: %d keys moved (%s), source %s%n", transport, keys.size(),
                source.get("migrate_last_path"), source);
        }
    }

    private static String migrate(Jedis source, RdmaStoreServer target, List<String> keys) {
        List<String> args = new ArrayList<>(List.of("127.0.0.1", Integer.toString(target.port()), "", "0", "5000",
            "REPLACE", "KEYS"));
        args.addAll(keys);
        Object r = source.sendCommand(Protocol.Command.MIGRATE, args.toArray(new String[0]));
        return r instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(r);
    }

    private static Map<String, String> info(Jedis j) {
        Map<String, String> out = new java.util.LinkedHashMap<>();
        for (String line : j.info("cluster").split("\r?\n")) {
            int colon = line.indexOf(':');
            if (colon > 0) {
                out.put(line.substring(0, colon), line.substring(colon + 1).strip());
            }
        }
        return out;
    }

    /** A hash tag whose slot is in {@code [from, to]}, other than {@code not}'s slot. */
    private static String tag(int from, int to, String not) {
        for (int i = 0; ; i++) {
            String t = "t" + i;
            int s = HashSlot.of(t);
            if (s >= from && s <= to && (not.isEmpty() || s != HashSlot.of(not))) {
                return t;
            }
        }
    }

    private static SlotMap.Node node(RdmaStoreServer s) {
        return new SlotMap.Node(id(s), "127.0.0.1", s.port());
    }

    private static String id(RdmaStoreServer s) {
        return "127.0.0.1:" + s.port();
    }
}
