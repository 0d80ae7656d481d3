package io.rdmastore.server.replication;

import io.rdmastore.server.RdmaStoreServer;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Member servers of a replica set (or standalone servers) as real processes on loopback, for fault tests: each member
 * can be started, killed (SIGKILL), paused (SIGSTOP), resumed (SIGCONT), restarted on its data directory, or wiped.
 * Members keep their ports for the life of the set, so the others find a restarted member where it was.
 *
 * <p>Each member runs {@link RdmaStoreServer}'s main in its own JVM with this JVM's class path, and counts as started
 * once its stdout says {@code rdmastore listening on}. Its stdout and stderr go to {@link Member#logFile()}, which
 * grows across restarts; a start that fails or times out reports the log's tail.
 *
 * <p>{@link #close()} kills every member and waits for it; a JVM shutdown hook kills whatever a test left running.
 * Thread-safety: each member's operations are synchronized on the member, so a test thread and a workload thread may
 * both use them; the usual caller is the test's main thread.
 */
public final class ReplicaSetProcesses implements AutoCloseable {
    /** The line a member prints on stdout once it serves. */
    public static final String READY_LINE = "rdmastore listening on";
    /** A member's Ratis port is its data port plus this, unless raft ports are passed explicitly. */
    public static final int RAFT_PORT_OFFSET = 10_000;

    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroyForcibly),
            "replica-set-processes-reaper"));
    }

    private final List<Member> members;

    private ReplicaSetProcesses(List<Member> members) {
        this.members = List.copyOf(members);
        for (Member m : members) {
            m.set = this;
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * How to run the members. Not thread-safe; {@link #start()} validates it and starts every member.
     */
    public static final class Builder {
        private int members = 3;
        private Path dir;
        private String fsync = "always";
        private String transport = "tcp";
        private String replicaSet;
        private boolean explicitRaftPorts;
        private Duration readyTimeout = Duration.ofSeconds(30);
        private List<String> jvmArgs = List.of("--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC", "-Xshare:auto", "-Xmx256m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=info");
        private Function<Member, List<String>> extraArgs = m -> List.of();
        private boolean startAll = true;

        /** How many members (default 3). */
        public Builder members(int n) {
            this.members = n;
            return this;
        }

        /** Where the members' data directories ({@code n1/data}...) and logs ({@code n1.log}...) go. Required. */
        public Builder dir(Path value) {
            this.dir = value;
            return this;
        }

        /** {@code --fsync}: always (default), everysec or no. */
        public Builder fsync(String value) {
            this.fsync = value;
            return this;
        }

        /** {@code --transport}: tcp (default), ucx or auto. */
        public Builder transport(String value) {
            this.transport = value;
            return this;
        }

        /**
         * Runs the members as replica set {@code name}: each gets {@code --replica-set name --node-id nI --members
         * n1=127.0.0.1:P1,...}. Without it (the default) the members are standalone servers.
         */
        public Builder replicaSet(String name) {
            this.replicaSet = name;
            return this;
        }

        /** Also passes {@code --raft-port} (data port + {@value #RAFT_PORT_OFFSET}) to each member. */
        public Builder explicitRaftPorts(boolean value) {
            this.explicitRaftPorts = value;
            return this;
        }

        /** How long a member may take to print its ready line (default 30 s). */
        public Builder readyTimeout(Duration value) {
            this.readyTimeout = value;
            return this;
        }

        /** The JVM options of each member (replaces the defaults: serial GC, C1 only, 256 MB heap). */
        public Builder jvmArgs(List<String> value) {
            this.jvmArgs = List.copyOf(value);
            return this;
        }

        /** More server arguments per member, after the standard ones. */
        public Builder extraArgs(Function<Member, List<String>> value) {
            this.extraArgs = value;
            return this;
        }

        /** Whether {@link #start()} starts the members (default) or only assigns their ports and directories. */
        public Builder startAll(boolean value) {
            this.startAll = value;
            return this;
        }

        /** Picks the ports, then starts every member (all launched first, then each awaited). */
        public ReplicaSetProcesses start() {
            Objects.requireNonNull(dir, "dir");
            if (members < 1) {
                throw new IllegalArgumentException("members must be at least 1: " + members);
            }
            List<Integer> ports = freePorts(members, replicaSet != null);
            List<Member> list = new ArrayList<>();
            for (int i = 0; i < members; i++) {
                String id = "n" + (i + 1);
                list.add(new Member(this, id, ports.get(i), dir.resolve(id).resolve("data"), dir.resolve(id + ".log")));
            }
            ReplicaSetProcesses set = new ReplicaSetProcesses(list);
            if (startAll) {
                try {
                    for (Member m : list) {
                        m.launch();
                    }
                    for (Member m : list) {
                        m.awaitReady();
                    }
                } catch (RuntimeException | Error e) {
                    set.close();
                    throw e;
                }
            }
            return set;
        }
    }

    /** The members, n1 first. */
    public List<Member> members() {
        return members;
    }

    /** Member {@code i}, counting from 0 (n1 is 0). */
    public Member member(int i) {
        return members.get(i);
    }

    /** The {@code --members} value: {@code n1=127.0.0.1:P1,n2=127.0.0.1:P2,...}. */
    public String membersArg() {
        return members.stream().map(m -> m.id() + "=127.0.0.1:" + m.port()).collect(Collectors.joining(","));
    }

    /** The members whose processes are alive (paused ones included). */
    public List<Member> alive() {
        return members.stream().filter(Member::isAlive).toList();
    }

    /** Kills every member (SIGKILL) and waits until each is gone. */
    @Override
    public void close() {
        for (Member m : members) {
            m.kill();
        }
    }

    /**
     * One member process. Its port, directories and log file stay the same across restarts. All operations are
     * synchronized on the member.
     */
    public static final class Member {
        private final Builder config;
        private final String id;
        private final int port;
        private final Path dataDir;
        private final Path logFile;
        private Process process;
        private long logOffset;
        private boolean paused;
        private ReplicaSetProcesses set;

        private Member(Builder config, String id, int port, Path dataDir, Path logFile) {
            this.config = config;
            this.id = id;
            this.port = port;
            this.dataDir = dataDir;
            this.logFile = logFile;
        }

        /** Its node id: n1, n2, ... */
        public String id() {
            return id;
        }

        /** Its data (client) port on 127.0.0.1. */
        public int port() {
            return port;
        }

        /** Its Ratis port: the data port + {@value #RAFT_PORT_OFFSET}. */
        public int raftPort() {
            return port + RAFT_PORT_OFFSET;
        }

        public Path dataDir() {
            return dataDir;
        }

        /** Its stdout and stderr, every run appended. */
        public Path logFile() {
            return logFile;
        }

        /** The pid of its current process; -1 if never started. */
        public synchronized long pid() {
            return process == null ? -1 : process.pid();
        }

        /** Whether its process is running (a paused one is). */
        public synchronized boolean isAlive() {
            return process != null && process.isAlive();
        }

        public synchronized boolean isPaused() {
            return paused && isAlive();
        }

        /** Starts it on its data directory and waits for its ready line; it must not be running. */
        public synchronized Member start() {
            launch();
            awaitReady();
            return this;
        }

        /** Kills it if it runs, then starts it again on the same data directory. */
        public synchronized Member restart() {
            kill();
            return start();
        }

        /** SIGKILL (a paused process dies too); waits until it is gone. No-op if it is not running. */
        public synchronized Member kill() {
            if (process != null) {
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
                paused = false;
            }
            return this;
        }

        /** SIGTERM (a clean shutdown); waits until it is gone, then SIGKILLs it after {@code grace}. */
        public synchronized Member stop(Duration grace) {
            if (process != null && process.isAlive()) {
                if (paused) {
                    resume();
                }
                process.destroy();
                try {
                    if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                        kill();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    kill();
                }
                LIVE.remove(process);
            }
            return this;
        }

        /** SIGSTOP: the process stays, frozen; its connections stay open and get no answers. */
        public synchronized Member pause() {
            signal("STOP");
            paused = true;
            return this;
        }

        /** SIGCONT: a paused process runs on. */
        public synchronized Member resume() {
            signal("CONT");
            paused = false;
            return this;
        }

        /** Kills it, deletes its data directory and starts it empty (same port, same node id). */
        public synchronized Member wipe() {
            kill();
            deleteTree(dataDir);
            return start();
        }

        /** The last {@code maxLines} lines of its log. */
        public String logTail(int maxLines) {
            try {
                if (!Files.exists(logFile)) {
                    return "(no log)";
                }
                List<String> lines = Files.readAllLines(logFile, StandardCharsets.UTF_8);
                return String.join("\n", lines.subList(Math.max(0, lines.size() - maxLines), lines.size()));
            } catch (IOException e) {
                return "(log unreadable: " + e + ")";
            }
        }

        /** The command line of its server, for logs and tests. */
        public List<String> command() {
            List<String> cmd = new ArrayList<>();
            cmd.add(ProcessHandle.current().info().command().orElse("java"));
            cmd.addAll(config.jvmArgs);
            cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), RdmaStoreServer.class.getName(),
                "--bind", "127.0.0.1", "--port", String.valueOf(port), "--dir", dataDir.toString(),
                "--fsync", config.fsync, "--transport", config.transport, "--no-resp"));
            if (config.replicaSet != null) {
                cmd.addAll(List.of("--replica-set", config.replicaSet, "--node-id", id, "--members",
                    set == null ? "" : set.membersArg()));
                if (config.explicitRaftPorts) {
                    cmd.addAll(List.of("--raft-port", String.valueOf(raftPort())));
                }
            }
            cmd.addAll(config.extraArgs.apply(this));
            return cmd;
        }

        private synchronized void launch() {
            if (process != null && process.isAlive()) {
                throw new IllegalStateException(id + " is already running (pid " + process.pid() + ")");
            }
            try {
                Files.createDirectories(dataDir);
                Files.createDirectories(logFile.toAbsolutePath().getParent());
                Files.writeString(logFile, "---- " + id + " starting: " + String.join(" ", commandForLog()) + "\n",
                    StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.CREATE,
                    java.nio.file.StandardOpenOption.APPEND);
                logOffset = Files.size(logFile);
                ProcessBuilder pb = new ProcessBuilder(command());
                pb.environment().put("UCX_ERROR_SIGNALS", "");
                pb.redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
                pb.redirectError(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
                pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
                process = pb.start();
                LIVE.add(process);
                paused = false;
            } catch (IOException e) {
                throw new UncheckedIOException("cannot start " + id, e);
            }
        }

        private List<String> commandForLog() {
            // the class path is long and the same for every member
            return command().stream().map(a -> a.length() > 200 ? "<class path>" : a).toList();
        }

        private synchronized void awaitReady() {
            long deadline = System.nanoTime() + config.readyTimeout.toNanos();
            while (true) {
                if (readyLineSeen()) {
                    return;
                }
                if (!process.isAlive()) {
                    LIVE.remove(process);
                    throw new IllegalStateException(id + " exited with " + process.exitValue()
                        + " before it was ready; its log:\n" + logTail(40));
                }
                if (System.nanoTime() - deadline > 0) {
                    kill();
                    throw new IllegalStateException(id + " printed no '" + READY_LINE + "' within "
                        + config.readyTimeout.toMillis() + " ms; its log:\n" + logTail(40));
                }
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    kill();
                    throw new IllegalStateException("interrupted while starting " + id, e);
                }
            }
        }

        private boolean readyLineSeen() {
            try (RandomAccessFile f = new RandomAccessFile(logFile.toFile(), "r")) {
                long len = f.length();
                if (len <= logOffset) {
                    return false;
                }
                byte[] b = new byte[(int) Math.min(len - logOffset, 1 << 20)];
                f.seek(logOffset);
                f.readFully(b);
                String s = new String(b, StandardCharsets.UTF_8);
                return s.startsWith(READY_LINE) || s.contains("\n" + READY_LINE);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        private void signal(String name) {
            if (process == null || !process.isAlive()) {
                throw new IllegalStateException(id + " is not running; cannot send SIG" + name);
            }
            try {
                Process k = new ProcessBuilder("kill", "-" + name, String.valueOf(process.pid()))
                    .redirectErrorStream(true).start();
                String out = new String(k.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                if (!k.waitFor(10, TimeUnit.SECONDS) || k.exitValue() != 0) {
                    throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed: " + out);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while sending SIG" + name + " to " + id, e);
            }
        }

        @Override
        public String toString() {
            return id + "@127.0.0.1:" + port;
        }
    }

    private static void deleteTree(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try {
            Files.walkFileTree(root, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.delete(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                    if (e != null) {
                        throw e;
                    }
                    Files.delete(d);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete " + root, e);
        }
    }

    /**
     * {@code n} distinct ports below the kernel's ephemeral range (so outgoing connections never take them between
     * now and a member's start) that are free on 127.0.0.1, and with {@code withRaft} so is each port + the offset.
     */
    public static List<Integer> freePorts(int n, boolean withRaft) {
        List<Integer> out = new ArrayList<>();
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int attempt = 0; out.size() < n; attempt++) {
            if (attempt > 10_000) {
                throw new IllegalStateException("no free ports found: " + out);
            }
            int p = 12_000 + random.nextInt(10_000); // 12000..21999, + 10000 stays below 32768
            if (out.contains(p) || !bindable(p) || withRaft && !bindable(p + RAFT_PORT_OFFSET)) {
                continue;
            }
            out.add(p);
        }
        return Collections.unmodifiableList(out);
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
