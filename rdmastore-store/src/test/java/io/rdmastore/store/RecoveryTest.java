package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static io.rdmastore.store.TestSupport.s;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class RecoveryTest {
    @TempDir
    Path dir;

    private Path onlySegment() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            List<Path> segs = s.filter(p -> p.getFileName().toString().endsWith(".rlog")).sorted().toList();
            return segs.getLast();
        }
    }

    private void write(int n) {
        try (Store st = TestSupport.open(dir)) {
            for (int i = 0; i < n; i++) {
                st.set(b("k" + i), b("value-" + i));
            }
        }
    }

    @Test
    void reopenReplaysTheLog() {
        write(100);
        try (Store st = TestSupport.open(dir)) {
            assertEquals(100, st.recoveryReport().recordsReplayed());
            assertEquals(0, st.recoveryReport().tornTailBytesCut());
            assertEquals(100, st.size());
            assertEquals("value-42", s(st.get(b("k42"))));
        }
    }

    @Test
    void tornTailOfGarbageIsCutAndReported() throws IOException {
        write(10);
        Path seg = onlySegment();
        long size = Files.size(seg);
        Files.write(seg, new byte[] {1, 2, 3, 4, 5, 6, 7}, StandardOpenOption.APPEND);
        try (Store st = TestSupport.open(dir)) {
            assertEquals(7, st.recoveryReport().tornTailBytesCut());
            assertEquals(10, st.size());
            st.set(b("after"), b("x"));
        }
        assertEquals(size + Files.size(onlySegment()) - size, Files.size(onlySegment()));
        try (Store st = TestSupport.open(dir)) {
            assertEquals(0, st.recoveryReport().tornTailBytesCut());
            assertEquals("x", s(st.get(b("after"))));
            assertEquals(11, st.size());
        }
    }

    @Test
    void incompleteLastRecordIsCut() throws IOException {
        write(10);
        Path seg = onlySegment();
        long size = Files.size(seg);
        try (FileChannel ch = FileChannel.open(seg, StandardOpenOption.WRITE)) {
            ch.truncate(size - 3);
        }
        try (Store st = TestSupport.open(dir)) {
            assertTrue(st.recoveryReport().tornTailBytesCut() > 0);
            assertEquals(9, st.size(), "the torn last SET is gone, the others are intact");
            assertNull(st.get(b("k9")));
        }
    }

    @Test
    void badCrcOfTheLastRecordIsATornTail() throws IOException {
        write(10);
        Path seg = onlySegment();
        flipByte(seg, Files.size(seg) - 2);
        try (Store st = TestSupport.open(dir)) {
            assertTrue(st.recoveryReport().tornTailBytesCut() > 0);
            assertEquals(9, st.size());
        }
    }

    private static void flipByte(Path file, long offset) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one, offset);
            one.put(0, (byte) (one.get(0) ^ 0x5a));
            one.rewind();
            ch.write(one, offset);
        }
    }

    @Test
    void corruptMiddleStopsOpenAndRepairFixesIt() throws IOException {
        write(50);
        Path seg = onlySegment();
        long size = Files.size(seg);
        flipByte(seg, size / 2);
        CorruptLogException e = assertThrows(CorruptLogException.class, () -> TestSupport.open(dir));
        assertTrue(e.getMessage().contains(seg.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("offset " + e.offset()), e.getMessage());
        assertTrue(e.getMessage().contains("rdmastore check-log --repair"), e.getMessage());
        assertTrue(e.offset() > 0 && e.offset() <= size / 2);
        assertEquals(size, Files.size(seg), "a failed open changes nothing on disk");

        LogCheckReport check = LogChecker.check(dir);
        assertFalse(check.clean());
        assertEquals(e.offset(), check.files().getFirst().firstBadOffset());
        assertFalse(check.files().getFirst().tornTail());

        LogCheckReport repaired = LogChecker.repair(dir);
        LogCheckReport.FileReport fr = repaired.files().getFirst();
        assertNotNull(fr.backup());
        assertEquals(size, Files.size(fr.backup()), "the original is kept");
        assertEquals(size - e.offset(), fr.bytesCut());
        assertTrue(LogChecker.check(dir).clean());
        try (Store st = TestSupport.open(dir)) {
            long n = st.size();
            assertTrue(n > 0 && n < 50, "records before the damage survive: " + n);
            for (int i = 0; i < n; i++) {
                assertEquals("value-" + i, s(st.get(b("k" + i))));
            }
        }
    }

    @Test
    void snapshotTruncatesTheLogAndRecoveryUsesIt() throws IOException {
        try (Store st = TestSupport.open(dir)) {
            for (int i = 0; i < 200; i++) {
                st.set(b("k" + i), b("v" + i));
                st.hset(b("h" + (i % 10)), List.of(b("f" + i), b("x" + i)));
            }
            st.snapshot();
            assertTrue(st.lastSnapshotEpochMillis() > 0);
            assertEquals(0, st.stats().changesSinceLastSave());
            st.set(b("late"), b("1"));
            st.delete(b("k0"));
        }
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(1, s.filter(p -> p.getFileName().toString().endsWith(".rlog")).count(),
                    "segments before the snapshot were deleted");
        }
        try (Store st = TestSupport.open(dir)) {
            RecoveryReport r = st.recoveryReport();
            assertNotNull(r.snapshotUsed());
            assertEquals(2, r.recordsReplayed());
            assertEquals(210, st.size());
            assertNull(st.get(b("k0")));
            assertEquals("v199", s(st.get(b("k199"))));
            assertEquals(20, st.hlen(b("h3")));
            assertEquals("1", s(st.get(b("late"))));
        }
    }

    @Test
    void snapshotWhileWritingConcurrentlyLosesNothing() throws Exception {
        int writers = 3;
        List<Thread> threads = new ArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();
        int[] written = new int[writers];
        try (Store st = Store.open(TestSupport.config(dir).snapshotLogBytes(64 * 1024))) {
            for (int w = 0; w < writers; w++) {
                int id = w;
                Thread t = new Thread(() -> {
                    int i = 0;
                    while (!stop.get()) {
                        st.set(b("w" + id + ":" + i), b("v" + i));
                        st.hset(b("hash" + id), List.of(b("f" + i), b("v" + i)));
                        st.append(b("log" + id), b("."));
                        i++;
                    }
                    written[id] = i;
                });
                threads.add(t);
                t.start();
            }
            for (int k = 0; k < 5; k++) {
                st.snapshotAsync().get();
                Thread.sleep(50);
            }
            stop.set(true);
            for (Thread t : threads) {
                t.join();
            }
        }
        try (Store st = TestSupport.open(dir)) {
            assertNotNull(st.recoveryReport().snapshotUsed());
            for (int w = 0; w < writers; w++) {
                for (int i = 0; i < written[w]; i++) {
                    assertEquals("v" + i, s(st.get(b("w" + w + ":" + i))), "w" + w + ":" + i);
                }
                assertEquals(written[w], st.hlen(b("hash" + w)));
                assertEquals(written[w], st.strlen(b("log" + w)));
            }
        }
    }

    /**
     * Blob values overwritten while snapshots run: fuzzy snapshots name versions that later writes retire and the
     * reaper deletes; replay must still end with every key's last value and no file left over.
     */
    @Test
    void snapshotWhileOverwritingBlobValuesLosesNothing() throws Exception {
        int writers = 3;
        int keys = 4;
        List<Thread> threads = new ArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();
        int[][] last = new int[writers][keys];
        StoreConfig cfg = TestSupport.config(dir).snapshotLogBytes(4 * 1024)
            .blobs(new io.rdmastore.store.blob.BlobConfig().thresholdBytes(16).reserveBytes(0));
        try (Store st = Store.open(cfg)) {
            for (int w = 0; w < writers; w++) {
                int id = w;
                Thread t = new Thread(() -> {
                    for (int i = 0; !stop.get() || i < keys; i++) {
                        st.set(b("b" + id + ":" + i % keys), blobValue(i));
                        last[id][i % keys] = i;
                    }
                });
                threads.add(t);
                t.start();
            }
            for (int k = 0; k < 5; k++) {
                st.snapshotAsync().get();
                Thread.sleep(30);
            }
            stop.set(true);
            for (Thread t : threads) {
                t.join();
            }
        }
        try (Store st = Store.open(cfg)) {
            assertNotNull(st.recoveryReport().snapshotUsed());
            for (int w = 0; w < writers; w++) {
                for (int k = 0; k < keys; k++) {
                    assertEquals(s(blobValue(last[w][k])), s(st.get(b("b" + w + ":" + k))), "b" + w + ":" + k);
                }
            }
            try (Stream<Path> files = Files.list(st.blobs().directory())) {
                assertEquals(writers * keys, files.count(), "one file per key, none left over");
            }
        }
    }

    /**
     * Strings of 32 KiB or more go into a snapshot as their own frames, written from their blocks after the shard's
     * lock is released: the snapshot must hold them byte for byte (one on each side of the threshold, a TTL kept),
     * and must let go of every block, so overwriting them afterwards gives their memory back.
     */
    @Test
    void largeStringsAreSnapshottedFromTheirBlocks() throws IOException {
        long expireAt = System.currentTimeMillis() + 3_600_000;
        byte[] below = largeValue(7, (int) Store.EXTERNAL_VALUE_BYTES - 1);
        byte[] at = largeValue(8, (int) Store.EXTERNAL_VALUE_BYTES);
        byte[] big = largeValue(9, 1 << 20);
        try (Store st = TestSupport.open(dir)) {
            st.set(b("below"), below);
            st.set(b("at"), at);
            st.set(b("big"), big, new SetOptions().expireAtMillis(expireAt));
            st.set(b("small"), b("s"));
            st.snapshot();
            long before = st.stats().usedOffHeapBytes();
            for (String k : List.of("below", "at", "big")) {
                st.set(b(k), b("x"));
            }
            assertTrue(st.stats().usedOffHeapBytes() < before - (1 << 20),
                "overwritten values' blocks are freed, none held by the snapshot: "
                    + st.stats().usedOffHeapBytes() + " bytes used, " + before + " before");
        }
        // the log after the snapshot would restore the overwrites: only the snapshot is read back
        try (Stream<Path> files = Files.list(dir)) {
            for (Path p : files.filter(f -> f.getFileName().toString().endsWith(".rlog")).toList()) {
                Files.delete(p);
            }
        }
        try (Store st = TestSupport.open(dir)) {
            assertNotNull(st.recoveryReport().snapshotUsed());
            assertEquals(4, st.size());
            assertTrue(java.util.Arrays.equals(below, st.get(b("below"))), "value under 32 KiB");
            assertTrue(java.util.Arrays.equals(at, st.get(b("at"))), "32 KiB value");
            assertTrue(java.util.Arrays.equals(big, st.get(b("big"))), "1 MiB value");
            assertEquals(expireAt, st.expireTime(b("big")));
            assertEquals("s", s(st.get(b("small"))));
        }
    }

    /**
     * Large strings written from their blocks while writers overwrite, append to and SETRANGE them: an in-place change
     * of a block the snapshot still has to write must copy it, and an overwrite must not free it first.
     */
    @Test
    // a thread of its own: a log that stopped taking writes would hang close(), which no interrupt ends
    @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void snapshotWhileChangingLargeStringsLosesNothing() throws Exception {
        int writers = 2;
        // not a multiple of the three operations, so every key sees each of them
        int keys = 4;
        List<Thread> threads = new ArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();
        var failed = new java.util.concurrent.atomic.AtomicReference<Throwable>();
        List<java.util.Map<String, byte[]>> models = new ArrayList<>();
        try (Store st = Store.open(TestSupport.config(dir).snapshotLogBytes(0))) {
            for (int w = 0; w < writers; w++) {
                int id = w;
                java.util.Map<String, byte[]> model = new java.util.HashMap<>();
                models.add(model);
                for (int k = 0; k < keys; k++) {
                    byte[] v = largeValue(1000 * id + k, 40 * 1024);
                    st.set(b("L" + id + ":" + k), v);
                    model.put("L" + id + ":" + k, v);
                }
                Thread t = new Thread(() -> {
                    for (int i = 0; !stop.get() || i < 3 * keys; i++) {
                        String key = "L" + id + ":" + i % keys;
                        byte[] v;
                        switch (i % 3) {
                            case 0 -> {
                                v = largeValue(i, 32 * 1024 + i % 5000);
                                st.set(b(key), v);
                            }
                            case 1 -> {
                                byte[] old = model.get(key);
                                v = java.util.Arrays.copyOf(old, old.length + 3);
                                v[old.length] = 'a';
                                v[old.length + 1] = 'b';
                                v[old.length + 2] = (byte) i;
                                st.append(b(key), java.util.Arrays.copyOfRange(v, old.length, v.length));
                            }
                            default -> {
                                v = model.get(key).clone();
                                byte[] patch = largeValue(-i, 1000);
                                System.arraycopy(patch, 0, v, 100, patch.length);
                                st.setRange(b(key), 100, patch);
                            }
                        }
                        model.put(key, v);
                    }
                });
                t.setUncaughtExceptionHandler((th, e) -> failed.set(e));
                t.setDaemon(true);
                threads.add(t);
                t.start();
            }
            for (int k = 0; k < 8; k++) {
                st.snapshotAsync().get();
                Thread.sleep(20);
            }
            stop.set(true);
            for (Thread t : threads) {
                t.join();
            }
        }
        assertNull(failed.get(), () -> "a writer failed: " + failed.get());
        try (Store st = TestSupport.open(dir)) {
            assertNotNull(st.recoveryReport().snapshotUsed());
            for (java.util.Map<String, byte[]> model : models) {
                assertEquals(keys, model.size());
                for (java.util.Map.Entry<String, byte[]> e : model.entrySet()) {
                    assertTrue(java.util.Arrays.equals(e.getValue(), st.get(b(e.getKey()))), e.getKey());
                }
            }
        }
    }

    /** {@code length} bytes that differ with {@code seed}. */
    private static byte[] largeValue(int seed, int length) {
        byte[] v = new byte[length];
        new java.util.Random(seed).nextBytes(v);
        return v;
    }

    private static byte[] blobValue(int i) {
        return b(String.format("value-%020d", i));
    }
}
