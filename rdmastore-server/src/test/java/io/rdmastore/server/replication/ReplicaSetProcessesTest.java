package io.rdmastore.server.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreTimeoutException;
import io.rdmastore.server.replication.LinearizabilityChecker.Result;
import io.rdmastore.server.replication.LinearizabilityChecker.Verdict;
import io.rdmastore.server.replication.ReplicaSetProcesses.Member;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The harness on standalone servers (the replica-set flags are only checked on the command line here): members are
 * started, paused, resumed, killed, restarted and wiped as real processes on loopback, and a workload's history against
 * one server is linearizable.
 */
class ReplicaSetProcessesTest {
    @TempDir
    Path dir;

    static RdmaStoreClient client(Member m, Duration timeout) {
        return RdmaStoreClient.builder().port(m.port()).transport("tcp").timeout(timeout).connect();
    }

    /** Reads and writes through one RdmaStoreClient of its own. */
    static Workload.Ops clientOps(Member m, Duration timeout) {
        // connecting gets 10 s however short the calls' time-out: other builds may load the machine
        RdmaStoreClient c = client(m, Duration.ofSeconds(10)).withTimeout(timeout);
        return new Workload.Ops() {
            @Override
            public String read(String key) {
                return c.get(key);
            }

            @Override
            public void write(String key, String value) {
                c.set(key, value);
            }

            @Override
            public void close() {
                c.close();
            }
        };
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void membersArePausedResumedKilledRestartedAndWiped() throws Exception {
        long[] pids;
        try (ReplicaSetProcesses set = ReplicaSetProcesses.builder().members(2).dir(dir).fsync("always").start()) {
            Member a = set.member(0);
            Member b = set.member(1);
            assertNotEquals(a.port(), b.port());
            assertTrue(a.isAlive() && b.isAlive());
            assertTrue(Files.readString(a.logFile()).contains(ReplicaSetProcesses.READY_LINE));
            try (RdmaStoreClient ca = client(a, Duration.ofSeconds(5));
                 RdmaStoreClient cb = client(b, Duration.ofSeconds(10)).withTimeout(Duration.ofMillis(500))) {
                ca.set("k", "on-a");
                cb.set("k", "on-b");
                assertEquals("on-a", ca.get("k"));
                assertEquals("on-b", cb.get("k"));

                b.pause();
                assertTrue(b.isPaused() && b.isAlive());
                assertThrows(RdmaStoreTimeoutException.class, () -> cb.get("k"), "a paused member answered");
                assertEquals("on-a", ca.get("k"), "pausing one member stopped the other");
                b.resume();
                assertFalse(b.isPaused());
                assertEquals("on-b", cb.get("k"));

                long pid = a.pid();
                a.kill();
                assertFalse(a.isAlive());
                assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false));
                a.start();
                assertNotEquals(pid, a.pid());
                assertEquals("on-a", reconnecting(ca).get("k"), "an fsync=always write did not survive SIGKILL");

                pid = a.pid();
                a.restart();
                assertNotEquals(pid, a.pid());
                assertEquals("on-a", reconnecting(ca).get("k"));

                a.wipe();
                assertNull(reconnecting(ca).get("k"), "a wiped member still has data");
                assertEquals("on-b", cb.get("k"), "wiping one member touched the other");
                b.pause(); // close() must kill a paused member too
            }
            pids = new long[] {a.pid(), b.pid()};
        }
        for (long pid : pids) {
            assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "pid " + pid + " survived");
        }
    }

    /** The client reconnects on its next call after its server died; the call in flight at the death fails. */
    private static RdmaStoreClient reconnecting(RdmaStoreClient c) {
        for (int i = 0; i < 50; i++) {
            try {
                c.ping();
                return c;
            } catch (RuntimeException e) {
                try {
                    Thread.sleep(100);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError(ie);
                }
            }
        }
        throw new AssertionError("could not reach the restarted member");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aStartThatFailsReportsTheLogTail() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> ReplicaSetProcesses.builder()
            .members(1).dir(dir).extraArgs(m -> List.of("--no-such-option", "x")).start());
        assertTrue(e.getMessage().contains("unknown option --no-such-option"), e.getMessage());
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void replicaSetFlagsNameEveryMemberAndFreeRaftPorts() {
        try (ReplicaSetProcesses set = ReplicaSetProcesses.builder().members(3).dir(dir).replicaSet("rs0")
            .explicitRaftPorts(true).startAll(false).start()) {
            String members = set.membersArg();
            for (Member m : set.members()) {
                assertTrue(members.contains(m.id() + "=127.0.0.1:" + m.port()), members);
                assertTrue(m.port() + ReplicaSetProcesses.RAFT_PORT_OFFSET < 32768, "raft port " + m.raftPort());
                String cmd = String.join(" ", m.command());
                assertTrue(cmd.contains("--replica-set rs0 --node-id " + m.id() + " --members " + members), cmd);
                assertTrue(cmd.contains("--raft-port " + m.raftPort()), cmd);
                assertFalse(m.isAlive());
            }
            assertEquals(3, set.members().stream().map(Member::port).distinct().count());
        }
        try (ReplicaSetProcesses set = ReplicaSetProcesses.builder().members(1).dir(dir).startAll(false).start()) {
            String standalone = String.join(" ", set.member(0).command());
            assertFalse(standalone.contains("--replica-set"), standalone);
        }
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void workloadAgainstOneServerIsLinearizable() throws Exception {
        try (ReplicaSetProcesses set = ReplicaSetProcesses.builder().members(1).dir(dir).start()) {
            Member m = set.member(0);
            Workload w = Workload.builder().clients(8).keys(4).duration(Duration.ofSeconds(3)).seed(7)
                .ops(c -> clientOps(m, Duration.ofSeconds(10))).classifier(Workload.serverErrorsFail()).build();
            Workload.Result r = w.run();
            System.out.println(r);
            assertTrue(r.ok() > 200, "too few operations to check anything: " + r);
            assertEquals(0, r.unknown() + r.failed() + r.stuckClients() + r.opsFailedToStart(), r.toString());
            Result check = LinearizabilityChecker.create().check(r.ops());
            assertEquals(Verdict.OK, check.verdict(), check.report());

            // SIGKILL and restart (fsync=always): a final read of every key must still see the last writes
            m.restart();
            List<Op> all;
            try (Workload.Ops ops = clientOps(m, Duration.ofSeconds(10))) {
                all = w.readEveryKey(ops);
            }
            assertEquals(r.ops().size() + 4, all.size());
            assertTrue(all.stream().skip(r.ops().size()).allMatch(o -> o.outcome() == Op.Outcome.OK), all.toString());
            Result afterRestart = LinearizabilityChecker.create().check(all);
            assertEquals(Verdict.OK, afterRestart.verdict(), afterRestart.report());
        }
    }

    /** A store whose reads come from a copy that lags its writes by a few milliseconds, as a lagging replica would. */
    private static final class LaggingStore implements AutoCloseable {
        final Map<String, String> primary = new ConcurrentHashMap<>();
        final Map<String, String> replica = new ConcurrentHashMap<>();
        final ScheduledExecutorService copier = Executors.newSingleThreadScheduledExecutor();

        void write(String key, String value) {
            primary.put(key, value);
            copier.schedule(() -> replica.put(key, value), 5, TimeUnit.MILLISECONDS);
        }

        @Override
        public void close() {
            copier.shutdownNow();
        }
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void workloadAndCheckerCatchALaggingReadPathAndPassAnAtomicOne() throws Exception {
        Map<String, String> atomic = new ConcurrentHashMap<>();
        Workload good = Workload.builder().clients(8).keys(3).duration(Duration.ofMillis(500)).maxOpsPerClient(2000).seed(3)
            .ops(c -> new Workload.Ops() {
                @Override
                public String read(String key) {
                    return atomic.get(key);
                }

                @Override
                public void write(String key, String value) {
                    atomic.put(key, value);
                }
            }).build();
        Workload.Result r = good.run();
        Result ok = LinearizabilityChecker.create().check(good.readEveryKey(new Workload.Ops() {
            @Override
            public String read(String key) {
                return atomic.get(key);
            }

            @Override
            public void write(String key, String value) {
                throw new UnsupportedOperationException();
            }
        }));
        assertTrue(r.ok() > 1000, r.toString());
        assertEquals(Verdict.OK, ok.verdict(), ok.report());

        try (LaggingStore lagging = new LaggingStore()) {
            Workload.Result bad = Workload.builder().clients(8).keys(3).duration(Duration.ofMillis(500)).maxOpsPerClient(2000).seed(3)
                .ops(c -> new Workload.Ops() {
                    @Override
                    public String read(String key) {
                        return lagging.replica.get(key);
                    }

                    @Override
                    public void write(String key, String value) {
                        lagging.write(key, value);
                    }
                }).build().run();
            Result caught = LinearizabilityChecker.create().check(bad.ops());
            System.out.print(caught.report().lines().limit(30).collect(Collectors.joining("\n", "", "\n")));
            assertEquals(Verdict.VIOLATION, caught.verdict(), "stale reads of a lagging copy went unnoticed");
        }
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void workloadAcrossAPauseRecordsUnknownsAndStaysLinearizable() throws Exception {
        try (ReplicaSetProcesses set = ReplicaSetProcesses.builder().members(1).dir(dir).start()) {
            Member m = set.member(0);
            History history = new History();
            Workload w = Workload.builder().clients(4).keys(2).duration(Duration.ofSeconds(6)).seed(11)
                .history(history).ops(c -> clientOps(m, Duration.ofMillis(300)))
                .classifier(Workload.serverErrorsFail()).build();
            CompletableFuture<Workload.Result> running = CompletableFuture.supplyAsync(() -> {
                try {
                    return w.run();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (history.size() < 100 && System.nanoTime() - deadline < 0) {
                Thread.sleep(10);
            }
            m.pause();
            Thread.sleep(1000);
            m.resume();
            Workload.Result r = running.get(60, TimeUnit.SECONDS);
            System.out.println(r);
            assertTrue(r.unknown() > 0, "no operation timed out while the server was paused: " + r);
            assertTrue(r.ok() > 100, r.toString());
            Result check = LinearizabilityChecker.create().check(r.ops());
            System.out.print(check.report());
            assertEquals(Verdict.OK, check.verdict(), check.report());
        }
    }
}
