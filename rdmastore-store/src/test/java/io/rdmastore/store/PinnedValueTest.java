package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@link Store#pinValue}: a pinned value survives overwrite, in-place writes, delete and expiry until released. */
@Timeout(30)
class PinnedValueTest {
    @TempDir
    Path dir;
    Store store;

    @BeforeEach
    void open() {
        store = TestSupport.open(dir);
    }

    @AfterEach
    void close() {
        store.close();
    }

    private static byte[] filled(int n, int seed) {
        byte[] v = new byte[n];
        for (int i = 0; i < n; i++) {
            v[i] = (byte) (i * 31 + seed);
        }
        return v;
    }

    private static byte[] bytes(PinnedValue p) {
        return p.segment().toArray(ValueLayout.JAVA_BYTE);
    }

    /** Off-heap bytes once the log has written every frame: a large value's block is pinned until then. */
    private long used() {
        store.flush();
        return store.stats().usedOffHeapBytes();
    }

    @Test
    void missingKeyIsNullAndWrongTypeThrows() {
        assertNull(store.pinValue(b("none")));
        store.hset(b("h"), java.util.List.of(b("f"), b("v")));
        assertThrows(WrongTypeException.class, () -> store.pinValue(b("h")));
    }

    @Test
    void sameSizeOverwriteCopiesInsteadOfWritingInPlace() {
        byte[] v1 = filled(100_000, 1);
        byte[] v2 = filled(100_000, 2);
        store.set(b("k"), v1);
        long base = used();
        PinnedValue p = store.pinValue(b("k"));
        assertEquals(1, store.pinnedValues());
        store.set(b("k"), v2); // would reuse the block in place if it were not pinned
        assertArrayEquals(v1, bytes(p));
        assertArrayEquals(v2, store.get(b("k")));
        assertEquals(base + v2.length, used(), "the old block stays allocated while pinned");
        p.release();
        p.release(); // idempotent
        assertEquals(base, used(), "the old block is freed at the release");
        assertEquals(0, store.pinnedValues());
        // not pinned any more: the next overwrite of the same size needs no more memory (a value this large goes into
        // a new block the log writes from; the old one is freed once that is written)
        store.set(b("k"), v1);
        assertEquals(base, used());
    }

    @Test
    void deleteAndExpiryDeferTheFree() {
        byte[] v = filled(70_000, 3);
        long empty = used();
        store.set(b("d"), v);
        store.set(b("e"), v);
        PinnedValue pd = store.pinValue(b("d"));
        PinnedValue pe = store.pinValue(b("e"));
        PinnedValue pe2 = store.pinValue(b("e")); // two borrowers of one block
        assertEquals(1, store.delete(b("d")));
        store.expireAt(b("e"), System.currentTimeMillis() + 1);
        long deadline = System.currentTimeMillis() + 5_000;
        while (store.get(b("e")) != null && System.currentTimeMillis() < deadline) {
            Thread.onSpinWait();
        }
        assertNull(store.get(b("e")));
        store.delete(b("e"));
        assertEquals(empty + 2L * v.length, used());
        assertArrayEquals(v, bytes(pd));
        assertArrayEquals(v, bytes(pe));
        pd.release();
        pe.release();
        assertEquals(empty + v.length, used(), "one borrower of e remains");
        assertArrayEquals(v, bytes(pe2));
        pe2.release();
        assertEquals(empty, used());
    }

    @Test
    void appendAndSetRangeCopyAPinnedValue() {
        byte[] v = filled(50_000, 4);
        store.set(b("a"), v);
        store.append(b("a"), b("x")); // grows capacity beyond the length, so the next write would go in place
        byte[] before = store.get(b("a"));
        PinnedValue p = store.pinValue(b("a"));
        store.setRange(b("a"), 10, b("zzzz"));
        store.append(b("a"), b("y"));
        assertArrayEquals(before, bytes(p));
        byte[] expect = Arrays.copyOf(before, before.length + 1);
        System.arraycopy(b("zzzz"), 0, expect, 10, 4);
        expect[before.length] = 'y';
        assertArrayEquals(expect, store.get(b("a")));
        long pinnedUsed = used();
        p.release();
        assertEquals(0, store.pinnedValues());
        assertEquals(true, used() <= pinnedUsed - before.length, () -> "the pinned block is freed: used " + used()
            + " of " + pinnedUsed);
    }
}
