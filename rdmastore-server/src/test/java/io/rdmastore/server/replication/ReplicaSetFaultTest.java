package io.rdmastore.server.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.rdmastore.client.ClientConfig;
import io.rdmastore.client.PeerChannel;
import io.rdmastore.client.RdmaStoreServerException;
import io.rdmastore.client.protocol.ProtocolDescriptor;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Real member processes under concurrent w:majority writers and linearizable readers, with faults injected all the
 * while: SIGKILL and SIGSTOP of the primary (each forces a failover), SIGKILL and SIGSTOP of a secondary, restarts,
 * and a secondary wiped and resynchronised. Then, after healing: the history of single-key reads and writes must be
 * linearizable (which catches a lost or stale acknowledged write: every key is read once more at the end), every
 * member must hold the same values, and no term may have had two primaries.
 *
 * <p>Bounded: {@code -Drdmastore.test.failovers.tcp=20} and {@code ...ucx=10} primary faults (30 in the suite), each
 * followed by a secondary fault every third cycle; the test's time-out bounds the rest.
 */
class ReplicaSetFaultTest {
    private static final Duration CALL = Duration.ofSeconds(3);
    private static final Pattern PRIMARY_OF_TERM = Pattern.compile("primary of term (\\d+) at index");

    @TempDir
    Path dir;

    /** A write answered NOTPRIMARY: the member refused it, nothing was applied. */
    static final class NotApplied extends Exception {
        private static final long serialVersionUID = 1L;

        NotApplied(String m) {
            super(m);
        }
    }

    /** One client: finds the primary by ROLE, writes with WAIT(majority) pipelined, reads with READ_FENCE. */
    static final class MajorityOps implements Workload.Ops {
        private final List<Integer> ports;
        private final String transport;
        private final Map<Integer, PeerChannel> channels = new HashMap<>();
        private int primaryPort = -1;

        MajorityOps(List<Integer> ports, String transport) {
            this.ports = ports;
            this.transport = transport;
        }

        private PeerChannel channel(int port) {
            return channels.computeIfAbsent(port, p -> PeerChannel.open(new ClientConfig("127.0.0.1", p, transport,
                null, CALL)));
        }

        void drop(int port) {
            PeerChannel c = channels.remove(port);
            if (c != null) {
                c.close();
            }
            if (port == primaryPort) {
                primaryPort = -1;
            }
        }

        /** The primary's port, asking every member its ROLE until one says primary (bounded). */
        int primary() throws Exception {
            if (primaryPort > 0) {
                return primaryPort;
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (System.nanoTime() < deadline) {
                for (int p : ports) {
                    try {
                        PeerChannel c = channel(p);
                        int role = c.await(c.call(ProtocolDescriptor.ROLE, w -> { }, (st, r) -> r.u8("role"),
                            Duration.ofMillis(500)), Duration.ofMillis(500));
                        if (role == 1) {
                            primaryPort = p;
                            return p;
                        }
                    } catch (RuntimeException e) {
                        drop(p);
                    }
                }
                Thread.sleep(20);
            }
            throw new IllegalStateException("no primary found within 10 s");
        }

        @Override
        public void write(String key, String value) throws Exception {
            int p = primary();
            PeerChannel c = channel(p);
            byte[] k = key.getBytes(StandardCharsets.UTF_8);
            byte[] v = value.getBytes(StandardCharsets.UTF_8);
            CompletableFuture<Object> set = c.call(ProtocolDescriptor.SET, w -> w.u8(0).i64(0).bytes(k).bytes(v),
                (st, r) -> Boolean.TRUE, CALL);
            CompletableFuture<Long> wait = c.call(ProtocolDescriptor.WAIT, w -> w.i32(-1).i64(2000),
                (st, r) -> r.i64("acked"), CALL);
            try {
                c.await(set, CALL);
            } catch (RdmaStoreServerException e) {
                primaryPort = -1;
                if (String.valueOf(e.getMessage()).startsWith("NOTPRIMARY")) {
                    throw new NotApplied(e.getMessage());
                }
                throw e;
            } catch (RuntimeException e) {
                drop(p);
                throw e;
            }
            try {
                c.await(wait, CALL);
            } catch (RuntimeException e) {
                primaryPort = -1;
                if (!(e instanceof RdmaStoreServerException)) {
                    drop(p);
                }
                throw e;
            }
        }

        @Override
        public String read(String key) throws Exception {
            int p = primary();
            PeerChannel c = channel(p);
            byte[] k = key.getBytes(StandardCharsets.UTF_8);
            CompletableFuture<String> get = c.call(ProtocolDescriptor.GET, w -> w.bytes(k), (st, r) ->
                st == ProtocolDescriptor.STATUS_NULL ? null : new String(r.rest(), StandardCharsets.UTF_8), CALL);
            CompletableFuture<Object> fence = c.call(ProtocolDescriptor.READ_FENCE, w -> w.i64(2000),
                (st, r) -> Boolean.TRUE, CALL);
            try {
                String v = c.await(get, CALL);
                c.await(fence, CALL);
                return v;
            } catch (RuntimeException e) {
                if (e instanceof RdmaStoreServerException) {
                    primaryPort = -1;
                } else {
                    drop(p);
                }
                throw e;
            }
        }

        /** A plain GET on one member (a secondary serves reads), for the convergence check. */
        String readAt(int port, String key) {
            PeerChannel c = channel(port);
            byte[] k = key.getBytes(StandardCharsets.UTF_8);
            return c.await(c.call(ProtocolDescriptor.GET, w -> w.bytes(k), (st, r) ->
                st == ProtocolDescriptor.STATUS_NULL ? null : new String(r.rest(), StandardCharsets.UTF_8), CALL),
                CALL);
        }

        /** INFO text of one member. */
        String infoOf(int port) {
            PeerChannel c = channel(port);
            return c.await(c.call(ProtocolDescriptor.INFO, w -> { }, (st, r) -> r.restString(), CALL), CALL);
        }

        /** ROLE of one member: {role, term}. */
        long[] roleOf(int port) {
            PeerChannel c = channel(port);
            return c.await(c.call(ProtocolDescriptor.ROLE, w -> { }, (st, r) -> new long[] {r.u8("role"),
                r.i64("term")}, CALL), CALL);
        }

        @Override
        public void close() {
            for (PeerChannel c : channels.values()) {
                c.close();
            }
            channels.clear();
        }
    }

    private static Workload.Classifier classifier() {
        return (kind, error) -> error instanceof NotApplied ? Op.Outcome.FAIL : Op.Outcome.UNKNOWN;
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void acknowledgedMajorityWritesSurviveFaultsAndHistoriesAreLinearizable(String transport) throws Exception {
        int failovers = Integer.getInteger("rdmastore.test.failovers." + transport, transport.equals("tcp") ? 20 : 10);
        try (ReplicaSetProcesses set = ReplicaSetProcesses.builder().dir(dir).members(3).fsync("everysec")
            .transport(transport).replicaSet("rs0").start()) {
            List<Integer> ports = set.members().stream().map(ReplicaSetProcesses.Member::port).toList();
            try (MajorityOps probe = new MajorityOps(ports, transport)) {
                probe.primary();
            }
            Workload workload = Workload.builder().clients(4).keys(6).readFraction(0.5)
                .duration(Duration.ofMinutes(4)).seed(transport.hashCode())
                .ops(c -> new MajorityOps(ports, transport)).classifier(classifier())
                .pauseAfterError(Duration.ofMillis(20)).build();
            AtomicReference<Workload.Result> result = new AtomicReference<>();
            AtomicReference<Throwable> workloadError = new AtomicReference<>();
            Thread clients = new Thread(() -> {
                try {
                    result.set(workload.run());
                } catch (Throwable t) {
                    workloadError.set(t);
                }
            }, "workload");
            clients.start();
            List<String> faults = new ArrayList<>();
            long[] failoverMillis = new long[failovers];
            try (MajorityOps nemesis = new MajorityOps(ports, transport)) {
                Random random = new Random(transport.hashCode());
                Thread.sleep(1000);
                for (int cycle = 0; cycle < failovers; cycle++) {
                    // Faults come one at a time: with a member still starting or resyncing, a second loss would
                    // leave no majority (then no primary is the right answer, not a failure).
                    awaitHealthy(nemesis, ports);
                    int p = ports.indexOf(nemesis.primary());
                    ReplicaSetProcesses.Member primary = set.member(p);
                    long t0 = System.nanoTime();
                    boolean pause = cycle % 2 == 1;
                    if (pause) {
                        primary.pause();
                    } else {
                        primary.kill();
                    }
                    nemesis.drop(primary.port());
                    int q;
                    try {
                        q = awaitNewPrimary(nemesis, ports, primary.port());
                    } catch (AssertionError e) {
                        throw new AssertionError(e.getMessage() + " (" + (pause ? "SIGSTOP" : "SIGKILL") + " of "
                            + primary.id() + " in cycle " + cycle + ")\n" + memberLogs(set), e);
                    }
                    failoverMillis[cycle] = (System.nanoTime() - t0) / 1_000_000;
                    faults.add((pause ? "SIGSTOP" : "SIGKILL") + " primary " + primary.id() + " -> " + set.member(q)
                        .id() + " in " + failoverMillis[cycle] + " ms");
                    Thread.sleep(300 + random.nextInt(500));
                    if (pause) {
                        primary.resume();
                    } else {
                        primary.start();
                    }
                    if (cycle % 3 == 2) {
                        // A secondary fault: SIGKILL + restart, SIGSTOP + resume, or a wipe and resync.
                        int s = (q + 1 + random.nextInt(2)) % 3;
                        ReplicaSetProcesses.Member sec = set.member(s);
                        switch ((cycle / 3) % 3) {
                            case 0 -> {
                                sec.kill();
                                Thread.sleep(400);
                                sec.start();
                                faults.add("SIGKILL secondary " + sec.id() + " + restart");
                            }
                            case 1 -> {
                                sec.pause();
                                Thread.sleep(700);
                                sec.resume();
                                faults.add("SIGSTOP secondary " + sec.id() + " for 700 ms");
                            }
                            default -> {
                                sec.wipe();
                                faults.add("wiped secondary " + sec.id() + " (resync from a snapshot)");
                            }
                        }
                        nemesis.drop(sec.port());
                    }
                    Thread.sleep(500 + random.nextInt(500));
                }
            }
            workload.stop();
            clients.join(TimeUnit.SECONDS.toMillis(60));
            if (workloadError.get() != null) {
                throw new AssertionError("workload failed", workloadError.get());
            }
            Workload.Result r = result.get();
            assertTrue(r != null, "the workload did not finish");
            // Heal: every member up, one primary; then read every key once more through it.
            List<Op> history;
            try (MajorityOps ops = new MajorityOps(ports, transport)) {
                ops.primary();
                history = workload.readEveryKey(ops);
                awaitConvergence(ops, ports, keysOf(history));
            }
            LinearizabilityChecker.Result check = LinearizabilityChecker.create().check(history);
            long[] sorted = failoverMillis.clone();
            java.util.Arrays.sort(sorted);
            System.out.println("[" + transport + "] " + faults.size() + " faults, " + failovers + " failovers: p50 "
                + sorted[sorted.length / 2] + " ms, max " + sorted[sorted.length - 1] + " ms; " + r);
            faults.forEach(f -> System.out.println("  " + f));
            assertTrue(r.ok() > 100, "too few operations succeeded to mean anything: " + r);
            assertEquals(LinearizabilityChecker.Verdict.OK, check.verdict(), check.report());
            assertOnePrimaryPerTerm(set);
        }
    }

    /** The replication lines of every member's log, for a failure message. */
    private static String memberLogs(ReplicaSetProcesses set) {
        StringBuilder sb = new StringBuilder();
        for (ReplicaSetProcesses.Member m : set.members()) {
            sb.append("---- ").append(m.id()).append(" (port ").append(m.port()).append(")\n");
            try {
                List<String> lines = Files.readAllLines(m.logFile(), StandardCharsets.UTF_8).stream()
                    .filter(l -> l.contains("ReplicaSet") || l.contains("ControlPlane") || l.contains("changes role")
                        || l.contains("starting:") || l.contains("ERROR"))
                    .toList();
                for (String l : lines.subList(Math.max(0, lines.size() - 25), lines.size())) {
                    sb.append(l, 0, Math.min(300, l.length())).append('\n');
                }
            } catch (IOException e) {
                sb.append(e).append('\n');
            }
        }
        return sb.toString();
    }

    private static List<String> keysOf(List<Op> history) {
        return history.stream().map(Op::key).distinct().sorted().toList();
    }

    /**
     * Waits until one member is primary and every other one pulls from it (link up), then a little longer so a
     * member that was wiped has the control plane's log too. Bounded.
     */
    static void awaitHealthy(MajorityOps ops, List<Integer> ports) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        int healthyRounds = 0;
        String last = "";
        while (System.nanoTime() < deadline) {
            int primaries = 0;
            int linked = 0;
            StringBuilder sb = new StringBuilder();
            for (int port : ports) {
                try {
                    long[] role = ops.roleOf(port);
                    if (role[0] == 1) {
                        primaries++;
                    } else if (role[0] == 2 && ops.infoOf(port).contains("master_link_status:up")) {
                        linked++;
                    }
                    sb.append(port).append(":role ").append(role[0]).append(' ');
                } catch (RuntimeException e) {
                    ops.drop(port);
                    sb.append(port).append(":down ");
                }
            }
            healthyRounds = primaries == 1 && linked == ports.size() - 1 ? healthyRounds + 1 : 0;
            if (healthyRounds >= 15) {
                return;
            }
            last = sb.toString();
            Thread.sleep(100);
        }
        fail("the set did not heal within 30 s: " + last);
    }

    private static int awaitNewPrimary(MajorityOps ops, List<Integer> ports, int oldPort) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < ports.size(); i++) {
                if (ports.get(i) == oldPort) {
                    continue;
                }
                try {
                    if (ops.roleOf(ports.get(i))[0] == 1) {
                        return i;
                    }
                } catch (RuntimeException e) {
                    ops.drop(ports.get(i));
                }
            }
            Thread.sleep(10);
        }
        fail("no new primary within 20 s of the fault");
        return -1;
    }

    /** Every member ends with the primary's value of every key (secondaries applied everything). */
    private static void awaitConvergence(MajorityOps ops, List<Integer> ports, List<String> keys) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        String last = "";
        while (System.nanoTime() < deadline) {
            int primary = ops.primary();
            TreeMap<String, String> expected = new TreeMap<>();
            for (String k : keys) {
                expected.put(k, String.valueOf(ops.readAt(primary, k)));
            }
            boolean same = true;
            StringBuilder sb = new StringBuilder();
            for (int p : ports) {
                TreeMap<String, String> got = new TreeMap<>();
                try {
                    for (String k : keys) {
                        got.put(k, String.valueOf(ops.readAt(p, k)));
                    }
                } catch (RuntimeException e) {
                    ops.drop(p);
                    same = false;
                    continue;
                }
                if (!got.equals(expected)) {
                    same = false;
                    sb.append(" member ").append(p).append(" has ").append(got);
                }
            }
            if (same) {
                return;
            }
            last = "primary has " + expected + ";" + sb;
            Thread.sleep(100);
        }
        fail("members did not converge within 30 s: " + last);
    }

    /** Scans the members' logs: a term in which two members became primary would break everything else. */
    private static void assertOnePrimaryPerTerm(ReplicaSetProcesses set) throws IOException {
        Map<Long, String> byTerm = new HashMap<>();
        for (ReplicaSetProcesses.Member m : set.members()) {
            for (String line : Files.readAllLines(m.logFile(), StandardCharsets.UTF_8)) {
                Matcher x = PRIMARY_OF_TERM.matcher(line);
                if (x.find()) {
                    long term = Long.parseLong(x.group(1));
                    String other = byTerm.putIfAbsent(term, m.id());
                    if (other != null && !other.equals(m.id())) {
                        fail("term " + term + " had two primaries: " + other + " and " + m.id());
                    }
                }
            }
        }
        assertTrue(byTerm.size() >= 2, "the faults caused no failover: " + byTerm);
    }
}
