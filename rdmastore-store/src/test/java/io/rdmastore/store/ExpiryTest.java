package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class ExpiryTest {
    @TempDir
    Path dir;

    @Test
    void lazyExpiryHidesTheKeyAtOnce() throws Exception {
        try (Store st = Store.open(TestSupport.config(dir).activeExpiry(false))) {
            st.set(b("k"), b("v"), new SetOptions().expireAtMillis(System.currentTimeMillis() + 150));
            st.hset(b("h"), List.of(b("f"), b("v")));
            st.expireAt(b("h"), System.currentTimeMillis() + 150);
            long ttl = st.pttl(b("k"));
            assertTrue(ttl > 0 && ttl <= 150, "ttl " + ttl);
            Thread.sleep(250);
            assertNull(st.get(b("k")));
            assertEquals(-2, st.pttl(b("k")));
            assertEquals(0, st.exists(b("k"), b("h")));
            assertEquals(ValueType.NONE, st.type(b("h")));
            assertEquals(2, st.size(), "without the sweeper, expired keys stay counted until touched (as Redis)");
            st.hset(b("h"), List.of(b("g"), b("w")));
            assertEquals(1, st.hlen(b("h")), "a write to an expired key starts from nothing");
            assertEquals(-1, st.pttl(b("h")));
            assertFalse(st.hexists(b("h"), b("f")));
        }
    }

    @Test
    void activeExpiryRemovesKeysNobodyTouches() throws Exception {
        try (Store st = TestSupport.open(dir)) {
            long at = System.currentTimeMillis() + 100;
            for (int i = 0; i < 500; i++) {
                st.set(b("t" + i), b("v"), new SetOptions().expireAtMillis(at));
            }
            st.set(b("keep"), b("v"));
            assertEquals(500, st.stats().expires());
            long deadline = System.currentTimeMillis() + 10_000;
            while (st.size() > 1 && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
            assertEquals(1, st.size());
            assertEquals(0, st.stats().expires());
        }
    }

    @Test
    void expiryIsDurableAndAppliesAfterRestart() throws Exception {
        try (Store st = Store.open(TestSupport.config(dir).activeExpiry(false))) {
            st.set(b("short"), b("v"), new SetOptions().expireAtMillis(System.currentTimeMillis() + 100));
            st.set(b("long"), b("v"), new SetOptions().expireAtMillis(System.currentTimeMillis() + 600_000));
            st.set(b("revived"), b("old"), new SetOptions().expireAtMillis(System.currentTimeMillis() + 100));
            Thread.sleep(200);
            st.append(b("revived"), b("new"));
        }
        try (Store st = TestSupport.open(dir)) {
            assertNull(st.get(b("short")));
            assertEquals(1, st.exists(b("long")));
            assertTrue(st.pttl(b("long")) > 500_000);
            assertEquals("new", TestSupport.s(st.get(b("revived"))), "APPEND after expiry started a new value");
            assertEquals(-1, st.pttl(b("revived")));
            assertEquals(2, st.size());
        }
    }
}
