package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static io.rdmastore.store.TestSupport.s;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.bson.BsonDocument;
import org.bson.BsonInt32;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Kills a writer process with SIGKILL at random points; every write it acknowledged must be there after reopen. */
class CrashTest {
    private static final int KILLS = 6;

    @TempDir
    Path dir;

    /**
     * Blob values overwritten in turn: after each SIGKILL every key holds its last acknowledged value (or the one in
     * flight), its file is there, and no file is left that no key names.
     */
    /** The number in a {@link CrashWriter#blobValue} ("value:N...."), -1 when it is not one. */
    private static int valueNumber(byte[] v) {
        String t = s(v);
        if (!t.startsWith("value:")) {
            return -1;
        }
        int end = t.indexOf('.', 6);
        try {
            return Integer.parseInt(t.substring(6, end < 0 ? t.length() : end));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    @Test
    @Timeout(90)
    void acknowledgedBlobValuesAndTheirFilesSurviveKillMinus9() throws Exception {
        blobRounds("blobs");
    }

    /** The same with everysec: blob files written without fsync, forced by the log's syncer, never per SET. */
    @Test
    @Timeout(90)
    void acknowledgedBlobValuesWrittenWithoutFsyncSurviveKillMinus9() throws Exception {
        blobRounds("blobs-everysec");
    }

    private void blobRounds(String mode) throws Exception {
        Random rnd = new Random(7);
        int next = 0;
        StoreConfig cfg = new StoreConfig().dataDir(dir).fsync(FsyncPolicy.NO)
            .blobs(new io.rdmastore.store.blob.BlobConfig().thresholdBytes(CrashWriter.BLOB_THRESHOLD).reserveBytes(0));
        for (int round = 0; round < KILLS; round++) {
            int lastAck = killAfterAcks(next, 20 + rnd.nextInt(100), round, mode);
            try (Store st = Store.open(cfg)) {
                int inFlight = lastAck + 1;
                for (int k = 0; k < CrashWriter.BLOB_KEYS; k++) {
                    int last = lastAck - Math.floorMod(lastAck - k, CrashWriter.BLOB_KEYS);
                    byte[] v = st.get(b("blob:" + k));
                    if (last < 0) {
                        continue;
                    }
                    // The writer may be ahead of the acknowledgements this test has read when it is killed: any
                    // later value of the key is fine (written, its ack not read yet); an older one or none is a loss.
                    int found = v == null ? -1 : valueNumber(v);
                    boolean later = found >= last && Math.floorMod(found - k, CrashWriter.BLOB_KEYS) == 0
                        && Arrays.equals(CrashWriter.blobValue(found), v);
                    assertTrue(later, "round " + round + " key blob:" + k + ": expected value " + last
                        + " or a later one, found " + (v == null ? "nothing" : s(Arrays.copyOf(v, 16))));
                    next = Math.max(next, found + 1);
                }
                next = Math.max(next, inFlight + 1);
                long files;
                try (Stream<Path> l = Files.list(st.blobs().directory())) {
                    files = l.filter(p -> p.getFileName().toString().endsWith(".blob")).count();
                }
                assertEquals(Math.min(CrashWriter.BLOB_KEYS, lastAck + 1), files, "round " + round
                    + ": one file per key, none left over");
            }
        }
    }

    @Test
    @Timeout(90)
    void everyAcknowledgedWriteSurvivesKillMinus9() throws Exception {
        Random rnd = new Random(42);
        int next = 0;
        for (int round = 0; round < KILLS; round++) {
            int lastAck = killAfterAcks(next, 20 + rnd.nextInt(150), round);
            try (Store st = TestSupport.open(dir)) {
                for (int i = 0; i <= lastAck; i++) {
                    byte[] k = b("key:" + i);
                    switch (i % 3) {
                        case 0 -> assertEquals("value:" + i, s(st.get(k)), "round " + round + " key " + i);
                        case 1 -> assertEquals("value:" + i, s(st.hget(k, b("f"))), "round " + round + " key " + i);
                        default -> assertNotNull(st.findOne("docs", new BsonDocument("_id", new BsonInt32(i))),
                                "round " + round + " doc " + i);
                    }
                }
                next = lastAck + 1;
                // A write that was in flight at the kill may or may not be there; either way it is whole.
                List<byte[]> maybe = st.mget(b("key:" + next));
                assertTrue(maybe.getFirst() == null || s(maybe.getFirst()).equals("value:" + next));
                st.delete(b("key:" + next));
                st.hdel(b("key:" + next), b("f"));
                st.deleteOne("docs", new BsonDocument("_id", new BsonInt32(next)));
            }
        }
    }

    /**
     * Starts a {@link CrashWriter} from write {@code next} on, waits for {@code target} acknowledgements, kills it
     * with SIGKILL and returns the last write it acknowledged.
     */
    private int killAfterAcks(int next, int target, int round, String... mode) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new java.util.ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
                "-cp", System.getProperty("java.class.path"), CrashWriter.class.getName(), dir.toString(),
                Integer.toString(next)));
        cmd.addAll(List.of(mode));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.redirectError(ProcessBuilder.Redirect.DISCARD);
        Process p = pb.start();
        int lastAck = next - 1;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            int acks = 0;
            while (acks < target && (line = r.readLine()) != null) {
                if (line.startsWith("ack ")) {
                    lastAck = Integer.parseInt(line.substring(4));
                    acks++;
                }
            }
            p.destroyForcibly();
            assertTrue(p.waitFor(20, TimeUnit.SECONDS), "writer did not die");
            assertTrue(acks > 0, "writer acknowledged nothing in round " + round);
        } finally {
            p.destroyForcibly();
        }
        return lastAck;
    }
}
