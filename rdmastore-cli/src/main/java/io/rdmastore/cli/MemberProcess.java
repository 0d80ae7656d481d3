package io.rdmastore.cli;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * One replica-set member as a child process: {@code rdmastore server ...} ({@link Main} with this JVM's {@code java}
 * and class path), its stdout and stderr appended to a log file. It counts as started once its banner's
 * {@code listening} line appears in the log. Its port and data directory stay the same across restarts, so the other
 * members find it where it was.
 *
 * <p>Threads: the methods are synchronized, so a shutdown hook may {@link #kill()} it while another thread uses it.
 */
final class MemberProcess {
    /** Options of each member's JVM: small and quick to start, several share a laptop's cores. */
    static final List<String> JVM_OPTIONS = List.of("--enable-native-access=ALL-UNNAMED",
        "--sun-misc-unsafe-memory-access=allow", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m",
        "-Xss512k");

    private final String id;
    private final int port;
    private final Path dataDir;
    private final Path logFile;
    private final List<String> serverArgs;
    private Process process;
    private long logOffset;

    /**
     * @param serverArgs the options of {@code rdmastore server} (port and data directory included)
     */
    MemberProcess(String id, int port, Path dataDir, Path logFile, List<String> serverArgs) {
        this.id = id;
        this.port = port;
        this.dataDir = dataDir;
        this.logFile = logFile;
        this.serverArgs = List.copyOf(serverArgs);
    }

    String id() {
        return id;
    }

    int port() {
        return port;
    }

    String address() {
        return "127.0.0.1:" + port;
    }

    Path logFile() {
        return logFile;
    }

    /** The pid of its current process; -1 before the first start. */
    synchronized long pid() {
        return process == null ? -1 : process.pid();
    }

    synchronized boolean isAlive() {
        return process != null && process.isAlive();
    }

    /** Launches it (it must not be running); {@link #awaitReady} waits for it to serve. */
    synchronized void launch() {
        if (isAlive()) {
            throw new IllegalStateException(id + " is already running (pid " + process.pid() + ")");
        }
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.addAll(JVM_OPTIONS);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName(), "server"));
        cmd.addAll(serverArgs);
        try {
            Files.createDirectories(dataDir);
            Files.writeString(logFile, "---- " + id + " starting: rdmastore server " + String.join(" ", serverArgs)
                + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            logOffset = Files.size(logFile);
            ProcessBuilder pb = new ProcessBuilder(cmd);
            // the JVM handles SIGSEGV and friends itself; UCX's handlers would take them over
            pb.environment().put("UCX_ERROR_SIGNALS", "");
            pb.redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
            pb.redirectError(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
            pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            process = pb.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start member " + id, e);
        }
    }

    /**
     * Waits until it serves (its banner's listening line is in the log).
     *
     * @throws UserException with the log's tail when it exits first or does not serve within {@code timeout}; it is
     *     killed in the second case
     */
    void awaitReady(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!listening()) {
            Process p;
            synchronized (this) {
                p = process;
            }
            if (!p.isAlive()) {
                throw new UserException("member " + id + " exited with " + p.exitValue() + " before it served; its"
                    + " log:\n" + logTail(30));
            }
            if (System.nanoTime() - deadline > 0) {
                kill();
                throw new UserException("member " + id + " did not serve within " + timeout.toSeconds() + " s; its"
                    + " log:\n" + logTail(30));
            }
            Thread.sleep(20);
        }
    }

    private boolean listening() {
        long from;
        synchronized (this) {
            from = logOffset;
        }
        try (RandomAccessFile f = new RandomAccessFile(logFile.toFile(), "r")) {
            long len = f.length();
            if (len <= from) {
                return false;
            }
            byte[] b = new byte[(int) Math.min(len - from, 1 << 20)];
            f.seek(from);
            f.readFully(b);
            return new String(b, StandardCharsets.UTF_8).contains("\n" + ServerCommand.LISTENING);
        } catch (IOException e) {
            return false;
        }
    }

    /** SIGKILL; waits (at most 10 s) until it is gone. No-op when it is not running. */
    synchronized void kill() {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
            waitFor(Duration.ofSeconds(10));
        }
    }

    /** SIGSTOP: the process stays, frozen (sockets open, nothing answered) until {@link #resume}. */
    synchronized void pause() {
        signal("STOP");
    }

    /** SIGCONT after {@link #pause}. */
    synchronized void resume() {
        signal("CONT");
    }

    private void signal(String name) {
        if (process == null || !process.isAlive()) {
            throw new IllegalStateException(id + " is not running: cannot send SIG" + name);
        }
        try {
            Process k = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
            if (!k.waitFor(10, TimeUnit.SECONDS) || k.exitValue() != 0) {
                throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot signal member " + id, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted signalling member " + id, e);
        }
    }

    /** Deletes its data directory (it must not be running): its next start begins empty and resyncs. */
    synchronized void wipe() {
        if (isAlive()) {
            throw new IllegalStateException(id + " is running: stop it before wiping its data");
        }
        if (!Files.exists(dataDir)) {
            return;
        }
        try (var paths = Files.walk(dataDir)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot wipe " + dataDir, e);
        }
    }

    /** Sends SIGTERM (a graceful stop) without waiting; {@link #awaitExit} waits. */
    synchronized void terminate() {
        if (process != null && process.isAlive()) {
            process.destroy();
        }
    }

    /** Waits up to {@code grace} for it to exit, then SIGKILLs it. */
    synchronized void awaitExit(Duration grace) {
        if (process != null && !waitFor(grace)) {
            kill();
        }
    }

    private boolean waitFor(Duration d) {
        try {
            return process.waitFor(d.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
            return false;
        }
    }

    /** The last {@code maxLines} lines of its log. */
    String logTail(int maxLines) {
        try {
            List<String> lines = Files.readAllLines(logFile, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - maxLines), lines.size()));
        } catch (IOException e) {
            return "(log unreadable: " + e.getMessage() + ")";
        }
    }

    /**
     * {@code n} distinct ports that are free on loopback and whose election port (port + 10000) is free too, all below
     * the kernel's ephemeral range (32768 on Linux), so no outgoing connection takes one before its member binds it.
     */
    static List<Integer> freePorts(int n, int raftOffset) {
        List<Integer> out = new ArrayList<>();
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int attempt = 0; out.size() < n; attempt++) {
            if (attempt > 10_000) {
                throw new UserException("found no free ports on 127.0.0.1 between 12000 and 22000");
            }
            int p = 12_000 + random.nextInt(32_768 - raftOffset - 12_000);
            if (!out.contains(p) && bindable(p) && bindable(p + raftOffset)) {
                out.add(p);
            }
        }
        return Collections.unmodifiableList(out);
    }

    private static boolean bindable(int port) {
        try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            return s.isBound();
        } catch (IOException e) {
            return false;
        }
    }

    @Override
    public String toString() {
        return id + "@" + address();
    }
}
