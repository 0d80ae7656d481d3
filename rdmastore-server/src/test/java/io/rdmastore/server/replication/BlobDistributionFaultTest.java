package io.rdmastore.server.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.rdmastore.client.BlobBuffer;
import io.rdmastore.client.BlobClient;
import io.rdmastore.client.BlobInfo;
import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Blob distribution under process faults (docs/blobs.md, "Distribution to a replica set"): three member processes,
 * blob puts of 192 MiB with the parallel pull and write concern majority, and in each round a SIGKILL that lands while
 * a member is pulling: of a secondary (the put must still succeed, a majority holding the content) or of the primary
 * (the put fails or succeeds; either way no member may ever serve a partial or wrong blob, and an acknowledged one
 * must survive the failover). After each round every member that runs must have given back all the memory it
 * registered for transfers, and the killed member is restarted and must converge. Bounded: 3 rounds per transport,
 * each waiting at most 60 s for anything.
 */
class BlobDistributionFaultTest {
    private static final long SIZE = 192L << 20;
    private static final int ROUNDS = 3;


    /** A field of a member's INFO, read over its own connection; null when it cannot be asked. */
    private static String info(ReplicaSetProcesses.Member m, String field) {
        try (RdmaStoreClient c = RdmaStoreClient.builder().port(m.port()).transport("tcp")
                .timeout(Duration.ofSeconds(3)).connect()) {
            for (String line : c.info().split("\r\n")) {
                if (line.startsWith(field + ":")) {
                    return line.substring(field.length() + 1);
                }
            }
            return "";
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** The CRC32C of blob {@code key} as member {@code m} serves it (checked end to end), or null when absent. */
    private static Integer crcOn(ReplicaSetProcesses.Member m, String key) {
        try (RdmaStoreClient c = RdmaStoreClient.builder().port(m.port()).transport("tcp")
                .timeout(Duration.ofSeconds(30)).connect()) {
            BlobClient blobs = c.blobs();
            try (BlobBuffer dst = blobs.allocate(SIZE)) {
                BlobInfo got = blobs.get(key.getBytes(StandardCharsets.UTF_8), dst, null);
                if (got == null) {
                    return null;
                }
                assertEquals(SIZE, got.length(), "member " + m.id() + " serves a blob of another length");
                // the get checked the bytes against the CRC the member recorded; compute it here too
                CRC32C crc = new CRC32C();
                crc.update(dst.segment().asSlice(0, got.length()).asByteBuffer());
                assertEquals(got.crc32c(), (int) crc.getValue());
                return got.crc32c();
            }
        }
    }

    private static void fill(MemorySegment s, long seed) {
        long x = seed | 1;
        for (long off = 0; off + 8 <= s.byteSize(); off += 8) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, off, x);
        }
    }

    private static int crc(MemorySegment s) {
        CRC32C crc = new CRC32C();
        crc.update(s.asByteBuffer());
        return (int) crc.getValue();
    }

    @ParameterizedTest
    @ValueSource(strings = {"ucx", "tcp"})
    @Timeout(420)
    void killsMidPullNeverLeaveAPartialBlobAndLoseNoAcknowledgedOne(String transport) throws Exception {
        Path shm = Path.of("/dev/shm");
        Path dir = Files.createTempDirectory(Files.isWritable(shm) ? shm : Path.of(System.getProperty(
            "java.io.tmpdir")), "rdmastore-blobfault-");
        Map<String, Integer> written = new LinkedHashMap<>();   // key -> expected CRC32C
        Map<String, Boolean> acked = new LinkedHashMap<>();     // key -> acknowledged (w:majority)
        int midTransferKills = 0;
        int catchUpPulls = 0;   // rounds whose restarted secondary pulled the blob it missed (ReplicaSet's catch-up)
        // A 1 s election timeout (the default is 150-300 ms): on two cores, three members and a parallel pull can
        // starve the surviving secondary's heartbeat past 150 ms, and a spurious election after a secondary's death
        // fails the put's majority for a reason this test is not about (seen once in five runs).
        try (ReplicaSetProcesses set = ReplicaSetProcesses.builder().dir(dir).members(3).fsync("everysec")
                .transport(transport).replicaSet("rs0").extraArgs(m -> List.of("--election-timeout", "1000"))
                .start();
             Arena arena = Arena.ofShared()) {
            String uri = "rdmastore://" + String.join(",", set.members().stream()
                .map(m -> "127.0.0.1:" + m.port()).toList()) + "?replicaSet=rs0&w=majority&transport=" + transport
                + "&timeout=20s";
            MemorySegment src = arena.allocate(SIZE, 4096);
            for (int round = 0; round < ROUNDS; round++) {
                boolean killPrimary = round % 2 == 1;
                String key = "fault-" + transport + "-" + round;
                fill(src, 0x5DEECE66DL * (round + 1) + transport.hashCode());
                int expected = crc(src);
                written.put(key, expected);
                ReplicaSetProcesses.Member killed;
                try (RdmaStoreClient client = RdmaStoreClient.connect(uri)) {
                    String primaryAddress = client.topology().primaryAddress();
                    ReplicaSetProcesses.Member primary = set.members().stream()
                        .filter(m -> primaryAddress.endsWith(":" + m.port())).findFirst().orElseThrow();
                    ReplicaSetProcesses.Member victim = killPrimary ? primary : set.members().stream()
                        .filter(m -> m != primary).toList().get(round % 2);
                    BlobClient blobs = client.blobs().distribution(BlobClient.Distribution.PARALLEL);
                    CompletableFuture<BlobInfo> put;
                    try (BlobBuffer buf = blobs.wrap(src)) {
                        put = CompletableFuture.supplyAsync(() -> blobs.put(key.getBytes(StandardCharsets.UTF_8),
                            buf, SIZE));
                        // kill it while it is pulling: its INFO shows a transfer in flight
                        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                        boolean mid = false;
                        while (!put.isDone() && System.nanoTime() < deadline) {
                            String n = info(victim, "blob_transfers_in_flight");
                            if (n != null && !n.isEmpty() && !n.equals("0")) {
                                mid = true;
                                break;
                            }
                        }
                        victim.kill();
                        killed = victim;
                        if (mid) {
                            midTransferKills++;
                        }
                        try {
                            BlobInfo info = put.get(90, TimeUnit.SECONDS);
                            acked.put(key, true);
                            assertEquals(expected, info.crc32c());
                        } catch (java.util.concurrent.ExecutionException e) {
                            if (!(e.getCause() instanceof RdmaStoreException)) {
                                throw e;
                            }
                            acked.put(key, false);
                            // a secondary's death must not fail a majority put: the other two hold it
                            assertTrue(killPrimary, "a put failed though only a secondary died: " + e.getCause());
                        }
                    }
                }
                // every member that runs: no memory lent any more, and nothing partial served
                for (ReplicaSetProcesses.Member m : set.alive()) {
                    ReplicaSetTest.await(m.id() + " gives back the memory registered for transfers", 30_000,
                        () -> "0".equals(info(m, "blob_registered_bytes")));
                }
                nothingWrongServed(set, written);
                // the killed member comes back and converges
                for (ReplicaSetProcesses.Member m : set.members()) {
                    if (!m.isAlive()) {
                        m.start();
                    }
                }
                for (Map.Entry<String, Boolean> e : acked.entrySet()) {
                    if (e.getValue()) {
                        for (ReplicaSetProcesses.Member m : set.members()) {
                            ReplicaSetTest.await(m.id() + " holds the acknowledged " + e.getKey(), 60_000,
                                () -> written.get(e.getKey()).equals(crcOn(m, e.getKey())));
                        }
                    }
                }
                nothingWrongServed(set, written);
                String pulled = info(killed, "blobs_pulled");
                if (!killPrimary && pulled != null && !pulled.isEmpty() && Long.parseLong(pulled) > 0) {
                    catchUpPulls++;
                }
            }
            System.out.println("blob distribution faults over " + transport + ": " + ROUNDS + " rounds, "
                + midTransferKills + " kills while the victim was pulling, " + catchUpPulls + " restarted"
                + " secondaries caught up by pulling, acknowledged: " + acked);
            assertTrue(acked.values().stream().filter(v -> v).count() >= ROUNDS / 2,
                "too few puts were acknowledged: " + acked);
            assertTrue(midTransferKills >= 1, "no kill landed while a member was pulling: the test proved nothing");
            assertTrue(catchUpPulls >= 1, "no restarted secondary pulled the blob it missed: the catch-up pull"
                + " (staged through the file's writes) went untested");
        } finally {
            deleteTree(dir);
        }
    }

    /** Every running member serves each key either not at all or with exactly the bytes written. */
    private static void nothingWrongServed(ReplicaSetProcesses set, Map<String, Integer> written) {
        for (ReplicaSetProcesses.Member m : set.alive()) {
            for (Map.Entry<String, Integer> e : written.entrySet()) {
                Integer got;
                try {
                    got = crcOn(m, e.getKey());
                } catch (RdmaStoreException ex) {
                    continue; // not reachable right now (electing): the next check covers it
                }
                if (got != null) {
                    assertEquals(e.getValue(), got, m.id() + " serves wrong bytes for " + e.getKey());
                }
            }
        }
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (var walk = Files.walk(root)) {
            List<Path> all = new ArrayList<>(walk.toList());
            java.util.Collections.reverse(all);
            for (Path p : all) {
                Files.deleteIfExists(p);
            }
        }
    }
}
