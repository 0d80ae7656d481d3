package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.RdmaStoreClient;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * GET over ucx with lending on and off, side by side: two servers in this JVM (threshold 64 KiB and 0), one client
 * each, batches alternating so both see the same load. Prints p50 per size and path (get into a new array, get into
 * a reused direct buffer); asserts every value read is whole. {@code -Drdmastore.probe.rounds=N} measures longer
 * (default 10 rounds of 20 GETs per size and path).
 */
@Timeout(300)
class LargeValueLatencyTest {
    private static final int[] SIZES = {64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20};

    /** Mean server-side phases per GET / GET_LARGE from INFO's Timing section. */
    private static String timing(String label, String info) {
        java.util.Map<String, Long> m = new java.util.HashMap<>();
        for (String line : info.split("\r\n")) {
            int colon = line.indexOf(':');
            if (colon > 0 && (line.startsWith("get_") || line.startsWith("value_"))) {
                try {
                    m.put(line.substring(0, colon), Long.parseLong(line.substring(colon + 1).trim()));
                } catch (NumberFormatException e) {
                    // not a counter
                }
            }
        }
        StringBuilder b = new StringBuilder("  server " + label + ":");
        for (String op : new String[] {"get", "get_large"}) {
            Long n = m.get(op + "_count");
            if (n != null && n > 0) {
                b.append(String.format(" %s n=%d source %.1f process %.1f sink %.1f us;", op, n,
                    m.get(op + "_source_ns") / 1e3 / n, m.get(op + "_process_ns") / 1e3 / n,
                    m.get(op + "_sink_ns") / 1e3 / n));
            }
        }
        return b.append('\n').toString();
    }

    @Test
    void lendingAgainstSendingSideBySide(@TempDir Path dir) {
        assertTrue(TestServers.transports().contains("ucx"), "ucx is required");
        int rounds = Integer.getInteger("rdmastore.probe.rounds", 10);
        int batch = 20;
        try (RdmaStoreServer on = TestServers.start(dir.resolve("on"), c -> c.rendezvousThreshold(64 << 10).timing(true));
             RdmaStoreServer off = TestServers.start(dir.resolve("off"), c -> c.rendezvousThreshold(0).timing(true));
             RdmaStoreClient con = TestServers.client(on, "ucx");
             RdmaStoreClient coff = TestServers.client(off, "ucx")) {
            StringBuilder report = new StringBuilder("GET p50 us over ucx, lending on / off (ratio):\n");
            for (int size : SIZES) {
                byte[] key = ("k" + size).getBytes(StandardCharsets.UTF_8);
                byte[] value = new byte[size];
                new SplittableRandom(size).nextBytes(value);
                con.set(key, value);
                coff.set(key, value);
                ByteBuffer dst = ByteBuffer.allocateDirect(size);
                long[][] t = new long[4][rounds * batch];
                for (int r = 0; r < rounds; r++) {
                    for (int path = 0; path < 4; path++) {
                        RdmaStoreClient c = path % 2 == 0 ? con : coff;
                        boolean intoBuffer = path >= 2;
                        for (int i = 0; i < batch; i++) {
                            long t0 = System.nanoTime();
                            if (intoBuffer) {
                                dst.clear();
                                assertEquals(size, c.get(key, dst));
                            } else {
                                assertEquals(size, c.get(key).length);
                            }
                            t[path][r * batch + i] = System.nanoTime() - t0;
                        }
                        if (r == 0) {
                            byte[] got = intoBuffer ? new byte[size] : c.get(key);
                            if (intoBuffer) {
                                dst.get(0, got);
                            }
                            assertArrayEquals(value, got);
                        }
                    }
                }
                double[] p50 = new double[4];
                for (int path = 0; path < 4; path++) {
                    long[] x = t[path];
                    Arrays.sort(x);
                    p50[path] = x[x.length / 2] / 1000.0;
                }
                report.append(String.format("  %7d B  byte[]: %8.1f / %8.1f (%.2f)   buffer: %8.1f / %8.1f (%.2f)%n",
                    size, p50[0], p50[1], p50[0] / p50[1], p50[2], p50[3], p50[2] / p50[3]));
            }
            report.append(timing("on", con.info())).append(timing("off", coff.info()));
            System.out.print(report);
        }
    }
}
