package io.rdmastore.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
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
            assertEquals(0, odd.get(ValueLayout.JAVA_BYTE, 0), "zeroed as Arena.allocate gives it");
            assertTrue(HugePages.advise(mib), "madvise(MADV_HUGEPAGE) over a 2 MiB-aligned buffer");
        }
    }
}
