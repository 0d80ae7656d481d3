package io.rdmastore.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.server.RdmaStoreServer;
import io.rdmastore.server.ServerConfig;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DoctorTest {
    @TempDir
    Path dir;

    @Test
    void printsJavaAndUcxLines() {
        Run r = Run.of("doctor");
        String out = r.out();
        for (String what : new String[] {"java", "ucx library", "ucx provider", "UCX_TLS", "rdma devices",
            "memlock"}) {
            assertTrue(out.matches("(?s).*(?m)^(PASS|WARN|INFO|FAIL) +" + what + " .*"), what + ": " + r);
        }
        assertTrue(out.matches("(?s).*(?m)^PASS +java .*"), r::toString);
        if (!"false".equals(System.getProperty("rdmastore.test.ucx"))) {
            assertTrue(out.matches("(?s).*(?m)^PASS +ucx library +libucp\\.so\\.0 at .*"), r::toString);
            assertTrue(out.matches("(?s).*(?m)^PASS +ucx provider .*available.*"), r::toString);
        }
        assertEquals(out.matches("(?s).*(?m)^FAIL .*") ? 1 : 0, r.exitCode(), r::toString);
    }

    @Test
    void reportsTheTransportAConnectionWouldUse() {
        try (RdmaStoreServer server = new RdmaStoreServer(new ServerConfig().port(0).dataDir(dir)).start()) {
            Run r = Run.of("doctor", "--server", "127.0.0.1:" + server.port());
            String expected = !"false".equals(System.getProperty("rdmastore.test.ucx")) && server.ucxAvailable()
                ? "PASS +server +127\\.0\\.0\\.1:\\d+ answers PONG; a connection from here uses ucx: .+"
                : "(PASS|WARN) +server +127\\.0\\.0\\.1:\\d+ answers PONG; a connection from here uses \\w+: .+";
            assertTrue(r.out().matches("(?s).*(?m)^" + expected + "$.*"), r::toString);
        }
    }

    @Test
    void anUnreachableServerIsAFailLine() throws Exception {
        int free;
        try (ServerSocket s = new ServerSocket(0)) {
            free = s.getLocalPort();
        }
        Run r = Run.of("doctor", "--server", "127.0.0.1:" + free);
        assertEquals(1, r.exitCode(), r::toString);
        assertTrue(r.out().matches("(?s).*(?m)^FAIL +server +cannot connect to 127\\.0\\.0\\.1:" + free + ".*"),
            r::toString);
    }
}
