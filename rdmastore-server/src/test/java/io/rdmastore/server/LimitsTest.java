package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** maxclients counts native and RESP clients together; a RESP client that does not read its replies is disconnected. */
@Timeout(60)
class LimitsTest {
    @TempDir
    Path dir;

    @Test
    void maxclientsCoversNativeAndResp() throws Exception {
        try (RdmaStoreServer server = TestServers.start(dir, c -> c.maxConnections(2));
             RdmaStoreClient nativeClient = TestServers.client(server, "tcp");
             Socket resp = new Socket("127.0.0.1", server.port())) {
            assertEquals("+PONG\r\n", exchange(resp, "PING\r\n"));
            try (Socket third = new Socket("127.0.0.1", server.port())) {
                third.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
                assertEquals("-ERR max number of clients reached (2)\r\n", readUntilClose(third));
            }
            assertThrows(RdmaStoreException.class, () -> {
                try (RdmaStoreClient c = TestServers.client(server, "tcp")) {
                    c.ping();
                }
            });
            nativeClient.ping();
        }
    }

    @Test
    void respClientThatDoesNotReadIsDisconnected() throws Exception {
        long limit = 8L << 20;
        try (RdmaStoreServer server = TestServers.start(dir, c -> c.maxPendingReplyBytes(limit));
             Socket s = new Socket("127.0.0.1", server.port())) {
            byte[] value = new byte[1 << 20];
            Arrays.fill(value, (byte) 'v');
            s.getOutputStream().write(("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + value.length + "\r\n")
                .getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().write(value);
            s.getOutputStream().write("\r\n".getBytes(StandardCharsets.US_ASCII));
            assertEquals("+OK\r\n", read(s, 5));
            // 64 pipelined GETs of 1 MiB in one write: 64 MiB of replies the client never reads.
            s.getOutputStream().write("GET k\r\n".repeat(64).getBytes(StandardCharsets.US_ASCII));
            s.setSoTimeout(20_000);
            long deadline = System.nanoTime() + 20_000_000_000L;
            // The server closes the connection once more than the limit waits in its output buffer; then the socket
            // reads end (after at most what the kernel buffers held) instead of yielding all 64 replies.
            Thread.sleep(1000);
            long got = 0;
            InputStream in = s.getInputStream();
            byte[] buf = new byte[1 << 16];
            try {
                int n;
                while ((n = in.read(buf)) >= 0 && System.nanoTime() < deadline) {
                    got += n;
                }
            } catch (IOException e) {
                // reset by the server: also a disconnect
            }
            assertTrue(got < 64L * value.length, "the client read all " + got + " reply bytes; the server never"
                + " disconnected it");
            try (RdmaStoreClient c = TestServers.client(server, "tcp")) {
                c.ping();
            }
        }
    }

    private static String exchange(Socket s, String request) throws IOException {
        s.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
        return read(s, 7);
    }

    private static String read(Socket s, int n) throws IOException {
        s.setSoTimeout(5000);
        byte[] b = s.getInputStream().readNBytes(n);
        return new String(b, StandardCharsets.US_ASCII);
    }

    private static String readUntilClose(Socket s) throws IOException {
        s.setSoTimeout(5000);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            s.getInputStream().transferTo(out);
        } catch (SocketTimeoutException e) {
            return out.toString(StandardCharsets.US_ASCII) + "(not closed)";
        }
        return out.toString(StandardCharsets.US_ASCII);
    }
}
