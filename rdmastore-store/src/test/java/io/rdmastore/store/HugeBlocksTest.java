package io.rdmastore.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class HugeBlocksTest {
    @Test
    void sizesRoundUpToAClassAtMostAFifthLargerAndLargeOnesToWholeHugePages() {
        assertEquals(256 << 10, HugeBlocks.classSize(256 << 10));
        assertEquals(1 << 20, HugeBlocks.classSize(1 << 20));
        assertEquals(1280 << 10, HugeBlocks.classSize((1 << 20) + 1));
        assertEquals(20L << 20, HugeBlocks.classSize((18L << 20) + 1));
        for (long size = HugeBlocks.FROM; size <= HugeBlocks.LARGEST_CLASS; size += 12_345) {
            long c = HugeBlocks.classSize(size);
            assertTrue(c >= size && c - size <= size / 4, size + " -> " + c);
        }
    }

    @Test
    @SuppressWarnings("restricted")
    void blocksHoldTheirBytesApartAndAFreedOneIsReusedByItsClass() {
        HugeBlocks blocks = new HugeBlocks();
        long[] sizes = {256 << 10, 300_000, 1 << 20, (1 << 20) + 1, 5_000_000, 20L << 20};
        List<MemorySegment> held = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            for (long size : sizes) {
                MemorySegment s = MemorySegment.ofAddress(blocks.allocate(size)).reinterpret(size);
                s.fill((byte) held.size());
                held.add(s);
            }
        }
        for (int i = 0; i < held.size(); i++) {
            MemorySegment s = held.get(i);
            assertEquals((byte) i, s.get(ValueLayout.JAVA_BYTE, 0), "block " + i + " was overwritten");
            assertEquals((byte) i, s.get(ValueLayout.JAVA_BYTE, s.byteSize() - 1), "block " + i + " was overwritten");
        }
        long mapped = blocks.mappedBytes();
        assertTrue(mapped >= 3 * (20L << 20), "mapped " + mapped);
        MemorySegment freed = held.get(2);
        blocks.free(freed.address(), freed.byteSize());
        assertEquals(freed.address(), blocks.allocate(1 << 20), "a freed block goes to the next value of its class");
        MemorySegment big = held.get(5);
        blocks.free(big.address(), big.byteSize());
        assertEquals(mapped - (20L << 20), blocks.mappedBytes(), "a block of its own is unmapped when freed");
        Set<Long> addresses = new HashSet<>();
        for (MemorySegment s : held) {
            assertTrue(addresses.add(s.address()));
        }
    }

    @Test
    @SuppressWarnings("restricted")
    void blocksAreTwoMegabyteAlignedChunksAdvisedForHugePages() throws IOException {
        HugeBlocks blocks = new HugeBlocks();
        long at = blocks.allocate(1 << 20);
        assertEquals(0, at % HugeBlocks.PAGE, "the chunk's first block starts on a huge page");
        assertNotEquals(at, blocks.allocate(1 << 20));
        MemorySegment.ofAddress(at).reinterpret(1 << 20).fill((byte) 1);
        if (Files.isDirectory(Path.of("/sys/kernel/mm/transparent_hugepage"))) {
            // "hg": madvise(MADV_HUGEPAGE) took; whether a huge page backs it is then the kernel's free memory
            assertTrue(vmFlags(at).contains(" hg"), "VmFlags of the chunk: " + vmFlags(at));
        }
    }

    @Test
    void theStoreKeepsLargeValuesInHugeBlocksAndReadsThemBack(@org.junit.jupiter.api.io.TempDir Path dir) {
        try (Store store = TestSupport.open(dir)) {
            byte[] value = new byte[1 << 20];
            for (int i = 0; i < value.length; i++) {
                value[i] = (byte) (i * 31);
            }
            store.set("big".getBytes(), value);
            assertTrue(store.stats().largeValueMappedBytes() >= HugeBlocks.CHUNK);
            assertEquals(java.util.Arrays.hashCode(value), java.util.Arrays.hashCode(store.get("big".getBytes())));
        }
    }

    /** The VmFlags line of the mapping holding {@code address} in /proc/self/smaps. */
    private static String vmFlags(long address) throws IOException {
        boolean inside = false;
        for (String line : Files.readAllLines(Path.of("/proc/self/smaps"))) {
            int dash = line.indexOf('-');
            int space = line.indexOf(' ');
            if (dash > 0 && space > dash && line.substring(0, dash).matches("[0-9a-f]+")) {
                long start = Long.parseUnsignedLong(line.substring(0, dash), 16);
                long end = Long.parseUnsignedLong(line.substring(dash + 1, space), 16);
                inside = address >= start && address < end;
            } else if (inside && line.startsWith("VmFlags:")) {
                return line;
            }
        }
        return "(no mapping)";
    }
}
