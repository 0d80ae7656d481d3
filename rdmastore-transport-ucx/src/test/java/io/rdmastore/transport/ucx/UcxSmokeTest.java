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
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class UcxSmokeTest {
    @Test
    @Timeout(60)
    void echoOverUcx() throws Exception {
        for (String messaging : new String[] {"ring", "am"}) {
            try (TcpTransport stcp = new TcpTransport(); TcpTransport ctcp = new TcpTransport();
                 UcxTransport sucx = new UcxTransport(new UcxTransport.Context().messaging(messaging)
                     .memoryBudget(64 << 20).maxConnections(8));
                 UcxTransport cucx = new UcxTransport(new UcxTransport.Context().messaging(messaging)
                     .memoryBudget(64 << 20).maxConnections(8));
                 Network server = new Network(new Network.Context().carrier(stcp).upgrade(sucx));
                 Network client = new Network(new Network.Context().carrier(ctcp).upgrade(cucx))) {
                assertTrue(sucx.isAvailable(), () -> "ucx unavailable: " + sucx.unavailabilityCause());
                var listener = server.listen(new InetSocketAddress("127.0.0.1", 0), c -> (conn, m) -> {
                    int st = conn.offer(m);
                    if (st < 0) {
                        throw new IllegalStateException("echo offer " + st);
                    }
                });
                BlockingQueue<byte[]> got = new ArrayBlockingQueue<>(1000);
                MessageHandler h = (conn, m) -> got.add(m.toArray(ValueLayout.JAVA_BYTE));
                Connection c = client.connect(listener.localAddress(), h,
                    ConnectOptions.DEFAULT.withTimeout(Duration.ofSeconds(10)));
                System.out.println("connected: " + c.describe() + " reason: " + c.selectionReason());
                assertEquals("ucx", c.transportName());
                java.util.Random rnd = new java.util.Random(1);
                for (int i = 0; i < 200; i++) {
                    int size = i % 50 == 49 ? rnd.nextInt(3 << 20) : rnd.nextInt(5000);
                    byte[] b = new byte[size];
                    rnd.nextBytes(b);
                    c.send(MemorySegment.ofArray(b), Duration.ofSeconds(5));
                    byte[] r = got.poll(10, TimeUnit.SECONDS);
                    assertNotNull(r, "no echo for message " + i + " of " + size + " bytes");
                    assertArrayEquals(b, r, "message " + i);
                }
                // up to 20000 round trips, at most 5 s of them: a loaded machine is slower, never wrong
                long t0 = System.nanoTime();
                long end = t0 + TimeUnit.SECONDS.toNanos(5);
                int n = 0;
                byte[] small = new byte[64];
                while (n < 20000 && System.nanoTime() - end < 0) {
                    c.send(MemorySegment.ofArray(small), Duration.ofSeconds(5));
                    assertNotNull(got.poll(10, TimeUnit.SECONDS), "no echo for round trip " + n);
                    n++;
                }
                System.out.printf("%s: %.1f us/rtt (cross-thread, %d round trips)%n", messaging,
                    (System.nanoTime() - t0) / 1e3 / n, n);
                c.close();
                listener.close();
            }
        }
    }
}
