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
 * The adaptive agent sleeps on the worker's event descriptor when idle, and a message arriving over shared memory
 * wakes it: requests spaced 3 ms apart (far past the spin window) each find the server's agent asleep, and each must
 * end a sleep by an event, not by the sleep's 1 ms time-out. Without a working descriptor every wake would be a
 * time-out and the count below would be about zero.
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
                long[] micros = new long[REQUESTS];
                byte[] b = new byte[64];
                for (int i = 0; i < REQUESTS; i++) {
                    Thread.sleep(3);
                    b[0] = (byte) i;
                    long t0 = System.nanoTime();
                    // offered from this (non-driver) thread: the client's agent sends it, so both agents are exercised
                    c.send(MemorySegment.ofArray(b), Duration.ofSeconds(5));
                    byte[] r = got.poll(10, TimeUnit.SECONDS);
                    micros[i] = (System.nanoTime() - t0) / 1_000;
                    assertNotNull(r, "no echo for request " + i);
                    assertArrayEquals(b, r);
                }
                long[] after = sucx.sleepCounts();
                long sleeps = after[0] - before[0];
                long woken = after[1] - before[1];
                Arrays.sort(micros);
                System.out.printf("%s: %d requests 3 ms apart: round trip p50 %d us, max %d us; server agent slept %d"
                    + " times, %d ended by an event%n", messaging, REQUESTS, micros[REQUESTS / 2],
                    micros[REQUESTS - 1], sleeps, woken);
                assertTrue(sleeps >= REQUESTS, "the idle server agent should sleep, slept " + sleeps);
                // each request woke it (a loaded machine may let a few land while it was still spinning)
                assertTrue(woken >= REQUESTS * 3 / 4, "only " + woken + " of " + REQUESTS
                    + " requests woke the sleeping server agent through its event descriptor");
                c.close();
                listener.close();
            }
        }
    }
}
