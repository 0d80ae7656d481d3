package io.rdmastore.bench;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A redis-server (Debian's package) on loopback, started for a comparison and stopped after it: a free port, a
 * temporary directory, no persistence unless asked for ({@link #start(BenchOptions.Persistence, String...)}). When redis-server is missing it is installed with apt-get if we run as root; otherwise
 * {@link #start} fails with the command to run.
 */
public final class RedisServer implements AutoCloseable {
    private final Process process;
    private final Path dir;
    private final int port;

    private RedisServer(Process process, Path dir, int port) {
        this.process = process;
        this.dir = dir;
        this.port = port;
    }

    /** Whether redis-server can be started here (installing it when allowed). */
    public static boolean ensureInstalled() {
        if (onPath("redis-server")) {
            return true;
        }
        if ("root".equals(System.getProperty("user.name"))) {
            try {
                System.err.println("installing redis-server (apt-get) for the comparison...");
                Process p = new ProcessBuilder("apt-get", "install", "-y", "-qq", "redis-server", "redis-tools")
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
                p.waitFor(300, TimeUnit.SECONDS);
            } catch (IOException | InterruptedException e) {
                return false;
            }
        }
        return onPath("redis-server");
    }

    static boolean onPath(String binary) {
        for (String d : System.getenv().getOrDefault("PATH", "/usr/bin").split(":")) {
            if (Files.isExecutable(Path.of(d, binary))) {
                return true;
            }
        }
        return false;
    }

    /**
     * Starts redis-server with extra {@code --option value} pairs (e.g. {@code --proto-max-bulk-len 1gb}).
     *
     * @throws IOException when it is not installed or does not come up
     */
    public static RedisServer start(String... extraArgs) throws IOException {
        return start(ServerPriority.ORDINARY, extraArgs);
    }

    private static RedisServer start(ServerPriority priority, String... extraArgs) throws IOException {
        if (!ensureInstalled()) {
            throw new IOException("redis-server is not installed (apt-get install redis-server)");
        }
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Path dir = Files.createTempDirectory("rdmastore-bench-redis-");
        List<String> cmd = new ArrayList<>(List.of("redis-server", "--port", Integer.toString(port), "--bind",
            "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir.toString(), "--protected-mode", "no"));
        cmd.addAll(List.of(extraArgs));
        Process p = new ProcessBuilder(priority.wrap(cmd)).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            try (Socket s = new Socket("127.0.0.1", port)) {
                s.getOutputStream().write("PING\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                byte[] b = new byte[7];
                if (s.getInputStream().read(b) > 0 && b[0] == '+') {
                    return new RedisServer(p, dir, port);
                }
            } catch (IOException notYet) {
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        p.destroyForcibly();
        ServerProcess.delete(dir);
        throw new IOException("redis-server did not start on port " + port);
    }

    /**
     * Starts redis-server with the persistence of {@code pairing} (AOF with fsync every second, or none), so it does
     * the same work per write as the rdmastore server it is compared with.
     */
    public static RedisServer start(BenchOptions.Persistence pairing, String... extraArgs) throws IOException {
        return start(ServerPriority.ORDINARY, pairing, extraArgs);
    }

    /** As {@link #start(BenchOptions.Persistence, String...)}, at {@code priority}. */
    static RedisServer start(ServerPriority priority, BenchOptions.Persistence pairing, String... extraArgs)
        throws IOException {
        List<String> args = new ArrayList<>(pairing.redisArgs());
        args.addAll(List.of(extraArgs));
        return start(priority, args.toArray(new String[0]));
    }

    public int port() {
        return port;
    }

    /** redis-server's process id. */
    long pid() {
        return process.pid();
    }

    /** CPU seconds redis-server used so far. */
    public double cpuSeconds() {
        return Cpu.processSeconds(process.pid());
    }

    /** redis-server's version string, e.g. 7.0.15. */
    public static String version() {
        try {
            Process p = new ProcessBuilder("redis-server", "--version").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            p.waitFor();
            int i = out.indexOf("v=");
            return i < 0 ? out.trim() : out.substring(i + 2, out.indexOf(' ', i));
        } catch (IOException | InterruptedException | RuntimeException e) {
            return "unknown";
        }
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
        ServerProcess.delete(dir);
    }
}
