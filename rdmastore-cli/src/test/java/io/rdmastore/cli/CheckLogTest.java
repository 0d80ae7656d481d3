package io.rdmastore.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.store.Store;
import io.rdmastore.store.StoreConfig;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CheckLogTest {
    @TempDir
    Path dir;

    private void fill() {
        try (Store store = Store.open(new StoreConfig().dataDir(dir).snapshotLogBytes(0))) {
            for (int i = 0; i < 500; i++) {
                store.set(("key-" + i).getBytes(StandardCharsets.UTF_8), ("value-" + i).repeat(4)
                    .getBytes(StandardCharsets.UTF_8));
            }
        }
    }

    private Path largestLogFile() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> !p.getFileName().toString().equals("LOCK"))
                .max(Comparator.comparingLong(p -> p.toFile().length())).orElseThrow();
        }
    }

    @Test
    void cleanDirectoryExitsZero() {
        fill();
        Run r = Run.of("check-log", dir.toString());
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.out().contains("500 records") || r.out().contains("records"), r::toString);
        assertTrue(r.out().contains("clean"), r::toString);
    }

    @Test
    void corruptMiddleExitsOneThenRepairExitsTwoThenClean() throws IOException {
        fill();
        Path log = largestLogFile();
        long size = Files.size(log);
        try (RandomAccessFile f = new RandomAccessFile(log.toFile(), "rw")) {
            f.seek(size / 2);
            int b = f.read();
            f.seek(size / 2);
            f.write(b ^ 0x5A);
        }
        Run check = Run.of("check-log", dir.toString());
        assertEquals(1, check.exitCode(), check::toString);
        assertTrue(check.out().contains("CORRUPT at offset"), check::toString);
        assertEquals(size, Files.size(log), "check alone changes nothing");

        Run repair = Run.of("check-log", dir.toString(), "--repair");
        assertEquals(2, repair.exitCode(), repair::toString);
        assertTrue(repair.out().contains("original saved as"), repair::toString);
        try (Stream<Path> s = Files.list(dir)) {
            assertTrue(s.anyMatch(p -> p.getFileName().toString().contains(".bak-")), "a backup is kept");
        }
        Run after = Run.of("check-log", dir.toString());
        assertEquals(0, after.exitCode(), after::toString);
    }

    @Test
    void missingDirectoryIsAClearErrorWithExitThree() {
        Run r = Run.of("check-log", dir.resolve("nope").toString());
        assertEquals(3, r.exitCode(), r::toString);
        assertTrue(r.err().contains("not a directory"), r::toString);
    }
}
