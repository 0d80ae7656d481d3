package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Announced sizes are not memory: a server process (heap 256 MiB, direct memory up to 2 GiB) gets 30 RESP connections
 * that each announce a 512 MB argument and send 100 bytes of it, and 30 native connections that each announce a
 * 500 MiB frame before their HELLO and send 100 bytes. The server's resident memory (VmRSS from /proc) must grow by less
 * than {@link #RSS_GROWTH_BOUND_MIB} MiB, and a PING on a fresh connection must be answered within 1 s. On the code
 * before bounded buffers the RESP connections alone pushed the process past 2 GiB.
 */
class FloodTest {
    /** The stated bound: what 60 idle connections with 100 bytes each may add to the server's resident memory. */
    static final long RSS_GROWTH_BOUND_MIB = 128;
    private static final int CONNECTIONS = 30;
    /** Under the server's 5 s handshake time-out: a close this early was caused by the oversize frame. */
    private static final long NATIVE_CLOSE_BOUND_MILLIS = 4000;

    @TempDir
    Path dir;
    private Process server;
    private final List<Socket> sockets = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (Socket s : sockets) {
            s.close();
        }
        if (server != null) {
            server.destroyForcibly();
            server.waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void announcedSizesAreNotAllocated() throws Exception {
        int port = freePort();
        server = start(port);
        InetSocketAddress at = new InetSocketAddress("127.0.0.1", port);
        long pingBefore = pingMillis(at);
        Thread.sleep(500);
        long rssBefore = rssMib(server.pid());

        byte[] x = new byte[100];
        Arrays.fill(x, (byte) 'x');
        for (int i = 0; i < CONNECTIONS; i++) {
            Socket s = open(at);
            OutputStream o = s.getOutputStream();
            o.write("*2\r\n$3\r\nSET\r\n$536870000\r\n".getBytes(StandardCharsets.US_ASCII));
            o.write(x);
            o.flush();
        }
        List<CompletableFuture<Long>> closedAfter = new ArrayList<>();
        java.util.concurrent.ExecutorService readers = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor();
        for (int i = 0; i < CONNECTIONS; i++) {
            Socket s = open(at);
            OutputStream o = s.getOutputStream();
            // preface "RDMS", then a frame header announcing 500 MiB of message before any HELLO
            o.write(ByteBuffer.allocate(9 + 100).putInt(0x52444D53).putInt(500 << 20).put((byte) 0).put(x).array());
            o.flush();
            long sent = System.nanoTime();
            closedAfter.add(CompletableFuture.supplyAsync(() -> {
                try {
                    s.setSoTimeout(10_000);
                    InputStream in = s.getInputStream();
                    while (in.read() >= 0) {
                        // drain the refusal, if any, until the server closes
                    }
                } catch (IOException e) {
                    // reset or timed out: the time tells which
                }
                return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sent);
            }, readers));
        }
        // The server's handshake time-out is 5 s: a connection closed well before was closed for its frame.
        int nativesClosed = 0;
        long slowestClose = 0;
        for (CompletableFuture<Long> f : closedAfter) {
            long ms = f.get(15, TimeUnit.SECONDS);
            slowestClose = Math.max(slowestClose, ms);
            nativesClosed += ms < NATIVE_CLOSE_BOUND_MILLIS ? 1 : 0;
        }
        readers.shutdown();
        long pingMillis = pingMillis(at);
        long rssAfter = rssMib(server.pid());
        System.out.printf("flood: %d RESP + %d native connections; server RSS %d MiB -> %d MiB; PING %d ms before,"
                + " %d ms under the flood; %d of %d native connections closed before their HELLO within %d ms (slowest %d"
            + " ms)%n", CONNECTIONS, CONNECTIONS, rssBefore, rssAfter, pingBefore, pingMillis, nativesClosed,
            CONNECTIONS, NATIVE_CLOSE_BOUND_MILLIS, slowestClose);
        assertTrue(rssAfter - rssBefore < RSS_GROWTH_BOUND_MIB, "server RSS grew from " + rssBefore + " MiB to "
            + rssAfter + " MiB under connections that announced sizes they never sent");
        assertTrue(pingMillis < 1000, "PING took " + pingMillis + " ms under the flood");
        assertEquals(CONNECTIONS, nativesClosed, "a native frame announced before HELLO beyond the handshake's size"
            + " must close the connection at once, not at the handshake time-out (slowest close " + slowestClose
            + " ms)");
    }

    private Socket open(InetSocketAddress at) throws IOException {
        Socket s = new Socket();
        s.connect(at, 5000);
        sockets.add(s);
        return s;
    }

    private long pingMillis(InetSocketAddress at) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(at, 5000);
            s.setSoTimeout(60_000);
            long t0 = System.nanoTime();
            s.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            byte[] reply = new byte[7];
            int n = s.getInputStream().readNBytes(reply, 0, 7);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertEquals("+PONG\r\n", new String(reply, 0, n, StandardCharsets.US_ASCII));
            return ms;
        }
    }

    static long rssMib(long pid) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024;
            }
        }
        throw new IOException("no VmRSS for " + pid);
    }

    private Process start(int port) throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse("java");
        Path log = dir.resolve("server.log");
        ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC", "-Xmx256m", "-Xms256m", "-XX:+AlwaysPreTouch", "-XX:MaxDirectMemorySize=2g",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", System.getProperty("java.class.path"),
            RdmaStoreServer.class.getName(), "--port", String.valueOf(port), "--dir", dir.resolve("data").toString(),
            "--transport", "tcp");
        pb.environment().put("UCX_ERROR_SIGNALS", "");
        pb.redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
        Process p = pb.start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<String> ready = CompletableFuture.supplyAsync(() -> {
            try {
                return out.readLine();
            } catch (IOException e) {
                return null;
            }
        });
        String line;
        try {
            line = ready.get(20, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            line = null;
        }
        if (line == null || !line.startsWith("rdmastore listening on")) {
            p.destroyForcibly();
            fail("server process did not start (stdout: " + line + "); its log:\n"
                + (Files.exists(log) ? Files.readString(log) : "(none)"));
        }
        return p;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }
}
