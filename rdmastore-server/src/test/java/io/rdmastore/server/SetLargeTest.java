package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.SetOptions;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * SET_LARGE (docs/protocol.md, "Large values"): over ucx a SET of a value from 256 KiB on lends the value and the
 * server reads it one-sided; over tcp, and where the server refuses it, the value is sent. Either way the same bytes
 * are stored, with SET's options, and they survive a restart.
 */
@Timeout(120)
class SetLargeTest {
    /** The client's default: values from here on are lent. */
    private static final int FROM = 256 * 1024;

    private static byte[] key(String s) {
        return TestServers.key(s);
    }

    private static byte[] random(int n, long seed) {
        return TestServers.random(n, seed);
    }

    private static long info(RdmaStoreClient client, String field) {
        for (String line : client.info().split("\r\n")) {
            if (line.startsWith(field + ":")) {
                return Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        throw new AssertionError("INFO has no " + field);
    }

    @Test
    void sameBytesOverUcxAndTcpAndAfterARestart(@TempDir Path dir) {
        int[] sizes = {FROM - 1, FROM, 1 << 20, 8 << 20};
        try (RdmaStoreServer server = TestServers.start(dir, c -> { })) {
            for (String transport : TestServers.transports()) {
                try (RdmaStoreClient client = TestServers.client(server, transport)) {
                    assertEquals(transport, client.transport());
                    long before = info(client, "value_set_large");
                    long bytesBefore = info(client, "value_set_large_bytes");
                    long inPlaceBefore = info(client, "value_set_large_in_place");
                    long inPartsBefore = info(client, "value_set_large_in_parts");
                    long expectBytes = 0;
                    for (int size : sizes) {
                        byte[] v = random(size, size);
                        byte[] expect = v.clone();
                        assertTrue(client.set(key(transport + size), v));
                        // the value was taken when the call returned: changing the array afterwards changes nothing
                        v[0] ^= 1;
                        assertArrayEquals(expect, client.get(key(transport + size)), transport + " " + size);
                        // overwritten by a smaller value, then by a large one again
                        assertTrue(client.set(key(transport + size), key("small")));
                        byte[] w = random(size, size + 1);
                        assertTrue(client.set(key(transport + size), w));
                        assertArrayEquals(w, client.get(key(transport + size)), transport + " again " + size);
                        if (size >= FROM) {
                            expectBytes += 2L * size;
                        }
                    }
                    int lentSets = transport.equals("ucx") ? 6 : 0;
                    assertEquals(lentSets, info(client, "value_set_large") - before, transport + ": SETs lent");
                    assertEquals(transport.equals("ucx") ? expectBytes : 0,
                        info(client, "value_set_large_bytes") - bytesBefore);
                    // a client on this host is read straight into the store's block, up to the blob threshold (the
                    // 8 MiB values are blob files, read into the connection's buffer)
                    assertEquals(transport.equals("ucx") ? 4 : 0,
                        info(client, "value_set_large_in_place") - inPlaceBefore, transport + ": read in place");
                    // a byte[] is copied into the lent memory in parts after the request, read as each is counted
                    assertEquals(lentSets, info(client, "value_set_large_in_parts") - inPartsBefore,
                        transport + ": read in parts");
                }
            }
        }
        try (RdmaStoreServer server = TestServers.start(dir, c -> { });
             RdmaStoreClient client = TestServers.client(server, "tcp")) {
            for (String transport : TestServers.transports()) {
                for (int size : sizes) {
                    assertArrayEquals(random(size, size + 1), client.get(key(transport + size)),
                        "after a restart: " + transport + " " + size);
                }
            }
        }
    }

    @Test
    void setOptionsHoldForLentValues(@TempDir Path dir) {
        for (String transport : TestServers.transports()) {
            try (RdmaStoreServer server = TestServers.start(dir.resolve(transport), c -> { });
                 RdmaStoreClient client = TestServers.client(server, transport)) {
                byte[] v = random(FROM, 1);
                byte[] other = random(FROM, 2);
                assertFalse(client.set(key("missing"), v, SetOptions.xx()), "XX on a missing key writes nothing");
                assertEquals(null, client.get(key("missing")));
                assertTrue(client.set(key("k"), v, SetOptions.nx()));
                assertFalse(client.set(key("k"), other, SetOptions.nx()), "NX on an existing key writes nothing");
                assertArrayEquals(v, client.get(key("k")));
                assertTrue(client.set(key("k"), other, SetOptions.xx()));
                assertArrayEquals(other, client.get(key("k")));
                assertTrue(client.set(key("t"), v, SetOptions.ttl(Duration.ofSeconds(60))));
                long ttl = client.pttl(key("t"));
                assertTrue(ttl > 50_000 && ttl <= 60_000, transport + ": pttl " + ttl);
                // every lent SET is read, written or not (NX/XX decide after the read)
                assertEquals(transport.equals("ucx") ? 5 : 0, info(client, "value_set_large"), transport);
            }
        }
    }

    @Test
    void aCallersDirectBufferIsReadByTheServer(@TempDir Path dir) {
        for (String transport : TestServers.transports()) {
            try (RdmaStoreServer server = TestServers.start(dir.resolve(transport), c -> { });
                 RdmaStoreClient client = TestServers.client(server, transport)) {
                long before = info(client, "value_set_large");
                // the remaining bytes of a buffer that starts part-way in, so its lent memory is not its start
                java.nio.ByteBuffer direct = java.nio.ByteBuffer.allocateDirect((1 << 20) + 100);
                byte[] first = random(1 << 20, 3);
                direct.position(100).put(first).position(100);
                assertTrue(client.set(key("d"), direct));
                assertEquals(direct.limit(), direct.position(), transport + ": the position moves to the limit");
                assertArrayEquals(first, client.get(key("d")), transport);
                // the same memory lent again with new bytes (its registration cached), then a shorter part of it
                byte[] second = random(1 << 20, 4);
                direct.position(100).put(second).position(100);
                assertTrue(client.set(key("d"), direct));
                assertArrayEquals(second, client.get(key("d")), transport + ": the bytes of the second call");
                direct.position(100).limit(100 + FROM);
                assertTrue(client.set(key("d"), direct));
                assertArrayEquals(java.util.Arrays.copyOf(second, FROM), client.get(key("d")), transport + ": part");
                // NX on an existing key writes nothing and leaves the position where it was
                direct.position(100);
                assertFalse(client.set(key("d"), direct, SetOptions.nx()));
                assertEquals(100, direct.position());
                // below the threshold: sent; a heap buffer: copied out, then as a byte[] of its size
                java.nio.ByteBuffer small = java.nio.ByteBuffer.allocateDirect(FROM - 1).put(random(FROM - 1, 5));
                assertTrue(client.set(key("s"), small.flip()));
                assertArrayEquals(random(FROM - 1, 5), client.get(key("s")));
                assertTrue(client.set(key("h"), java.nio.ByteBuffer.wrap(random(FROM, 6))));
                assertArrayEquals(random(FROM, 6), client.get(key("h")));
                // a buffer the client gives out is lent as it is (any other was copied into the client's first)
                java.nio.ByteBuffer lendable = RdmaStoreClient.allocateLendable((1 << 20) + 100);
                lendable.position(100).put(first).position(100);
                assertTrue(client.set(key("l"), lendable));
                assertEquals(lendable.limit(), lendable.position());
                assertArrayEquals(first, client.get(key("l")), transport + ": from a lendable buffer");
                // lent: the direct buffers from the threshold (NX's too), and the heap one's copy (as byte[])
                assertEquals(transport.equals("ucx") ? 6 : 0, info(client, "value_set_large") - before,
                    transport + ": SETs lent");
            }
        }
    }

    @Test
    void aServerThatRefusesGetsTheValueSent(@TempDir Path dir) {
        assertTrue(TestServers.transports().contains("ucx"), "ucx is required by -Drdmastore.test.ucx=true");
        try (RdmaStoreServer server = TestServers.start(dir, c -> c.rendezvousThreshold(0));
             RdmaStoreClient client = TestServers.client(server, "ucx")) {
            for (int i = 0; i < 3; i++) {
                byte[] v = random(1 << 20, i);
                assertTrue(client.set(key("k" + i), v));
                assertArrayEquals(v, client.get(key("k" + i)));
            }
            assertEquals(0, info(client, "value_set_large"), "rendezvous off: every value sent");
        }
    }
}
