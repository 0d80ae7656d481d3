package io.rdmastore.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@link MemoryCopy} copies exactly the bytes asked for, in every direction, with the checks of a segment copy. */
class MemoryCopyTest {
    private static final int[] LENGTHS = {0, 1, 2047, 2048, 4096 + 3, 256 << 10, (256 << 10) + 1, 600_001};

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void memcpyIsBoundOnLinux() {
        assertTrue(MemoryCopy.usesMemcpy(), "memcpy could not be bound: every copy would take the JVM's stub");
    }

    @Test
    void copiesBetweenHeapAndNativeAtOffsets() {
        try (Arena arena = Arena.ofConfined()) {
            for (int n : LENGTHS) {
                byte[] value = random(n, n);
                MemorySegment nat = arena.allocate(n + 17);
                nat.fill((byte) 0x5a);
                MemoryCopy.copy(value, nat, 9);
                assertArrayEquals(value, nat.asSlice(9, n).toArray(ValueLayout.JAVA_BYTE), "heap to native, " + n);
                assertEquals(0x5a, nat.get(ValueLayout.JAVA_BYTE, 8), "a byte before the range was written, " + n);
                assertEquals(0x5a, nat.get(ValueLayout.JAVA_BYTE, 9 + n), "a byte after the range was written, " + n);

                byte[] back = new byte[n];
                MemoryCopy.copy(nat, 9, MemorySegment.ofArray(back), 0, n);
                assertArrayEquals(value, back, "native to heap, " + n);

                MemorySegment other = arena.allocate(n + 5);
                MemoryCopy.copy(nat, 9, other, 5, n);
                assertArrayEquals(value, other.asSlice(5, n).toArray(ValueLayout.JAVA_BYTE), "native to native, " + n);
            }
        }
    }

    @Test
    void overlappingRangesMoveAsMemmoveDoes() {
        int n = 300_000;
        byte[] value = random(n + 1000, 7);
        MemorySegment s = MemorySegment.ofArray(value.clone());
        MemoryCopy.copy(s, 0, s, 1000, n);
        byte[] expected = value.clone();
        System.arraycopy(value, 0, expected, 1000, n);
        assertArrayEquals(expected, s.toArray(ValueLayout.JAVA_BYTE));
    }

    @Test
    void refusesWhatMemorySegmentCopyRefuses() {
        byte[] value = random(8192, 3);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment small = arena.allocate(8191);
            assertThrows(IndexOutOfBoundsException.class, () -> MemoryCopy.copy(value, small, 0));
            MemorySegment big = arena.allocate(8192);
            assertThrows(IndexOutOfBoundsException.class, () -> MemoryCopy.copy(value, big, 1));
            assertThrows(IllegalArgumentException.class, () -> MemoryCopy.copy(value, big.asReadOnly(), 0));
            assertTrue(Arrays.equals(new byte[8192], big.toArray(ValueLayout.JAVA_BYTE)), "a refused copy wrote");
        }
        Arena closed = Arena.ofConfined();
        MemorySegment gone = closed.allocate(8192);
        closed.close();
        assertThrows(IllegalStateException.class, () -> MemoryCopy.copy(value, gone, 0));
    }
}
