package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.WireReader;
import io.rdmastore.client.protocol.WireWriter;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.RemoteMemory;
import io.rdmastore.transport.TransportStatus;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replies the transport refuses with BACK_PRESSURED are queued and retried, in order, none dropped; a SNAPSHOT reply
 * keeps its place in that order.
 */
@Timeout(30)
class BackPressureTest {

    /** A connection that refuses every offer while {@code blocked} and records what it accepts. */
    private static final class StallingConnection implements Connection {
        volatile boolean blocked = true;
        volatile int refused;
        final List<byte[]> accepted = new CopyOnWriteArrayList<>();

        @Override
        public int offer(MemorySegment message) {
            if (blocked) {
                refused++;
                return TransportStatus.BACK_PRESSURED;
            }
            accepted.add(message.toArray(ValueLayout.JAVA_BYTE));
            return TransportStatus.OK;
        }

        @Override
        public String transportName() {
            return "test";
        }

        @Override
        public String selectionReason() {
            return "test";
        }

        @Override
        public String describe() {
            return "stalling test connection";
        }

        @Override
        public InetSocketAddress remoteAddress() {
            return new InetSocketAddress("127.0.0.1", 1);
        }

        @Override
        public int maxMessageLength() {
            return 1 << 20;
        }

        @Override
        public RegisteredMemory register(MemorySegment segment) {
            throw new UnsupportedOperationException();
        }

        @Override
        public RemoteMemory remoteMemory(byte[] descriptor) {
            throw new UnsupportedOperationException();
        }

        @Override
        public CompletableFuture<Void> read(RemoteMemory r, long ro, RegisteredMemory l, long lo, long n) {
            throw new UnsupportedOperationException();
        }

        @Override
        public CompletableFuture<Void> write(RegisteredMemory l, long lo, RemoteMemory r, long ro, long n) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public CompletableFuture<Void> closeFuture() {
            return new CompletableFuture<>();
        }

        @Override
        public void attach(Object attachment) {
        }

        @Override
        public Object attachment() {
            return null;
        }

        @Override
        public void close() {
        }
    }

    @Test
    void refusedRepliesAreQueuedAndDeliveredInOrder(@TempDir Path dir) throws Exception {
        try (RdmaStoreServer server = TestServers.start(dir, c -> { })) {
            StallingConnection conn = new StallingConnection();
            NativeSession session = new NativeSession(server, server.store(), server.config(), conn);
            byte[] key = "bp".getBytes(java.nio.charset.StandardCharsets.UTF_8);
            WireWriter w = new WireWriter(64);
            for (int i = 1; i <= 300; i++) {
                if (i == 150) {
                    w.header(ProtocolDescriptor.SNAPSHOT, i);
                } else {
                    w.header(ProtocolDescriptor.INCRBY, i).bytes(key).i64(1);
                }
                session.onMessage(conn, w.message());
            }
            assertTrue(conn.refused > 0, "the connection must have refused replies");
            assertEquals(0, conn.accepted.size());
            Thread.sleep(50);
            conn.blocked = false;
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (conn.accepted.size() < 300 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertEquals(300, conn.accepted.size(), "every reply delivered once the transport accepts again");
            long expected = 0;
            for (int i = 0; i < 300; i++) {
                WireReader r = new WireReader().wrap(MemorySegment.ofArray(conn.accepted.get(i)), 0);
                assertEquals(ProtocolDescriptor.STATUS_OK, r.u8("status"), "reply " + (i + 1));
                assertEquals(i + 1, r.i64("id"), "replies must keep request order");
                long v = r.i64("value");
                if (i + 1 == 150) {
                    assertTrue(v > 0, "snapshot time");
                } else {
                    assertEquals(++expected, v);
                }
            }
        }
    }
}
