package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.DocumentCollection;
import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreConnectionException;
import io.rdmastore.client.RdmaStoreServerException;
import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.WireReader;
import io.rdmastore.client.protocol.WireWriter;
import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.tcp.TcpTransport;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.bson.BsonDocument;
import org.bson.BsonString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Malformed frames, unknown opcodes, oversize input, bad BSON and filters, credentials: clear errors, no damage. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(60)
class BadInputTest {
    private Path dir;
    private RdmaStoreServer server;
    private TcpTransport tcp;
    private Network network;

    @BeforeAll
    void start(@TempDir Path tempDir) {
        dir = tempDir;
        server = TestServers.start(dir.resolve("main"), c -> c.maxKeyBytes(1024).maxValueBytes(1 << 20)
            .maxDocumentBytes(64 << 10).maxRequestBytes(2 << 20));
        tcp = new TcpTransport();
        network = new Network(new Network.Context().carrier(tcp));
    }

    @AfterAll
    void stop() {
        network.close();
        tcp.close();
        server.close();
    }

    /** A raw native connection that hands every reply to a queue. */
    private final class Raw implements AutoCloseable, MessageHandler {
        final BlockingQueue<byte[]> replies = new ArrayBlockingQueue<>(100);
        final Connection connection;

        Raw() {
            connection = network.connect(new InetSocketAddress("127.0.0.1", server.port()), this,
                ConnectOptions.DEFAULT.withTransport("tcp"));
        }

        @Override
        public void onMessage(Connection c, MemorySegment m) {
            replies.add(m.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
        }

        /** Sends {@code w}'s message and returns the reply's status, checking its request id, and its text. */
        String call(WireWriter w, long id) throws InterruptedException {
            assertEquals(0, connection.offer(w.message()));
            byte[] reply = replies.poll(10, TimeUnit.SECONDS);
            if (reply == null) {
                throw new AssertionError("no reply within 10 s");
            }
            WireReader r = new WireReader().wrap(MemorySegment.ofArray(reply), 0);
            int status = r.u8("status");
            assertEquals(id, r.i64("id"), "reply must carry the request id");
            return status + ":" + r.restString();
        }

        @Override
        public void close() {
            connection.close();
        }
    }

    private static WireWriter request(byte op, long id) {
        return new WireWriter(64).header(op, id);
    }

    private void assertStillServes(Raw raw) throws InterruptedException {
        assertEquals(ProtocolDescriptor.STATUS_OK + ":PONG", raw.call(request(ProtocolDescriptor.PING, 99), 99));
    }

    @Test
    void unknownOpcodeIsAnErrorAndTheConnectionStaysUsable() throws Exception {
        try (Raw raw = new Raw()) {
            String reply = raw.call(request((byte) 0x7F, 5).u8(1), 5);
            assertTrue(reply.startsWith(ProtocolDescriptor.STATUS_ERROR + ":ERR unknown opcode 0x7f"), reply);
            String zero = raw.call(request((byte) 0, 6), 6);
            assertTrue(zero.startsWith(ProtocolDescriptor.STATUS_ERROR + ":ERR unknown opcode 0x00"), zero);
            assertStillServes(raw);
        }
    }

    @Test
    void truncatedAndTrailingBodiesAreErrors() throws Exception {
        try (Raw raw = new Raw()) {
            String truncated = raw.call(request(ProtocolDescriptor.GET, 7).i32(100).raw(new byte[3]), 7);
            assertTrue(truncated.startsWith(ProtocolDescriptor.STATUS_ERROR + ":ERR malformed GET request: truncated"),
                truncated);
            String empty = raw.call(request(ProtocolDescriptor.SET, 8), 8);
            assertTrue(empty.startsWith(ProtocolDescriptor.STATUS_ERROR + ":ERR malformed SET request"), empty);
            String trailing = raw.call(request(ProtocolDescriptor.GET, 9).bytes(new byte[] {1}).u8(0), 9);
            assertTrue(trailing.contains("trailing"), trailing);
            String negative = raw.call(request(ProtocolDescriptor.DEL, 10).i32(-3), 10);
            assertTrue(negative.startsWith(ProtocolDescriptor.STATUS_ERROR + ":ERR malformed DEL request"), negative);
            String flags = raw.call(request(ProtocolDescriptor.SET, 11).u8(0x80).i64(0).bytes(new byte[] {1})
                .bytes(new byte[] {1}), 11);
            assertTrue(flags.contains("unknown flags"), flags);
            assertStillServes(raw);
            assertEquals(0, server.store().exists(new byte[] {1}), "nothing stored by malformed requests");
        }
    }

    @Test
    void messageShorterThanTheHeaderClosesTheConnection() throws Exception {
        try (Raw raw = new Raw()) {
            assertEquals(0, raw.connection.offer(MemorySegment.ofArray(new byte[] {ProtocolDescriptor.PING, 0, 0})));
            raw.connection.closeFuture().get(10, TimeUnit.SECONDS);
        }
        try (Raw other = new Raw()) {
            assertStillServes(other);
        }
    }

    @Test
    void oversizeKeyValueDocumentAndRequestAreRefusedAndNothingChanges() {
        try (RdmaStoreClient c = TestServers.client(server, "tcp")) {
            long keys = server.store().size();
            String bigKey = "k".repeat(2000);
            RdmaStoreServerException key = assertThrows(RdmaStoreServerException.class, () -> c.set(bigKey, "v"));
            assertEquals("ERR key of 2000 bytes exceeds limit of 1024 bytes", key.getMessage());
            assertEquals(keys, server.store().size(), "a refused SET stores nothing");

            c.set("sized", "old");
            byte[] bigValue = new byte[(1 << 20) + 1];
            RdmaStoreServerException value = assertThrows(RdmaStoreServerException.class,
                () -> c.set("sized".getBytes(StandardCharsets.UTF_8), bigValue));
            assertTrue(value.getMessage().startsWith("ERR value of 1048577 bytes exceeds limit of 1048576"),
                value.getMessage());
            assertEquals("old", c.get("sized"));

            byte[] hugeRequest = new byte[3 << 20];
            RdmaStoreServerException request = assertThrows(RdmaStoreServerException.class,
                () -> c.set("sized".getBytes(StandardCharsets.UTF_8), hugeRequest));
            assertTrue(request.getMessage().contains("exceeds limit") && request.getMessage().contains("request"),
                request.getMessage());
            assertEquals("old", c.get("sized"));

            DocumentCollection docs = c.collection("big");
            docs.insertOne(new BsonDocument("small", new BsonString("x")));
            BsonDocument big = new BsonDocument("blob", new BsonString("x".repeat(100_000)));
            RdmaStoreServerException doc = assertThrows(RdmaStoreServerException.class, () -> docs.insertOne(big));
            assertTrue(doc.getMessage().startsWith("ERR document of") && doc.getMessage().contains("exceeds limit"),
                doc.getMessage());
            RdmaStoreServerException many = assertThrows(RdmaStoreServerException.class,
                () -> docs.insertMany(List.of(new BsonDocument("ok", new BsonString("y")), big)));
            assertTrue(many.getMessage().contains("exceeds limit"), many.getMessage());
            assertEquals(1, docs.countDocuments(), "a refused insertMany inserts nothing");
            assertEquals("PONG", c.ping());
        }
    }

    @Test
    void malformedBsonAndFiltersAreErrors() throws Exception {
        try (RdmaStoreClient c = TestServers.client(server, "tcp"); Raw raw = new Raw()) {
            DocumentCollection docs = c.collection("filters");
            docs.insertOne(BsonDocument.parse("{a: 1}"));
            byte[] garbage = {20, 0, 0, 0, 0x7F, 'x', 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0};
            String bad = raw.call(request(ProtocolDescriptor.DOC_INSERT, 21).string("filters").i32(1).bytes(garbage),
                21);
            assertTrue(bad.startsWith(ProtocolDescriptor.STATUS_ERROR + ":ERR malformed BSON"), bad);
            String lying = raw.call(request(ProtocolDescriptor.DOC_COUNT, 22).string("filters")
                .bytes(new byte[] {99, 0, 0, 0, 0}), 22);
            assertTrue(lying.startsWith(ProtocolDescriptor.STATUS_ERROR + ":ERR malformed BSON")
                && lying.contains("declares 99 bytes"), lying);
            String tiny = raw.call(request(ProtocolDescriptor.DOC_FIND, 23).string("filters").i32(0)
                .bytes(new byte[] {1}), 23);
            assertTrue(tiny.startsWith(ProtocolDescriptor.STATUS_ERROR + ":ERR malformed BSON"), tiny);
            assertStillServes(raw);

            RdmaStoreServerException op = assertThrows(RdmaStoreServerException.class,
                () -> docs.find(BsonDocument.parse("{a: {$bogus: 1}}")));
            assertTrue(op.getMessage().startsWith("ERR") && op.getMessage().contains("$bogus"), op.getMessage());
            RdmaStoreServerException upd = assertThrows(RdmaStoreServerException.class,
                () -> docs.updateMany(BsonDocument.parse("{}"), BsonDocument.parse("{$frobnicate: {a: 2}}")));
            assertTrue(upd.getMessage().contains("$frobnicate"), upd.getMessage());
            assertEquals(1, docs.countDocuments(BsonDocument.parse("{a: 1}")), "failed updates change nothing");
        }
    }

    @Test
    void passwordIsEnforcedBeforeAnythingElse() {
        try (RdmaStoreServer secured = TestServers.start(dir.resolve("secured"), c -> c.password("s3cret"))) {
            String base = "rdmastore://127.0.0.1:" + secured.port() + "?transport=tcp&timeout=5s";
            RdmaStoreConnectionException none = assertThrows(RdmaStoreConnectionException.class,
                () -> RdmaStoreClient.connect(base));
            assertTrue(none.getMessage().contains("NOAUTH"), none.getMessage());
            RdmaStoreConnectionException wrong = assertThrows(RdmaStoreConnectionException.class,
                () -> RdmaStoreClient.connect(base + "&password=guess"));
            assertTrue(wrong.getMessage().contains("WRONGPASS"), wrong.getMessage());
            try (RdmaStoreClient ok = RdmaStoreClient.connect(base + "&password=s3cret")) {
                assertTrue(ok.set("k", "v"));
                assertEquals("v", ok.get("k"));
            }
        }
    }

    @Test
    void connectionsBeyondTheLimitAreRefusedClearly() {
        try (RdmaStoreServer small = TestServers.start(dir.resolve("small"), c -> c.maxConnections(2));
             RdmaStoreClient a = TestServers.client(small, "tcp");
             RdmaStoreClient b = TestServers.client(small, "tcp")) {
            RdmaStoreConnectionException e = assertThrows(RdmaStoreConnectionException.class,
                () -> TestServers.client(small, "tcp"));
            assertTrue(e.getMessage().contains("max number of clients reached (2)"), e.getMessage());
            assertEquals("PONG", a.ping());
            assertEquals("PONG", b.ping());
        }
    }

    @Test
    void badSettingsFailAtStart() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> new RdmaStoreServer(new ServerConfig().transport("carrier-pigeon")).start());
        assertTrue(e.getMessage().contains("transport must be auto, tcp or ucx"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> RdmaStoreServer.parseArgs(new String[] {"--port", "x"}));
        assertEquals(256L << 20, RdmaStoreServer.parseArgs(new String[] {"--snapshot-log-bytes", "268435456"})
            .snapshotLogBytes());
        assertThrows(IllegalArgumentException.class,
            () -> RdmaStoreServer.parseArgs(new String[] {"--snapshot-log-bytes", "-1"}));
        assertEquals(Duration.ofSeconds(5), RdmaStoreServer.parseArgs(new String[] {"--fsync", "always"})
            .handshakeTimeout());
    }
}
