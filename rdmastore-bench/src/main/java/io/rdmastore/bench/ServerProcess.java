package io.rdmastore.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * An rdmastore server in its own JVM ({@code io.rdmastore.server.RdmaStoreServer}) with a fresh data directory, for
 * experiments that compare transports side by side. Closing stops it (SIGTERM, then SIGKILL after 10 s), deletes its
 * data directory, and reports the CPU seconds it used.
 */
public final class ServerProcess implements AutoCloseable {
    private final Process process;
    private final Path dataDir;
    private final int port;

    private ServerProcess(Process process, Path dataDir, int port) {
        this.process = process;
        this.dataDir = dataDir;
        this.port = port;
    }

    /**
     * Starts a server on an ephemeral port.
     *
     * @param extraArgs server options, e.g. {@code --fsync everysec --transport auto --ucx-idle spin}
     */
    public static ServerProcess start(String... extraArgs) throws IOException {
        return startIn(null, extraArgs);
    }

    /** As {@link #start}, at the raised priority of an experiment whose clients outnumber the cores. */
    public static ServerProcess startRaised(String... extraArgs) throws IOException {
        return startIn(null, ServerPriority.RAISED, extraArgs);
    }

    /** As {@link #start}, with the data directory under {@code parent} (e.g. a tmpfs); null: the temp directory. */
    public static ServerProcess startIn(Path parent, String... extraArgs) throws IOException {
        return startIn(parent, ServerPriority.ORDINARY, extraArgs);
    }

    private static ServerProcess startIn(Path parent, ServerPriority priority, String... extraArgs)
        throws IOException {
        Path dir = parent == null ? Files.createTempDirectory("rdmastore-bench-")
            : Files.createTempDirectory(parent, "rdmastore-bench-");
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("--sun-misc-unsafe-memory-access=allow");
        cmd.add("-Xmx2g");
        // JVM options for every server of a run, space-separated, e.g. to profile one:
        // -Drdmastore.bench.serverJvmArgs=-XX:StartFlightRecording=filename=/tmp/server.jfr,settings=profile
        String jvm = System.getProperty("rdmastore.bench.serverJvmArgs", "").trim();
        if (!jvm.isEmpty()) {
            cmd.addAll(List.of(jvm.split("\\s+")));
        }
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add("io.rdmastore.server.RdmaStoreServer");
        cmd.add("--port");
        cmd.add("0");
        cmd.add("--dir");
        cmd.add(dir.toString());
        cmd.addAll(List.of(extraArgs));
        // extra server options for a whole run, comma-separated, e.g. -Drdmastore.bench.serverArgs=--rendezvous-threshold,0
        String more = System.getProperty("rdmastore.bench.serverArgs", "").trim();
        if (!more.isEmpty()) {
            cmd.addAll(List.of(more.split(",")));
        }
        // stderr goes to a file, so a server that does not come up can say why
        Path err = Files.createTempFile("rdmastore-bench-server-", ".err");
        ProcessBuilder pb = new ProcessBuilder(priority.wrap(cmd)).redirectError(err.toFile());
        pb.environment().put("UCX_ERROR_SIGNALS", "");
        Process p = pb.start();
        BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        String line;
        while ((line = r.readLine()) != null && System.nanoTime() < deadline) {
            if (line.startsWith("rdmastore listening on ")) {
                int port = Integer.parseInt(line.substring(line.lastIndexOf(':') + 1).trim());
                Thread drain = new Thread(() -> {
                    try {
                        r.transferTo(java.io.Writer.nullWriter());
                    } catch (IOException ignored) {
                        // server gone
                    }
                }, "server-stdout");
                drain.setDaemon(true);
                drain.start();
                Files.deleteIfExists(err);
                return new ServerProcess(p, dir, port);
            }
        }
        boolean exited = !p.isAlive();
        p.destroyForcibly();
        delete(dir);
        String why;
        try {
            List<String> lines = Files.readAllLines(err, StandardCharsets.UTF_8);
            why = String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            why = "(stderr unreadable: " + e + ")";
        }
        Files.deleteIfExists(err);
        throw new IOException("rdmastore server did not start (" + (exited ? "it exited" : "no ready line in 120 s")
            + "): " + String.join(" ", extraArgs) + "; its stderr:\n" + why);
    }

    public int port() {
        return port;
    }

    /** {@code rdmastore://127.0.0.1:port?transport=...} */
    public String uri(String transport) {
        return "rdmastore://127.0.0.1:" + port + "?transport=" + transport + "&timeout=30s";
    }

    /** The server's process id. */
    long pid() {
        return process.pid();
    }

    /** CPU seconds the server process used so far (user + system), from /proc; NaN where unknown. */
    public double cpuSeconds() {
        return Cpu.processSeconds(process.pid());
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
        delete(dataDir);
    }

    static void delete(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(f -> {
                try {
                    Files.deleteIfExists(f);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
