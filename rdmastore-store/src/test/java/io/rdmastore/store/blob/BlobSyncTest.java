package io.rdmastore.store.blob;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.store.FsyncPolicy;
import io.rdmastore.store.Store;
import io.rdmastore.store.StoreConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A SET that becomes a blob file is made durable per the fsync policy: with {@code always} at once, otherwise by the
 * log before its next fsync (never per SET); recovery finds a file whose content never reached the disk.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BlobSyncTest {
    private static final int THRESHOLD = 4096;

    @TempDir
    Path dir;

    private StoreConfig config(Path data, FsyncPolicy fsync) {
        return new StoreConfig().dataDir(data).fsync(fsync)
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

    @Test
    void withAlwaysTheFileIsForcedBeforeTheSetReturns() {
        try (Store st = Store.open(config(dir, FsyncPolicy.ALWAYS))) {
            st.set(b("k"), value(THRESHOLD, 1));
            assertEquals(1, st.blobs().count());
            assertEquals(0, st.blobs().unsyncedCount());
        }
    }

    @Test
    void withEverysecTheFileIsForcedByTheLogsNextSync() throws Exception {
        byte[] v = value(THRESHOLD * 3, 2);
        try (Store st = Store.open(config(dir, FsyncPolicy.EVERYSEC))) {
            st.set(b("k"), v);
            st.set(b("k2"), v);
            assertEquals(2, st.blobs().count());
            // the syncer runs once a second; allow for a slow machine
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (st.blobs().unsyncedCount() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(0, st.blobs().unsyncedCount(), "the everysec syncer forced the files with the log");
        }
        // what a restart finds: the mark covers both versions, so nothing is checked and both are there
        try (Store st = Store.open(config(dir, FsyncPolicy.EVERYSEC))) {
            assertArrayEquals(v, st.get(b("k")));
            assertArrayEquals(v, st.get(b("k2")));
        }
    }

    /**
     * What a machine crash may leave with {@code no} or {@code everysec}: the log record reached the disk, the blob's
     * content did not (a reserved file reads as zeros). Recovery checks the content of versions no sync covered,
     * drops that key with an error, and keeps the others.
     */
    @Test
    void aBlobWhoseContentNeverReachedTheDiskIsFoundAtRecovery() throws Exception {
        Path live = dir.resolve("live");
        Path crashed = dir.resolve("crashed");
        byte[] good = value(THRESHOLD * 2, 3);
        byte[] lost = value(THRESHOLD * 2, 4);
        try (Store st = Store.open(config(live, FsyncPolicy.NO))) {
            st.set(b("good"), good);
            st.set(b("lost"), lost);
            st.set(b("small"), b("in memory"));
            assertEquals(2, st.blobs().unsyncedCount(), "with no, nothing is forced per SET");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            // the write-behind thread hands the log to the OS within about a millisecond
            while (st.stats().logBytes() < 2L * 40 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            Thread.sleep(200);
            copyTree(live, crashed);
            assertEquals(2, st.blobs().unsyncedCount(), "nothing forced them meanwhile");
        }
        List<Path> blobFiles;
        try (Stream<Path> f = Files.list(crashed.resolve("blobs"))) {
            blobFiles = f.filter(p -> p.toString().endsWith(".blob")).sorted().toList();
        }
        assertEquals(2, blobFiles.size());
        // the second version is the lost one: same length, zeros
        Files.write(blobFiles.get(1), new byte[lost.length]);
        try (Store st = Store.open(config(crashed, FsyncPolicy.NO))) {
            assertArrayEquals(good, st.get(b("good")), "a complete file is kept");
            assertNull(st.get(b("lost")), "a file whose content is not what the log says is not served");
            assertArrayEquals(b("in memory"), st.get(b("small")));
        }
    }

    private static void copyTree(Path from, Path to) throws Exception {
        try (Stream<Path> all = Files.walk(from)) {
            for (Path p : all.toList()) {
                Path t = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(t);
                } else {
                    Files.copy(p, t, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }

    @Test
    void withNoTheFilesAreForcedWhenTheLogIsClosed() throws Exception {
        byte[] v = value(THRESHOLD, 5);
        try (Store st = Store.open(config(dir, FsyncPolicy.NO))) {
            st.set(b("k"), v);
            assertEquals(1, st.blobs().unsyncedCount());
            st.flush();
            assertEquals(0, st.blobs().unsyncedCount(), "a log fsync forces the files its records name first");
        }
        assertTrue(Files.exists(dir.resolve("blobs.synced-through")));
        try (Store st = Store.open(config(dir, FsyncPolicy.NO))) {
            assertArrayEquals(v, st.get(b("k")));
        }
    }
}
