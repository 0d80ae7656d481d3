package io.rdmastore.server.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.rdmastore.client.BlobClient;
import io.rdmastore.client.BlobInfo;
import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.server.RdmaStoreServer;
import io.rdmastore.server.ServerConfig;
import io.rdmastore.store.FsyncPolicy;
import io.rdmastore.store.blob.BlobConfig;
import io.rdmastore.store.blob.BlobStore;
import io.rdmastore.store.blob.BlobValue;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Blob distribution to a replica set (docs/blobs.md, "Distribution to a replica set"), three members in one JVM on
 * loopback: every strategy (parallel pull from the client, pipeline, the primary's file after the commit) over tcp and
 * ucx delivers the same verified bytes to every member, says which path each member took, and gives back every byte
 * of registered memory. Process faults (SIGKILL mid-pull, mid-put) are {@code BlobDistributionFaultTest}.
 */
class BlobDistributionTest {
    @TempDir
    Path dir;

    private final RdmaStoreServer[] servers = new RdmaStoreServer[3];
    private int[] ports;

    @AfterEach
    void stopAll() {
        for (RdmaStoreServer s : servers) {
            if (s != null) {
                s.close();
            }
        }
    }

    private void startAll(String transport) throws IOException {
        ports = ReplicaSetTest.freePorts(3);
        String members = "n1=127.0.0.1:" + ports[0] + ",n2=127.0.0.1:" + ports[1] + ",n3=127.0.0.1:" + ports[2];
        for (int i = 0; i < 3; i++) {
            ReplicaSetConfig rs = new ReplicaSetConfig().setName("rs0").nodeId("n" + (i + 1)).members(members)
                .key("secret").peerTransport(transport);
            servers[i] = new RdmaStoreServer(new ServerConfig().bind("127.0.0.1").port(ports[i])
                .dataDir(dir.resolve("n" + (i + 1))).fsync(FsyncPolicy.EVERYSEC).transport(transport).resp(false)
                .blobConfig(new BlobConfig().thresholdBytes(64 << 10)).handshakeTimeout(Duration.ofSeconds(2))
                .replicaSet(rs)).start();
        }
    }


    private int primary() throws InterruptedException {
        int[] found = {-1};
        ReplicaSetTest.await("one member is primary and two follow", 20_000, () -> {
            int secondaries = 0;
            for (int i = 0; i < servers.length; i++) {
                ReplicaSet.Role role = servers[i].replicaSet().role();
                if (role == ReplicaSet.Role.PRIMARY) {
                    found[0] = i;
                } else if (role == ReplicaSet.Role.SECONDARY) {
                    secondaries++;
                }
            }
            return found[0] >= 0 && secondaries == 2;
        });
        return found[0];
    }

    /** The CRC32C of the blob {@code key} as member {@code i} holds it, or null when it has none. */
    private Integer crcOn(int i, String key) {
        BlobValue v = servers[i].store().acquireBlob(key.getBytes(StandardCharsets.UTF_8));
        if (v == null) {
            return null;
        }
        try {
            if (v.blob() == null) {
                return BlobStore.crc32c(MemorySegment.ofArray(v.inline()));
            }
            return BlobStore.crc32c(v.blob().segment());
        } finally {
            if (v.blob() != null) {
                v.blob().release();
            }
        }
    }

    @ParameterizedTest
    @CsvSource({"tcp,PARALLEL", "tcp,PIPELINE", "tcp,PRIMARY", "ucx,PARALLEL", "ucx,PIPELINE", "ucx,PRIMARY",
        "ucx,AUTO"})
    @Timeout(120)
    void everyStrategyDeliversTheVerifiedBytesToEveryMember(String transport, BlobClient.Distribution strategy)
        throws Exception {
        startAll(transport);
        int p = primary();
        String uri = "rdmastore://127.0.0.1:" + ports[0] + ",127.0.0.1:" + ports[1] + ",127.0.0.1:" + ports[2]
            + "?replicaSet=rs0&w=majority&transport=" + transport + "&timeout=5s";
        Random random = new Random(42);
        try (RdmaStoreClient c = RdmaStoreClient.connect(uri)) {
            BlobClient blobs = c.blobs().distribution(strategy).waitForAllMembers(true);
            // sizes around the transfer chunk (16 MiB) and the pipeline's, plus one small enough for one read
            for (int size : new int[] {100_000, (16 << 20) + 3, 40 << 20}) {
                byte[] value = new byte[size];
                random.nextBytes(value);
                String key = "blob-" + strategy + "-" + size;
                BlobInfo info = blobs.put(key.getBytes(StandardCharsets.UTF_8), value);
                int expected = BlobStore.crc32c(MemorySegment.ofArray(value));
                assertEquals(expected, info.crc32c());
                for (int i = 0; i < 3; i++) {
                    assertEquals(expected, crcOn(i, key), "member n" + (i + 1) + " holds other bytes for " + key);
                }
                if (strategy == BlobClient.Distribution.PRIMARY) {
                    assertTrue(info.members().isEmpty(), info.members().toString());
                } else {
                    // the primary's own line, and one per secondary that received it ahead of the record
                    assertEquals(3, info.members().size(), info.members().toString());
                    for (BlobInfo.Member m : info.members()) {
                        assertTrue(m.ok(), m.toString());
                    }
                    String expectPath = strategy == BlobClient.Distribution.PIPELINE ? "pipeline over " + transport
                        : "parallel pull over " + transport;
                    assertEquals(expectPath, info.members().get(1).path());
                    assertEquals(expectPath, info.members().get(2).path());
                }
            }
        }
        for (int i = 0; i < 3; i++) {
            if (i == p) {
                continue;
            }
            ReplicaSet rs = servers[i].replicaSet();
            String path = rs.info().get("blob_last_path");
            if (strategy == BlobClient.Distribution.PRIMARY) {
                assertTrue(path.startsWith("pulled from n" + (p + 1) + " over " + transport), path);
                assertEquals("3", rs.info().get("blobs_pulled"));
            } else {
                assertTrue(path.startsWith("staged by the put"), path);
                assertEquals("3", rs.info().get("blobs_staged"));
            }
        }
        for (int i = 0; i < 3; i++) {
            int m = i;
            ReplicaSetTest.await("member n" + (i + 1) + " has no memory registered for transfers", 10_000,
                () -> servers[m].blobRegisteredBytes() == 0 && servers[m].blobLeases() == 0
                    && servers[m].blobStagesHeld() == 0);
        }
    }

    @ParameterizedTest
    @CsvSource({"ucx"})
    @Timeout(120)
    void aMemberThatCannotBeReachedStillGetsTheBlobFromThePrimary(String transport) throws Exception {
        startAll(transport);
        int p = primary();
        int down = (p + 1) % 3;
        String uri = "rdmastore://127.0.0.1:" + ports[0] + ",127.0.0.1:" + ports[1] + ",127.0.0.1:" + ports[2]
            + "?replicaSet=rs0&w=majority&transport=" + transport + "&timeout=5s";
        byte[] value = new byte[(8 << 20) + 17];
        new Random(7).nextBytes(value);
        try (RdmaStoreClient c = RdmaStoreClient.connect(uri)) {
            c.topology(); // discovered with all three up
            servers[down].close();
            servers[down] = null;
            BlobInfo info = c.blobs().distribution(BlobClient.Distribution.PARALLEL).put(
                "late".getBytes(StandardCharsets.UTF_8), value);
            assertNotNull(info);
        }
        int expected = BlobStore.crc32c(MemorySegment.ofArray(value));
        for (int i = 0; i < 3; i++) {
            if (i != down) {
                assertEquals(expected, crcOn(i, "late"));
            }
        }
        // it comes back and catches up through the primary's file
        String members = "n1=127.0.0.1:" + ports[0] + ",n2=127.0.0.1:" + ports[1] + ",n3=127.0.0.1:" + ports[2];
        servers[down] = new RdmaStoreServer(new ServerConfig().bind("127.0.0.1").port(ports[down])
            .dataDir(dir.resolve("n" + (down + 1))).fsync(FsyncPolicy.EVERYSEC).transport(transport).resp(false)
            .blobConfig(new BlobConfig().thresholdBytes(64 << 10)).handshakeTimeout(Duration.ofSeconds(2))
            .replicaSet(new ReplicaSetConfig().setName("rs0").nodeId("n" + (down + 1)).members(members)
                .key("secret").peerTransport(transport))).start();
        ReplicaSetTest.await("the returning member holds the blob", 20_000, () -> Integer.valueOf(expected).equals(
            crcOn(down, "late")));
    }
}
