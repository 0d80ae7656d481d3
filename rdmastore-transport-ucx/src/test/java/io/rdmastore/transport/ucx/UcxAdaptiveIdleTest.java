package io.rdmastore.transport.ucx;

import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.tcp.TcpTransport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The adaptive agent sleeps on its doorbell when idle, and a peer's message wakes it: before each request the test waits
 * until the server's agent is asleep, so the client must see its flag and ring (counted), and the rung agent's
 * sleep must end by the ring rather than its 1 ms time-out (counted; on a loaded machine a ring may land just after a
 * time-out, so not every one). Without a working doorbell no ring is sent and every sleep times out.
 */
class UcxAdaptiveIdleTest {
    private static final int REQUESTS = 40;

    @Test
    @Timeout(60)
    void anIdleAgentSleepsAndAMessageWakesIt() throws Exception {
        for (String messaging : new String[] {"ring", "am"}) {
            try (TcpTransport stcp = new TcpTransport(); TcpTransport ctcp = new TcpTransport();
                 UcxTransport sucx = new UcxTransport(new UcxTransport.Context().messaging(messaging)
                     .idleStrategy("adaptive").tls("posix,cma,self").memoryBudget(16 << 20).maxConnections(4));
                 UcxTransport cucx = new UcxTransport(new UcxTransport.Context().messaging(messaging)
                     .idleStrategy("light").tls("posix,cma,self").memoryBudget(16 << 20).maxConnections(4));
                 Network server = new Network(new Network.Context().carrier(stcp).upgrade(sucx));
                 Network client = new Network(new Network.Context().carrier(ctcp).upgrade(cucx))) {
                assertTrue(sucx.isAvailable(), () -> "ucx unavailable: " + sucx.unavailabilityCause());
                var listener = server.listen(new InetSocketAddress("127.0.0.1", 0), c -> (conn, m) -> {
                    int st = conn.offer(m);
                    if (st < 0) {
                        throw new IllegalStateException("echo offer " + st);
                    }
                });
                BlockingQueue<byte[]> got = new ArrayBlockingQueue<>(16);
                MessageHandler h = (conn, m) -> got.add(m.toArray(ValueLayout.JAVA_BYTE));
                Connection c = client.connect(listener.localAddress(), h,
                    ConnectOptions.DEFAULT.withTimeout(Duration.ofSeconds(10)));
                assertEquals("ucx", c.transportName());
                assertTrue(sucx.hasDoorbell() && cucx.hasDoorbell(), "both agents should have a doorbell");
                long[] before = sucx.sleepCounts();
                long ringsBefore = cucx.ringsSent();
                long[] micros = new long[REQUESTS];
                byte[] b = new byte[64];
                for (int i = 0; i < REQUESTS; i++) {
                    long asleepBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                    while (!sucx.agentAsleep()) {
                        assertTrue(System.nanoTime() < asleepBy, "the idle server agent did not go to sleep");
                        Thread.sleep(1);
                    }
                    b[0] = (byte) i;
                    long t0 = System.nanoTime();
                    // offered from this (non-driver) thread: it sends and rings the sleeping server itself
                    c.send(MemorySegment.ofArray(b), Duration.ofSeconds(5));
                    byte[] r = got.poll(10, TimeUnit.SECONDS);
                    micros[i] = (System.nanoTime() - t0) / 1_000;
                    assertNotNull(r, "no echo for request " + i);
                    assertArrayEquals(b, r);
                }
                long rings = cucx.ringsSent() - ringsBefore;
                long[] after = sucx.sleepCounts();
                long sleeps = after[0] - before[0];
                long woken = after[1] - before[1];
                Arrays.sort(micros);
                System.out.printf("%s: %d requests, each to a sleeping agent: round trip p50 %d us, max %d us; the"
                    + " client rang %d times; the server agent slept %d times, %d ended by a ring%n", messaging,
                    REQUESTS, micros[REQUESTS / 2], micros[REQUESTS - 1], rings, sleeps, woken);
                // the flag was seen set just before each send; the agent may wake by its time-out in between
                assertTrue(rings >= REQUESTS * 3 / 4, "requests sent to a sleeping server must ring it: " + rings
                    + " rings for " + REQUESTS + " requests");
                assertTrue(woken >= REQUESTS / 4, "only " + woken + " of " + REQUESTS
                    + " rings ended the server agent's sleep before its time-out");
                c.close();
                listener.close();
            }
        }
    }

    /**
     * A server whose agent spins (it never sleeps, so it needs no doorbell of its own) still rings a client whose agent
     * sleeps: each reply here comes 2 ms after its request, long past the client's spin, and must end the client
     * agent's sleep by a ring rather than by its 1 ms time-out. Without that, every slow reply waited for a time-out.
     */
    @Test
    @Timeout(60)
    void aSpinningServerRingsASleepingClient() throws Exception {
        try (TcpTransport stcp = new TcpTransport(); TcpTransport ctcp = new TcpTransport();
             UcxTransport sucx = new UcxTransport(new UcxTransport.Context().idleStrategy("spin")
                 .tls("posix,cma,self").memoryBudget(16 << 20).maxConnections(4));
             UcxTransport cucx = new UcxTransport(new UcxTransport.Context().idleStrategy("light")
                 .tls("posix,cma,self").memoryBudget(16 << 20).maxConnections(4));
             Network server = new Network(new Network.Context().carrier(stcp).upgrade(sucx));
             Network client = new Network(new Network.Context().carrier(ctcp).upgrade(cucx))) {
            assertTrue(sucx.isAvailable(), () -> "ucx unavailable: " + sucx.unavailabilityCause());
            var listener = server.listen(new InetSocketAddress("127.0.0.1", 0), c -> (conn, m) -> {
                try {
                    Thread.sleep(2);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                if (conn.offer(m) < 0) {
                    throw new IllegalStateException("echo offer failed");
                }
            });
            BlockingQueue<byte[]> got = new ArrayBlockingQueue<>(16);
            Connection c = client.connect(listener.localAddress(), (conn, m) -> got.add(m.toArray(ValueLayout.JAVA_BYTE)),
                ConnectOptions.DEFAULT.withTimeout(Duration.ofSeconds(10)));
            assertEquals("ucx", c.transportName());
            long ringsBefore = sucx.ringsSent();
            long[] before = cucx.sleepCounts();
            byte[] b = new byte[64];
            for (int i = 0; i < REQUESTS; i++) {
                b[0] = (byte) i;
                c.send(MemorySegment.ofArray(b), Duration.ofSeconds(5));
                byte[] r = got.poll(10, TimeUnit.SECONDS);
                assertNotNull(r, "no echo for request " + i);
                assertArrayEquals(b, r);
            }
            long rings = sucx.ringsSent() - ringsBefore;
            long woken = cucx.sleepCounts()[1] - before[1];
            System.out.printf("spinning server, sleeping client: %d slow replies, the server rang %d times, %d client"
                + " sleeps ended by a ring%n", REQUESTS, rings, woken);
            assertTrue(rings >= REQUESTS / 2, "replies to a sleeping client must ring it: " + rings + " rings for "
                + REQUESTS + " replies");
            assertTrue(woken >= REQUESTS / 4, "only " + woken + " of " + REQUESTS
                + " replies ended the client agent's sleep before its time-out");
            c.close();
            listener.close();
        }
    }

    /**
     * While a waiting thread polls the worker itself, the sleeping agent does not ask peers to ring (the poller finds
     * their frames); once the last poller stops, it asks again.
     */
    @Test
    @Timeout(30)
    void aPollingThreadSilencesTheDoorbellUntilItStops() throws Exception {
        try (UcxTransport t = idleClientTransport()) {
            t.polling(true);
            t.polling(true);
            long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(30);
            while (System.nanoTime() < until) {
                // the agent wakes every millisecond and sleeps again: never with its flag raised while polled
                assertTrue(!t.agentAsleep(), "a ring was asked for while a thread polls");
                Thread.sleep(1);
            }
            t.polling(false);
            assertTrue(!t.agentAsleep(), "one thread still polls");
            t.polling(false);
            awaitAsleep(t, true);
        }
    }

    /**
     * A caller whose wait ended (it got its reply and will send its next request) leaves the sleeping agent's flag down,
     * so the reply to that next request rings nobody; the agent raises it again once calls stop. A caller that stops
     * polling to block for a late reply raises it at once: the agent must then deliver that reply.
     */
    @Test
    @Timeout(30)
    void aCallerBetweenRequestsIsNotRungButABlockedOneIs() throws Exception {
        try (UcxTransport t = idleClientTransport()) {
            int down = 0;
            for (int i = 0; i < 20; i++) {
                t.waiting(true);
                t.polling(true);
                assertTrue(!t.agentAsleep(), "a ring was asked for while a thread polls");
                t.waiting(false);
                t.polling(false);
                if (!t.agentAsleep()) {
                    down++;
                }
                Thread.onSpinWait();
            }
            // the flag stays down unless this thread stalled for a millisecond between its calls
            assertTrue(down >= 15, "the flag went up between requests " + (20 - down) + " times in 20");
            awaitAsleep(t, true);
            t.waiting(true);
            t.polling(true);
            t.polling(false);
            awaitAsleep(t, true);
            t.waiting(false);
        }
    }

    /** A client's transport (a {@code light} agent with a doorbell) without connections, its agent asleep. */
    private static UcxTransport idleClientTransport() throws InterruptedException {
        UcxTransport t = new UcxTransport(new UcxTransport.Context().idleStrategy("light").tls("posix,cma,self")
            .memoryBudget(4 << 20).maxConnections(1));
        try {
            assertTrue(t.hasDoorbell());
            awaitAsleep(t, true);
            return t;
        } catch (AssertionError | InterruptedException e) {
            t.close();
            throw e;
        }
    }

    private static void awaitAsleep(UcxTransport t, boolean asleep) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (t.agentAsleep() != asleep) {
            assertTrue(System.nanoTime() < deadline, "the agent's flag did not become " + asleep);
            Thread.sleep(1);
        }
    }
}
