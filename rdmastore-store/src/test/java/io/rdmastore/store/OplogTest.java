package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static io.rdmastore.store.TestSupport.s;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.bson.BsonDocument;
import org.bson.BsonInt32;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The log as an oplog: positions, the window, applying a primary's frames on a secondary, snapshots and rollback. */
class OplogTest {
    @TempDir
    Path dir;

    private static StoreConfig primaryConfig(Path d) {
        return TestSupport.config(d).oplogWindowBytes(64L * 1024 * 1024);
    }

    private static StoreConfig secondaryConfig(Path d) {
        return TestSupport.config(d).replicaSetMember(true);
    }

    /** Every key with its string value or hash, for comparing two stores. */
    private static TreeMap<String, String> dump(Store st) {
        TreeMap<String, String> m = new TreeMap<>();
        for (byte[] k : st.keys("*")) {
            String v = switch (st.type(k)) {
                case STRING -> "s:" + s(st.get(k));
                case HASH -> {
                    StringBuilder sb = new StringBuilder("h:");
                    for (byte[] x : st.hgetAll(k)) {
                        sb.append(s(x)).append(',');
                    }
                    yield sb.toString();
                }
                default -> "?";
            };
            m.put(s(k), v + " ttl=" + (st.pttl(k) > 0 ? "yes" : "no"));
        }
        return m;
    }

    private static void randomWrites(Store st, Random r, int n) {
        for (int i = 0; i < n; i++) {
            String k = "k" + r.nextInt(50);
            switch (r.nextInt(7)) {
                case 0, 1 -> st.set(b(k), b("v" + i));
                case 2 -> st.delete(b(k), b("k" + r.nextInt(50)));
                case 3 -> st.hset(b("h" + r.nextInt(10)), List.of(b("f" + r.nextInt(5)), b("x" + i)));
                case 4 -> st.mset(List.of(b(k), b("m" + i), b("k" + r.nextInt(50)), b("n" + i)), false);
                case 5 -> st.expireAt(b(k), System.currentTimeMillis() + 3_600_000);
                default -> {
                    try {
                        st.append(b(k), b("+"));
                    } catch (WrongTypeException e) {
                        // a hash key: fine, nothing changed
                    }
                }
            }
        }
    }

    private static List<Oplog.Entry> entriesFrom(Store st, long from) {
        List<Oplog.Entry> out = new ArrayList<>();
        while (true) {
            List<Oplog.Entry> batch = new ArrayList<>();
            int n = st.oplog().read(from, 64 * 1024, batch);
            assertTrue(n >= 0, "the window lost entries from " + from);
            if (n == 0) {
                return out;
            }
            out.addAll(batch);
            from = batch.getLast().index() + 1;
        }
    }

    @Test
    @Timeout(30)
    void writesTakeConsecutivePositionsThatSurviveRestartsAndSnapshots() {
        try (Store st = Store.open(primaryConfig(dir))) {
            assertArrayEquals(new long[] {0, 0}, st.lastPosition());
            st.term(3);
            st.set(b("a"), b("1"));
            assertEquals(1, Store.lastCommitIndex());
            st.set(b("b"), b("2"));
            st.delete(b("nothing"));
            assertEquals(2, Store.lastCommitIndex(), "a write that changes nothing takes no position");
            st.hset(b("h"), List.of(b("f"), b("v")));
            assertArrayEquals(new long[] {3, 3}, st.lastPosition());
            assertEquals(3, st.oplog().termAt(2));
        }
        try (Store st = Store.open(primaryConfig(dir))) {
            assertArrayEquals(new long[] {3, 3}, st.lastPosition(), "the position is recovered from the log");
            assertEquals(3, st.oplog().lastIndex());
            assertEquals(1, st.oplog().firstIndex(), "the window is rebuilt from the log");
            st.snapshot();
            st.set(b("c"), b("3"));
        }
        try (Store st = Store.open(primaryConfig(dir))) {
            assertArrayEquals(new long[] {3, 4}, st.lastPosition(), "snapshot position plus the log after it");
            assertEquals("3", s(st.get(b("c"))));
        }
    }

    @Test
    @Timeout(60)
    void aSecondaryApplyingThePrimarysFramesHoldsTheSameStateAndPositions() {
        Path p = dir.resolve("p");
        Path q = dir.resolve("q");
        Random r = new Random(7);
        try (Store primary = Store.open(primaryConfig(p)); Store secondary = Store.open(secondaryConfig(q))) {
            primary.term(1);
            ReadOnlyException ro = assertThrows(ReadOnlyException.class, () -> secondary.set(b("x"), b("y")));
            assertTrue(ro.getMessage().startsWith("NOTPRIMARY"), ro.getMessage());
            long applied = 0;
            for (int round = 0; round < 20; round++) {
                randomWrites(primary, r, 50);
                if (round == 10) {
                    primary.insertOne("c", new BsonDocument("_id", new BsonInt32(round)).append("n", new BsonInt32(1)));
                    primary.flushAll();
                }
                List<Oplog.Entry> batch = entriesFrom(primary, applied + 1);
                applied = secondary.applyReplicated(batch);
                assertEquals(primary.lastPosition()[1], applied);
                assertEquals(dump(primary), dump(secondary), "after round " + round);
            }
            assertArrayEquals(primary.lastPosition(), secondary.lastPosition());
            assertEquals(1, secondary.count("c", new BsonDocument()));
        }
        try (Store primary = Store.open(primaryConfig(p)); Store secondary = Store.open(secondaryConfig(q))) {
            assertEquals(dump(primary), dump(secondary), "both logs replay to the same state");
            assertArrayEquals(primary.lastPosition(), secondary.lastPosition());
        }
    }

    @Test
    @Timeout(30)
    void aFrameThatDoesNotFollowOrIsDamagedIsRefusedAndChangesNothing() {
        try (Store primary = Store.open(primaryConfig(dir.resolve("p")));
             Store secondary = Store.open(secondaryConfig(dir.resolve("q")))) {
            primary.set(b("a"), b("1"));
            primary.set(b("b"), b("2"));
            List<Oplog.Entry> all = entriesFrom(primary, 1);
            StoreException gap = assertThrows(StoreException.class, () -> secondary.applyReplicated(all.subList(1, 2)));
            assertTrue(gap.getMessage().contains("does not follow"), gap.getMessage());
            byte[] bad = all.get(0).frame().clone();
            bad[12] ^= 1;
            Oplog.Entry damaged = new Oplog.Entry(all.get(0).term(), 1, bad);
            StoreException crc = assertThrows(StoreException.class, () -> secondary.applyReplicated(List.of(damaged)));
            assertTrue(crc.getMessage().contains("damaged"), crc.getMessage());
            Oplog.Entry moved = new Oplog.Entry(all.get(0).term(), 2, all.get(0).frame());
            assertThrows(StoreException.class, () -> secondary.applyReplicated(List.of(moved)));
            assertEquals(0, secondary.size());
            assertArrayEquals(new long[] {0, 0}, secondary.lastPosition());
            assertEquals(2, secondary.applyReplicated(all));
            assertEquals("2", s(secondary.get(b("b"))));
        }
    }

    @Test
    @Timeout(60)
    void aSnapshotTakenUnderWritesPlusTheFramesAfterItRebuildsTheState() throws Exception {
        Path p = dir.resolve("p");
        Path q = dir.resolve("q");
        try (Store primary = Store.open(primaryConfig(p)); Store secondary = Store.open(secondaryConfig(q))) {
            Random r = new Random(11);
            randomWrites(primary, r, 500);
            secondary.applyReplicated(entriesFrom(primary, 1).subList(0, 10));
            AtomicBoolean stop = new AtomicBoolean();
            Thread writer = new Thread(() -> {
                Random wr = new Random(12);
                while (!stop.get()) {
                    randomWrites(primary, wr, 10);
                }
            });
            writer.start();
            Store.SnapshotFile snap;
            try {
                snap = primary.snapshotForTransfer();
            } finally {
                stop.set(true);
                writer.join();
            }
            Path copy = q.resolve("incoming.rsnap.part");
            Files.copy(snap.path(), copy);
            secondary.installSnapshot(copy);
            assertArrayEquals(new long[] {snap.term(), snap.index()}, secondary.lastPosition());
            long applied = secondary.applyReplicated(entriesFrom(primary, snap.index() + 1));
            assertEquals(primary.lastPosition()[1], applied);
            assertEquals(dump(primary), dump(secondary));
        }
        try (Store secondary = Store.open(secondaryConfig(q)); Store primary = Store.open(primaryConfig(p))) {
            assertEquals(dump(primary), dump(secondary), "the installed snapshot is the secondary's own after restart");
            assertArrayEquals(primary.lastPosition(), secondary.lastPosition());
        }
    }

    @Test
    @Timeout(30)
    void aRolledBackTailIsKeptInALogFileThatCheckLogReads() throws Exception {
        try (Store st = Store.open(primaryConfig(dir))) {
            st.set(b("a"), b("1"));
            st.set(b("b"), b("2"));
            assertNull(st.writeRollback(List.of()));
            Path f = st.writeRollback(entriesFrom(st, 1));
            assertNotNull(f);
            assertTrue(f.startsWith(dir.resolve("rollback")));
            FrameScanner.Outcome o = FrameScanner.scan(f, LogDescriptor.SEGMENT_MAGIC, null);
            assertTrue(o.clean());
            assertEquals(2, o.frames());
        }
    }

    @Test
    @Timeout(30)
    void aMemberRefusesClientWritesUntilAllowedAndExpiresNothingItself() throws Exception {
        try (Store st = Store.open(secondaryConfig(dir))) {
            assertThrows(ReadOnlyException.class, () -> st.set(b("a"), b("1")));
            st.allowWrites(true, null);
            st.set(b("a"), b("1"));
            st.expireAt(b("a"), System.currentTimeMillis() + 50);
            st.allowWrites(false, "NOTPRIMARY this member is a secondary");
            ReadOnlyException e = assertThrows(ReadOnlyException.class, () -> st.delete(b("a")));
            assertEquals("NOTPRIMARY this member is a secondary", e.getMessage());
            Thread.sleep(400);
            assertNull(st.get(b("a")), "an expired key is invisible to reads");
            assertEquals(2, st.lastPosition()[1], "no expiry delete was logged by the member itself");
        }
    }
}
