package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A snapshot's rotation: the segment left behind is closed unforced once the snapshot covers it, so its pages are
 * dropped with the file rather than written to the disk, and nothing is lost.
 */
class SnapshotRotationTest {
    private static final int VALUE = 256 << 10;
    private static final int WRITES = 64;

    /**
     * Under the build's own directory rather than the system's temporary one, which may be a tmpfs: page-cache bytes
     * dropped unwritten are counted only for a file system on a disk, where a store keeps its log.
     */
    @TempDir(factory = UnderTarget.class)
    Path dir;

    /** Makes the temporary directory under {@code target/}. */
    static final class UnderTarget implements org.junit.jupiter.api.io.TempDirFactory {
        @Override
        public Path createTempDirectory(org.junit.jupiter.api.extension.AnnotatedElementContext element,
                                        org.junit.jupiter.api.extension.ExtensionContext context) throws IOException {
            Path target = Files.createDirectories(Path.of("target"));
            return Files.createTempDirectory(target, "snapshot-rotation-");
        }
    }

    /** This process's {@code cancelled_write_bytes}: dirty page-cache bytes dropped before they reached the disk. */
    private static long cancelledWriteBytes() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/io"))) {
            if (line.startsWith("cancelled_write_bytes:")) {
                return Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        throw new IOException("no cancelled_write_bytes in /proc/self/io");
    }

    @Test
    @Timeout(60)
    void theSegmentASnapshotCoversIsDroppedUnwrittenWhenNotReusedAndTheDataStays() throws Exception {
        byte[] k = b("k");
        byte[] last = null;
        // the covered segment deleted, not kept as the spare (LogRecycleTest): its pages then go unwritten
        System.setProperty("rdmastore.log.recycle", "false");
        // fsync no (TestSupport): no fsync can come between the rotation and the snapshot's end
        try (Store st = TestSupport.open(dir)) {
            for (int i = 0; i < WRITES; i++) {
                byte[] v = new byte[VALUE];
                Arrays.fill(v, (byte) i);
                st.set(k, v);
                last = v;
            }
            long before = cancelledWriteBytes();
            st.snapshot();
            long dropped = cancelledWriteBytes() - before;
            // the old segment held 16 MiB of records; forced before its deletion, none of it would be dropped
            assertTrue(dropped >= (long) VALUE * WRITES / 2,
                "the covered segment's pages were written, not dropped: " + dropped + " bytes dropped");
            st.set(b("after"), b("x"));
        } finally {
            System.clearProperty("rdmastore.log.recycle");
        }
        try (Store st = TestSupport.open(dir)) {
            assertArrayEquals(last, st.get(k), "the value the snapshot covers");
            assertArrayEquals(b("x"), st.get(b("after")), "the write after the snapshot");
        }
    }

    /**
     * A snapshot asked for as soon as the previous one's future completes is a new one that covers the writes made
     * since: the finished snapshot is no longer the one "in flight" by then.
     */
    @Test
    @Timeout(60)
    void aSnapshotAskedForRightAfterAnotherIsANewOne() throws Exception {
        try (Store st = TestSupport.open(dir)) {
            for (int i = 0; i < 40; i++) {
                st.set(b("k"), b("v" + i));
                st.snapshotAsync().join();
                st.set(b("k"), b("w" + i));
                Path second = st.snapshotAsync().join();
                assertArrayEquals(b("w" + i), lastValueIn(second), "round " + i + ": the write before it is in it");
            }
        }
    }

    /** The value of {@code k} in a snapshot file: the last STRING_PUT of it. */
    private static byte[] lastValueIn(Path snapshot) throws IOException {
        byte[][] value = {null};
        FrameScanner.scan(snapshot, LogDescriptor.SNAPSHOT_MAGIC, (payload, off) -> {
            java.nio.ByteBuffer p = payload.order(LogDescriptor.ORDER);
            while (p.hasRemaining()) {
                byte op = p.get();
                if (op == LogDescriptor.OP_STRING_PUT) {
                    byte[] key = new byte[p.getInt()];
                    p.get(key);
                    p.getLong();
                    byte[] v = new byte[p.getInt()];
                    p.get(v);
                    if (Arrays.equals(key, b("k"))) {
                        value[0] = v;
                    }
                } else {
                    // the position op, and the snapshot's end record, carry no key
                    return;
                }
            }
        });
        return value[0];
    }
}
