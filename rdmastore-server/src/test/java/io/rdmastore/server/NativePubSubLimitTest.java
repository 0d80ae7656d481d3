package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.WireWriter;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.TransportStatus;
import java.lang.reflect.Proxy;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A native subscriber that does not read its messages is disconnected once they pass the pub/sub output limit
 * ({@code client-output-buffer-limit} pubsub class), as a RESP subscriber is, and closing it ends its subscriptions.
 */
@Timeout(30)
class NativePubSubLimitTest {
    @Test
    void aSubscriberThatDoesNotReadIsDisconnectedAtTheLimit(@TempDir Path dir) {
        try (RdmaStoreServer server = TestServers.start(dir, c -> { });
             RdmaStoreClient publisher = TestServers.client(server, "tcp");
             redis.clients.jedis.Jedis jedis = new redis.clients.jedis.Jedis("127.0.0.1", server.port())) {
            assertEquals("OK", jedis.configSet("client-output-buffer-limit", "pubsub 65536 0 0"));
            AtomicBoolean closed = new AtomicBoolean();
            AtomicInteger refused = new AtomicInteger();
            // a transport connection that never takes a message: everything the session sends queues
            Connection stalled = (Connection) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {Connection.class}, (proxy, method, args) -> switch (method.getName()) {
                    case "offer" -> {
                        refused.incrementAndGet();
                        yield closed.get() ? TransportStatus.CLOSED : TransportStatus.BACK_PRESSURED;
                    }
                    case "close" -> {
                        closed.set(true);
                        yield null;
                    }
                    case "isOpen" -> !closed.get();
                    case "maxMessageLength" -> 1 << 20;
                    case "remoteAddress" -> new InetSocketAddress("127.0.0.1", 1);
                    case "transportName", "selectionReason", "describe", "toString" -> "stalled";
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    default -> null;
                });
            NativeSession session = new NativeSession(server, server.store(), server.config(), stalled);
            session.onMessage(stalled, new WireWriter(64).header(ProtocolDescriptor.SUBSCRIBE, 1).i32(1)
                .bytes("slow".getBytes(StandardCharsets.UTF_8)).message());
            String payload = "x".repeat(1000);
            int sent = 0;
            while (!closed.get() && sent < 1000) {
                assertEquals(1, publisher.publish("slow", payload), "the stalled session is subscribed");
                sent++;
            }
            assertTrue(closed.get(), "disconnected at the limit");
            assertTrue(sent > 30 && sent < 100, "about 64 KiB of 1 KB messages before the close, sent " + sent);
            assertTrue(refused.get() > 0);
            session.onClose(stalled, null);
            assertEquals(0, publisher.publish("slow", payload), "closing the session ended its subscription");
        }
    }
}
