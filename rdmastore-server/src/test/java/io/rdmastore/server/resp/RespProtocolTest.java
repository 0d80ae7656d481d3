package io.rdmastore.server.resp;

import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.tcp.TcpTransport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Wire-level tests of the RESP face: framing, pipelining, and each malformed input Redis documents, with Redis's error
 * text and Redis's decision to close or keep the connection; after each, the server still answers.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class RespProtocolTest {
    private static RespTestServer server;

    @BeforeAll
    static void start() {
        server = RespTestServer.start();
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private RawClient client() {
        return new RawClient(server.address());
    }

    private void assertServerHealthy() {
        try (RawClient c = client()) {
            assertEquals("+PONG\r\n", c.send("*1\r\n$4\r\nPING\r\n").read(7, 2000));
        }
    }

    /** Sends {@code bytes}; expects {@code reply} and then the server closing the connection. */
    private void assertErrorAndClose(String bytes, String reply) {
        try (RawClient c = client()) {
            String got = c.send(bytes).readUntilClose();
            assertEquals(reply, got);
            assertTrue(c.closedByServer(), "the server must close the connection after: " + reply);
        }
        assertServerHealthy();
    }

    @Test
    void inlineAndMultibulkCommands() {
        try (RawClient c = client()) {
            assertEquals("+PONG\r\n$5\r\nhello\r\n+OK\r\n$1\r\nv\r\n",
                c.send("PING\r\nECHO hello\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\nget k\n").read(27, 2000));
            assertFalse(c.closedByServer());
        }
    }

    @Test
    void inlineQuotingFollowsRedis() {
        try (RawClient c = client()) {
            assertEquals("$7\r\na b\"c\n\u00ff\r\n$3\r\nx'y\r\n",
                c.send("ECHO \"a b\\\"c\\n\\xff\"\r\nECHO 'x\\'y'\r\n").read(22, 2000));
        }
    }

    @Test
    void emptyRequestsAreSkipped() {
        try (RawClient c = client()) {
            assertEquals("+PONG\r\n+PONG\r\n+PONG\r\n",
                c.send("*0\r\n*-1\r\n\r\n   \r\nPING\r\n*0\r\nPING\r\n\nPING\r\n").read(21, 2000));
        }
    }

    @Test
    void unknownCommandKeepsTheConnection() {
        try (RawClient c = client()) {
            assertEquals("-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n+PONG\r\n",
                c.send("FOO bar\r\nPING\r\n").read(69, 2000));
            assertFalse(c.closedByServer());
        }
    }

    @Test
    void deepPipelineInOneWrite() {
        int n = 20_000;
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.append("*2\r\n$4\r\nINCR\r\n$2\r\npl\r\n");
        }
        try (RawClient c = client()) {
            String replies = c.send(sb.toString()).read(-1, 1500);
            String[] lines = replies.split("\r\n");
            assertEquals(n, lines.length);
            assertEquals(":1", lines[0]);
            assertEquals(":" + n, lines[n - 1]);
        }
    }

    @Test
    void requestsSplitAtEveryByte() throws IOException {
        byte[] req = "*3\r\n$3\r\nSET\r\n$5\r\nsplit\r\n$10\r\n0123456789\r\n*2\r\n$3\r\nGET\r\n$5\r\nsplit\r\n"
            .getBytes(StandardCharsets.US_ASCII);
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setTcpNoDelay(true);
            OutputStream o = s.getOutputStream();
            for (byte b : req) {
                o.write(b);
                o.flush();
            }
            s.setSoTimeout(3000);
            byte[] expect = "+OK\r\n$10\r\n0123456789\r\n".getBytes(StandardCharsets.US_ASCII);
            byte[] got = s.getInputStream().readNBytes(expect.length);
            assertEquals(new String(expect, StandardCharsets.US_ASCII), new String(got, StandardCharsets.US_ASCII));
        }
    }

    @Test
    void invalidMultibulkLengthNotANumber() {
        assertErrorAndClose("*abc\r\n", "-ERR Protocol error: invalid multibulk length\r\n");
    }

    @Test
    void multibulkCountOverTheLimit() {
        assertErrorAndClose("*2147483648\r\n", "-ERR Protocol error: invalid multibulk length\r\n");
    }

    @Test
    void negativeBulkLength() {
        assertErrorAndClose("*1\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length\r\n");
    }

    @Test
    void nonNumericBulkLength() {
        assertErrorAndClose("*1\r\n$abc\r\n", "-ERR Protocol error: invalid bulk length\r\n");
    }

    @Test
    void bulkLengthOverProtoMaxBulkLen() {
        assertErrorAndClose("*1\r\n$536870913\r\n", "-ERR Protocol error: invalid bulk length\r\n");
    }

    @Test
    void bulkWithoutDollar() {
        assertErrorAndClose("*1\r\n+PING\r\n", "-ERR Protocol error: expected '$', got '+'\r\n");
    }

    @Test
    void unterminatedInlineLine() {
        assertErrorAndClose("x".repeat(70_000), "-ERR Protocol error: too big inline request\r\n");
    }

    @Test
    void unterminatedMultibulkCount() {
        assertErrorAndClose("*" + "1".repeat(70_000), "-ERR Protocol error: too big mbulk count string\r\n");
    }

    @Test
    void unterminatedBulkCount() {
        assertErrorAndClose("*1\r\n$" + "1".repeat(70_000), "-ERR Protocol error: too big bulk count string\r\n");
    }

    @Test
    void unbalancedQuotes() {
        assertErrorAndClose("\"abc\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n");
    }

    @Test
    void commandsBeforeAProtocolErrorAreAnswered() {
        assertErrorAndClose("PING\r\n*1\r\n$x\r\nPING\r\n", "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n");
    }

    @Test
    void incompleteRequestWaits() {
        try (RawClient c = client()) {
            assertEquals("", c.send("*2\r\n$4\r\nECHO\r\n$5\r\nhel").read(-1, 300));
            assertEquals("$5\r\nhello\r\n", c.send("lo\r\n").read(11, 2000));
        }
    }

    @Test
    void unauthenticatedLimitsApplyWithAPassword() {
        try (RespTestServer s = RespTestServer.start(new RespFace.Context().password("secret"))) {
            try (RawClient c = new RawClient(s.address())) {
                assertEquals("-NOAUTH Authentication required.\r\n", c.send("GET k\r\n").read(34, 2000));
                assertEquals("-ERR Protocol error: unauthenticated multibulk length\r\n",
                    c.send("*11\r\n").readUntilClose());
                assertTrue(c.closedByServer());
            }
            try (RawClient c = new RawClient(s.address())) {
                assertEquals("-ERR Protocol error: unauthenticated bulk length\r\n",
                    c.send("*1\r\n$16385\r\n").readUntilClose());
            }
            try (RawClient c = new RawClient(s.address())) {
                assertEquals("-WRONGPASS invalid username-password pair or user is disabled.\r\n+OK\r\n+PONG\r\n",
                    c.send("AUTH nope\r\nAUTH secret\r\nPING\r\n").read(76, 2000));
            }
        }
    }

    @Test
    void largeValueNearTheLimitRoundTrips() {
        int size = 8 * 1024 * 1024;
        byte[] value = new byte[size];
        new Random(1).nextBytes(value);
        byte[] head = ("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$" + size + "\r\n").getBytes(StandardCharsets.US_ASCII);
        byte[] req = new byte[head.length + size + 2];
        System.arraycopy(head, 0, req, 0, head.length);
        System.arraycopy(value, 0, req, head.length, size);
        req[req.length - 2] = '\r';
        req[req.length - 1] = '\n';
        try (RawClient c = client()) {
            assertEquals("+OK\r\n", c.send(req).read(5, 5000));
            String reply = c.send("STRLEN big\r\n").read(-1, 1000);
            assertEquals(":" + size + "\r\n", reply);
        }
    }

    @Test
    void randomBytesNeverHurtTheServer() throws Exception {
        Random r = new Random(42);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
        int connections = 0;
        while (System.nanoTime() < deadline && connections < 300) {
            connections++;
            byte[] junk = new byte[1 + r.nextInt(4096)];
            r.nextBytes(junk);
            if (junk[0] == 'R') {
                junk[0] = '*';
            }
            try (Socket s = new Socket("127.0.0.1", server.port())) {
                s.setSoTimeout(200);
                s.getOutputStream().write(junk);
                try {
                    s.getInputStream().read(new byte[4096]);
                } catch (IOException expected) {
                    // a time-out or a reset: both are fine for junk; only the server's health matters
                }
            }
        }
        assertTrue(connections > 10, "too few random connections: " + connections);
        assertServerHealthy();
    }

    @Test
    void nativePrefaceStillReachesTheNativeProtocol() {
        TcpTransport tcp = new TcpTransport(new TcpTransport.Context().ioThreads(1));
        try (Network net = new Network(new Network.Context().carrier(tcp))) {
            CompletableFuture<byte[]> echo = new CompletableFuture<>();
            Connection c = net.connect(server.address(), new MessageHandler() {
                @Override
                public void onMessage(Connection connection, MemorySegment message) {
                    echo.complete(message.toArray(ValueLayout.JAVA_BYTE));
                }
            }, ConnectOptions.DEFAULT);
            try {
                c.send(MemorySegment.ofArray("native".getBytes(StandardCharsets.US_ASCII)), Duration.ofSeconds(5));
                assertEquals("native", new String(echo.get(5, TimeUnit.SECONDS), StandardCharsets.US_ASCII));
                assertEquals("tcp", c.transportName());
            } catch (Exception e) {
                throw new AssertionError(e);
            } finally {
                c.close();
            }
        } finally {
            tcp.close();
        }
        assertServerHealthy();
    }
}
