package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static io.rdmastore.store.TestSupport.s;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class KeysAndHashesTest {
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
    void globMatchesLikeRedis() {
        assertTrue(Glob.matches(b("h?llo"), b("hello")));
        assertTrue(Glob.matches(b("h*llo"), b("heeeello")));
        assertTrue(Glob.matches(b("h*llo"), b("hllo")));
        assertTrue(Glob.matches(b("h[ae]llo"), b("hallo")));
        assertFalse(Glob.matches(b("h[ae]llo"), b("hillo")));
        assertTrue(Glob.matches(b("h[^e]llo"), b("hallo")));
        assertFalse(Glob.matches(b("h[^e]llo"), b("hello")));
        assertTrue(Glob.matches(b("h[a-b]llo"), b("hbllo")));
        assertFalse(Glob.matches(b("h[a-b]llo"), b("hcllo")));
        assertTrue(Glob.matches(b("h\\*llo"), b("h*llo")));
        assertFalse(Glob.matches(b("h\\*llo"), b("hello")));
        assertTrue(Glob.matches(b("*"), b("")));
        assertFalse(Glob.matches(b("?"), b("")));
        assertTrue(Glob.matches(b("a*b*c"), b("axxbyyc")));
    }

    @Test
    void keysExistsDeleteRenameRandom() {
        store.mset(List.of(b("user:1"), b("a"), b("user:2"), b("b"), b("other"), b("c")), false);
        Set<String> users = new HashSet<>();
        for (byte[] k : store.keys("user:*")) {
            users.add(s(k));
        }
        assertEquals(Set.of("user:1", "user:2"), users);
        assertEquals(3, store.exists(b("user:1"), b("user:1"), b("other"), b("none")));
        assertEquals(3, store.size());
        assertEquals(2, store.delete(b("user:1"), b("user:1"), b("other"), b("none")));
        assertEquals(1, store.size());
        assertThrows(NoSuchKeyException.class, () -> store.rename(b("nope"), b("x"), false));
        long at = System.currentTimeMillis() + 60_000;
        store.expireAt(b("user:2"), at);
        assertTrue(store.rename(b("user:2"), b("moved"), false));
        assertEquals("b", s(store.get(b("moved"))));
        assertEquals(at, store.expireTime(b("moved")));
        assertNull(store.get(b("user:2")));
        store.set(b("taken"), b("t"));
        assertFalse(store.rename(b("moved"), b("taken"), true));
        assertTrue(store.rename(b("moved"), b("taken"), false));
        assertEquals("b", s(store.get(b("taken"))));
        store.hset(b("h"), List.of(b("f"), b("v")));
        assertTrue(store.rename(b("h"), b("h2"), false));
        assertEquals("v", s(store.hget(b("h2"), b("f"))));
        assertNotNull(store.randomKey());
        assertTrue(store.persist(b("taken")));
        assertFalse(store.persist(b("taken")));
        store.flushAll();
        assertEquals(0, store.size());
        assertNull(store.randomKey());
    }

    @Test
    void scanReturnsEveryKeyPresentThroughoutWhileOthersChange() throws Exception {
        Set<String> stable = new HashSet<>();
        for (int i = 0; i < 3000; i++) {
            store.set(b("stable:" + i), b("v"));
            stable.add("stable:" + i);
        }
        AtomicBoolean stop = new AtomicBoolean();
        Thread churn = new Thread(() -> {
            int i = 0;
            while (!stop.get()) {
                store.set(b("churn:" + (i % 500)), b("x"));
                store.delete(b("churn:" + ((i + 250) % 500)));
                i++;
            }
        });
        churn.start();
        Set<String> seen = new HashSet<>();
        long cursor = 0;
        int calls = 0;
        do {
            ScanResult r = store.scan(cursor, "stable:*", 100, null);
            for (byte[] k : r.keys()) {
                seen.add(s(k));
            }
            cursor = r.nextCursor();
            calls++;
        } while (cursor != 0 && calls < 100_000);
        stop.set(true);
        churn.join();
        assertEquals(stable, seen);
        store.hset(b("h"), List.of(b("f"), b("v")));
        ScanResult onlyHashes = fullScan(ValueType.HASH);
        assertEquals(1, onlyHashes.keys().size());
        assertEquals("h", s(onlyHashes.keys().getFirst()));
    }

    private ScanResult fullScan(ValueType type) {
        List<byte[]> all = new ArrayList<>();
        long cursor = 0;
        do {
            ScanResult r = store.scan(cursor, null, 10, type);
            all.addAll(r.keys());
            cursor = r.nextCursor();
        } while (cursor != 0);
        return new ScanResult(0, all);
    }

    @Test
    void hashes() {
        assertEquals(2, store.hset(b("h"), List.of(b("a"), b("1"), b("b"), b("2"))));
        assertEquals(1, store.hset(b("h"), List.of(b("b"), b("3"), b("c"), b("4"))));
        assertEquals(ValueType.HASH, store.type(b("h")));
        assertEquals("3", s(store.hget(b("h"), b("b"))));
        assertFalse(store.hsetnx(b("h"), b("a"), b("9")));
        assertTrue(store.hsetnx(b("h"), b("d"), b("5")));
        List<byte[]> all = store.hgetAll(b("h"));
        List<String> flat = new ArrayList<>();
        for (byte[] x : all) {
            flat.add(s(x));
        }
        assertEquals(List.of("a", "1", "b", "3", "c", "4", "d", "5"), flat);
        assertEquals(4, store.hlen(b("h")));
        assertEquals(1, store.hstrlen(b("h"), b("a")));
        List<byte[]> mg = store.hmget(b("h"), b("a"), b("zz"));
        assertEquals("1", s(mg.get(0)));
        assertNull(mg.get(1));
        assertEquals(11, store.hincrBy(b("h"), b("a"), 10));
        assertEquals("1.5", store.hincrByFloat(b("h"), b("x"), "1.5"));
        assertThrows(NotANumberException.class, () -> store.hincrBy(b("h"), b("x"), 1));
        assertEquals(2, store.hdel(b("h"), b("a"), b("b"), b("nope"), b("a")));
        assertFalse(store.hexists(b("h"), b("a")));
        assertEquals(3, store.hkeys(b("h")).size());
        assertEquals(3, store.hvals(b("h")).size());
        assertEquals(3, store.hdel(b("h"), b("c"), b("d"), b("x")));
        assertEquals(0, store.exists(b("h")), "deleting the last field deletes the key");
        assertEquals(ValueType.NONE, store.type(b("h")));
    }

    @Test
    void hgetAllHandsTheSizeFirstThenEveryPairInOrderAndCopiesOnlyForTheList() {
        store.hset(b("h"), List.of(b("a"), b("1"), b("b"), b("2"), b("c"), b("3")));
        List<String> seen = new ArrayList<>();
        store.hgetAll(b("h"), new Store.HashReader() {
            @Override
            public void size(int pairs) {
                assertTrue(seen.isEmpty(), "size comes first");
                seen.add("size " + pairs);
            }

            @Override
            public void pair(byte[] field, byte[] value) {
                seen.add(s(field) + "=" + s(value));
            }
        });
        assertEquals(List.of("size 3", "a=1", "b=2", "c=3"), seen);
        // the list's arrays are copies: changing one leaves the store's value as it was
        List<byte[]> all = store.hgetAll(b("h"));
        all.get(1)[0] = 'X';
        assertEquals("1", s(store.hget(b("h"), b("a"))));
        List<String> missing = new ArrayList<>();
        store.hgetAll(b("none"), new Store.HashReader() {
            @Override
            public void size(int pairs) {
                missing.add("size " + pairs);
            }

            @Override
            public void pair(byte[] field, byte[] value) {
                missing.add("pair");
            }
        });
        assertEquals(List.of("size 0"), missing);
        store.set(b("str"), b("v"));
        assertThrows(WrongTypeException.class, () -> store.hgetAll(b("str")));
    }

    @Test
    void hscanVisitsEveryField() {
        List<byte[]> fv = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            fv.add(b("f" + i));
            fv.add(b("v" + i));
        }
        store.hset(b("h"), fv);
        Set<String> seen = new HashSet<>();
        long cursor = 0;
        int calls = 0;
        do {
            ScanResult r = store.hscan(b("h"), cursor, null, 37);
            for (int i = 0; i < r.keys().size(); i += 2) {
                assertEquals("v" + s(r.keys().get(i)).substring(1), s(r.keys().get(i + 1)));
                seen.add(s(r.keys().get(i)));
            }
            cursor = r.nextCursor();
            calls++;
        } while (cursor != 0);
        assertEquals(1000, seen.size());
        assertTrue(calls > 10, "count is honoured: " + calls);
        ScanResult filtered = store.hscan(b("h"), 0, "f99*", 10_000);
        assertEquals(2 * 11, filtered.keys().size());
    }
}
