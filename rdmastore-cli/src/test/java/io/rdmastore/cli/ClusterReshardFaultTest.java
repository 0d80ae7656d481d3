package io.rdmastore.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.cluster.HashSlot;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A reshard survives, mid-migration: SIGKILL of the source's primary (round 1) and of the target's primary (round 2),
 * SIGSTOP of the source's primary long enough for its set to elect another, then SIGCONT (round 3: the deposed
 * primary comes back believing it leads, possibly inside a MIGRATE), and SIGKILL of a target secondary whose data is
 * then wiped, so it restarts empty and resyncs while keys keep arriving (round 4). The members reach each other over
 * ucx, so batches move one-sided (MIGRATE_PULL), unless {@code -Drdmastore.test.ucx=false}.
 * Two shards of three member processes each on loopback; two writers keep doing SET (unique values) and INCR on keys
 * of the migrating slots, each write followed by {@code WAIT 1} on the same connection, so a write counts as
 * acknowledged only once a majority of its shard holds it. {@code cluster reshard} runs while they write; the primary
 * is killed once some keys moved; the reshard retries through the new primary (or is run again), and the killed
 * member is restarted and rejoins. Then the checker reads every key from its slot's owner: a SET key holds its last
 * acknowledged value or a later attempted one, a counter at least its acknowledged and at most its attempted
 * increments, and the old owner holds no key of a moved slot. Finally a key is deleted behind the checker's back to
 * see that it reports it.
 */
@Timeout(value = 360, unit = TimeUnit.SECONDS)
class ClusterReshardFaultTest {
    /** Each round moves this many of s1's highest slots to s2. */
    private static final int SLOTS_PER_ROUND = 40;
    private static final int ROUNDS = 4;
    private static final int FIRST_MOVED = 8192 - ROUNDS * SLOTS_PER_ROUND;
    /** Members reach each other over ucx (keys move one-sided) unless {@code -Drdmastore.test.ucx=false}. */
    private static final boolean UCX = Boolean.parseBoolean(System.getProperty("rdmastore.test.ucx", "true"));
    private static final String TRANSPORT = UCX ? "auto" : "tcp";

    /** What a round does to its victim while the reshard moves keys. */
    private enum Fault {
        /** SIGKILL the shard's primary, restart it. */
        KILL_PRIMARY,
        /** SIGSTOP the shard's primary past an election, then SIGCONT it. */
        STOP_PRIMARY,
        /** SIGKILL a secondary of the shard, delete its data, restart it empty. */
        WIPE_SECONDARY
    }

    @TempDir
    Path dir;
    private final List<MemberProcess> members = new ArrayList<>();

    @AfterEach
    void killAll() {
        members.forEach(MemberProcess::kill);
    }

    @Test
    void reshardSurvivesKilledStoppedAndWipedMembers() throws Exception {
        long t0 = System.nanoTime();
        List<Integer> ports = MemberProcess.freePorts(6, io.rdmastore.server.replication.ReplicaSetConfig
            .DEFAULT_RAFT_PORT_OFFSET);
        for (int s = 0; s < 2; s++) {
            String set = "s" + (s + 1);
            StringBuilder list = new StringBuilder();
            for (int m = 0; m < 3; m++) {
                list.append(list.isEmpty() ? "" : ",").append(set).append("-n").append(m + 1).append("=127.0.0.1:")
                    .append(ports.get(s * 3 + m));
            }
            for (int m = 0; m < 3; m++) {
                String id = set + "-n" + (m + 1);
                int port = ports.get(s * 3 + m);
                members.add(new MemberProcess(id, port, dir.resolve(id), dir.resolve(id + ".log"), List.of(
                    "--cluster", "--bind", "127.0.0.1", "--port", String.valueOf(port), "--data-dir",
                    dir.resolve(id).toString(), "--fsync", "everysec", "--transport", TRANSPORT, "--idle-strategy",
                    "backoff", "--replica-set", set, "--node-id", id, "--members", list.toString(),
                    "--election-timeout", "1s")));
            }
        }
        for (MemberProcess m : members) {
            m.launch();
        }
        for (MemberProcess m : members) {
            m.awaitReady(Duration.ofSeconds(90));
        }
        Run create = null;
        long createUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (create == null || create.exitCode() != 0 && System.nanoTime() - createUntil < 0) {
            if (create != null) {
                Thread.sleep(500);
            }
            create = Run.of("cluster", "create", members.get(0).address(), members.get(3).address());
        }
        assertEquals(0, create.exitCode(), create::toString);
        log(t0, "cluster created: " + create.out().strip());

        // keys and counters in the slots the two rounds move
        List<String> keys = new ArrayList<>();
        List<String> counters = new ArrayList<>();
        for (int i = 0; keys.size() < 120; i++) {
            if (HashSlot.of("u:" + i) >= FIRST_MOVED && HashSlot.of("u:" + i) < 8192) {
                keys.add("u:" + i);
            }
        }
        for (int i = 0; counters.size() < 30; i++) {
            if (HashSlot.of("c:" + i) >= FIRST_MOVED && HashSlot.of("c:" + i) < 8192) {
                counters.add("c:" + i);
            }
        }
        History h = new History(keys, counters);
        Router loader = new Router(members);
        for (int i = 0; i < keys.size(); i++) {
            h.set(loader, i, "init-" + i, System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
            assertEquals("init-" + i, h.acked.get(i), "preload of " + keys.get(i));
        }
        loader.close();
        log(t0, "preloaded " + keys.size() + " keys");

        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> writers = new ArrayList<>();
        AtomicReference<Throwable> writerFailure = new AtomicReference<>();
        for (int w = 0; w < 2; w++) {
            int self = w;
            Thread t = new Thread(() -> {
                try (Router r = new Router(members)) {
                    long seq = 0;
                    while (!stop.get()) {
                        seq++;
                        int k = (int) (2 * ((seq * 7) % (keys.size() / 2)) + self);
                        h.set(r, k, "w" + self + "-" + seq, System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
                        int c = (int) (2 * ((seq * 3) % (counters.size() / 2)) + self);
                        h.incr(r, c, System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
                        Thread.sleep(2);
                    }
                } catch (Throwable e) {
                    writerFailure.set(e);
                }
            }, "fault-writer-" + w);
            t.start();
            writers.add(t);
        }
        try {
            round(t0, h, Fault.KILL_PRIMARY, "s1", 8192 - SLOTS_PER_ROUND);
            round(t0, h, Fault.KILL_PRIMARY, "s2", 8192 - 2 * SLOTS_PER_ROUND);
            round(t0, h, Fault.STOP_PRIMARY, "s1", 8192 - 3 * SLOTS_PER_ROUND);
            round(t0, h, Fault.WIPE_SECONDARY, "s2", FIRST_MOVED);
        } finally {
            stop.set(true);
            for (Thread t : writers) {
                t.join(30_000);
            }
        }
        assertEquals(null, writerFailure.get(), "a writer failed");
        log(t0, "writers stopped: " + h.summary() + "; they followed " + Router.ASKS.get() + " ASK and "
            + Router.MOVES.get() + " MOVED, and retried " + Router.RETRIES.get() + " TRYAGAIN/READONLY/CLUSTERDOWN");
        assertTrue(h.ackedWrites.get() > 100, "the writers got writes acknowledged: " + h.summary());
        assertTrue(Router.ASKS.get() > 0, "the writers wrote keys of the slots while they moved (ASK)");

        // the restarted members rejoined: they catch up with their set's control plane and data by themselves
        Run status = Run.of("cluster", "status", "-p", String.valueOf(members.get(1).port()));
        long statusUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (status.exitCode() != 0 && System.nanoTime() - statusUntil < 0) {
            Thread.sleep(500);
            status = Run.of("cluster", "status", "-p", String.valueOf(members.get(1).port()));
        }
        log(t0, "cluster status: " + status.out().strip().replace("\n", " | "));
        assertEquals(0, status.exitCode(), status::toString);

        List<String> problems = check(h);
        assertEquals(List.of(), problems, "the checker found lost or duplicated writes");
        log(t0, "checker: every acknowledged write is on its slot's owner, no key on two shards");

        // how the keys moved: the source's primary of the last round says
        try (RespLink l = new RespLink(primaryOf("s1").address(), null, Duration.ofSeconds(5))) {
            String info = new String((byte[]) l.call("INFO", "cluster"), java.nio.charset.StandardCharsets.UTF_8);
            log(t0, "s1's primary: " + info.strip().replace("\r\n", " "));
            String path = UCX ? "one-sided pull over ucx" : "resp over tcp";
            assertTrue(info.contains("migrate_last_path:" + path), "keys moved by " + path + ": " + info);
        }

        // every member of s2, the wiped one included, converges on its primary's keys of the moved slots
        long expected = movedKeys(primaryOf("s2"), FIRST_MOVED, ROUNDS * SLOTS_PER_ROUND);
        for (MemberProcess m : members) {
            if (!m.id().startsWith("s2-")) {
                continue;
            }
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            long held = movedKeys(m, FIRST_MOVED, ROUNDS * SLOTS_PER_ROUND);
            while (held != expected && System.nanoTime() - until < 0) {
                Thread.sleep(200);
                held = movedKeys(m, FIRST_MOVED, ROUNDS * SLOTS_PER_ROUND);
            }
            assertEquals(expected, held, m.id() + " holds the moved slots' keys as its primary does");
        }
        log(t0, "every member of s2 holds the " + expected + " keys of the moved slots");

        // the checker can fail: a key dropped behind its back is reported
        String dropped = keys.get(keys.size() / 2);
        try (RespLink owner = new RespLink(primaryOf("s2").address(), null, Duration.ofSeconds(5))) {
            assertEquals(1L, owner.call("DEL", dropped));
        }
        List<String> after = check(h);
        assertTrue(after.size() == 1 && after.get(0).startsWith(dropped + " "), "the dropped key is reported: " + after);
        log(t0, "checker flags a dropped key: " + after.get(0));
    }

    /**
     * Moves s1's slots {@code from}..{@code from + SLOTS_PER_ROUND - 1} to s2 and, once some of their keys are on s2,
     * applies {@code fault} to a member of shard {@code victim}; the reshard retries by itself, else is run again; a
     * killed member is restarted, a stopped one resumed.
     */
    private void round(long t0, History h, Fault fault, String victim, int from) throws Exception {
        AtomicReference<Run> result = new AtomicReference<>();
        Thread reshard = new Thread(() -> result.set(Run.of(reshardArgs())), "fault-reshard");
        reshard.start();
        MemberProcess target = primaryOf("s2");
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (movedKeys(target, from, SLOTS_PER_ROUND) < 5 && reshard.isAlive() && System.nanoTime() - until < 0) {
            Thread.sleep(20);
        }
        MemberProcess primary = primaryOf(victim);
        MemberProcess member = fault == Fault.WIPE_SECONDARY ? members.stream()
            .filter(m -> m.id().startsWith(victim + "-") && m != primary).findFirst().orElseThrow() : primary;
        long moved = movedKeys(target, from, SLOTS_PER_ROUND);
        assertTrue(reshard.isAlive(), "the reshard was still moving keys when the fault came: " + result.get());
        String role = (fault == Fault.WIPE_SECONDARY ? "a secondary" : "primary") + " of " + victim + ", the "
            + (victim.equals("s1") ? "source" : "target");
        switch (fault) {
            case KILL_PRIMARY -> {
                member.kill();
                log(t0, "SIGKILL " + member.id() + " (" + role + ") with " + moved + " keys of the round on s2");
            }
            case STOP_PRIMARY -> {
                member.pause();
                log(t0, "SIGSTOP " + member.id() + " (" + role + ") with " + moved + " keys of the round on s2");
                // past the election time-out (1 s) several times over: the others elect a primary meanwhile
                Thread.sleep(5_000);
                member.resume();
                log(t0, "SIGCONT " + member.id() + " after 5 s");
            }
            case WIPE_SECONDARY -> {
                member.kill();
                member.wipe();
                log(t0, "SIGKILL " + member.id() + " (" + role + ") with " + moved + " keys of the round on s2,"
                    + " its data deleted");
                member.launch();
            }
        }
        reshard.join(150_000);
        Run r = result.get();
        assertTrue(r != null, "the reshard ended");
        log(t0, "reshard exit " + r.exitCode() + ": " + r.out().strip().replace("\n", " | ")
            + (r.err().isBlank() ? "" : " | err: " + r.err().strip()));
        if (r.exitCode() != 0) {
            Run again = Run.of(reshardArgs());
            log(t0, "reshard run again: exit " + again.exitCode() + ": " + again.out().strip().replace("\n", " | "));
            assertEquals(0, again.exitCode(), again::toString);
        }
        if (fault == Fault.KILL_PRIMARY) {
            member.launch();
        }
        if (fault != Fault.STOP_PRIMARY) {
            member.awaitReady(Duration.ofSeconds(60));
            log(t0, member.id() + " restarted" + (fault == Fault.WIPE_SECONDARY ? " empty" : ""));
        }
    }

    /** The same reshard each time, asked through a member that runs. */
    private String[] reshardArgs() {
        MemberProcess live = members.stream().filter(MemberProcess::isAlive).findFirst().orElseThrow();
        return new String[] {"cluster", "reshard", "-p", String.valueOf(live.port()), "--from", "s1", "--to", "s2",
            "--slots", String.valueOf(SLOTS_PER_ROUND), "--batch", "1", "--timeout", "5s", "--retry-for", "60s"};
    }

    /** How many keys of slots {@code from}..{@code from + count - 1} the member holds (-1 when it does not answer). */
    private static long movedKeys(MemberProcess m, int from, int count) {
        try (RespLink l = new RespLink(m.address(), null, Duration.ofSeconds(2))) {
            long n = 0;
            for (int s = from; s < from + count; s++) {
                n += (Long) l.call("CLUSTER", "COUNTKEYSINSLOT", s);
            }
            return n;
        } catch (RuntimeException e) {
            return -1;
        }
    }

    /**
     * Every acknowledged write is readable from its slot's owner (s2 for the moved slots), directly from its primary
     * (a MOVED there is a problem too), and s1's primary holds no key in a moved slot. Returns the problems found.
     */
    private List<String> check(History h) throws InterruptedException {
        List<String> problems = new ArrayList<>();
        MemberProcess owner = primaryOf("s2");
        MemberProcess old = primaryOf("s1");
        if (owner == null || old == null) {
            return List.of("no primary: s2 " + owner + ", s1 " + old);
        }
        try (RespLink o = new RespLink(owner.address(), null, Duration.ofSeconds(5));
             RespLink p = new RespLink(old.address(), null, Duration.ofSeconds(5))) {
            for (int i = 0; i < h.keys.size(); i++) {
                String k = h.keys.get(i);
                Object got = get(o, k);
                String value = got instanceof byte[] b ? new String(b, java.nio.charset.StandardCharsets.UTF_8)
                    : String.valueOf(got);
                if (!value.equals(h.acked.get(i)) && !h.pending.get(i).contains(value)) {
                    problems.add(k + " = " + value + ", acknowledged " + h.acked.get(i) + ", attempted after it "
                        + h.pending.get(i));
                }
            }
            for (int i = 0; i < h.counters.size(); i++) {
                String c = h.counters.get(i);
                Object got = get(o, c);
                long v = got instanceof byte[] b ? Long.parseLong(new String(b, java.nio.charset.StandardCharsets
                    .UTF_8)) : 0;
                if (v < h.incrAcked.get(i) || v > h.incrTried.get(i)) {
                    problems.add(c + " = " + v + ", acknowledged increments " + h.incrAcked.get(i) + ", attempted "
                        + h.incrTried.get(i));
                }
            }
            for (int s = FIRST_MOVED; s < 8192; s++) {
                long n = (Long) p.call("CLUSTER", "COUNTKEYSINSLOT", s);
                if (n != 0) {
                    problems.add("slot " + s + " moved to s2 but s1's primary " + old.id() + " holds " + n + " keys");
                }
            }
        }
        return problems;
    }

    private static Object get(RespLink l, String key) {
        try {
            return l.call("GET", key);
        } catch (RespLink.ErrorReply e) {
            return "(error " + e.getMessage() + ")";
        }
    }

    private MemberProcess primaryOf(String set) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        try (ReplicaSetProbe probe = new ReplicaSetProbe("tcp", null, Duration.ofSeconds(2))) {
            while (System.nanoTime() - until < 0) {
                for (MemberProcess m : members) {
                    if (m.id().startsWith(set + "-") && m.isAlive()) {
                        try {
                            if (probe.role(m.address()).code() == ReplicaSetProbe.PRIMARY) {
                                return m;
                            }
                        } catch (RuntimeException e) {
                            // down or electing
                        }
                    }
                }
                Thread.sleep(100);
            }
        }
        return null;
    }

    private static void log(long t0, String line) {
        System.out.printf(java.util.Locale.ROOT, "[%5.1fs] %s%n", (System.nanoTime() - t0) / 1e9, line);
    }

    /**
     * What the writers did: per key the last acknowledged value and the values attempted after it (their outcome
     * unknown), per counter the acknowledged and the attempted increments. Each key and counter has one writer.
     */
    static final class History {
        final List<String> keys;
        final List<String> counters;
        final List<String> acked = new ArrayList<>();
        final List<List<String>> pending = new ArrayList<>();
        final AtomicLongArray incrAcked;
        final AtomicLongArray incrTried;
        final AtomicLong ackedWrites = new AtomicLong();
        final AtomicLong unknown = new AtomicLong();

        History(List<String> keys, List<String> counters) {
            this.keys = keys;
            this.counters = counters;
            for (int i = 0; i < keys.size(); i++) {
                acked.add(null);
                pending.add(new java.util.concurrent.CopyOnWriteArrayList<>());
            }
            incrAcked = new AtomicLongArray(counters.size());
            incrTried = new AtomicLongArray(counters.size());
        }

        void set(Router r, int k, String value, long deadline) throws InterruptedException {
            pending.get(k).add(value);
            Outcome o = r.write(keys.get(k), deadline, "SET", keys.get(k), value);
            if (o == Outcome.ACKED) {
                synchronized (acked) {
                    acked.set(k, value);
                }
                pending.get(k).clear();
                ackedWrites.incrementAndGet();
            } else if (o == Outcome.UNKNOWN) {
                unknown.incrementAndGet();
            } else {
                pending.get(k).remove(value);
            }
        }

        void incr(Router r, int c, long deadline) throws InterruptedException {
            Outcome o = r.write(counters.get(c), deadline, () -> incrTried.incrementAndGet(c), "INCR",
                counters.get(c));
            if (o == Outcome.ACKED) {
                incrAcked.incrementAndGet(c);
                ackedWrites.incrementAndGet();
            } else if (o == Outcome.UNKNOWN) {
                unknown.incrementAndGet();
            }
        }

        String summary() {
            return ackedWrites.get() + " writes acknowledged by a majority, " + unknown.get() + " of unknown outcome";
        }
    }

    enum Outcome { ACKED, NOT_APPLIED, UNKNOWN }

    /**
     * A small cluster client over RESP that follows MOVED and ASK (with ASKING) and retries TRYAGAIN, READONLY and
     * CLUSTERDOWN, and after a write sends {@code WAIT 1} on the same connection: one secondary plus the primary is a
     * majority of three. One thread.
     */
    static final class Router implements AutoCloseable {
        /** Redirects and refusals followed, by all routers: the test checks the migration was seen by the writers. */
        static final AtomicLong ASKS = new AtomicLong();
        static final AtomicLong MOVES = new AtomicLong();
        static final AtomicLong RETRIES = new AtomicLong();
        private final List<MemberProcess> members;
        private final Map<String, RespLink> links = new HashMap<>();
        private final Map<Integer, String> route = new ConcurrentHashMap<>();
        private int next;

        Router(List<MemberProcess> members) {
            this.members = members;
        }

        Outcome write(String key, long deadline, Object... cmd) throws InterruptedException {
            return write(key, deadline, () -> { }, cmd);
        }

        /**
         * Sends {@code cmd} until it is answered or {@code deadline}: ACKED once applied and confirmed by WAIT,
         * NOT_APPLIED when every try was refused before running, UNKNOWN otherwise. {@code onSend} runs before each
         * send that may apply it.
         */
        Outcome write(String key, long deadline, Runnable onSend, Object... cmd) throws InterruptedException {
            int slot = HashSlot.of(key);
            String address = route.get(slot);
            String ask = null;
            boolean maybeApplied = false;
            while (System.nanoTime() - deadline < 0) {
                String to = ask != null ? ask : address != null ? address : members.get(next++ % members.size())
                    .address();
                RespLink l;
                try {
                    l = links.computeIfAbsent(to, a -> new RespLink(a, null, Duration.ofSeconds(3)));
                } catch (RuntimeException e) {
                    address = null;
                    ask = null;
                    Thread.sleep(50);
                    continue;
                }
                boolean sent = false;
                try {
                    if (ask != null) {
                        l.call("ASKING");
                    }
                    onSend.run();
                    sent = true;
                    l.call(cmd);
                    Object n = l.call("WAIT", 1, 2000);
                    return n instanceof Long c && c >= 1 ? Outcome.ACKED : Outcome.UNKNOWN;
                } catch (RespLink.ErrorReply e) {
                    String m = e.getMessage();
                    ask = null;
                    if (m.startsWith("MOVED ")) {
                        MOVES.incrementAndGet();
                        address = m.substring(m.lastIndexOf(' ') + 1);
                        route.put(slot, address);
                    } else if (m.startsWith("ASK ")) {
                        ASKS.incrementAndGet();
                        ask = m.substring(m.lastIndexOf(' ') + 1);
                    } else if (m.startsWith("TRYAGAIN") || m.startsWith("READONLY") || m.startsWith("CLUSTERDOWN")
                               || m.startsWith("LOADING")) {
                        RETRIES.incrementAndGet();
                        Thread.sleep(20);
                    } else if (sent) {
                        // WAIT refused (the member stepped down after the write): the write's fate is unknown
                        return Outcome.UNKNOWN;
                    } else {
                        throw e;
                    }
                } catch (UncheckedIOException e) {
                    // the member died or the connection broke: what was sent may have been applied
                    maybeApplied |= sent;
                    RespLink dead = links.remove(to);
                    if (dead != null) {
                        dead.close();
                    }
                    if (sent) {
                        return Outcome.UNKNOWN;
                    }
                    address = null;
                    ask = null;
                    Thread.sleep(50);
                }
            }
            return maybeApplied ? Outcome.UNKNOWN : Outcome.NOT_APPLIED;
        }

        @Override
        public void close() {
            links.values().forEach(RespLink::close);
        }
    }
}
