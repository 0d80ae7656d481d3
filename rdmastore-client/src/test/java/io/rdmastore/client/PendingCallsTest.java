package io.rdmastore.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class PendingCallsTest {
    private record E(long id, long deadlineNanos) implements PendingCalls.Entry {
    }

    @Test
    void addRemoveAndASlotStillTakenByAnOlderCall() {
        PendingCalls p = new PendingCalls();
        E old = new E(5, Long.MAX_VALUE);
        E same = new E(5 + 1024, Long.MAX_VALUE);   // same slot: goes to the overflow map
        p.add(old);
        p.add(same);
        assertEquals(2, p.size());
        assertNull(p.remove(6));
        assertSame(same, p.remove(5 + 1024));
        assertNull(p.remove(5 + 1024));
        assertFalse(p.remove(same));
        assertSame(old, p.remove(5));
        assertTrue(p.isEmpty());
    }

    @Test
    void expireTakesOnlyWhatIsDueAndDrainKeepsTheOrder() {
        PendingCalls p = new PendingCalls();
        List<E> all = new ArrayList<>();
        for (long id = 1; id <= 3000; id++) {      // more than the slots: some overflow
            E e = new E(id, id % 2 == 0 ? 100 : 1_000);
            all.add(e);
            p.add(e);
        }
        for (long id = 1; id <= 1024; id++) {
            p.remove(id);                           // answered: frees the slots of the first 1024
        }
        List<PendingCalls.Entry> expired = new ArrayList<>();
        p.expire(500, expired::add);
        assertEquals((3000 - 1024) / 2, expired.size());
        for (PendingCalls.Entry e : expired) {
            assertEquals(0, e.id() % 2);
            assertTrue(e.id() > 1024);
        }
        List<PendingCalls.Entry> rest = p.drain();
        assertEquals((3000 - 1024) / 2, rest.size());
        for (int i = 1; i < rest.size(); i++) {
            assertTrue(rest.get(i - 1).id() < rest.get(i).id(), "drained in the order sent");
        }
        assertTrue(p.isEmpty());
    }

    @Test
    @Timeout(30)
    void aReplyAndTheSweeperNeverBothWinACall() throws Exception {
        PendingCalls p = new PendingCalls();
        int n = 200_000;
        AtomicInteger replied = new AtomicInteger();
        ConcurrentLinkedQueue<PendingCalls.Entry> timedOut = new ConcurrentLinkedQueue<>();
        CountDownLatch done = new CountDownLatch(1);
        Thread sweeper = new Thread(() -> {
            while (done.getCount() > 0) {
                p.expire(Long.MAX_VALUE - 1, timedOut::add);
            }
        });
        sweeper.start();
        for (long id = 1; id <= n; id++) {
            p.add(new E(id, 0));
            if (p.remove(id) != null) {
                replied.incrementAndGet();
            }
        }
        done.countDown();
        sweeper.join();
        p.expire(Long.MAX_VALUE - 1, timedOut::add);
        assertEquals(n, replied.get() + timedOut.size(), "every call is won exactly once");
        assertTrue(p.isEmpty());
    }
}
