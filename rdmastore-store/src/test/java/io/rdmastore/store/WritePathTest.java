package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static io.rdmastore.store.TestSupport.s;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The buffered log writer and in-place string overwrites: what the fast write path must still guarantee. */
class WritePathTest {
    @TempDir
    Path dir;

    private static ByteBuffer frameOf(int payloadBytes, byte fill) {
        byte[] p = new byte[payloadBytes];
        Arrays.fill(p, fill);
        return ByteBuffer.wrap(p);
    }

    @Test
    @Timeout(20)
    void bufferedFramesReachTheFileWithinTheWriteBehindIntervalWithoutAnyFsync() throws Exception {
        try (LogWriter w = new LogWriter(dir, 1, 0)) {
            Path file = dir.resolve(LogDescriptor.segmentName(1));
            long before = Files.size(file);
            long ticket = w.append(frameOf(100, (byte) 7));
            assertEquals(100, ticket);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            while (Files.size(file) < before + 100 && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertEquals(before + 100, Files.size(file), "the write-behind thread did not write the batch within 1 s");
            assertTrue(w.dirty(), "written to the OS is not fsynced");
            w.force();
            assertTrue(!w.dirty());
        }
    }

    @Test
    @Timeout(20)
    void framesLargerThanTheBufferKeepAppendOrder() throws Exception {
        int small = 1000;
        int big = LogWriter.BUFFER_BYTES + 10;
        try (LogWriter w = new LogWriter(dir, 1, 0)) {
            w.append(frameOf(small, (byte) 1));
            w.append(frameOf(big, (byte) 2));
            long t = w.append(frameOf(small, (byte) 3));
            assertEquals(2L * small + big, t);
            w.syncTo(t);
        }
        byte[] all = Files.readAllBytes(dir.resolve(LogDescriptor.segmentName(1)));
        int m = LogDescriptor.MAGIC_LENGTH;
        assertEquals(m + 2 * small + big, all.length);
        assertEquals(1, all[m]);
        assertEquals(1, all[m + small - 1]);
        assertEquals(2, all[m + small]);
        assertEquals(2, all[m + small + big - 1]);
        assertEquals(3, all[m + small + big]);
        assertEquals(3, all[all.length - 1]);
    }

    @Test
    @Timeout(20)
    void appendAfterCloseFailsClearly() throws Exception {
        LogWriter w = new LogWriter(dir, 1, 0);
        w.close();
        StoreException e = assertThrows(StoreException.class, () -> w.append(frameOf(10, (byte) 1)));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
    }

    @Test
    @Timeout(30)
    void overwritesInPlaceAndAcrossSizesSurviveReopen() {
        byte[] k = b("k");
        long memAfterFirst;
        try (Store st = TestSupport.open(dir)) {
            st.set(k, b("0123456789"));
            memAfterFirst = st.stats().usedOffHeapBytes();
            st.set(k, b("abcdefghij"));
            assertEquals(memAfterFirst, st.stats().usedOffHeapBytes(), "a same-size overwrite should reuse the block");
            assertEquals("abcdefghij", s(st.get(k)));
            st.set(k, b("xyz"));
            assertEquals("xyz", s(st.get(k)));
            byte[] large = new byte[5000];
            Arrays.fill(large, (byte) 'L');
            st.set(k, large);
            assertArrayEquals(large, st.get(k));
            st.set(k, b("short"), new SetOptions().expireAtMillis(System.currentTimeMillis() + 600_000));
            assertTrue(st.pttl(k) > 0);
            st.set(k, b("short!"));
            assertEquals(-1, st.pttl(k), "plain SET clears the TTL even in place");
            for (int i = 0; i < 20_000; i++) {
                st.set(b("n" + (i % 100)), b("v" + i));
            }
        }
        try (Store st = TestSupport.open(dir)) {
            assertEquals("short!", s(st.get(k)));
            for (int i = 20_000 - 100; i < 20_000; i++) {
                assertEquals("v" + i, s(st.get(b("n" + (i % 100)))));
            }
        }
    }
}
