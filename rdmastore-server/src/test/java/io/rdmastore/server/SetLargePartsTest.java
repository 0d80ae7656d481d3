package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.WireReader;
import io.rdmastore.client.protocol.WireWriter;
import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.Transport;
import io.rdmastore.transport.Transports;
import io.rdmastore.transport.UpgradeTransport;
import io.rdmastore.transport.tcp.TcpTransport;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Properties;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * SET_LARGE in parts (docs/protocol.md, "Large values"): the server reads each part as the client's count covers it,
 * and a count that stops, runs past the value or lies inside it is a clear error that stores nothing and leaves the
 * connection serving. Raw requests over ucx, so the client's count is the test's to move.
 */
@Timeout(60)
class SetLargePartsTest {
    private static final int LENGTH = 1 << 20;
    /** Where the count lives: the line after the value, as the client puts it. */
    private static final long PROGRESS_AT = LENGTH;

    /** A raw ucx connection to {@code server}, with memory of its own registered for the server to read. */
    private static final class Raw implements AutoCloseable, MessageHandler {
        final BlockingQueue<byte[]> replies = new ArrayBlockingQueue<>(16);
        final TcpTransport tcp = new TcpTransport();
        final Transport ucx;
        final Network network;
        final Connection connection;
        final Arena arena = Arena.ofShared();
        final MemorySegment memory = arena.allocate(PROGRESS_AT + 64, 4096);
        final RegisteredMemory registration;

        Raw(RdmaStoreServer server) {
            ucx = Transports.load(Transports.UCX, new Properties());
            network = new Network(new Network.Context().carrier(tcp).upgrade((UpgradeTransport) ucx));
            connection = network.connect(new InetSocketAddress("127.0.0.1", server.port()), this,
                ConnectOptions.DEFAULT.withTransport("ucx"));
            assertEquals("ucx", connection.transportName());
            registration = connection.register(memory);
        }

        @Override
        public void onMessage(Connection c, MemorySegment m) {
            replies.add(m.toArray(ValueLayout.JAVA_BYTE));
        }

        /** Sends a SET_LARGE in parts of {@code key} with the count at {@code progressAt}. */
        void send(long id, byte[] key, long progressAt) {
            WireWriter w = new WireWriter(256).header(ProtocolDescriptor.SET_LARGE, id).u8(ProtocolDescriptor.SET_PARTS)
                .i64(0).bytes(key).i64(LENGTH).bytes(registration.descriptor()).i64(progressAt);
            assertEquals(0, connection.offer(w.message()));
        }

        /** The reply to request {@code id}: its status and text. */
        String reply(long id) throws InterruptedException {
            byte[] reply = replies.poll(10, TimeUnit.SECONDS);
            if (reply == null) {
                throw new AssertionError("no reply within 10 s");
            }
            WireReader r = new WireReader().wrap(MemorySegment.ofArray(reply), 0);
            int status = r.u8("status");
            assertEquals(id, r.i64("id"));
            return status + ":" + r.restString();
        }

        void count(long bytes) {
            memory.set(ValueLayout.JAVA_LONG, PROGRESS_AT, bytes);
        }

        @Override
        public void close() {
            connection.close();
            network.close();
            registration.close();
            ucx.close();
            tcp.close();
            arena.close();
        }
    }

    @Test
    void partsCountedAfterTheRequestAreReadAndStored(@TempDir Path dir) throws Exception {
        assertTrue(TestServers.transports().contains("ucx"), "ucx is required by -Drdmastore.test.ucx=true");
        byte[] value = TestServers.random(LENGTH, 7);
        try (RdmaStoreServer server = TestServers.start(dir, c -> { });
             Raw raw = new Raw(server);
             RdmaStoreClient client = TestServers.client(server, "tcp")) {
            raw.count(0);
            raw.send(1, TestServers.key("k"), PROGRESS_AT);
            // the parts arrive after the request, the first one late: the server waits for the count
            Thread.sleep(20);
            for (int at = 0; at < LENGTH; at += 100_000) {
                int n = Math.min(100_000, LENGTH - at);
                MemorySegment.copy(MemorySegment.ofArray(value), at, raw.memory, at, n);
                raw.count(at + n);
                Thread.sleep(1);
            }
            assertEquals(ProtocolDescriptor.STATUS_OK + ":", raw.reply(1));
            assertArrayEquals(value, client.get(TestServers.key("k")));
            assertTrue(client.info().contains("value_set_large_in_parts:1"), "counted as read in parts");
        }
    }

    @Test
    void aCountThatStopsOrOverrunsIsAnErrorAndStoresNothing(@TempDir Path dir) throws Exception {
        assertTrue(TestServers.transports().contains("ucx"), "ucx is required by -Drdmastore.test.ucx=true");
        try (RdmaStoreServer server = TestServers.start(dir, c -> { });
             Raw raw = new Raw(server);
             RdmaStoreClient client = TestServers.client(server, "tcp")) {
            raw.count(4096);
            raw.send(1, TestServers.key("stopped"), PROGRESS_AT);
            String stopped = raw.reply(1);
            assertTrue(stopped.startsWith(ProtocolDescriptor.STATUS_ERROR + ":ERR SET_LARGE parts: the client's count "
                + "stayed at 4096 of " + LENGTH + " bytes"), stopped);

            raw.count(LENGTH + 1);
            raw.send(2, TestServers.key("overrun"), PROGRESS_AT);
            String overrun = raw.reply(2);
            assertTrue(overrun.startsWith(ProtocolDescriptor.STATUS_ERROR + ":ERR SET_LARGE parts: the client's count "
                + (LENGTH + 1) + " lies outside"), overrun);

            raw.send(3, TestServers.key("inside"), LENGTH - 8);
            String inside = raw.reply(3);
            assertTrue(inside.startsWith(ProtocolDescriptor.STATUS_ERROR + ":ERR malformed SET_LARGE request: "
                + "progressAt"), inside);

            for (String k : new String[] {"stopped", "overrun", "inside"}) {
                assertNull(client.get(TestServers.key(k)), k + ": nothing stored");
            }
            // the connection still serves: a whole count now stores the value
            byte[] value = TestServers.random(LENGTH, 3);
            MemorySegment.copy(MemorySegment.ofArray(value), 0, raw.memory, 0, LENGTH);
            raw.count(LENGTH);
            raw.send(4, TestServers.key("whole"), PROGRESS_AT);
            assertEquals(ProtocolDescriptor.STATUS_OK + ":", raw.reply(4));
            assertArrayEquals(value, client.get(TestServers.key("whole")));
        }
    }
}
