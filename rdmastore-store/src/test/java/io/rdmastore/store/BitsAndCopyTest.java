package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static io.rdmastore.store.TestSupport.s;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** SETBIT and COPY: their results, and the same state after the log is replayed and after a snapshot. */
@Timeout(30)
class BitsAndCopyTest {
    @TempDir
    Path dir;

    @Test
    void setBitPadsAndReturnsTheOldBit() {
        try (Store store = TestSupport.open(dir)) {
            assertEquals(0, store.setBit(b("bits"), 7, true));
            assertEquals(1, store.setBit(b("bits"), 7, true));
            assertEquals(0, store.setBit(b("bits"), 17, true));
            assertArrayEquals(new byte[] {1, 0, 0x40}, store.get(b("bits")));
            assertEquals(1, store.setBit(b("bits"), 7, false));
            assertEquals(0, store.setBit(b("bits"), 100, false));
            assertEquals(13, store.strlen(b("bits")));
            store.hset(b("h"), List.of(b("f"), b("v")));
            assertThrows(WrongTypeException.class, () -> store.setBit(b("h"), 1, true));
            assertThrows(BadRequestException.class, () -> store.setBit(b("bits"), -1, true));
        }
        try (Store store = TestSupport.open(dir)) {
            assertEquals(13, store.strlen(b("bits")));
            assertEquals(0x40, store.get(b("bits"))[2]);
            assertEquals(0, store.get(b("bits"))[0]);
        }
    }

    @Test
    void copyKeepsTtlAndSurvivesReplayAndSnapshot() {
        long at = System.currentTimeMillis() + 600_000;
        try (Store store = TestSupport.open(dir)) {
            store.set(b("s"), b("value"), new SetOptions().expireAtMillis(at));
            store.hset(b("h"), List.of(b("f1"), b("v1"), b("f2"), b("v2")));
            assertTrue(store.copy(b("s"), b("s2"), false));
            assertTrue(store.copy(b("h"), b("h2"), false));
            assertFalse(store.copy(b("s"), b("h2"), false));
            assertFalse(store.copy(b("s"), b("s"), true));
            assertThrows(NoSuchKeyException.class, () -> store.copy(b("missing"), b("x"), true));
            store.hset(b("h"), List.of(b("f3"), b("v3")));
            assertEquals(2, store.hlen(b("h2")), "the copy is not shared with its source");
            assertEquals(at, store.expireTime(b("s2")));
        }
        try (Store store = TestSupport.open(dir)) {
            assertEquals("value", s(store.get(b("s2"))));
            assertEquals(at, store.expireTime(b("s2")));
            assertEquals(2, store.hlen(b("h2")));
            assertTrue(store.copy(b("s"), b("h2"), true));
            assertEquals("value", s(store.get(b("h2"))));
            store.snapshot();
        }
        try (Store store = TestSupport.open(dir)) {
            assertEquals("value", s(store.get(b("h2"))));
            assertEquals(3, store.hlen(b("h")));
        }
    }

    @Test
    void emptyStringReadsAsEmpty() {
        try (Store store = TestSupport.open(dir)) {
            store.set(b("e"), new byte[0]);
            assertEquals(0L, (long) store.readValue(b("e"), seg -> seg.byteSize()));
            assertArrayEquals(new byte[0], store.get(b("e")));
        }
    }
}
