package io.rdmastore.store;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import static io.rdmastore.store.TestSupport.b;
import static io.rdmastore.store.TestSupport.s;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The key listener (what the RESP face's WATCH, blocked pops and keyspace events hang on) and exclusive(). */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class KeyListenerTest {
    @TempDir
    Path dir;

    /** Records "key", "key!expired", "key+new" and "flush:<live keys among a,b>". */
    private static final class Recorder implements Store.KeyListener {
        final BlockingQueue<String> events = new LinkedBlockingQueue<>();

        @Override
        public void keyChanged(byte[] key, boolean expired) {
            events.add(s(key) + (expired ? "!expired" : ""));
        }

        @Override
        public boolean wantsCreations() {
            return true;
        }

        @Override
        public void keyCreated(byte[] key) {
            events.add(s(key) + "+new");
        }

        @Override
        public void flushing(Predicate<byte[]> live) {
            events.add("flush:" + (live.test(b("a")) ? "a" : "") + (live.test(b("b")) ? "b" : ""));
        }

        String next() throws InterruptedException {
            String e = events.poll(5, TimeUnit.SECONDS);
            assertTrue(e != null, "no event");
            return e;
        }
    }

    @Test
    void everyChangedKeyIsReportedWhateverTheType() throws Exception {
        try (Store st = TestSupport.open(dir)) {
            Recorder r = new Recorder();
            st.keyListener(r);
            st.set(b("a"), b("1"));
            assertEquals("a", r.next());
            assertEquals("a+new", r.next());
            st.set(b("a"), b("2"));
            assertEquals("a", r.next());
            st.lists().push(b("l"), List.of(b("x")), true, false);
            assertEquals("l", r.next());
            assertEquals("l+new", r.next());
            st.lists().move(b("l"), b("m"), true, true);
            assertEquals("l", r.next());
            assertEquals("m", r.next());
            assertEquals("m+new", r.next());
            // a move of a member the destination already holds leaves the destination untouched
            st.sets().add(b("s1"), List.of(b("x")));
            st.sets().add(b("s2"), List.of(b("x")));
            r.events.clear();
            st.sets().move(b("s1"), b("s2"), b("x"));
            assertEquals("s1", r.next());
            assertNull(r.events.poll(100, TimeUnit.MILLISECONDS));
            // reads report nothing
            st.get(b("a"));
            st.lists().range(b("m"), 0, -1);
            assertNull(r.events.poll(100, TimeUnit.MILLISECONDS));
            st.flushAll();
            assertEquals("flush:a", r.next());
            st.keyListener(null);
            st.set(b("a"), b("3"));
            assertNull(r.events.poll(100, TimeUnit.MILLISECONDS));
        }
    }

    @Test
    void expiryIsReportedAsExpired() throws Exception {
        try (Store st = TestSupport.open(dir)) {
            Recorder r = new Recorder();
            st.set(b("t"), b("v"), new SetOptions().expireAtMillis(System.currentTimeMillis() + 50));
            st.keyListener(r);
            // the active sweep deletes it
            assertEquals("t!expired", r.next());
            st.set(b("d"), b("v"));
            st.delete(b("d"));
            assertEquals("d", r.next());
            assertEquals("d+new", r.next());
            assertEquals("d", r.next());
        }
    }

    @Test
    void exclusiveKeepsOtherWritersOut() throws Exception {
        try (Store st = TestSupport.open(dir)) {
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            CompletableFuture<Void> body = CompletableFuture.runAsync(() -> st.exclusive(() -> {
                st.set(b("k"), b("mine"));
                inside.countDown();
                try {
                    assertTrue(release.await(10, TimeUnit.SECONDS));
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
                st.set(b("k2"), b("mine"));
                return null;
            }));
            assertTrue(inside.await(10, TimeUnit.SECONDS));
            CompletableFuture<Void> other = CompletableFuture.runAsync(() -> st.set(b("k2"), b("other")));
            Thread.sleep(200);
            assertFalse(other.isDone(), "a writer got in during exclusive()");
            release.countDown();
            body.get(10, TimeUnit.SECONDS);
            other.get(10, TimeUnit.SECONDS);
            // the other writer ran after the body
            assertEquals("other", s(st.get(b("k2"))));
        }
    }
}
