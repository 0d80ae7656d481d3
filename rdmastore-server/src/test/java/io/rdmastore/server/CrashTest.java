package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kills a real server process with SIGKILL while a client writes, restarts it on the same data directory and checks
 * what survived: every acknowledged write, with fsync=always and with fsync=everysec alike (everysec hands each write to
 * the OS before its reply, as Redis does; only a machine crash may lose its last second). 60 kills in all
 * ({@code -Drdmastore.test.kills.always=40}, {@code ...kills.everysec=20}), and 10 more with RESP writers
 * ({@code ...kills.resp=10}).
 */
class CrashTest {
    private static final int ALWAYS_KILLS = Integer.getInteger("rdmastore.test.kills.always", 40);
    private static final int EVERYSEC_KILLS = Integer.getInteger("rdmastore.test.kills.everysec", 20);
    private static final int RESP_KILLS = Integer.getInteger("rdmastore.test.kills.resp", 10);

    @TempDir
    Path dir;

    /** One acknowledged write: its key, value and when its reply arrived. */
    private record Ack(String key, String value, long ackedAtNanos) {
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void fsyncAlwaysKeepsEveryAcknowledgedWrite() throws Exception {
        List<Ack> lost = crashLoop("always", ALWAYS_KILLS, 0, 150);
        assertEquals(List.of(), lost, "fsync=always lost acknowledged writes");
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void fsyncEverysecKeepsEveryAcknowledgedWriteOnAProcessCrash() throws Exception {
        List<Ack> lost = crashLoop("everysec", EVERYSEC_KILLS, 0, 400);
        assertEquals(List.of(), lost, "fsync=everysec lost acknowledged writes on SIGKILL");
    }

    /**
     * The RESP face batches the log's write(2) per read of pipelined commands (WriteBatch): pipelined RESP writers,
     * SIGKILLed, lose no acknowledged write with fsync=everysec either.
     */
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void fsyncEverysecKeepsEveryAcknowledgedRespWriteOnAProcessCrash() throws Exception {
        int port = freePort();
        Path data = dir.resolve("resp-everysec");
        Random random = new Random(7);
        long acked = 0;
        List<String> lost = new ArrayList<>();
        List<String[]> previous = List.of();
        for (int cycle = 0; cycle <= RESP_KILLS; cycle++) {
            Process p = start(data, port, "everysec", true);
            try {
                try (redis.clients.jedis.Jedis check = new redis.clients.jedis.Jedis("127.0.0.1", port, 5000)) {
                    for (String[] kv : previous) {
                        if (!kv[1].equals(check.get(kv[0]))) {
                            lost.add(kv[0]);
                        }
                    }
                }
                if (cycle == RESP_KILLS) {
                    break;
                }
                List<String[]> acks = java.util.Collections.synchronizedList(new ArrayList<>());
                int prefix = cycle;
                CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
                    try (redis.clients.jedis.Jedis j = new redis.clients.jedis.Jedis("127.0.0.1", port, 5000)) {
                        for (int batch = 0; ; batch++) {
                            redis.clients.jedis.Pipeline pl = j.pipelined();
                            List<String[]> sent = new ArrayList<>();
                            for (int i = 0; i < 16; i++) {
                                String k = "r" + prefix + "-" + batch + "-" + i;
                                pl.set(k, "v" + batch);
                                sent.add(new String[] {k, "v" + batch});
                            }
                            pl.sync();
                            acks.addAll(sent);
                        }
                    } catch (RuntimeException e) {
                        // the server was killed
                    }
                });
                Thread.sleep(30 + random.nextInt(400));
                p.destroyForcibly();
                assertTrue(p.waitFor(10, TimeUnit.SECONDS), "server did not die on SIGKILL");
                writer.get(20, TimeUnit.SECONDS);
                acked += acks.size();
                previous = List.copyOf(acks);
            } finally {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
        }
        System.out.printf("fsync=everysec over RESP (pipelines of 16): %d kills, %d acknowledged writes checked, %d"
            + " lost%n", RESP_KILLS, acked, lost.size());
        assertTrue(acked > RESP_KILLS, "too few writes were acknowledged to test anything: " + acked);
        assertEquals(List.of(), lost, "fsync=everysec lost acknowledged RESP writes on SIGKILL");
    }

    /**
     * Runs {@code kills} cycles of start, write, SIGKILL; after each restart checks the writes of the cycle before.
     *
     * @param lossWindowMillis writes acknowledged this long before the kill may be lost; 0: none may be
     * @return acknowledged writes that were lost outside the window (empty when all is well)
     */
    private List<Ack> crashLoop(String fsync, int kills, long lossWindowMillis, int maxWriteMillis) throws Exception {
        int port = freePort();
        Path data = dir.resolve(fsync);
        Random random = new Random(42);
        List<Ack> outsideWindow = new ArrayList<>();
        long totalAcked = 0;
        long lostInWindow = 0;
        long t0 = System.nanoTime();
        Process p = start(data, port, fsync);
        try (RdmaStoreClient client = RdmaStoreClient.builder().port(port).transport("tcp")
            .timeout(Duration.ofSeconds(5)).connect()) {
            List<Ack> previous = List.of();
            long previousKill = 0;
            for (int cycle = 0; cycle <= kills; cycle++) {
                if (cycle > 0) {
                    p = start(data, port, fsync);
                }
                // Verify the writes acknowledged before the last kill.
                for (Ack a : previous) {
                    String v = client.get(a.key());
                    if (!a.value().equals(v)) {
                        if (lossWindowMillis > 0 && previousKill - a.ackedAtNanos()
                            <= TimeUnit.MILLISECONDS.toNanos(lossWindowMillis)) {
                            lostInWindow++;
                        } else {
                            outsideWindow.add(a);
                        }
                    }
                }
                if (cycle == kills) {
                    p.destroy();
                    assertTrue(p.waitFor(10, TimeUnit.SECONDS), "server did not stop on SIGTERM");
                    break;
                }
                List<Ack> acked = new ArrayList<>();
                int prefix = cycle;
                CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
                    for (int i = 0; ; i++) {
                        String k = "c" + prefix + "-" + i;
                        String v = fsync + "-" + i;
                        try {
                            client.set(k, v);
                        } catch (RdmaStoreException e) {
                            return;
                        }
                        acked.add(new Ack(k, v, System.nanoTime()));
                    }
                });
                Thread.sleep(30 + random.nextInt(maxWriteMillis));
                p.destroyForcibly();
                previousKill = System.nanoTime();
                assertTrue(p.waitFor(10, TimeUnit.SECONDS), "server did not die on SIGKILL");
                writer.get(20, TimeUnit.SECONDS);
                totalAcked += acked.size();
                previous = List.copyOf(acked);
            }
        } finally {
            p.destroyForcibly();
        }
        System.out.printf("fsync=%s: %d kills, %d acknowledged writes checked, %d lost within %d ms of a kill,"
                + " %d lost outside, %.1f s%n", fsync, kills, totalAcked, lostInWindow, lossWindowMillis,
            outsideWindow.size(), (System.nanoTime() - t0) / 1e9);
        assertTrue(totalAcked > kills, "too few writes were acknowledged to test anything: " + totalAcked);
        if (lossWindowMillis > 0) {
            assertEquals(List.of(), outsideWindow, "fsync=" + fsync + " lost writes acknowledged more than "
                + lossWindowMillis + " ms before a kill");
        }
        return outsideWindow;
    }

    /** Starts the server's main in a new JVM and waits until it serves. */
    private Process start(Path data, int port, String fsync) throws IOException, InterruptedException {
        return start(data, port, fsync, false);
    }

    private Process start(Path data, int port, String fsync, boolean resp) throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse("java");
        Path log = dir.resolve("server-" + fsync + ".log");
        ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC", "-Xshare:auto", "-Xmx256m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp", System.getProperty("java.class.path"), RdmaStoreServer.class.getName(),
            "--port", String.valueOf(port), "--dir", data.toString(), "--fsync", fsync, "--transport", "tcp");
        if (!resp) {
            pb.command().add("--no-resp");
        }
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
            line = ready.get(60, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            line = null;
        } catch (InterruptedException e) {
            // the test's time-out: leave no server process behind
            p.destroyForcibly();
            throw e;
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
