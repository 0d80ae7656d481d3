package io.rdmastore.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class HugePagesTest {
    @Test
    void fromTheThresholdBuffersAreWholeAlignedHugePagesAndBelowItAsAsked() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment small = HugePages.allocate(arena, 100_000);
            assertEquals(100_000, small.byteSize());
            assertEquals(0, small.address() % 4096);
            MemorySegment mib = HugePages.allocate(arena, 1 << 20);
            assertEquals(HugePages.SIZE, mib.byteSize());
            assertEquals(0, mib.address() % HugePages.SIZE);
            MemorySegment odd = HugePages.allocate(arena, (3L << 20) + 1);
            assertEquals(2 * HugePages.SIZE, odd.byteSize());
            assertEquals(0, odd.address() % HugePages.SIZE);
            odd.set(ValueLayout.JAVA_BYTE, odd.byteSize() - 1, (byte) 5);
            assertEquals(5, odd.get(ValueLayout.JAVA_BYTE, odd.byteSize() - 1));
            assertEquals(0, odd.get(ValueLayout.JAVA_BYTE, 0), "zero, as a fresh mapping is");
            assertTrue(HugePages.advise(mib), "madvise(MADV_HUGEPAGE) over a 2 MiB-aligned buffer");
        }
    }

    /**
     * The buffer is advised before its first touch, so the touch itself gets a huge page (where THP is on): advised
     * after memory was zeroed, it stayed in 4 KiB pages.
     */
    @Test
    void theFirstTouchGetsAHugePage() throws IOException {
        String mode = Files.readString(Path.of("/sys/kernel/mm/transparent_hugepage/enabled"));
        try (Arena arena = Arena.ofShared()) {
            MemorySegment seg = HugePages.allocate(arena, 1 << 20);
            seg.fill((byte) 1);
            long hugeKb = anonHugeKb(seg.address());
            if (mode.contains("[never]")) {
                assertEquals(0, hugeKb, "THP is off here");
            } else {
                assertEquals(HugePages.SIZE / 1024, hugeKb, "the buffer's mapping in huge pages (THP " + mode.trim()
                    + ")");
            }
        }
    }

    /** {@code AnonHugePages} of the mapping holding {@code address}, from /proc/self/smaps. */
    private static long anonHugeKb(long address) throws IOException {
        boolean inside = false;
        for (String line : Files.readAllLines(Path.of("/proc/self/smaps"))) {
            if (line.matches("^[0-9a-f]+-[0-9a-f]+ .*")) {
                String[] range = line.substring(0, line.indexOf(' ')).split("-");
                inside = Long.parseUnsignedLong(range[0], 16) <= address && address < Long.parseUnsignedLong(range[1],
                    16);
            } else if (inside && line.startsWith("AnonHugePages:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        throw new IOException("no mapping holds " + Long.toHexString(address));
    }
}
