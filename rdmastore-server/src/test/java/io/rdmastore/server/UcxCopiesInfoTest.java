package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.RdmaStoreClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The frame cliff, end to end: a 256 KiB value is one byte over what one frame of the default 1 MiB ring carries, so
 * its SET request and GET reply travel in fragments. The server sends each GET reply from its own memory (no copy
 * beyond the ring, by INFO's {@code ucx_copied_sent_bytes}) and gathers each SET request once.
 */
@Timeout(60)
class UcxCopiesInfoTest {
    private static Map<String, Long> copies(String info) {
        Map<String, Long> out = new HashMap<>();
        for (String line : info.split("\r\n")) {
            if (line.startsWith("ucx_copied_")) {
                int colon = line.indexOf(':');
                out.put(line.substring(0, colon), Long.parseLong(line.substring(colon + 1).trim()));
            }
        }
        assertEquals(2, out.size(), "INFO shows no ucx copy counters:\n" + info);
        return out;
    }

    @Test
    void largeValuesCrossTheRingWithoutASendCopy(@TempDir Path dir) {
        if (!TestServers.transports().contains("ucx")) {
            return;
        }
        int size = 256 << 10;
        int rounds = 20;
        // lending off: this test is about replies that travel through the ring (GET_LARGE would lend them)
        try (RdmaStoreServer server = TestServers.start(dir, c -> c.rendezvousThreshold(0));
             RdmaStoreClient client = TestServers.client(server, "ucx")) {
            byte[] key = "big".getBytes(StandardCharsets.UTF_8);
            byte[] value = new byte[size];
            new SplittableRandom(7).nextBytes(value);
            // one of each first, so the server's assembly buffer has its size
            client.set(key, value);
            assertArrayEquals(value, client.get(key));
            Map<String, Long> before = copies(client.info());
            for (int i = 0; i < rounds; i++) {
                value[i] = (byte) ~value[i];
                client.set(key, value);
                assertArrayEquals(value, client.get(key), "round " + i);
            }
            Map<String, Long> after = copies(client.info());
            assertEquals(before.get("ucx_copied_sent_bytes"), after.get("ucx_copied_sent_bytes"),
                "the server copied GET replies of " + size + " B before sending them");
            long received = after.get("ucx_copied_received_bytes") - before.get("ucx_copied_received_bytes");
            // each SET request (the value and a few dozen bytes of header and key) is gathered once, nothing more
            assertTrue(received >= (long) rounds * size && received < (long) rounds * (size + 1024),
                "the server's receive copies for " + rounds + " SETs of " + size + " B: " + received);
        }
    }
}
