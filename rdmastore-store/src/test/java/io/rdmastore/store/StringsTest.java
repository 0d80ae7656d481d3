package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static io.rdmastore.store.TestSupport.s;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class StringsTest {
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

    @Test
    void setGetAndOptions() {
        assertNull(store.get(b("k")));
        store.set(b("k"), b("v1"));
        assertEquals("v1", s(store.get(b("k"))));
        assertFalse(store.set(b("k"), b("v2"), new SetOptions().ifAbsent(true)).written());
        assertTrue(store.set(b("k"), b("v2"), new SetOptions().ifPresent(true)).written());
        assertFalse(store.set(b("nope"), b("x"), new SetOptions().ifPresent(true)).written());
        assertNull(store.get(b("nope")));
        SetResult r = store.set(b("k"), b("v3"), new SetOptions().returnOld(true));
        assertEquals("v2", s(r.oldValue()));
        long at = System.currentTimeMillis() + 100_000;
        store.set(b("k"), b("v4"), new SetOptions().expireAtMillis(at));
        assertEquals(at, store.expireTime(b("k")));
        store.set(b("k"), b("v5"), new SetOptions().keepTtl(true));
        assertEquals(at, store.expireTime(b("k")));
        store.set(b("k"), b("v6"));
        assertEquals(-1, store.pttl(b("k")));
        assertThrows(BadRequestException.class,
                () -> store.set(b("k"), b("x"), new SetOptions().ifAbsent(true).ifPresent(true)));
        assertEquals(ValueType.STRING, store.type(b("k")));
        assertEquals(ValueType.NONE, store.type(b("zz")));
    }

    @Test
    void setFromOffHeapMemoryKeepsTheBytesAndTheOptionsAndSurvivesReopen() {
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            byte[] big = new byte[300_000];
            new java.util.Random(3).nextBytes(big);
            MemorySegment seg = arena.allocate(big.length);
            MemorySegment.copy(big, 0, seg, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, big.length);
            assertTrue(store.set(b("big"), seg, new SetOptions()).written());
            seg.fill((byte) 0); // the store kept nothing of the caller's memory
            assertArrayEquals(big, store.get(b("big")));
            assertFalse(store.set(b("big"), seg.asSlice(0, 10), new SetOptions().ifAbsent(true)).written());
            assertFalse(store.set(b("none"), seg.asSlice(0, 10), new SetOptions().ifPresent(true)).written());
            assertNull(store.get(b("none")));
            long at = System.currentTimeMillis() + 100_000;
            assertTrue(store.set(b("ttl"), seg.asSlice(0, 3), new SetOptions().expireAtMillis(at)).written());
            assertTrue(store.pttl(b("ttl")) > 90_000);
            assertArrayEquals(new byte[3], store.get(b("ttl")));
        }
        store.close();
        store = TestSupport.open(dir);
        assertEquals(300_000, store.get(b("big")).length);
        assertTrue(store.pttl(b("ttl")) > 90_000);
    }

    @Test
    void emptyValueAndEmptyKey() {
        store.set(b(""), b(""));
        assertArrayEquals(new byte[0], store.get(b("")));
        assertEquals(1, store.exists(b("")));
        assertEquals(0, store.strlen(b("")));
    }

    @Test
    void incrementsFollowRedis() {
        assertEquals(5, store.incrBy(b("n"), 5));
        assertEquals(2, store.incrBy(b("n"), -3));
        store.set(b("n"), b(Long.toString(Long.MAX_VALUE)));
        NotANumberException e = assertThrows(NotANumberException.class, () -> store.incrBy(b("n"), 1));
        assertEquals(NotANumberException.OVERFLOW, e.getMessage());
        for (String bad : List.of("abc", " 1", "01", "+1", "1.0", "", "-0")) {
            store.set(b("x"), b(bad));
            assertEquals(NotANumberException.NOT_AN_INTEGER,
                    assertThrows(NotANumberException.class, () -> store.incrBy(b("x"), 1)).getMessage(), bad);
        }
        store.set(b("f"), b("10.50"));
        assertEquals("10.6", store.incrByFloat(b("f"), "0.1"));
        assertEquals("5.6", store.incrByFloat(b("f"), "-5"));
        store.set(b("f"), b("5.0e3"));
        assertEquals("5200", store.incrByFloat(b("f"), "2.0e2"));
        assertEquals("5200", s(store.get(b("f"))));
        assertEquals("3", store.incrByFloat(b("g"), 3.0));
        assertEquals(NotANumberException.NOT_A_FLOAT,
                assertThrows(NotANumberException.class, () -> store.incrByFloat(b("g"), "x")).getMessage());
        long at = System.currentTimeMillis() + 100_000;
        store.expireAt(b("n"), at);
        store.set(b("n"), b("1"), new SetOptions().keepTtl(true));
        store.incrBy(b("n"), 1);
        assertEquals(at, store.expireTime(b("n")), "INCRBY keeps the TTL");
    }

    @Test
    void appendRangesAndSetRange() {
        assertEquals(5, store.append(b("s"), b("Hello")));
        assertEquals(11, store.append(b("s"), b(" World")));
        assertEquals("Hello World", s(store.get(b("s"))));
        assertEquals("Hello", s(store.getRange(b("s"), 0, 4)));
        assertEquals("World", s(store.getRange(b("s"), -5, -1)));
        assertEquals("Hello World", s(store.getRange(b("s"), 0, -1)));
        assertEquals("", s(store.getRange(b("s"), 5, 3)));
        assertEquals("", s(store.getRange(b("s"), -1, -5)));
        assertEquals("d", s(store.getRange(b("s"), 10, 100)));
        assertEquals("", s(store.getRange(b("missing"), 0, -1)));
        assertEquals(11, store.setRange(b("s"), 6, b("Redis")));
        assertEquals("Hello Redis", s(store.get(b("s"))));
        assertEquals(8, store.setRange(b("p"), 5, b("abc")));
        assertArrayEquals(new byte[] {0, 0, 0, 0, 0, 'a', 'b', 'c'}, store.get(b("p")));
        assertEquals(0, store.setRange(b("q"), 5, new byte[0]));
        assertEquals(0, store.exists(b("q")));
        assertThrows(BadRequestException.class, () -> store.setRange(b("p"), -1, b("x")));
        StringBuilder big = new StringBuilder();
        for (int i = 0; i < 2000; i++) {
            store.append(b("grow"), b("0123456789"));
            big.append("0123456789");
        }
        assertEquals(big.toString(), s(store.get(b("grow"))));
    }

    @Test
    void msetMgetGetDelGetEx() {
        assertTrue(store.mset(List.of(b("a"), b("1"), b("b"), b("2")), false));
        assertFalse(store.mset(List.of(b("a"), b("x"), b("c"), b("3")), true));
        assertNull(store.get(b("c")), "MSETNX writes nothing when one key exists");
        assertTrue(store.mset(List.of(b("c"), b("3"), b("d"), b("4")), true));
        store.hset(b("h"), List.of(b("f"), b("v")));
        List<byte[]> got = store.mget(b("a"), b("zz"), b("c"), b("h"));
        assertEquals("1", s(got.get(0)));
        assertNull(got.get(1));
        assertEquals("3", s(got.get(2)));
        assertNull(got.get(3));
        assertEquals("1", s(store.getDel(b("a"))));
        assertNull(store.get(b("a")));
        long at = System.currentTimeMillis() + 50_000;
        assertEquals("2", s(store.getEx(b("b"), at)));
        assertEquals(at, store.expireTime(b("b")));
        store.getEx(b("b"), Store.TTL_PERSIST);
        assertEquals(-1, store.pttl(b("b")));
        store.getEx(b("b"), System.currentTimeMillis() - 1);
        assertNull(store.get(b("b")), "GETEX with a past time deletes");
    }

    @Test
    void wrongTypeMessage() {
        store.hset(b("h"), List.of(b("f"), b("v")));
        WrongTypeException e = assertThrows(WrongTypeException.class, () -> store.get(b("h")));
        assertEquals("WRONGTYPE Operation against a key holding the wrong kind of value", e.getMessage());
        assertThrows(WrongTypeException.class, () -> store.append(b("h"), b("x")));
        assertThrows(WrongTypeException.class, () -> store.incrBy(b("h"), 1));
        store.set(b("s"), b("v"));
        assertThrows(WrongTypeException.class, () -> store.hget(b("s"), b("f")));
        assertThrows(WrongTypeException.class, () -> store.hset(b("s"), List.of(b("f"), b("v"))));
    }

    @Test
    void readValueIsZeroCopyAndConfinedToTheCall() {
        store.set(b("k"), b("hello"));
        MemorySegment[] escaped = new MemorySegment[1];
        String v = store.readValue(b("k"), seg -> {
            escaped[0] = seg;
            return new String(seg.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
        });
        assertEquals("hello", v);
        assertTrue(escaped[0].isNative());
        assertThrows(IllegalStateException.class, () -> escaped[0].get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
        assertNull(store.readValue(b("missing"), seg -> seg));
        assertThrows(IllegalArgumentException.class, () -> store.readValue(b("k"),
                seg -> {
                    seg.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 0, (byte) 1);
                    return null;
                }));
    }

    @Test
    void offHeapMemoryIsFreedOnOverwriteAndDelete() {
        long before = store.stats().usedOffHeapBytes();
        store.set(b("big"), new byte[100_000]);
        assertTrue(store.stats().usedOffHeapBytes() >= before + 100_000);
        store.set(b("big"), new byte[10]);
        store.flush(); // a large value's block is logged from, and freed once the log has written it
        assertTrue(store.stats().usedOffHeapBytes() < before + 1000);
        store.delete(b("big"));
        assertEquals(before, store.stats().usedOffHeapBytes());
    }
}
