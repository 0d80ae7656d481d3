package io.rdmastore.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A second JVM running one of this module's mains with the same classpath; it prints {@code READY <port> [more]} when
 * it listens (or is ready). Closed (destroyed) by {@link #close()}; always bounded in time.
 */
final class Child implements AutoCloseable {
    private final Process process;
    final int port;
    /** What its READY line said after the port (empty when nothing). */
    final String ready;

    private Child(Process process, int port, String ready) {
        this.process = process;
        this.port = port;
        this.ready = ready;
    }

    /** The child's pid. */
    long pid() {
        return process.pid();
    }

    static Child start(Class<?> main, String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("--sun-misc-unsafe-memory-access=allow");
        cmd.add("-Xmx1g");
        String extra = System.getProperty("rdmastore.bench.childJvmArgs", "").trim();
        if (!extra.isEmpty()) {
            cmd.addAll(List.of(extra.split("\\s+")));
        }
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(main.getName());
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.environment().put("UCX_ERROR_SIGNALS", "");
        Process p = pb.start();
        BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        String line;
        while ((line = r.readLine()) != null) {
            if (line.startsWith("READY ")) {
                String[] words = line.substring(6).trim().split("\\s+", 2);
                int port = Integer.parseInt(words[0]);
                Thread drain = new Thread(() -> {
                    try {
                        r.transferTo(java.io.Writer.nullWriter());
                    } catch (IOException ignored) {
                        // child gone
                    }
                }, "child-stdout");
                drain.setDaemon(true);
                drain.start();
                return new Child(p, port, words.length > 1 ? words[1] : "");
            }
            if (System.nanoTime() > deadline) {
                break;
            }
        }
        p.destroyForcibly();
        throw new IOException(main.getSimpleName() + " child did not start (exit " + (p.isAlive() ? "-" : p.exitValue())
            + ")");
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
    }
}
