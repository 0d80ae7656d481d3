package io.rdmastore.server.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.rdmastore.client.ClientConfig;
import io.rdmastore.client.PeerChannel;
import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreServerException;
import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.server.RdmaStoreServer;
import io.rdmastore.server.ServerConfig;
import io.rdmastore.store.FsyncPolicy;
import io.rdmastore.store.blob.BlobConfig;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.bson.BsonDocument;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Three members in one JVM on loopback: election, replication, WAIT, failover, rejoin, and a deposed primary's
 * unreplicated writes rolled back into a file. The process-level fault tests (SIGKILL, SIGSTOP, wipes under load with
 * a linearizability checker) are {@code ReplicaSetFaultTest}.
 */
class ReplicaSetTest {
    @TempDir
    Path dir;

    private final RdmaStoreServer[] servers = new RdmaStoreServer[4];
    private int[] ports;
    private String members;

    @AfterEach
    void stopAll() {
        for (RdmaStoreServer s : servers) {
            if (s != null) {
                s.close();
            }
        }
    }

    /** Ports p with p + 10000 free as well (Ratis's default), below the ephemeral range (ReplicaSetProcesses). */
    static int[] freePorts(int n) {
        return ReplicaSetProcesses.freePorts(n, true).stream().mapToInt(Integer::intValue).toArray();
    }

    private void startAll(String transport) throws IOException {
        ports = freePorts(3);
        members = "n1=127.0.0.1:" + ports[0] + ",n2=127.0.0.1:" + ports[1] + ",n3=127.0.0.1:" + ports[2];
        for (int i = 0; i < 3; i++) {
            start(i, transport);
        }
    }

    private long oplogWindow = -1;

    private void start(int i, String transport) {
        ReplicaSetConfig rs = new ReplicaSetConfig().setName("rs0").nodeId("n" + (i + 1)).members(members)
            .key("secret").peerTransport(transport);
        servers[i] = new RdmaStoreServer(new ServerConfig().bind("127.0.0.1").port(ports[i])
            .dataDir(dir.resolve("n" + (i + 1))).fsync(FsyncPolicy.EVERYSEC).transport(transport).resp(false)
            .blobConfig(new BlobConfig().thresholdBytes(BLOB_THRESHOLD)).oplogWindowBytes(oplogWindow)
            .handshakeTimeout(Duration.ofSeconds(2)).replicaSet(rs)).start();
    }

    /** Values from this size on are blob files: the tests write some of each kind. */
    private static final int BLOB_THRESHOLD = 4096;

    static void await(String what, long millis, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out after " + millis + " ms waiting until " + what);
            }
            Thread.sleep(10);
        }
    }

    private int primary() throws InterruptedException {
        int[] found = {-1};
        await("one member is primary", 15_000, () -> {
            for (int i = 0; i < servers.length; i++) {
                if (servers[i] != null && servers[i].replicaSet().role() == ReplicaSet.Role.PRIMARY) {
                    found[0] = i;
                    return true;
                }
            }
            return false;
        });
        return found[0];
    }

    /** How many members the current primary counts, -1 when there is none right now. */
    private int memberCountAtPrimary() {
        for (RdmaStoreServer s : servers) {
            if (s != null && s.replicaSet().role() == ReplicaSet.Role.PRIMARY) {
                return s.replicaSet().members().size();
            }
        }
        return -1;
    }

    private RdmaStoreClient client(int i, String transport) {
        return RdmaStoreClient.builder().port(ports[i]).transport(transport).timeout(Duration.ofSeconds(5))
            .connect();
    }

    /**
     * Sets a key on whichever member is primary, retrying a write refused with NOTPRIMARY (not applied: a leader
     * change under load), as a replica-set client does. Bounded.
     */
    private void write(String transport, String key, String value) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (true) {
            int p = primary();
            try (RdmaStoreClient c = client(p, transport)) {
                c.set(key, value);
                return;
            } catch (RdmaStoreServerException e) {
                if (!e.getMessage().startsWith("NOTPRIMARY") || System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(20);
            }
        }
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private String value(int member, String key) {
        byte[] v = servers[member].store().get(b(key));
        return v == null ? null : new String(v, StandardCharsets.UTF_8);
    }

    /** WAIT through a raw channel: the acknowledged count, or the server's error text. */
    private static Object waitFor(PeerChannel ch, int replicas, long timeoutMillis) {
        try {
            return ch.await(ch.call(ProtocolDescriptor.WAIT, w -> w.i32(replicas).i64(timeoutMillis),
                (st, r) -> r.i64("acked"), Duration.ofSeconds(10)), Duration.ofSeconds(10));
        } catch (RdmaStoreServerException e) {
            return e.getMessage();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    @Timeout(90)
    void writesReachEveryMemberAndSurviveThePrimarysLoss(String transport) throws Exception {
        startAll(transport);
        int p = primary();
        String big = "B".repeat(BLOB_THRESHOLD * 3);
        for (int i = 0; i < 200; i++) {
            write(transport, "k" + i, "v" + i);
        }
        try (RdmaStoreClient c = client(p, transport)) {
            assertTrue(c.collection("c").createIndex("k"));
        }
        write(transport, "blob1", big + "1");
        write(transport, "blob2", big + "2");
        write(transport, "blob1", big + "one");
        p = primary();
        for (int i = 0; i < 3; i++) {
            int m = i;
            await("member n" + (m + 1) + " holds every write", 10_000, () -> "v199".equals(value(m, "k199"))
                && (big + "one").equals(value(m, "blob1")));
            assertEquals("v0", value(m, "k0"));
            assertEquals(big + "2", value(m, "blob2"), "a blob value is replicated with its file");
            assertTrue(servers[m].store().blobs().count() >= 2, "blob values are files on every member");
            assertEquals(List.of("_id", "k"), servers[m].store().indexes("c"), "an index is replicated");
        }
        int s = (p + 1) % 3;
        try (RdmaStoreClient c = client(s, transport)) {
            assertEquals("v7", c.get("k7"), "secondaries serve reads");
            RdmaStoreServerException e = assertThrows(RdmaStoreServerException.class, () -> c.set("x", "y"));
            assertTrue(e.getMessage().startsWith("NOTPRIMARY"), e.getMessage());
            assertTrue(e.getMessage().contains("n" + (p + 1)), "names the primary: " + e.getMessage());
        }
        String secondaryInfo = String.join("\n", servers[s].replicaSet().info().entrySet().stream()
            .map(e -> e.getKey() + ":" + e.getValue()).toList());
        assertTrue(secondaryInfo.contains("master_link_transport:" + transport), secondaryInfo);

        long t0 = System.nanoTime();
        servers[p].close();
        servers[p] = null;
        int q = primary();
        long failoverMs = (System.nanoTime() - t0) / 1_000_000;
        System.out.println("[" + transport + "] failover after close of the primary: " + failoverMs + " ms");
        assertTrue(q != p);
        try (RdmaStoreClient c = client(q, transport)) {
            for (int i = 0; i < 200; i++) {
                assertEquals("v" + i, c.get("k" + i), "acknowledged and replicated write lost in failover");
            }
            assertEquals(big + "one", c.get("blob1"));
        }
        write(transport, "after", "failover");
        start(p, transport);
        int old = p;
        await("the old primary rejoins and catches up", 15_000, () -> "failover".equals(value(old, "after")));
        assertEquals(ReplicaSet.Role.SECONDARY, servers[old].replicaSet().role());
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    @Timeout(90)
    void aWipedMemberBehindTheOplogWindowResyncsFromASnapshotWithItsBlobs(String transport) throws Exception {
        oplogWindow = 8 * 1024;
        startAll(transport);
        int p = primary();
        String big = "Z".repeat(BLOB_THRESHOLD * 2);
        int s = (p + 1) % 3;
        for (int i = 0; i < 300; i++) {
            write(transport, "k" + i, "v" + i);
        }
        write(transport, "blob", big);
        try (RdmaStoreClient c = client(primary(), transport)) {
            assertTrue(c.collection("c").createIndex("k"));
            c.collection("c").insertOne(BsonDocument.parse("{_id: 1, k: 'x'}"));
        }
        await("the member to wipe holds the blob", 10_000, () -> big.equals(value(s, "blob")));
        servers[s].close();
        servers[s] = null;
        deleteTree(dir.resolve("n" + (s + 1)));
        for (int i = 300; i < 600; i++) {
            write(transport, "k" + i, "v" + i);
        }
        start(s, transport);
        for (int i = 600; i < 700; i++) {
            write(transport, "k" + i, "v" + i);
        }
        await("the wiped member resyncs", 20_000, () -> "v699".equals(value(s, "k699")));
        for (int i = 0; i < 700; i += 50) {
            assertEquals("v" + i, value(s, "k" + i));
        }
        assertEquals(big, value(s, "blob"), "the blob file came with the snapshot");
        assertEquals(List.of("_id", "k"), servers[s].store().indexes("c"), "the index came with the snapshot");
        long examined = servers[s].store().documentsExamined();
        assertEquals(1, servers[s].store().count("c", BsonDocument.parse("{k: 'x'}")));
        assertEquals(1, servers[s].store().documentsExamined() - examined, "and holds the document");
        assertEquals("1", servers[s].replicaSet().info().get("resyncs"), "it took the snapshot path");
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    @Timeout(90)
    void theJavaClientFollowsAFailoverAndReadsFromSecondaries(String transport) throws Exception {
        startAll(transport);
        primary();
        String uri = "rdmastore://127.0.0.1:" + ports[0] + ",127.0.0.1:" + ports[1] + ",127.0.0.1:" + ports[2]
            + "?replicaSet=rs0&w=majority&transport=" + transport + "&timeout=3s";
        List<String> acked = new ArrayList<>();
        int unknown = 0;
        try (RdmaStoreClient c = RdmaStoreClient.connect(uri)) {
            assertEquals("rs0", c.topology().setName());
            for (int i = 0; i < 100; i++) {
                c.set("c" + i, "v" + i);
                acked.add("c" + i);
            }
            int p = primary();
            servers[p].close();
            servers[p] = null;
            for (int i = 100; i < 200; i++) {
                try {
                    c.set("c" + i, "v" + i);
                    acked.add("c" + i);
                } catch (io.rdmastore.client.RdmaStoreException e) {
                    assertTrue(e.outcomeUnknown() || e.getMessage().contains("NOTPRIMARY"), e.toString());
                    unknown++;
                }
            }
            for (String k : acked) {
                assertEquals("v" + k.substring(1), c.get(k), "an acknowledged w:majority write is lost");
            }
            assertTrue(acked.size() >= 190, "the client did not follow the failover: " + unknown + " failed writes");
        }
        try (RdmaStoreClient secondaryReader = RdmaStoreClient.connect(uri.replace("w=majority",
            "readPreference=secondary"))) {
            await("a secondary serves the last write", 10_000, () -> ("v" + acked.getLast().substring(1)).equals(
                secondaryReader.get(acked.getLast())));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp"})
    @Timeout(120)
    void membersAreAddedAndRemovedAtRunTime(String transport) throws Exception {
        startAll(transport);
        for (int i = 0; i < 100; i++) {
            write(transport, "m" + i, "v" + i);
        }
        int[] fourth = freePorts(1);
        ports = java.util.Arrays.copyOf(ports, 4);
        ports[3] = fourth[0];
        String withFourth = members + ",n4=127.0.0.1:" + fourth[0];
        servers[3] = new RdmaStoreServer(new ServerConfig().bind("127.0.0.1").port(fourth[0])
            .dataDir(dir.resolve("n4")).fsync(FsyncPolicy.EVERYSEC).transport(transport).resp(false)
            .handshakeTimeout(Duration.ofSeconds(2)).replicaSet(new ReplicaSetConfig().setName("rs0").nodeId("n4")
                .members(withFourth).key("secret").peerTransport(transport).join(true))).start();
        int p = primary();
        try (PeerChannel ch = PeerChannel.open(new ClientConfig("127.0.0.1", ports[p], transport, null,
            Duration.ofSeconds(30)))) {
            ch.await(ch.call(ProtocolDescriptor.REPLICA_SET_CONFIG, w -> w.u8(1).string("n4")
                .string("127.0.0.1:" + fourth[0]), (st, r) -> null, Duration.ofSeconds(30)), Duration.ofSeconds(30));
        }
        await("the added member holds the set's data", 20_000, () -> "v99".equals(value(3, "m99")));
        await("the primary counts four members", 10_000, () -> memberCountAtPrimary() == 4);
        int q = primary();
        int victim = (q + 1) % 3;
        try (PeerChannel ch = PeerChannel.open(new ClientConfig("127.0.0.1", ports[q], transport, null,
            Duration.ofSeconds(30)))) {
            ch.await(ch.call(ProtocolDescriptor.REPLICA_SET_CONFIG, w -> w.u8(2).string("n" + (victim + 1))
                .string(""), (st, r) -> null, Duration.ofSeconds(30)), Duration.ofSeconds(30));
        }
        await("the primary counts three members", 10_000, () -> memberCountAtPrimary() == 3);
        servers[victim].close();
        servers[victim] = null;
        write(transport, "after", "removal");
        int r = primary();
        try (PeerChannel ch = PeerChannel.open(new ClientConfig("127.0.0.1", ports[r], transport, null,
            Duration.ofSeconds(10)))) {
            ch.await(ch.call(ProtocolDescriptor.SET, w -> w.u8(0).i64(0).bytes(b("w")).bytes(b("x")),
                (st, x) -> null, Duration.ofSeconds(5)), Duration.ofSeconds(5));
            // a majority of three is the primary and one secondary; the other may still be applying
            Object acked = waitFor(ch, -1, 5000);
            assertTrue(acked instanceof Long n && n >= 1, "a majority of the three remaining members acknowledges: "
                + acked);
        }
        await("the added member follows", 10_000, () -> "removal".equals(value(3, "after")));
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> all = Files.walk(root)) {
            for (Path x : all.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(x);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp"})
    @Timeout(60)
    void waitCountsSecondariesAndMajorityTimesOutWithoutThem(String transport) throws Exception {
        startAll(transport);
        int p = primary();
        try (RdmaStoreClient c = client(p, transport);
             PeerChannel ch = PeerChannel.open(new ClientConfig("127.0.0.1", ports[p], transport, null,
                 Duration.ofSeconds(10)))) {
            c.set("a", "1");
            ch.await(ch.call(ProtocolDescriptor.SET, w -> w.u8(0).i64(0).bytes(b("w")).bytes(b("1")),
                (st, r) -> null, Duration.ofSeconds(5)), Duration.ofSeconds(5));
            assertEquals(2L, waitFor(ch, 2, 5000), "both secondaries acknowledge the connection's write");
            assertEquals(2L, waitFor(ch, -1, 5000));
            for (int i = 0; i < 3; i++) {
                if (i != p) {
                    servers[i].close();
                    servers[i] = null;
                }
            }
            Thread.sleep(200);
            if (servers[p].replicaSet().role() == ReplicaSet.Role.PRIMARY) {
                ch.await(ch.call(ProtocolDescriptor.SET, w -> w.u8(0).i64(0).bytes(b("w")).bytes(b("2")),
                    (st, r) -> null, Duration.ofSeconds(5)), Duration.ofSeconds(5));
                Object r = waitFor(ch, -1, 300);
                assertTrue(r instanceof String s && (s.startsWith("TIMEOUT") || s.startsWith("NOTPRIMARY")),
                    "a majority wait without secondaries fails: " + r);
                Object redisStyle = waitFor(ch, 1, 200);
                assertTrue(Long.valueOf(0).equals(redisStyle) || String.valueOf(redisStyle).startsWith("NOTPRIMARY"),
                    "Redis's WAIT answers how many it reached: " + redisStyle);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp"})
    @Timeout(120)
    void aDeposedPrimarysUnreplicatedWritesGoToARollbackFile(String transport) throws Exception {
        startAll(transport);
        write(transport, "base", "1");
        int p = primary();
        for (int i = 0; i < 3; i++) {
            int m = i;
            await("base replicated", 10_000, () -> "1".equals(value(m, "base")));
        }
        // Cut the primary off: its secondaries go, it keeps accepting w:1 writes nobody else sees.
        List<Integer> others = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            if (i != p) {
                others.add(i);
                servers[i].close();
                servers[i] = null;
            }
        }
        int lonely = 0;
        try (RdmaStoreClient c = client(p, transport)) {
            for (int i = 0; i < 50; i++) {
                try {
                    c.set("lonely" + i, "x");
                    lonely++;
                } catch (RdmaStoreServerException e) {
                    break; // it noticed it lost its majority
                }
            }
        }
        servers[p].close();
        servers[p] = null;
        for (int i : others) {
            start(i, transport);
        }
        int q = primary();
        write(transport, "new", "primary");
        start(p, transport);
        int old = p;
        await("the deposed primary resyncs", 20_000, () -> "primary".equals(value(old, "new")));
        for (int i = 0; i < 50; i++) {
            assertEquals(null, value(old, "lonely" + i), "an unreplicated write survived the rollback");
        }
        if (lonely > 0) {
            Path rollbackDir = dir.resolve("n" + (old + 1)).resolve("rollback");
            assertTrue(Files.isDirectory(rollbackDir), "no rollback directory although " + lonely + " writes diverged");
            try (Stream<Path> files = Files.list(rollbackDir)) {
                List<Path> list = files.toList();
                assertEquals(1, list.size());
                assertTrue(Files.size(list.getFirst()) > 0);
            }
        }
        assertNotNull(servers[old].replicaSet().info().get("rollbacks"));
    }
}
