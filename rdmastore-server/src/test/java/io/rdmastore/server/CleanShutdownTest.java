package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.rdmastore.client.RdmaStoreClient;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A normal stop says nothing alarming: a server process with native clients on every transport and a RESP client open
 * is stopped with SIGTERM; its log holds no ERROR and no stack trace, and the process exits by itself.
 */
class CleanShutdownTest {
    @TempDir
    Path dir;

    @Test
    @Timeout(60)
    void sigtermWithClientsConnectedLogsNoErrorAndNoStackTrace() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Path log = dir.resolve("server.log");
        String java = ProcessHandle.current().info().command().orElse("java");
        ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1",
            "-Xmx256m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-cp", System.getProperty("java.class.path"),
            RdmaStoreServer.class.getName(), "--port", String.valueOf(port), "--dir", dir.resolve("data").toString());
        pb.environment().put("UCX_ERROR_SIGNALS", "");
        pb.redirectErrorStream(true).redirectOutput(log.toFile());
        Process p = pb.start();
        try {
            awaitListening(log, p);
            List<RdmaStoreClient> clients = new java.util.ArrayList<>();
            for (String transport : TestServers.transports()) {
                RdmaStoreClient c = RdmaStoreClient.builder().port(port).transport(transport)
                    .timeout(Duration.ofSeconds(10)).connect();
                c.set("k-" + transport, "v");
                clients.add(c);
            }
            try (Socket resp = new Socket("127.0.0.1", port)) {
                resp.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
                assertEquals("+PONG", new String(resp.getInputStream().readNBytes(5), StandardCharsets.US_ASCII));
                p.destroy();
                assertTrue(p.waitFor(20, TimeUnit.SECONDS), "the server did not stop on SIGTERM");
            }
            for (RdmaStoreClient c : clients) {
                c.close();
            }
        } finally {
            p.destroyForcibly();
        }
        String text = Files.readString(log);
        List<String> bad = text.lines().filter(l -> l.contains(" ERROR ") || l.startsWith("\tat ")
            || l.contains("Exception")).toList();
        assertEquals(List.of(), bad, "a normal stop logged errors or stack traces; the whole log:\n" + text);
    }

    private static void awaitListening(Path log, Process p) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            if (Files.exists(log) && Files.readString(log).contains("rdmastore listening on")) {
                return;
            }
            if (!p.isAlive()) {
                break;
            }
            Thread.sleep(100);
        }
        fail("server did not start; its log:\n" + (Files.exists(log) ? Files.readString(log) : "(none)"));
    }
}
