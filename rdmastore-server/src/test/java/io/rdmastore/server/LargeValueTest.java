package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.RdmaStoreClient;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * GET_LARGE (docs/protocol.md, "Large values"): over ucx values from the rendezvous threshold on are lent and read
 * one-sided; over tcp they are sent. Both give the same bytes; a value overwritten or deleted while lent is read whole
 * and freed once the lease ends; leases end with the connection and with their time-out.
 */
@Timeout(120)
class LargeValueTest {
    private static final int THRESHOLD = 64 * 1024;

    private static byte[] key(String s) {
        return TestServers.key(s);
    }

    private static byte[] random(int n, long seed) {
        return TestServers.random(n, seed);
    }

    private static void await(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("not within 10 s: " + what);
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }

    private static long lent(RdmaStoreClient client) {
        for (String line : client.info().split("\r\n")) {
            if (line.startsWith("value_leases_lent:")) {
                return Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        throw new AssertionError("INFO has no value_leases_lent");
    }

    private static void assertUcxPresent() {
        assertTrue(TestServers.transports().contains("ucx"), "ucx is required by -Drdmastore.test.ucx=true");
    }

    @Test
    void sameBytesOverUcxAndTcpAtEverySize(@TempDir Path dir) {
        int[] sizes = {THRESHOLD - 1, THRESHOLD, 1 << 20, 8 << 20};
        try (RdmaStoreServer server = TestServers.start(dir, c -> c.rendezvousThreshold(THRESHOLD))) {
            for (String transport : TestServers.transports()) {
                try (RdmaStoreClient client = TestServers.client(server, transport)) {
                    assertEquals(transport, client.transport());
                    long lentBefore = lent(client);
                    int expectLent = 0;
                    for (int size : sizes) {
                        byte[] k = key(transport + size);
                        byte[] v = random(size, size);
                        client.set(k, v);
                        assertArrayEquals(v, client.get(k), transport + " " + size);
                        ByteBuffer dst = ByteBuffer.allocateDirect(size + 10).position(3);
                        assertEquals(size, client.get(k, dst), transport + " " + size);
                        assertEquals(3 + size, dst.position());
                        byte[] got = new byte[size];
                        dst.get(3, got);
                        assertArrayEquals(v, got, transport + " into a buffer, " + size);
                        // the same buffer again (its registration is reused), at position 0
                        dst.clear();
                        assertEquals(size, client.get(k, dst));
                        dst.get(0, got);
                        assertArrayEquals(v, got);
                        // a heap buffer takes the copy path
                        ByteBuffer heap = ByteBuffer.allocate(size);
                        assertEquals(size, client.get(k, heap));
                        assertArrayEquals(v, heap.array());
                        if (size >= THRESHOLD) {
                            expectLent += 3;
                        }
                    }
                    long lentNow = lent(client) - lentBefore;
                    assertEquals(transport.equals("ucx") ? expectLent : 0, lentNow, transport + ": values lent");
                    assertNull(client.get(key("missing")));
                    assertEquals(-1, client.get(key("missing"), ByteBuffer.allocateDirect(16)));
                }
            }
            assertEquals(0, server.valueLeases(), "leases end with their connections");
        }
    }

    @Test
    void tooSmallDestinationIsAClearErrorAndLeavesNoLease(@TempDir Path dir) {
        assertUcxPresent();
        try (RdmaStoreServer server = TestServers.start(dir, c -> c.rendezvousThreshold(THRESHOLD));
             RdmaStoreClient client = TestServers.client(server, "ucx")) {
            byte[] v = random(200_000, 1);
            client.set(key("k"), v);
            ByteBuffer small = ByteBuffer.allocateDirect(100_000);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> client.get(key("k"), small));
            assertTrue(e.getMessage().contains("200000 bytes"), e.getMessage());
            assertEquals(0, small.position(), "nothing written");
            // the lease of the refused read is released with the next GET
            client.get(key("none"));
            assertEquals(0, server.valueLeases());
        }
    }

    @Test
    void overwriteAndDeleteWhileLentKeepTheOldBytesUntilRelease(@TempDir Path dir) {
        assertUcxPresent();
        try (RdmaStoreServer server = TestServers.start(dir, c -> c.rendezvousThreshold(THRESHOLD));
             RdmaStoreClient readerA = TestServers.client(server, "ucx");
             RdmaStoreClient readerB = TestServers.client(server, "ucx");
             RdmaStoreClient writer = TestServers.client(server, "tcp")) {
            var store = server.store();
            int size = 512 << 10; // below the blob threshold: an off-heap value (blob-file values are lent too)
            byte[] v1 = random(size, 1);
            byte[] v2 = random(size, 2);
            writer.set(key("a"), v1);
            writer.set(key("b"), v1);
            long base = store.stats().usedOffHeapBytes();
            assertArrayEquals(v1, readerA.get(key("a")));
            assertArrayEquals(v1, readerB.get(key("b")));
            // each lease is held until its reader's next GET
            assertEquals(2, store.pinnedValues());
            assertEquals(2, server.valueLeases());
            writer.set(key("a"), v2); // same size: in place if it were not lent
            writer.del(key("b"));
            assertEquals(base + size, store.stats().usedOffHeapBytes(), "the lent blocks stay allocated");
            // the next GET names the old lease (its block is freed) and is lent the new value, whole
            assertArrayEquals(v2, readerA.get(key("a")));
            assertEquals(base, store.stats().usedOffHeapBytes(), "the old block of a is freed at its release");
            assertNull(readerB.get(key("b")));
            assertEquals(base - size, store.stats().usedOffHeapBytes(), "b's block is freed at its release");
            assertEquals(1, server.valueLeases());
            assertEquals(1, store.pinnedValues());
        }
    }

    @Test
    void readersNeverSeeATornValueWhileAWriterOverwrites(@TempDir Path dir) throws Exception {
        assertUcxPresent();
        int size = 256 << 10;
        try (RdmaStoreServer server = TestServers.start(dir, c -> c.rendezvousThreshold(THRESHOLD));
             RdmaStoreClient reader = TestServers.client(server, "ucx");
             RdmaStoreClient writer = TestServers.client(server, "ucx")) {
            byte[] k = key("hot");
            writer.set(k, filled(size, (byte) 0));
            Thread w = Thread.ofPlatform().start(() -> {
                for (int i = 1; i <= 200; i++) {
                    writer.set(k, filled(size, (byte) i));
                }
            });
            int reads = 0;
            while (w.isAlive() || reads < 20) {
                byte[] got = reader.get(k);
                assertEquals(size, got.length);
                for (int i = 1; i < size; i++) {
                    if (got[i] != got[0]) {
                        throw new AssertionError("torn value: byte " + i + " is " + got[i] + ", byte 0 " + got[0]);
                    }
                }
                reads++;
            }
            w.join();
        }
    }

    private static byte[] filled(int n, byte b) {
        byte[] v = new byte[n];
        java.util.Arrays.fill(v, b);
        return v;
    }

    @Test
    void leasesEndWithTheConnectionAndTheTimeOut(@TempDir Path dir) {
        assertUcxPresent();
        try (RdmaStoreServer server = TestServers.start(dir, c -> c.rendezvousThreshold(THRESHOLD)
                .rendezvousLeaseTimeout(Duration.ofMillis(300)))) {
            var store = server.store();
            byte[] v = random(500_000, 3);
            try (RdmaStoreClient writer = TestServers.client(server, "tcp")) {
                writer.set(key("x"), v);
                writer.set(key("y"), v);
            }
            RdmaStoreClient c1 = TestServers.client(server, "ucx");
            assertArrayEquals(v, c1.get(key("x")));
            assertArrayEquals(v, c1.get(key("y")));
            assertEquals(1, server.valueLeases(), "the second GET released the first lease");
            c1.close();
            await(() -> server.valueLeases() == 0 && store.pinnedValues() == 0, "leases end with the connection");
            try (RdmaStoreClient c2 = TestServers.client(server, "ucx")) {
                assertArrayEquals(v, c2.get(key("x")));
                assertEquals(1, server.valueLeases());
                // no further GET: the lease's time-out ends it
                await(() -> server.valueLeases() == 0 && store.pinnedValues() == 0, "the lease times out");
                // a release of a lease that timed out is ignored
                assertArrayEquals(v, c2.get(key("y")));
            }
            await(() -> server.valueLeases() == 0, "leases end with the connection");
            assertEquals(0, store.pinnedValues());
        }
    }

    @Test
    void theClusterClientRoutesLentValuesAndANodeRedirectsThem(@TempDir Path dir) {
        assertUcxPresent();
        java.util.List<RdmaStoreServer> nodes = new java.util.ArrayList<>();
        try {
            for (int i = 0; i < 2; i++) {
                nodes.add(TestServers.start(dir.resolve("n" + i), c -> c.cluster(true).rendezvousThreshold(THRESHOLD)));
            }
            java.util.List<io.rdmastore.client.cluster.SlotMap.Range> ranges =
                io.rdmastore.client.cluster.SlotMap.evenRanges(2);
            java.util.List<io.rdmastore.client.cluster.SlotMap.Shard> shards = new java.util.ArrayList<>();
            for (int i = 0; i < 2; i++) {
                shards.add(new io.rdmastore.client.cluster.SlotMap.Shard("s" + i, java.util.List.of(ranges.get(i)),
                    java.util.List.of(new io.rdmastore.client.cluster.SlotMap.Node("127.0.0.1:" + nodes.get(i).port(),
                        "127.0.0.1", nodes.get(i).port()))));
            }
            var map = new io.rdmastore.client.cluster.SlotMap(1, shards);
            for (RdmaStoreServer n : nodes) {
                n.cluster().install(map, "127.0.0.1:" + n.port()).join();
            }
            byte[] v = random(300_000, 9);
            try (var cc = io.rdmastore.client.RdmaStoreClusterClient.connect(RdmaStoreClient.builder()
                    .seeds("127.0.0.1:" + nodes.get(0).port()).transport("ucx").timeout(Duration.ofSeconds(10))
                    .build())) {
                for (int i = 0; i < 20; i++) {
                    v[0] = (byte) i;
                    cc.set(key("big:" + i), v, io.rdmastore.client.SetOptions.NONE);
                }
                for (int i = 0; i < 20; i++) {
                    v[0] = (byte) i;
                    assertArrayEquals(v, cc.get(key("big:" + i)), "key " + i);
                }
            }
            long lent = 0;
            for (RdmaStoreServer n : nodes) {
                try (RdmaStoreClient c = TestServers.client(n, "ucx")) {
                    lent += lent(c);
                    assertTrue(n.store().size() > 0, "every node holds some of the keys");
                }
            }
            assertEquals(20, lent, "every GET was lent, on the node that owns the key");
            // "foo" hashes to slot 12182, the second node's: the first answers GET_LARGE with MOVED
            try (RdmaStoreClient c = TestServers.client(nodes.get(0), "ucx")) {
                var moved = assertThrows(io.rdmastore.client.RdmaStoreServerException.class,
                    () -> c.get(key("foo")));
                assertEquals("MOVED", moved.code());
            }
        } finally {
            nodes.forEach(RdmaStoreServer::close);
        }
    }

    @Test
    void thresholdZeroTurnsLendingOff(@TempDir Path dir) {
        assertUcxPresent();
        try (RdmaStoreServer server = TestServers.start(dir, c -> c.rendezvousThreshold(0));
             RdmaStoreClient client = TestServers.client(server, "ucx")) {
            byte[] v = random(1 << 20, 4);
            client.set(key("k"), v);
            assertArrayEquals(v, client.get(key("k")));
            assertEquals(0, lent(client));
        }
    }
}
