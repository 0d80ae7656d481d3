package io.rdmastore.transport.ucx;

import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.Listener;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.RemoteMemory;
import io.rdmastore.transport.tcp.TcpTransport;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One-sided operations through UCX (cross-memory reads off) unpack the peer's remote key and destroy it when the last
 * operation using it ends: a peer that reads a fresh descriptor per request, as the server does for every SET_LARGE
 * and blob transfer, holds no key once its reads are done. Before, every key stayed with the worker until it closed.
 */
class UcxRemoteKeyReleaseTest {
    private static final int REGION = 1 << 20;

    @ParameterizedTest(name = "tls={0}")
    @ValueSource(strings = {UcxTckNetworks.SHM_TLS, "tcp,self"})
    @Timeout(120)
    void keysOfFinishedOperationsAreDestroyed(String tls) throws Exception {
        try (TcpTransport stcp = new TcpTransport(); TcpTransport ctcp = new TcpTransport();
             UcxTransport server = ucx(tls, false); UcxTransport client = ucx(tls, true);
             Network sn = new Network(new Network.Context().carrier(stcp).upgrade(server));
             Network cn = new Network(new Network.Context().carrier(ctcp).upgrade(client));
             Arena arena = Arena.ofShared()) {
            MemorySegment lent = arena.allocate(REGION, 64);
            for (long i = 0; i < REGION; i += 8) {
                lent.set(ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L);
            }
            List<RegisteredMemory> registrations = new ArrayList<>();
            // the server lends the region and answers each message with its descriptor
            Listener l = sn.listen(new InetSocketAddress("127.0.0.1", 0), c -> (conn, m) -> {
                RegisteredMemory r;
                synchronized (registrations) {
                    if (registrations.isEmpty()) {
                        registrations.add(conn.register(lent));
                    }
                    r = registrations.get(0);
                }
                conn.offer(MemorySegment.ofArray(r.descriptor()));
            });
            BlockingQueue<byte[]> replies = new ArrayBlockingQueue<>(4);
            MessageHandler rx = (conn, m) -> replies.add(m.toArray(ValueLayout.JAVA_BYTE));
            Connection c = cn.connect(l.localAddress(), rx, ConnectOptions.DEFAULT.withTransport("ucx"));
            c.send(MemorySegment.ofArray(new byte[] {'D'}), java.time.Duration.ofSeconds(10));
            byte[] descriptor = replies.poll(10, TimeUnit.SECONDS);
            assertNotNull(descriptor, "no descriptor from the server");
            MemorySegment local = arena.allocate(REGION, 64);
            RegisteredMemory mine = c.register(local);
            int held = client.remoteKeysHeld();

            java.util.Random rnd = new java.util.Random(5);
            for (int i = 0; i < 150; i++) {
                // a fresh descriptor object per request, as a server decodes one per request
                RemoteMemory remote = c.remoteMemory(descriptor);
                int len = rnd.nextInt(64 * 1024) + 1;
                long off = rnd.nextInt(REGION - len + 1);
                if (i % 5 == 4) {
                    // a few operations at once on one descriptor: the key goes with the last of them
                    List<CompletableFuture<Void>> all = new ArrayList<>();
                    for (int k = 0; k < 4; k++) {
                        all.add(c.read(remote, off, mine, (long) k * len, len));
                    }
                    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
                    for (int k = 0; k < 4; k++) {
                        assertEquals(-1, MemorySegment.mismatch(lent, off, off + len, local, (long) k * len,
                            (long) (k + 1) * len), "concurrent read " + k + " of request " + i);
                    }
                } else {
                    c.read(remote, off, mine, 0, len).get(30, TimeUnit.SECONDS);
                    assertEquals(-1, MemorySegment.mismatch(lent, off, off + len, local, 0, len), "read " + i);
                }
            }
            // a write, and a read that fails its range check, hold no key afterwards either
            RemoteMemory remote = c.remoteMemory(descriptor);
            c.write(mine, 0, remote, 0, 4096).get(30, TimeUnit.SECONDS);
            assertTrue(c.read(remote, REGION - 10, mine, 0, 100).isCompletedExceptionally());
            assertEquals(held, client.remoteKeysHeld(), "remote keys still held after 150 requests' operations ended");
            assertTrue(c.isOpen());
            mine.close();
            c.close();
            l.close();
        }
    }

    private static UcxTransport ucx(String tls, boolean crossMemoryReadsOff) {
        UcxTransport t = new UcxTransport(new UcxTransport.Context().tls(tls).allowTcpWire(tls.startsWith("tcp"))
            .crossMemoryReads(!crossMemoryReadsOff).idleStrategy("spin").ringCapacity(256 << 10).maxConnections(2)
            .memoryBudget(4L * (2 * (256 << 10) + 4096)));
        assertTrue(t.isAvailable(), () -> "UCX required: " + t.unavailabilityCause());
        return t;
    }
}
