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

    /** A frame whose payload is a DELETE of a key of {@code keyBytes} bytes of {@code fill}, then its position. */
    private static FrameBuilder frameOf(int keyBytes, byte fill) {
        byte[] k = new byte[keyBytes];
        Arrays.fill(k, fill);
        FrameBuilder f = new FrameBuilder();
        f.op(LogDescriptor.OP_DELETE).putBytes(k);
        return f;
    }

    /** Bytes a {@link #frameOf} frame takes in the log. */
    private static int frameBytes(int keyBytes) {
        return LogDescriptor.HEADER_LENGTH + 1 + 4 + keyBytes + LogDescriptor.POSITION_OP_LENGTH;
    }

    private static long append(LogWriter w, FrameBuilder f) {
        return w.append(f, f.sealPositioned());
    }

    @Test
    @Timeout(20)
    void bufferedFramesReachTheFileWithinTheWriteBehindIntervalWithoutAnyFsync() throws Exception {
        try (LogWriter w = new LogWriter(dir, 1, 0, new Oplog(0))) {
            Path file = dir.resolve(LogDescriptor.segmentName(1));
            long before = Files.size(file);
            long ticket = append(w, frameOf(100, (byte) 7));
            int n = frameBytes(100);
            assertEquals(n, ticket);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            while (Files.size(file) < before + n && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertEquals(before + n, Files.size(file), "the write-behind thread did not write the batch within 1 s");
            assertTrue(w.dirty(), "written to the OS is not fsynced");
            w.force();
            assertTrue(!w.dirty());
        }
    }

    @Test
    void aLargeValueGrowsTheFrameOnceWithRoomForItsTail() {
        for (int size : new int[] {256 * 1024, 1024 * 1024, 3 * 1024 * 1024 + 7}) {
            FrameBuilder f = frameOf(size, (byte) 1);
            int grown = f.capacity();
            ByteBuffer sealed = f.sealPositioned();
            assertEquals(grown, f.capacity(), size + " B: sealing grew the frame again");
            assertTrue(f.capacity() < frameBytes(size) + 4096, size + " B: capacity " + f.capacity());
            assertEquals(frameBytes(size), sealed.remaining());
        }
    }

    @Test
    @Timeout(20)
    void framesLargerThanTheBufferKeepAppendOrder() throws Exception {
        int small = 1000;
        int big = LogWriter.BUFFER_BYTES + 10;
        try (LogWriter w = new LogWriter(dir, 1, 0, new Oplog(0))) {
            append(w, frameOf(small, (byte) 1));
            append(w, frameOf(big, (byte) 2));
            long t = append(w, frameOf(small, (byte) 3));
            assertEquals(2L * frameBytes(small) + frameBytes(big), t);
            assertEquals(3, w.lastIndex(), "each frame takes the next oplog index");
            w.syncTo(t);
        }
        byte[] all = Files.readAllBytes(dir.resolve(LogDescriptor.segmentName(1)));
        int m = LogDescriptor.MAGIC_LENGTH;
        int key = LogDescriptor.HEADER_LENGTH + 5;
        assertEquals(m + 2 * frameBytes(small) + frameBytes(big), all.length);
        assertEquals(1, all[m + key]);
        assertEquals(1, all[m + key + small - 1]);
        assertEquals(2, all[m + frameBytes(small) + key]);
        assertEquals(2, all[m + frameBytes(small) + key + big - 1]);
        assertEquals(3, all[m + frameBytes(small) + frameBytes(big) + key]);
        assertEquals(3, all[all.length - 1 - LogDescriptor.POSITION_OP_LENGTH]);
    }

    /**
     * A rotation makes no fsync (it runs under every shard lock); the old segment is forced by finishRotation after
     * the locks, or by the next syncTo first: a frame of the new segment is never reported durable before the old
     * segment's frames are, and the old segment's channel is closed then.
     */
    @Test
    @Timeout(20)
    void aRotationDefersTheOldSegmentsFsyncToTheNextSync() throws Exception {
        try (LogWriter w = new LogWriter(dir, 1, 0, new Oplog(0))) {
            long first = append(w, frameOf(100, (byte) 1));
            assertEquals(2, w.rotate());
            assertTrue(w.dirty(), "the old segment is not forced by the rotation");
            long second = append(w, frameOf(100, (byte) 2));
            assertTrue(second > first);
            w.syncTo(second);
            assertTrue(!w.dirty(), "the sync covers both segments");
            assertEquals(3, w.rotate());
            w.finishRotation();
            w.finishRotation();
            assertTrue(!w.dirty(), "nothing was appended since: the finished rotation leaves nothing to sync");
            long third = append(w, frameOf(100, (byte) 3));
            w.syncTo(third);
        }
        int m = LogDescriptor.MAGIC_LENGTH;
        assertEquals(m + frameBytes(100), Files.size(dir.resolve(LogDescriptor.segmentName(1))));
        assertEquals(m + frameBytes(100), Files.size(dir.resolve(LogDescriptor.segmentName(2))));
        assertEquals(m + frameBytes(100), Files.size(dir.resolve(LogDescriptor.segmentName(3))));
    }

    @Test
    @Timeout(20)
    void appendAfterCloseFailsClearly() throws Exception {
        LogWriter w = new LogWriter(dir, 1, 0, new Oplog(0));
        w.close();
        StoreException e = assertThrows(StoreException.class, () -> append(w, frameOf(10, (byte) 1)));
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

    /**
     * Values from {@link Store#EXTERNAL_VALUE_BYTES} on are logged from the entry's own block: the file holds the same
     * frame (a CRC over the inline layout), a pinned reader keeps its bytes while the key is overwritten before and
     * after the log wrote the block, nothing leaks, and replay gives back every value.
     */
    @Test
    @Timeout(60)
    void largeValuesLoggedFromTheirBlockSurviveOverwritesPinsAndReopen() {
        int big = (int) Store.EXTERNAL_VALUE_BYTES;
        int[] sizes = {big - 1, big, 3 * big + 7, LogWriter.BUFFER_BYTES, LogWriter.BUFFER_BYTES + 5};
        java.util.Map<String, byte[]> expected = new java.util.HashMap<>();
        try (Store st = Store.open(TestSupport.config(dir).fsync(FsyncPolicy.EVERYSEC))) {
            long baseline = st.stats().usedOffHeapBytes();
            for (int round = 0; round < 4; round++) {
                for (int i = 0; i < sizes.length; i++) {
                    byte[] v = new byte[sizes[i]];
                    Arrays.fill(v, (byte) (round * 16 + i));
                    v[v.length - 1] = (byte) ~v[0];
                    String key = "big" + i;
                    if ((round + i) % 2 == 0) {
                        st.set(b(key), v);
                    } else {
                        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
                            java.lang.foreign.MemorySegment seg = a.allocate(v.length);
                            java.lang.foreign.MemorySegment.copy(v, 0, seg, java.lang.foreign.ValueLayout.JAVA_BYTE,
                                0, v.length);
                            st.set(b(key), seg, new SetOptions());
                            seg.fill((byte) 0x5a); // the caller's memory is free again once set returns
                        }
                    }
                    expected.put(key, v);
                }
                PinnedValue pin = st.pinValue(b("big2"));
                byte[] pinned = expected.get("big2").clone();
                st.set(b("big2"), new byte[sizes[2]]);
                assertArrayEquals(pinned, pin.segment().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE),
                    "an overwrite leaves a pinned value as it was");
                pin.release();
                st.set(b("big2"), expected.get("big2"));
                for (var e : expected.entrySet()) {
                    assertArrayEquals(e.getValue(), st.get(b(e.getKey())), e.getKey());
                }
            }
            st.flush();
            long live = 0;
            for (byte[] v : expected.values()) {
                live += v.length;
            }
            long used = st.stats().usedOffHeapBytes() - baseline;
            assertTrue(used >= live && used < live + 64 * 1024, "off-heap " + used + " B for " + live
                + " B of values: overwritten blocks are freed once written");
            assertEquals(0, st.pinnedValues());
        }
        assertTrue(LogChecker.check(dir).clean(), "every frame's length and CRC check");
        try (Store st = TestSupport.open(dir)) {
            for (var e : expected.entrySet()) {
                assertArrayEquals(e.getValue(), st.get(b(e.getKey())), "after replay: " + e.getKey());
            }
        }
    }

    @Test
    @Timeout(60)
    void aValueFilledInTheStoresBlockIsAdoptedWrittenOrNotAndSurvivesReopen() {
        int size = 3 * (int) Store.EXTERNAL_VALUE_BYTES + 11;
        byte[] v = new byte[size];
        for (int i = 0; i < size; i++) {
            v[i] = (byte) (i * 7 + 3);
        }
        try (Store st = Store.open(TestSupport.config(dir).fsync(FsyncPolicy.EVERYSEC))) {
            long baseline = st.stats().usedOffHeapBytes();
            assertEquals(null, st.allocateValue(Store.EXTERNAL_VALUE_BYTES - 1), "a small value goes by set");
            assertThrows(LimitExceededException.class, () -> st.allocateValue(Long.MAX_VALUE / 2));

            java.lang.foreign.MemorySegment block = st.allocateValue(size);
            assertEquals(size, block.byteSize());
            assertEquals(baseline + size, st.stats().usedOffHeapBytes());
            java.lang.foreign.MemorySegment.copy(v, 0, block, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, size);
            assertTrue(st.setAdopting(b("k"), block, new SetOptions()).written());
            assertArrayEquals(v, st.get(b("k")));

            // NX on a present key: not written, and the block is freed by the store
            java.lang.foreign.MemorySegment other = st.allocateValue(size);
            other.fill((byte) 1);
            assertTrue(!st.setAdopting(b("k"), other, new SetOptions().ifAbsent(true)).written());
            // refused options: the block is freed too
            java.lang.foreign.MemorySegment refused = st.allocateValue(size);
            assertThrows(BadRequestException.class,
                () -> st.setAdopting(b("k"), refused, new SetOptions().ifAbsent(true).ifPresent(true)));
            // one given back unused
            st.freeValue(st.allocateValue(size));
            st.flush();
            assertEquals(baseline + size, st.stats().usedOffHeapBytes(), "only the adopted value's block stays");
            assertArrayEquals(v, st.get(b("k")), "NX left the value as it was");

            // inside an exclusive scope the value is copied into the scope's frame and the block freed
            java.lang.foreign.MemorySegment scoped = st.allocateValue(size);
            scoped.fill((byte) 9);
            st.exclusive(() -> st.setAdopting(b("s"), scoped, new SetOptions()));
            byte[] nines = new byte[size];
            Arrays.fill(nines, (byte) 9);
            assertArrayEquals(nines, st.get(b("s")));
        }
        assertTrue(LogChecker.check(dir).clean(), "every frame's length and CRC check");
        try (Store st = TestSupport.open(dir)) {
            assertArrayEquals(v, st.get(b("k")), "the adopted value was logged from its block");
        }
    }
}
