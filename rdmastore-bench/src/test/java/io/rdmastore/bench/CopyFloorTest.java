package io.rdmastore.bench;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * E2's floor probe reads the peer's real bytes, appends the value it was given, times both operations, and leaves no
 * file behind.
 */
class CopyFloorTest {

    private static long floorDirs() throws IOException {
        try (Stream<Path> s = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            return s.filter(p -> p.getFileName().toString().startsWith("rdmastore-bench-floor-")).count();
        }
    }

    @Test
    @Timeout(60)
    void measuresGetAndPutOfThePeersBytes() throws Exception {
        assertTrue(CopyFloor.available(), "process_vm_readv cannot be bound here");
        long dirsBefore = floorDirs();
        try (Child peer = Child.start(CopyFloor.class, Integer.toString(64 << 10))) {
            for (String op : new String[] {"get", "put"}) {
                Histogram h = CopyFloor.measure(peer, op, 64 << 10, 20_000_000L, 50_000_000L);
                assertTrue(h.getTotalCount() >= CopyFloor.MIN_TIMED,
                    op + ": " + h.getTotalCount() + " operations timed");
                assertTrue(h.getValueAtPercentile(50) > 0, op + ": p50 is 0");
            }
            long remote = Long.parseLong(peer.ready.trim());
            // a read of other bytes (shifted by one) is caught, not timed
            IOException e = assertThrows(IOException.class,
                () -> CopyFloor.measure(peer, remote + 1, "get", 4096, 0, 1_000_000L));
            assertTrue(e.getMessage().contains("other bytes"), e.getMessage());
        }
        assertTrue(floorDirs() <= dirsBefore, "the put floor left its directory behind");
    }
}
