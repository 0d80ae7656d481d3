package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A segment a snapshot covers is kept as the spare and written over by a later segment: the file's former frames
 * are never replayed, a crash image reads only the new ones, and damage among them is still found.
 */
class LogRecycleTest {
    /** Far above what a test writes: only its own snapshot() calls rotate the log, never an automatic one. */
    private static final long SNAPSHOT_BYTES = 64L << 20;
    private static final int KEYS = 20;
    private static final int VALUE = 100_000;

    @TempDir
    Path dir;

    private static List<Path> segments(Path dir) throws IOException {
        List<Path> out = new ArrayList<>();
        try (var files = Files.list(dir)) {
            files.filter(p -> LogDescriptor.segmentId(p) >= 0).sorted().forEach(out::add);
        }
        return out;
    }

    private static Object fileKey(Path p) throws IOException {
        return Files.readAttributes(p, BasicFileAttributes.class).fileKey();
    }

    private static byte[] value(char phase, int i) {
        byte[] v = new byte[VALUE];
        Arrays.fill(v, (byte) (phase + i));
        return v;
    }

    private static void writePhase(Store st, char phase) {
        for (int i = 0; i < KEYS; i++) {
            st.set(b("k" + i), value(phase, i));
        }
    }

    /** The directory's files as a crash would leave them (what the OS holds), copied to {@code to}. */
    private static void crashImage(Path from, Path to) throws IOException {
        Files.createDirectories(to.resolve("blobs"));
        try (var files = Files.list(from)) {
            for (Path p : files.filter(Files::isRegularFile).toList()) {
                Files.copy(p, to.resolve(p.getFileName()));
            }
        }
    }

    private boolean reusingFileSystem() throws IOException {
        String type = Files.getFileStore(dir).type();
        return type.equals("ext4") || type.equals("xfs");
    }

    private StoreConfig config(Path d) {
        return TestSupport.config(d).snapshotLogBytes(SNAPSHOT_BYTES);
    }

    @Test
    @Timeout(60)
    void aCoveredSegmentIsReusedAndItsFormerFramesAreNeverReplayed() throws Exception {
        Path image = Files.createDirectory(dir.resolve("image"));
        Path data = Files.createDirectory(dir.resolve("data"));
        try (Store st = Store.open(config(data))) {
            Path first = segments(data).getLast();
            Object firstFile = fileKey(first);
            writePhase(st, 'A');
            st.snapshot();
            if (!reusingFileSystem()) {
                assertFalse(Files.exists(first), "deleted where segments are not reserved ahead");
                return;
            }
            Path spareNow = data.resolve(LogWriter.SPARE_NAME);
            assertEquals(firstFile, fileKey(spareNow), "the covered segment is the spare now");
            long formerBytes = Files.size(spareNow);
            assertTrue(formerBytes > (long) KEYS * VALUE, "with its frames: " + formerBytes);

            writePhase(st, 'B');
            st.snapshot();
            Path third = segments(data).getLast();
            assertEquals(firstFile, fileKey(third), "the next rotation takes it");
            assertEquals(formerBytes, Files.size(third), "its former frames are still there");

            for (int i = 0; i < 3; i++) {
                st.set(b("c" + i), b("new" + i));
            }
            st.flush();
            crashImage(data, image);
        }
        // the crash image: the reused segment holds three records of its own, then phase A's
        LogCheckReport check = LogChecker.check(image);
        assertTrue(check.clean(), "the former frames are not damage: " + check.files());
        Path reused = segments(image).getLast();
        LogCheckReport.FileReport fr = check.files().stream().filter(f -> f.file().equals(reused)).findFirst()
            .orElseThrow();
        assertEquals(3, fr.records(), "only its own records are read");
        try (Store st = Store.open(config(image))) {
            assertTrue(st.recoveryReport().tornTailBytesCut() > (long) KEYS * VALUE / 2,
                "the former bytes are cut: " + st.recoveryReport().tornTailBytesCut());
            for (int i = 0; i < KEYS; i++) {
                assertArrayEquals(value('B', i), st.get(b("k" + i)), "k" + i + " is phase B's, not the former A");
            }
            for (int i = 0; i < 3; i++) {
                assertArrayEquals(b("new" + i), st.get(b("c" + i)));
            }
        }
        // a clean close cuts the former bytes itself
        try (Store st = Store.open(config(data))) {
            assertEquals(0, st.recoveryReport().tornTailBytesCut(), "closed cleanly: nothing to cut");
            assertArrayEquals(value('B', 7), st.get(b("k7")));
            assertArrayEquals(b("new2"), st.get(b("c2")));
        }
    }

    @Test
    @Timeout(60)
    void damageAmongAReusedSegmentsOwnFramesIsStillFound() throws Exception {
        Path image = Files.createDirectory(dir.resolve("image"));
        Path data = Files.createDirectory(dir.resolve("data"));
        long afterIndex;
        try (Store st = Store.open(config(data))) {
            writePhase(st, 'A');
            st.snapshot();
            if (!reusingFileSystem()) {
                assertFalse(Files.exists(data.resolve(LogWriter.SPARE_NAME)), "no spare, so no reuse, on "
                    + Files.getFileStore(dir).type());
                return;
            }
            writePhase(st, 'B');
            st.snapshot();
            afterIndex = st.lastPosition()[1];
            for (int i = 0; i < 5; i++) {
                st.set(b("c" + i), b("new" + i));
            }
            st.flush();
            crashImage(data, image);
        }
        Path reused = segments(image).getLast();
        assertTrue(Files.size(reused) > (long) KEYS * VALUE, "a reused file");
        // the scan must be told where the segment starts: one index off is records missing
        FrameScanner.Outcome gap = FrameScanner.scanSegment(reused, afterIndex - 1, null);
        assertFalse(gap.clean());
        assertTrue(gap.problem().contains("records are missing"), gap.problem());
        assertEquals(5, FrameScanner.scanSegment(reused, afterIndex, null).frames());

        // the first own record damaged: later own records (higher positions) follow, so the middle is corrupt
        try (FileChannel ch = FileChannel.open(reused, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            long at = LogDescriptor.MAGIC_LENGTH + LogDescriptor.HEADER_LENGTH + 2;
            ch.read(one, at);
            one.put(0, (byte) (one.get(0) ^ 0x5a)).rewind();
            ch.write(one, at);
        }
        CorruptLogException e = assertThrows(CorruptLogException.class, () -> Store.open(config(image)));
        assertEquals(LogDescriptor.MAGIC_LENGTH, e.offset(), e.getMessage());
        assertFalse(LogChecker.check(image).clean());
    }

    @Test
    @Timeout(60)
    void anInstalledSnapshotNeverTakesAReusedSpare() throws Exception {
        Path other = Files.createDirectory(dir.resolve("other"));
        Path data = Files.createDirectory(dir.resolve("data"));
        Path transfer = dir.resolve("transfer.rsnap");
        try (Store small = Store.open(config(other))) {
            small.set(b("only"), b("1"));
            Store.SnapshotFile f = small.snapshotForTransfer();
            Files.copy(f.path(), transfer);
        }
        Path image = Files.createDirectory(dir.resolve("image"));
        try (Store st = Store.open(config(data))) {
            writePhase(st, 'A');
            st.snapshot();
            writePhase(st, 'B');
            st.snapshot();
            Path spare = data.resolve(LogWriter.SPARE_NAME);
            assertTrue(!reusingFileSystem() || Files.size(spare) > (long) KEYS * VALUE, "a reused spare");
            // positions go back to the small store's: the spare's frames are above them
            st.installSnapshot(transfer);
            // (a file deleted and another created may share an inode number: sizes tell them apart)
            assertEquals(LogDescriptor.MAGIC_LENGTH, Files.size(segments(data).getLast()),
                "the new segment is a new file, not the reused spare");
            assertTrue(!Files.exists(spare) || Files.size(spare) == LogDescriptor.MAGIC_LENGTH,
                "nor is the next spare a reused file");
            st.set(b("after"), b("2"));
            st.flush();
            crashImage(data, image);
        }
        try (Store st = Store.open(config(image))) {
            assertArrayEquals(b("1"), st.get(b("only")));
            assertArrayEquals(b("2"), st.get(b("after")));
            assertEquals(2, st.size(), "nothing of the store's former keys");
        }
    }
}
