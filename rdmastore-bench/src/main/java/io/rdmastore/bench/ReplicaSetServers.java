package io.rdmastore.bench;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Three (or more) rdmastore servers as one replica set on loopback, each in its own JVM
 * ({@code io.rdmastore.server.RdmaStoreServer --replica-set NAME --node-id nI --members ...}), for E6. Members keep their
 * ports and data directories for the life of the set, so a member killed with SIGKILL can be started again where it
 * was and rejoin. Each member's stdout and stderr go to {@code nI.log} in the set's temporary directory; a member that
 * does not come up reports its log's tail. {@link #close()} kills every member and deletes the directory; a JVM
 * shutdown hook kills whatever is left running.
 *
 * <p>The bench's own copy of what the server's test harness ({@code ReplicaSetProcesses}, test scope) does, reduced to
 * start, kill and restart. Threads: one driver thread uses a set and its members.
 */
final class ReplicaSetServers implements AutoCloseable {
    /** The line a member prints on stdout once it serves. */
    static final String READY_LINE = "rdmastore listening on";
    /** A member's Ratis port is its data port plus this (the server's default). */
    static final int RAFT_PORT_OFFSET = 10_000;

    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();
    /** Ports handed out in this JVM, so sets started at the same time never pick the same one. */
    private static final Set<Integer> TAKEN = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroyForcibly),
            "bench-replica-set-reaper"));
    }

    private final String name;
    private final Path dir;
    private final List<String> serverArgs;
    private final List<Member> members = new ArrayList<>();

    private ReplicaSetServers(String name, Path dir, List<String> serverArgs) {
        this.name = name;
        this.dir = dir;
        this.serverArgs = List.copyOf(serverArgs);
    }

    /**
     * Launches {@code count} members of set {@code name} at once and waits until each prints its ready line (not until
     * a primary is elected: clients discover that).
     *
     * @param serverArgs more server options for every member, e.g. {@code --transport tcp --fsync everysec}
     */
    static ReplicaSetServers start(String name, int count, String... serverArgs) throws IOException {
        return startIn(null, name, count, serverArgs);
    }

    /** As {@link #start}, with the members' data directories under {@code parent} (null: the temp directory). */
    static ReplicaSetServers startIn(Path parent, String name, int count, String... serverArgs) throws IOException {
        ReplicaSetServers set = new ReplicaSetServers(name, parent == null
            ? Files.createTempDirectory("rdmastore-bench-rs-") : Files.createTempDirectory(parent, "rdmastore-bench-rs-"),
            List.of(serverArgs));
        List<Integer> ports = freePorts(count);
        for (int i = 0; i < count; i++) {
            set.members.add(set.new Member("n" + (i + 1), ports.get(i)));
        }
        try {
            for (Member m : set.members) {
                m.launch();
            }
            for (Member m : set.members) {
                m.awaitReady();
            }
        } catch (IOException | RuntimeException e) {
            set.close();
            throw e;
        }
        return set;
    }

    List<Member> members() {
        return members;
    }

    /** The member listening on {@code host:port} (as a client's {@code primary()} names it), or null. */
    Member byAddress(String hostPort) {
        for (Member m : members) {
            if (hostPort.endsWith(":" + m.port)) {
                return m;
            }
        }
        return null;
    }

    /** {@code n1=127.0.0.1:P1,n2=...}, the servers' {@code --members}. */
    String membersArg() {
        return members.stream().map(m -> m.id + "=127.0.0.1:" + m.port).collect(Collectors.joining(","));
    }

    /**
     * A replica-set URI naming every member as a seed.
     *
     * @param params more URI parameters, e.g. {@code transport=ucx&w=majority}
     */
    String uri(String params) {
        return "rdmastore://" + members.stream().map(m -> "127.0.0.1:" + m.port).collect(Collectors.joining(","))
            + "?replicaSet=" + name + (params.isEmpty() ? "" : "&" + params);
    }

    /** CPU seconds all member processes used so far (processes that were killed and restarted count from restart). */
    double cpuSeconds() {
        double s = 0;
        for (Member m : members) {
            if (m.process != null && m.process.isAlive()) {
                s += Cpu.processSeconds(m.process.pid());
            }
        }
        return s;
    }

    @Override
    public void close() {
        for (Member m : members) {
            m.kill();
        }
        ServerProcess.delete(dir);
    }

    /** One member process; its id, port and data directory stay the same across restarts. */
    final class Member {
        final String id;
        final int port;
        private final Path dataDir;
        private final Path log;
        private Process process;
        private long logOffset;

        private Member(String id, int port) {
            this.id = id;
            this.port = port;
            this.dataDir = dir.resolve(id);
            this.log = dir.resolve(id + ".log");
        }

        /** Starts it again on its data directory and waits for its ready line; it must not be running. */
        void start() throws IOException {
            launch();
            awaitReady();
        }

        /** SIGKILL; waits until the process is gone. No-op when it is not running. */
        void kill() {
            if (process == null) {
                return;
            }
            process.destroyForcibly();
            try {
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException(id + " (pid " + process.pid() + ") survived SIGKILL for 30 s");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while killing " + id, e);
            }
            LIVE.remove(process);
            process = null;
        }

        private void launch() throws IOException {
            if (process != null && process.isAlive()) {
                throw new IllegalStateException(id + " is already running");
            }
            Files.createDirectories(dataDir);
            List<String> cmd = new ArrayList<>();
            cmd.add(ProcessHandle.current().info().command().orElse("java"));
            cmd.addAll(List.of("--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
                "-Xmx1g", "-cp", System.getProperty("java.class.path"), "io.rdmastore.server.RdmaStoreServer",
                "--bind", "127.0.0.1", "--port", Integer.toString(port), "--dir", dataDir.toString(), "--no-resp",
                "--replica-set", name, "--node-id", id, "--members", membersArg()));
            cmd.addAll(serverArgs);
            logOffset = Files.exists(log) ? Files.size(log) : 0;
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            pb.environment().put("UCX_ERROR_SIGNALS", "");
            process = pb.start();
            LIVE.add(process);
        }

        private void awaitReady() throws IOException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (!readyLineSeen()) {
                if (!process.isAlive()) {
                    throw new IOException(id + " exited with " + process.exitValue() + " before it was ready: "
                        + tail());
                }
                if (System.nanoTime() - deadline > 0) {
                    kill();
                    throw new IOException(id + " printed no '" + READY_LINE + "' within 120 s: " + tail());
                }
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while starting " + id, e);
                }
            }
        }

        private boolean readyLineSeen() throws IOException {
            try (RandomAccessFile f = new RandomAccessFile(log.toFile(), "r")) {
                long len = f.length();
                if (len <= logOffset) {
                    return false;
                }
                byte[] b = new byte[(int) Math.min(len - logOffset, 1 << 20)];
                f.seek(logOffset);
                f.readFully(b);
                String s = new String(b, StandardCharsets.UTF_8);
                return s.startsWith(READY_LINE) || s.contains("\n" + READY_LINE);
            }
        }

        /** The last lines of its log, for errors. */
        String tail() {
            try {
                List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
                return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
            } catch (IOException e) {
                return "(log unreadable: " + e + ")";
            }
        }

        @Override
        public String toString() {
            return id + "@127.0.0.1:" + port;
        }
    }

    /**
     * {@code n} distinct ports below the kernel's ephemeral range (so no outgoing connection takes one before its
     * member binds it, or while a killed member is down) that are free on loopback, each with its Ratis port free too,
     * and never handed out before in this JVM. Any thread.
     */
    static List<Integer> freePorts(int n) {
        List<Integer> out = new ArrayList<>();
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int attempt = 0; out.size() < n; attempt++) {
            if (attempt > 10_000) {
                throw new IllegalStateException("no free ports found: " + out);
            }
            int p = 12_000 + random.nextInt(10_000); // 12000..21999; + 10000 stays below 32768
            if (bindable(p) && bindable(p + RAFT_PORT_OFFSET) && TAKEN.add(p)) {
                out.add(p);
            }
        }
        return out;
    }

    private static boolean bindable(int port) {
        try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            s.setReuseAddress(true);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
