package io.rdmastore.server;

import io.rdmastore.client.RdmaStoreClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/** Starting servers and clients for tests: loopback, an ephemeral port, a temporary data directory. */
final class TestServers {
    private TestServers() {
    }

    /**
     * The transports every round-trip test runs on: tcp always, ucx unless {@code -Drdmastore.test.ucx=false}. A ucx
     * run that cannot connect over ucx fails; it is never skipped.
     */
    static List<String> transports() {
        List<String> out = new ArrayList<>(List.of("tcp"));
        if (Boolean.parseBoolean(System.getProperty("rdmastore.test.ucx", "true"))) {
            out.add("ucx");
        } else {
            System.out.println("ucx runs disabled by -Drdmastore.test.ucx=false; only tcp is tested");
        }
        return out;
    }

    static RdmaStoreServer start(Path dir, Consumer<ServerConfig> tweak) {
        ServerConfig c = new ServerConfig().bind("127.0.0.1").port(0).dataDir(dir)
            .handshakeTimeout(Duration.ofSeconds(2));
        tweak.accept(c);
        return new RdmaStoreServer(c).start();
    }

    static RdmaStoreClient client(RdmaStoreServer server, String transport) {
        return RdmaStoreClient.builder().port(server.port()).transport(transport).timeout(Duration.ofSeconds(10))
            .connect();
    }

    /** A key or value from text (UTF-8). */
    static byte[] key(String s) {
        return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** {@code n} random bytes, the same for the same seed. */
    static byte[] random(int n, long seed) {
        byte[] v = new byte[n];
        new java.util.SplittableRandom(seed).nextBytes(v);
        return v;
    }
}
