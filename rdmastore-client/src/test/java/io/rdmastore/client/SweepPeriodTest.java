package io.rdmastore.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The client's time-out sweeps follow the shortest time-out of any call (a twentieth of it, 10-250 ms), shrink only,
 * and run as one chain however often the period shrank.
 */
@Timeout(30)
class SweepPeriodTest {
    private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

    @Test
    void thePeriodFollowsTheShortestTimeOutAndTheSweepsStayOneChain() throws Exception {
        long before = ClientCore.sweepPeriodNanos();
        assertTrue(before >= 10 * MS && before <= 250 * MS, "period " + before / MS + " ms");
        ClientCore.sweepWithin(TimeUnit.SECONDS.toNanos(60)); // a twentieth is 3 s: longer than the longest period
        assertEquals(before, ClientCore.sweepPeriodNanos(), "a long time-out leaves the period as it was");
        ClientCore.sweepWithin(600 * MS);
        assertTrue(ClientCore.sweepPeriodNanos() <= 30 * MS, "600 ms: a sweep every 30 ms at most");
        ClientCore.sweepWithin(400 * MS);
        ClientCore.sweepWithin(300 * MS);
        ClientCore.sweepWithin(100 * MS); // a twentieth is 5 ms: held at 10
        assertEquals(10 * MS, ClientCore.sweepPeriodNanos());
        ClientCore.sweepWithin(TimeUnit.SECONDS.toNanos(5));
        assertEquals(10 * MS, ClientCore.sweepPeriodNanos(), "the period never grows back");
        long s0 = ClientCore.sweeps();
        long t0 = System.nanoTime();
        Thread.sleep(1000);
        long n = ClientCore.sweeps() - s0;
        long ms = (System.nanoTime() - t0) / MS;
        // one chain at 10 ms: about 100 sweeps a second; each replaced chain that kept running would add its own
        assertTrue(n >= 40 && n <= ms / 10 + 20, n + " sweeps in " + ms + " ms");
    }
}
