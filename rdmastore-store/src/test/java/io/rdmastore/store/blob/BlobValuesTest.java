package io.rdmastore.store.blob;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.store.FsyncPolicy;
import io.rdmastore.store.LimitExceededException;
import io.rdmastore.store.SetOptions;
import io.rdmastore.store.Store;
import io.rdmastore.store.StoreConfig;
import io.rdmastore.store.StoreException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** String values from the blob threshold on: stored as files named by the log, served from mappings. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BlobValuesTest {
    private static final int THRESHOLD = 4096;

    @TempDir
    Path dir;

    private StoreConfig config() {
        return new StoreConfig().dataDir(dir).fsync(FsyncPolicy.EVERYSEC)
            .blobs(new BlobConfig().thresholdBytes(THRESHOLD).reserveBytes(0));
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] value(int n, int seed) {
        byte[] v = new byte[n];
        for (int i = 0; i < n; i++) {
            v[i] = (byte) (i * 31 + seed);
        }
        return v;
    }

    private List<String> files() throws Exception {
        try (Stream<Path> f = Files.list(dir.resolve("blobs"))) {
            return f.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private static void eventually(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, what);
            Thread.sleep(10);
        }
    }

    private int fileCount() {
        try {
            return files().size();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void valuesFromTheThresholdOnAreFilesAndReadLikeAnyString() throws Exception {
        byte[] big = value(THRESHOLD, 1);
        try (Store st = Store.open(config())) {
            st.set(b("small"), value(THRESHOLD - 1, 2));
            assertEquals(List.of(), files(), "below the threshold: in memory");
            st.set(b("big"), big);
            assertEquals(1, files().size(), files().toString());
            assertArrayEquals(big, st.get(b("big")));
            assertEquals(THRESHOLD, st.strlen(b("big")));
            assertArrayEquals(Arrays.copyOfRange(big, 10, 21), st.getRange(b("big"), 10, 20));
            Boolean viewed = st.readValue(b("big"), v -> v.byteSize() == THRESHOLD
                && v.get(ValueLayout.JAVA_BYTE, 5) == big[5]);
            assertTrue(viewed);
            assertArrayEquals(big, st.mget(b("big")).get(0));
            // SET with options, MSET
            assertTrue(st.set(b("nx"), value(THRESHOLD * 2, 3), new SetOptions().ifAbsent(true)).written());
            assertTrue(!st.set(b("nx"), value(THRESHOLD * 2, 4), new SetOptions().ifAbsent(true)).written());
            st.mset(List.of(b("m1"), value(THRESHOLD, 5), b("m2"), b("tiny")), false);
            assertArrayEquals(value(THRESHOLD * 2, 3), st.get(b("nx")));
            assertArrayEquals(value(THRESHOLD, 5), st.get(b("m1")));
            eventually(() -> fileCount() == 3, "the refused SET NX file is deleted");
        }
    }

    @Test
    void overwriteDeleteAndAppendFreeTheFileOnlyAfterTheLastReader() throws Exception {
        try (Store st = Store.open(config())) {
            st.set(b("k"), value(THRESHOLD, 1));
            BlobValue held = st.acquireBlob(b("k"));
            assertNotNull(held.blob());
            st.set(b("k"), value(THRESHOLD + 1, 2));
            st.delete(b("k"));
            assertNull(st.get(b("k")));
            MemorySegment seg = held.blob().segment();
            assertEquals(THRESHOLD, seg.byteSize());
            assertEquals(value(THRESHOLD, 1)[THRESHOLD - 1], seg.get(ValueLayout.JAVA_BYTE, THRESHOLD - 1),
                "the reader's version is unchanged");
            eventually(() -> fileCount() == 1, "the second version goes, the leased one stays");
            held.blob().release();
            eventually(() -> fileCount() == 0, "the leased version goes with its last reference");

            st.set(b("a"), value(THRESHOLD, 7));
            assertEquals(THRESHOLD + 3, st.append(b("a"), b("xyz")));
            byte[] expected = Arrays.copyOf(value(THRESHOLD, 7), THRESHOLD + 3);
            System.arraycopy(b("xyz"), 0, expected, THRESHOLD, 3);
            assertArrayEquals(expected, st.get(b("a")));
            eventually(() -> fileCount() == 0, "APPEND moved the value into memory");

            st.set(b("r"), value(THRESHOLD, 8));
            st.rename(b("r"), b("r2"), false);
            assertArrayEquals(value(THRESHOLD, 8), st.get(b("r2")));
            assertEquals(1, fileCount(), "RENAME keeps the file");
        }
    }

    @Test
    void blobValuesSurviveRestartsAndSnapshotsAndUnnamedFilesGo() throws Exception {
        try (Store st = Store.open(config())) {
            st.set(b("logged"), value(THRESHOLD, 1));
            st.set(b("gone"), value(THRESHOLD, 2));
            st.delete(b("gone"));
        }
        try (Store st = Store.open(config())) {
            assertArrayEquals(value(THRESHOLD, 1), st.get(b("logged")));
            assertNull(st.get(b("gone")));
            st.snapshot();
            st.set(b("after"), value(THRESHOLD * 3, 3));
        }
        // a committed file whose record never made it (a crash in between), and an unfinished write
        Files.write(dir.resolve("blobs").resolve("00000000000fffff.blob"), new byte[10]);
        Files.write(dir.resolve("blobs").resolve("write-9.123.tmp"), new byte[10]);
        try (Store st = Store.open(config())) {
            assertArrayEquals(value(THRESHOLD, 1), st.get(b("logged")));
            assertArrayEquals(value(THRESHOLD * 3, 3), st.get(b("after")));
            assertEquals(2, files().size(), files().toString());
            st.set(b("next"), value(THRESHOLD, 4));
            assertTrue(files().stream().noneMatch(f -> f.startsWith("00000000000fffff")), files().toString());
        }
    }

    @Test
    void aMissingFileCostsItsKeyOnlyAndIsReported() throws Exception {
        Path file;
        try (Store st = Store.open(config())) {
            st.set(b("lost"), value(THRESHOLD, 1));
            st.set(b("kept"), value(THRESHOLD, 2));
            st.set(b("small"), b("s"));
            file = st.blobs().directory().resolve(files().get(0));
        }
        Files.delete(file);
        try (Store st = Store.open(config())) {
            assertNull(st.get(b("lost")));
            assertArrayEquals(value(THRESHOLD, 2), st.get(b("kept")));
            assertArrayEquals(b("s"), st.get(b("small")));
        }
        try (Store st = Store.open(config())) {
            assertNull(st.get(b("lost")), "the deletion was logged");
        }
    }

    @Test
    void putBlobChecksTheCrcAndKeepsSmallValuesInMemory() throws Exception {
        try (Store st = Store.open(config())) {
            st.set(b("k"), value(THRESHOLD, 1));
            BlobWrite w = st.blobs().begin(THRESHOLD * 2);
            w.segment().fill((byte) 9);
            StoreException e = assertThrows(StoreException.class, () -> st.putBlob(b("k"), w, 12345));
            assertTrue(e.getMessage().contains("CRC32C mismatch"), e.getMessage());
            assertArrayEquals(value(THRESHOLD, 1), st.get(b("k")), "the old value is kept");

            BlobWrite w2 = st.blobs().begin(THRESHOLD * 2);
            w2.segment().fill((byte) 9);
            long version = st.putBlob(b("k"), w2, BlobStore.crc32c(w2.segment()));
            assertTrue(version > 0);
            byte[] nines = new byte[THRESHOLD * 2];
            Arrays.fill(nines, (byte) 9);
            assertArrayEquals(nines, st.get(b("k")));

            BlobWrite small = st.blobs().begin(3);
            small.segment().copyFrom(MemorySegment.ofArray(b("abc")));
            assertEquals(0, st.putBlob(b("s"), small, BlobStore.crc32c(MemorySegment.ofArray(b("abc")))));
            BlobValue inline = st.acquireBlob(b("s"));
            assertNull(inline.blob());
            assertArrayEquals(b("abc"), inline.inline());
            eventually(() -> fileCount() == 1, "only the current blob's file is left");
        }
    }

    @Test
    void aBlobLargerThanAReplyIsRefusedByGetWithAHint() throws Exception {
        try (Store st = Store.open(config().maxValueBytes(THRESHOLD * 2))) {
            BlobWrite w = st.blobs().begin(THRESHOLD * 3);
            w.segment().fill((byte) 1);
            st.putBlob(b("huge"), w, BlobStore.crc32c(w.segment()));
            LimitExceededException e = assertThrows(LimitExceededException.class, () -> st.get(b("huge")));
            assertTrue(e.getMessage().contains("blob API"), e.getMessage());
            assertEquals(THRESHOLD * 3, st.strlen(b("huge")));
        }
    }

    @Test
    void legacyFilesAreAdoptedWhenTheirKeyIsFree() throws Exception {
        Files.createDirectories(dir.resolve("blobs"));
        Files.write(dir.resolve("blobs").resolve("6f6c64.7.00000000.blob"), b("legacy-bytes"));
        Files.write(dir.resolve("blobs").resolve("6f6c64.3.00000000.blob.old"), b("retired"));
        try (Store st = Store.open(config())) {
            assertArrayEquals(b("legacy-bytes"), st.get(b("old")));
        }
        try (Store st = Store.open(config())) {
            assertArrayEquals(b("legacy-bytes"), st.get(b("old")), "adoption is logged");
            assertEquals(1, files().size(), files().toString());
        }
    }

    @Test
    void limitsAndFullDiskAreRefusedBeforeAnyFileIsCreated() throws Exception {
        try (Store st = Store.open(config().blobs(new BlobConfig().thresholdBytes(THRESHOLD).maxBlobBytes(100_000)
                .reserveBytes(10).freeSpace(p -> 50_000)))) {
            st.set(b("k"), value(THRESHOLD, 1));
            assertThrows(LimitExceededException.class, () -> st.blobs().begin(100_001));
            StoreException full = assertThrows(StoreException.class, () -> st.set(b("k"), value(60_000, 2)));
            assertTrue(full.getMessage().startsWith("disk full"), full.getMessage());
            assertArrayEquals(value(THRESHOLD, 1), st.get(b("k")), "the old value is kept");
            assertEquals(1, files().size(), files().toString());
        }
    }

    @Test
    void aDiskThatFillsAfterTheFreeSpaceCheckIsRefusedBeforeAnyByteIsMapped() throws Exception {
        assertTrue(Preallocation.supported(), "posix_fallocate is expected on Linux");
        long tenTiB = 10L << 40; // below ext4's file size limit, far above any test disk
        try (Store st = Store.open(config().blobs(new BlobConfig().thresholdBytes(THRESHOLD)
                .maxBlobBytes(Long.MAX_VALUE).reserveBytes(0).freeSpace(p -> Long.MAX_VALUE)))) {
            StoreException full = assertThrows(StoreException.class, () -> st.blobs().begin(tenTiB));
            assertTrue(full.getMessage().startsWith("disk full"), full.getMessage());
            assertTrue(files().stream().noneMatch(f -> f.endsWith(".tmp")), () -> "a refused write left a temp file");
        }
    }
}
