package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreException;
import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** One password for every face: CONFIG SET requirepass over RESP changes what native HELLO checks too. */
@Timeout(60)
class PasswordTest {
    @TempDir
    Path dir;

    static java.util.List<String> transports() {
        return TestServers.transports();
    }

    @ParameterizedTest
    @MethodSource("transports")
    void configSetRequirepassAppliesToNativeAndResp(String transport) throws Exception {
        try (RdmaStoreServer server = TestServers.start(dir, c -> c.password("old"));
             RdmaStoreClient before = client(server, transport, "old");
             Socket resp = new Socket("127.0.0.1", server.port())) {
            assertEquals("+OK\r\n", exchange(resp, "AUTH old\r\n", 5));
            assertEquals("+OK\r\n", exchange(resp, "CONFIG SET requirepass new\r\n", 5));

            // new connections need the new password, on both faces
            assertThrows(RdmaStoreException.class, () -> client(server, transport, "old").close());
            try (RdmaStoreClient after = client(server, transport, "new")) {
                after.set("k", "v");
            }
            try (Socket fresh = new Socket("127.0.0.1", server.port())) {
                assertEquals("-WRONGPASS", exchange(fresh, "AUTH old\r\n", 10));
                assertEquals("+OK\r\n", exchange(fresh, "AUTH new\r\n", 5));
            }
            // sessions that authenticated before keep theirs
            assertEquals("v", before.get("k"));
            assertEquals("+PONG\r\n", exchange(resp, "PING\r\n", 7));

            assertEquals("+OK\r\n", exchange(resp, "CONFIG SET requirepass \"\"\r\n", 5));
            try (RdmaStoreClient none = client(server, transport, null)) {
                assertEquals("v", none.get("k"));
            }
        }
    }

    private static RdmaStoreClient client(RdmaStoreServer server, String transport, String password) {
        return RdmaStoreClient.builder().port(server.port()).transport(transport).password(password)
            .timeout(Duration.ofSeconds(10)).connect();
    }

    /** Sends {@code request}; returns the first {@code prefix} bytes of the one-line reply (the rest is read). */
    private static String exchange(Socket s, String request, int prefix) throws IOException {
        s.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
        s.setSoTimeout(5000);
        StringBuilder line = new StringBuilder();
        int b;
        while ((b = s.getInputStream().read()) >= 0) {
            line.append((char) b);
            if (b == '\n') {
                break;
            }
        }
        return line.substring(0, Math.min(prefix, line.length()));
    }
}
