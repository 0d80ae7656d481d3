package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Log segments' blocks reserved ahead of their appends: sizes unchanged, a spare taken by each rotation. */
class LogPreallocationTest {
    private static final long SNAPSHOT_BYTES = 4L << 20;

    @TempDir
    Path dir;

    /** Bytes of disk blocks allocated to {@code file} ({@code stat}'s block count). */
    private static long allocated(Path file) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("stat", "-c", "%b %B", file.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).trim();
        assertTrue(p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0, "stat: " + out);
        String[] f = out.split(" ");
        return Long.parseLong(f[0]) * Long.parseLong(f[1]);
    }

    private static List<Path> segments(Path dir) throws IOException {
        List<Path> out = new ArrayList<>();
        try (var files = Files.list(dir)) {
            files.filter(p -> LogDescriptor.segmentId(p) >= 0).sorted().forEach(out::add);
        }
        return out;
    }

    private boolean reservingFileSystem() throws IOException {
        String type = Files.getFileStore(dir).type();
        return type.equals("ext4") || type.equals("xfs");
    }

    @Test
    @Timeout(60)
    void segmentsAreReservedAheadAndRotationsTakeTheSpare() throws Exception {
        Path spare = dir.resolve(LogWriter.SPARE_NAME);
        byte[] v = new byte[100_000];
        List<byte[]> keys = new ArrayList<>();
        try (Store st = Store.open(TestSupport.config(dir).snapshotLogBytes(SNAPSHOT_BYTES))) {
            Path first = segments(dir).getLast();
            if (!reservingFileSystem()) {
                // elsewhere nothing is reserved: no spare, and appends allocate as they go
                assertFalse(Files.exists(spare), "a spare on a " + Files.getFileStore(dir).type() + " file system");
                return;
            }
            assertTrue(allocated(first) >= SNAPSHOT_BYTES, "the current segment's blocks: " + allocated(first));
            assertEquals(LogDescriptor.MAGIC_LENGTH, Files.size(first), "the reservation leaves the size alone");
            assertTrue(Files.exists(spare), "a spare made ahead");
            assertEquals(LogDescriptor.MAGIC_LENGTH, Files.size(spare));
            assertTrue(allocated(spare) >= SNAPSHOT_BYTES, "the spare's blocks: " + allocated(spare));

            for (int i = 0; i < 20; i++) {
                v[0] = (byte) i;
                byte[] k = b("k" + i);
                st.set(k, v.clone());
                keys.add(k);
            }
            st.snapshot();
            Path second = segments(dir).getLast();
            assertTrue(!second.equals(first), "a snapshot rotates the log");
            assertTrue(allocated(second) >= SNAPSHOT_BYTES, "the new segment is the spare: " + allocated(second));
            assertTrue(Files.exists(spare), "the next spare made after the rotation");
            st.set(b("after"), v.clone());
            keys.add(b("after"));
            st.flush();
            assertTrue(Files.size(second) > LogDescriptor.MAGIC_LENGTH && Files.size(second) < SNAPSHOT_BYTES,
                "the segment holds what was written, not its reservation: " + Files.size(second));
        }
        assertTrue(LogChecker.check(dir).clean(), "every frame checks; the spare is not read as a segment");
        try (Store st = TestSupport.open(dir)) {
            for (int i = 0; i < 20; i++) {
                v[0] = (byte) i;
                assertArrayEquals(v, st.get(keys.get(i)), "after reopen: k" + i);
            }
            v[0] = 19;
            assertArrayEquals(v, st.get(b("after")), "written into the spare-born segment");
        }
    }

    @Test
    @Timeout(60)
    void aStaleTemporarySpareIsReplacedAndTheSwitchTurnsItOff() throws Exception {
        Files.write(dir.resolve(LogWriter.SPARE_NAME + ".tmp"), new byte[] {1, 2, 3});
        try (Store st = Store.open(TestSupport.config(dir).snapshotLogBytes(SNAPSHOT_BYTES))) {
            st.set(b("k"), b("v"));
            assertEquals(reservingFileSystem(), Files.exists(dir.resolve(LogWriter.SPARE_NAME)));
            assertFalse(Files.exists(dir.resolve(LogWriter.SPARE_NAME + ".tmp")), "the half-made spare is gone");
        }
        Path other = Files.createDirectory(dir.resolve("off"));
        System.setProperty("rdmastore.log.preallocate", "false");
        try (Store st = Store.open(TestSupport.config(other).snapshotLogBytes(SNAPSHOT_BYTES))) {
            st.set(b("k"), b("v"));
            assertFalse(Files.exists(other.resolve(LogWriter.SPARE_NAME)), "switched off: no spare");
        } finally {
            System.clearProperty("rdmastore.log.preallocate");
        }
    }
}
