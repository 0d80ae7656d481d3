package io.rdmastore.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.WireReader;
import io.rdmastore.client.protocol.WireWriter;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.Listener;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.tcp.TcpTransport;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The client's time-outs, disconnect handling, reconnect and error mapping, against a scripted server built directly
 * on the transport SPI (the real server lives in a module that depends on this one).
 */
@Timeout(30)
class ClientAgainstScriptedServerTest {
    private TcpTransport tcp;
    private Network network;
    private Listener listener;
    private final AtomicInteger connections = new AtomicInteger();

    /** PING answers PONG; GET "silent" gets no reply; GET "close" closes the connection; other GETs get WRONGTYPE. */
    private final class Script implements MessageHandler {
        @Override
        public void onMessage(Connection c, MemorySegment m) {
            WireReader r = new WireReader().wrap(m, 0);
            int op = r.u8("op");
            long id = r.i64("id");
            WireWriter w = new WireWriter(64);
            if (op == ProtocolDescriptor.PING) {
                c.offer(w.header(ProtocolDescriptor.STATUS_OK, id).rawString("PONG").message());
                return;
            }
            String key = new String(r.bytes("key", 100), StandardCharsets.UTF_8);
            switch (key) {
                case "silent" -> { }
                case "close" -> c.close();
                default -> c.offer(w.header(ProtocolDescriptor.STATUS_ERROR, id)
                    .rawString("WRONGTYPE Operation against a key holding the wrong kind of value").message());
            }
        }
    }

    @BeforeEach
    void start() {
        tcp = new TcpTransport();
        network = new Network(new Network.Context().carrier(tcp));
        listener = network.listen(new InetSocketAddress("127.0.0.1", 0), c -> {
            connections.incrementAndGet();
            return new Script();
        });
    }

    @AfterEach
    void stop() {
        listener.close();
        network.close();
        tcp.close();
    }

    private RdmaStoreClient client(Duration timeout) {
        return RdmaStoreClient.builder().port(listener.localAddress().getPort()).transport("tcp").timeout(timeout)
            .connect();
    }

    @Test
    void callWithoutReplyTimesOutAndTheConnectionStaysUsable() {
        try (RdmaStoreClient client = client(Duration.ofMillis(300))) {
            long t0 = System.nanoTime();
            RdmaStoreTimeoutException e = assertThrows(RdmaStoreTimeoutException.class, () -> client.get("silent"));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms >= 250 && ms < 3000, "timed out after " + ms + " ms");
            assertTrue(e.getMessage().contains("GET timed out after 300 ms"), e.getMessage());
            assertEquals("PONG", client.ping());
            RdmaStoreTimeoutException shorter = assertThrows(RdmaStoreTimeoutException.class,
                () -> client.withTimeout(Duration.ofMillis(50)).get("silent"));
            assertTrue(shorter.getMessage().contains("50 ms"), shorter.getMessage());
            // nobody waits for an async call: the client's sweeper fails it on time by itself
            CompletableFuture<byte[]> async = client.withTimeout(Duration.ofMillis(100))
                .getAsync("silent".getBytes(StandardCharsets.UTF_8));
            long a0 = System.nanoTime();
            while (!async.isDone() && System.nanoTime() - a0 < TimeUnit.SECONDS.toNanos(3)) {
                Thread.onSpinWait();
            }
            assertTrue(async.isCompletedExceptionally(), "an unawaited call did not time out within 3 s");
            java.util.concurrent.ExecutionException ee = assertThrows(java.util.concurrent.ExecutionException.class,
                async::get);
            assertTrue(ee.getCause() instanceof RdmaStoreTimeoutException, ee.toString());
            assertEquals(1, connections.get(), "a time-out must not reconnect");
        }
    }

    @Test
    void inFlightCallsFailOnDisconnectAndTheNextCallReconnects() throws Exception {
        try (RdmaStoreClient client = client(Duration.ofSeconds(5))) {
            CompletableFuture<byte[]> pending = client.getAsync("silent".getBytes(StandardCharsets.UTF_8));
            RdmaStoreConnectionException e = assertThrows(RdmaStoreConnectionException.class,
                () -> client.get("close"));
            assertTrue(e.getMessage().contains("lost") && e.getMessage().contains("GET was in flight"),
                e.getMessage());
            ExecutionException x = assertThrows(ExecutionException.class, () -> pending.get(5, TimeUnit.SECONDS));
            assertTrue(x.getCause() instanceof RdmaStoreConnectionException, String.valueOf(x.getCause()));
            assertEquals("PONG", client.ping());
            assertEquals(2, connections.get());
        }
    }

    @Test
    void serverErrorsCarryTheirCode() {
        try (RdmaStoreClient client = client(Duration.ofSeconds(5))) {
            RdmaStoreServerException e = assertThrows(RdmaStoreServerException.class, () -> client.get("k"));
            assertEquals("WRONGTYPE", e.code());
            assertEquals("PONG", client.ping());
            assertEquals("tcp", client.transport());
            assertTrue(!client.transportReason().isEmpty());
        }
    }

    @Test
    void noServerFailsClearly() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        RdmaStoreConnectionException e = assertThrows(RdmaStoreConnectionException.class,
            () -> RdmaStoreClient.connect("rdmastore://127.0.0.1:" + port + "?transport=tcp&timeout=2s"));
        assertTrue(e.getMessage().contains("cannot connect to 127.0.0.1:" + port), e.getMessage());
    }
}
