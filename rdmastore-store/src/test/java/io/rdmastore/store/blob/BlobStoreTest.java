package io.rdmastore.store.blob;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.store.LimitExceededException;
import io.rdmastore.store.StoreException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class BlobStoreTest {
    @TempDir
    Path dir;

    private static final byte[] K = "key".getBytes(StandardCharsets.UTF_8);

    private BlobStore open() {
        return BlobStore.open(new BlobConfig().directory(dir).reserveBytes(0));
    }

    private static BlobVersion put(BlobStore s, byte[] key, byte fill, int n) {
        BlobWrite w = s.begin(key, n);
        w.segment().fill(fill);
        return s.commit(w, BlobStore.crc32c(w.segment()));
    }

    private List<String> files() throws Exception {
        try (Stream<Path> f = Files.list(dir)) {
            return f.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void aLeasedVersionSurvivesOverwriteAndDeleteUntilReleased() throws Exception {
        try (BlobStore s = open()) {
            put(s, K, (byte) 1, 5000);
            BlobVersion v1 = s.acquire(K);
            put(s, K, (byte) 2, 7000);
            assertTrue(s.delete(K));
            assertNull(s.acquire(K));
            assertEquals(5000, v1.segment().byteSize());
            assertEquals(1, v1.segment().get(ValueLayout.JAVA_BYTE, 4999), "the reader's version is unchanged");
            assertTrue(files().get(0).endsWith(".old"), files().toString());
            v1.release();
            assertEquals(List.of(), files(), "retired file deleted with its last reference");
        }
    }

    @Test
    void crcMismatchStoresNothingAndKeepsTheOldValue() throws Exception {
        try (BlobStore s = open()) {
            BlobVersion old = put(s, K, (byte) 1, 100);
            BlobWrite w = s.begin(K, 100);
            w.segment().fill((byte) 9);
            StoreException e = assertThrows(StoreException.class, () -> s.commit(w, 12345));
            assertTrue(e.getMessage().contains("CRC32C mismatch"), e.getMessage());
            BlobVersion now = s.acquire(K);
            assertEquals(old.version(), now.version());
            now.release();
            assertEquals(1, files().size(), files().toString());
        }
    }

    @Test
    void recoveryRemovesLeftoversAndKeepsTheNewestVersion() throws Exception {
        long version;
        try (BlobStore s = open()) {
            put(s, K, (byte) 1, 10);
            version = put(s, K, (byte) 2, 20).version();
            s.begin("other".getBytes(StandardCharsets.UTF_8), 30);   // never committed: a crash mid-put
        }
        Files.writeString(dir.resolve("6b6579.99.00000000.blob.old"), "retired before a crash");
        try (BlobStore s = open()) {
            assertEquals(1, s.count());
            BlobVersion v = s.acquire(K);
            assertNotNull(v);
            assertEquals(version, v.version());
            assertEquals(20, v.length());
            assertEquals(2, v.segment().get(ValueLayout.JAVA_BYTE, 0));
            v.release();
            assertEquals(1, files().size(), files().toString());
            assertTrue(put(s, K, (byte) 3, 1).version() > version);
        }
    }

    @Test
    void limitsAndFullDiskAreRefusedBeforeAnyFileIsCreated() throws Exception {
        try (BlobStore s = BlobStore.open(new BlobConfig().directory(dir).maxBlobBytes(1000).reserveBytes(10)
                .freeSpace(p -> 500))) {
            assertThrows(LimitExceededException.class, () -> s.begin(K, 1001));
            StoreException full = assertThrows(StoreException.class, () -> s.begin(K, 600));
            assertTrue(full.getMessage().startsWith("disk full"), full.getMessage());
            assertThrows(LimitExceededException.class, () -> s.begin(new byte[101], 1));
            assertEquals(List.of(), files());
            BlobWrite empty = s.begin(K, 0);
            assertEquals(0, s.commit(empty, BlobStore.crc32c(MemorySegment.NULL.reinterpret(0))).length());
            assertFalse(files().isEmpty());
        }
    }

    @Test
    @Timeout(30)
    void aDiskThatFillsAfterTheFreeSpaceCheckIsRefusedBeforeAnyByteIsMapped() throws Exception {
        assertTrue(Preallocation.supported(), "posix_fallocate is expected on Linux");
        long tenTiB = 10L << 40; // below ext4's file size limit, far above any test disk
        try (BlobStore s = BlobStore.open(new BlobConfig().directory(dir).maxBlobBytes(Long.MAX_VALUE)
                .reserveBytes(0).freeSpace(p -> Long.MAX_VALUE))) {
            byte[] old = "old".getBytes(StandardCharsets.UTF_8);
            BlobWrite w = s.begin(K, old.length);
            w.segment().copyFrom(MemorySegment.ofArray(old));
            s.commit(w, BlobStore.crc32c(MemorySegment.ofArray(old)));
            StoreException full = assertThrows(StoreException.class, () -> s.begin(K, tenTiB));
            assertTrue(full.getMessage().startsWith("disk full"), full.getMessage());
            List<String> left = files();
            assertTrue(left.stream().noneMatch(f -> f.endsWith(".tmp")), () -> "a refused write left a temp file: "
                + left);
            BlobVersion v = s.acquire(K);
            assertNotNull(v, "the old value is gone");
            try {
                assertEquals("old", new String(v.segment().toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8));
            } finally {
                v.release();
            }
        }
    }
}
