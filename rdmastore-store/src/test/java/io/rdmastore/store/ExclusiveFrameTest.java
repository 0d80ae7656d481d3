package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static io.rdmastore.store.TestSupport.s;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Store#exclusive} logs every write of its body as one frame (the RESP face's EXEC): recovery replays all of it
 * or, torn, none of it; a secondary applies it as one frame; a body that throws still logs what it applied.
 */
@Timeout(60)
class ExclusiveFrameTest {
    @TempDir
    Path dir;

    private Path lastSegment(Path d) throws IOException {
        try (Stream<Path> s = Files.list(d)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".rlog")).sorted().toList().getLast();
        }
    }

    /** Three writes of three types on three keys plus a delete, inside one scope. */
    private static void transaction(Store st) {
        st.exclusive(() -> {
            st.set(b("a"), b("1"));
            st.lists().push(b("l"), List.of(b("x"), b("y")), false, false);
            st.sortedSets().add(b("z"), new double[] {2.5}, List.of(b("m")), 0);
            // a later command of the scope sees the earlier ones
            assertEquals("1", s(st.get(b("a"))));
            st.delete(b("k0"));
            return null;
        });
    }

    private static void before(Store st) {
        for (int i = 0; i < 5; i++) {
            st.set(b("k" + i), b("v" + i));
        }
    }

    private static void assertTransactionApplied(Store st) {
        assertEquals("1", s(st.get(b("a"))));
        assertEquals(List.of("x", "y"), st.lists().range(b("l"), 0, -1).stream().map(TestSupport::s).toList());
        assertEquals(2.5, st.sortedSets().score(b("z"), b("m")));
        assertNull(st.get(b("k0")));
    }

    @Test
    void allWritesOfAScopeAreOneRecordThatRecoveryReplays() {
        try (Store st = TestSupport.open(dir)) {
            before(st);
            transaction(st);
            assertTransactionApplied(st);
        }
        try (Store st = TestSupport.open(dir)) {
            assertEquals(6, st.recoveryReport().recordsReplayed(), "5 SETs and one frame for the scope");
            assertTransactionApplied(st);
            assertEquals(4 + 3, st.size());
        }
    }

    @Test
    void aTornScopeFrameIsDroppedWhole() throws IOException {
        try (Store st = TestSupport.open(dir)) {
            before(st);
            transaction(st);
        }
        // a crash while the scope's frame was being written: its last bytes never reached the disk
        Path seg = lastSegment(dir);
        try (FileChannel ch = FileChannel.open(seg, StandardOpenOption.WRITE)) {
            ch.truncate(Files.size(seg) - 3);
        }
        try (Store st = TestSupport.open(dir)) {
            assertTrue(st.recoveryReport().tornTailBytesCut() > 0);
            assertEquals(5, st.recoveryReport().recordsReplayed());
            // none of the transaction: not its first SET, not its list, its sorted set or its delete
            assertNull(st.get(b("a")));
            assertEquals(0, st.lists().length(b("l")));
            assertEquals(0, st.sortedSets().size(b("z")));
            assertEquals("v0", s(st.get(b("k0"))));
            assertEquals(5, st.size());
        }
    }

    @Test
    void aBodyThatThrowsStillLogsWhatItApplied() {
        try (Store st = TestSupport.open(dir)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> st.exclusive(() -> {
                st.set(b("p"), b("1"));
                st.set(b("q"), b("2"));
                throw new IllegalStateException("stop");
            }));
            assertEquals("stop", e.getMessage());
            assertEquals("2", s(st.get(b("q"))));
            // the store is usable after: locks released, later writes logged on their own
            st.set(b("r"), b("3"));
        }
        try (Store st = TestSupport.open(dir)) {
            assertEquals(2, st.recoveryReport().recordsReplayed());
            assertEquals("1", s(st.get(b("p"))));
            assertEquals("2", s(st.get(b("q"))));
            assertEquals("3", s(st.get(b("r"))));
        }
    }

    @Test
    void aSecondaryAppliesTheScopeAsOneFrame() {
        Path p = dir.resolve("p");
        Path q = dir.resolve("q");
        try (Store primary = Store.open(TestSupport.config(p).oplogWindowBytes(64L * 1024 * 1024));
             Store secondary = Store.open(TestSupport.config(q).replicaSetMember(true))) {
            primary.term(1);
            before(primary);
            long beforeScope = primary.lastPosition()[1];
            transaction(primary);
            assertEquals(beforeScope + 1, primary.lastPosition()[1], "the scope took one oplog position");
            List<Oplog.Entry> all = new ArrayList<>();
            assertTrue(primary.oplog().read(1, 64 * 1024, all) > 0);
            assertEquals(6, all.size());
            // the last frame names every key the scope wrote: a secondary locks them all while it applies it
            Oplog.Entry last = all.getLast();
            byte[] frame = last.frame();
            java.nio.ByteBuffer payload = java.nio.ByteBuffer.wrap(frame, LogDescriptor.HEADER_LENGTH,
                frame.length - LogDescriptor.HEADER_LENGTH).slice().order(LogDescriptor.ORDER);
            FrameKeys.Touched t = FrameKeys.touched(payload);
            java.util.Set<Integer> expected = new java.util.TreeSet<>();
            for (String k : List.of("a", "l", "z", "k0")) {
                expected.add(Keyspace.shardIndex(Key.wrap(b(k))));
            }
            assertTrue(t.shards() == null || java.util.Arrays.stream(t.shards()).boxed().toList()
                .containsAll(expected), "touched " + java.util.Arrays.toString(t.shards()) + ", keys in " + expected);
            assertEquals(last.index(), secondary.applyReplicated(all));
            assertTransactionApplied(secondary);
            assertEquals(primary.size(), secondary.size());
        }
    }
}
