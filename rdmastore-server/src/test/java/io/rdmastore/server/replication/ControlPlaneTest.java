package io.rdmastore.server.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.rdmastore.server.replication.ControlPlane.Member;
import io.rdmastore.server.replication.ControlPlane.Primary;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three control planes in one JVM on loopback: election, failover, rejoin on kept and on wiped storage, primary
 * announcements, membership changes, and a leader that loses its majority stepping down.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ControlPlaneTest {
    private static final Duration AGREE = Duration.ofSeconds(20);

    @TempDir
    Path dir;

    private final List<Member> members = new ArrayList<>();
    private final Map<String, ControlPlane> planes = new ConcurrentHashMap<>();
    private final Map<String, Recorder> recorders = new ConcurrentHashMap<>();
    private String setName;

    /** What a member's listener saw, with the time it saw it. */
    static final class Recorder implements ControlPlane.Listener {
        record Change(String leaderId, long term, long nanos) {}

        final List<Change> changes = new CopyOnWriteArrayList<>();
        final List<List<Member>> memberLists = new CopyOnWriteArrayList<>();

        @Override
        public void leaderChanged(String leaderId, long term) {
            changes.add(new Change(leaderId, term, System.nanoTime()));
        }

        @Override
        public void membersChanged(List<Member> list) {
            memberLists.add(list);
        }

        Change last() {
            return changes.isEmpty() ? null : changes.get(changes.size() - 1);
        }
    }

    @BeforeEach
    void threeMembers(org.junit.jupiter.api.TestInfo info) throws IOException {
        setName = "rs-" + info.getTestMethod().orElseThrow().getName();
        for (String id : List.of("a", "b", "c")) {
            members.add(newMember(id));
        }
        for (Member m : members) {
            start(m.id());
        }
    }

    @AfterEach
    void closeAll() {
        planes.values().forEach(ControlPlane::close);
    }

    @Test
    void electsOneLeaderOnWhichAllAgree() {
        final String leader = awaitAgreedLeader(planes.values());
        final long term = planes.get(leader).term();
        assertTrue(term > 0, "term " + term);
        for (ControlPlane p : planes.values()) {
            assertEquals(Optional.of(leader), p.leaderId(), p.describe());
            assertEquals(term, p.term(), p.describe());
            assertEquals(p.selfId().equals(leader), p.isLeader(), p.describe());
            // Every listener has heard of this leader in this term.
            final Recorder.Change last = recorders.get(p.selfId()).last();
            awaitTrue(() -> leader.equals(recorders.get(p.selfId()).last().leaderId()), "listener of " + p.selfId()
                + " told of " + leader + "; last told " + last);
        }
        // The first leader records the initial member list with data ports; every member applies it.
        awaitTrue(() -> planes.values().stream().allMatch(p -> sorted(p.members()).equals(sorted(members))),
            "members agreed");
    }

    @Test
    void closingTheLeaderElectsAnotherWithinTwoSecondsAndTheOldLeaderRejoins() throws Exception {
        final String first = awaitAgreedLeader(planes.values());
        final long firstTerm = planes.get(first).term();
        planes.get(first).announcePrimary(first, firstTerm).get(10, TimeUnit.SECONDS);

        // close() stops the Ratis RPC at once, then waits for Ratis's threads; the survivors are watched meanwhile.
        final ControlPlane closing = planes.remove(first);
        final long closedAt = System.nanoTime();
        final long[] closeReturnedAt = new long[1];
        final Thread closer = Thread.ofPlatform().start(() -> {
            closing.close();
            closeReturnedAt[0] = System.nanoTime();
        });
        final List<ControlPlane> survivors = List.copyOf(planes.values());
        final long deadline = closedAt + Duration.ofSeconds(2).toNanos();
        String second = null;
        while (System.nanoTime() < deadline) {
            second = agreedLeader(survivors);
            if (second != null) {
                break;
            }
            Thread.sleep(2);
        }
        final long electedAt = System.nanoTime();
        closer.join();
        System.out.printf("control plane failover: leader %s closed, %s leads after %.0f ms (close() itself took %.0f ms)%n",
            first, second, (electedAt - closedAt) / 1e6, (closeReturnedAt[0] - closedAt) / 1e6);
        assertTrue(second != null, "no new leader within 2 s of closing " + first + ": "
            + survivors.stream().map(ControlPlane::describe).toList());
        assertFalse(second.equals(first));
        final String newLeader = second;
        final long secondTerm = planes.get(second).term();
        assertTrue(secondTerm > firstTerm, "term " + secondTerm + " after " + firstTerm);
        for (ControlPlane p : survivors) {
            final String expected = newLeader;
            awaitTrue(() -> {
                final Recorder.Change c = recorders.get(p.selfId()).last();
                return c != null && expected.equals(c.leaderId()) && c.term() == secondTerm;
            }, "listener of " + p.selfId() + " told of the new leader");
            final boolean sawOld = recorders.get(p.selfId()).changes.stream().anyMatch(c -> first.equals(c.leaderId()));
            assertTrue(sawOld, "listener of " + p.selfId() + " had reported the old leader too");
        }

        // The old leader restarts on its storage: it replays its log (primary, members) and follows the new leader.
        final ControlPlane back = start(first);
        awaitTrue(() -> Optional.of(planes.get(newLeader).leaderId().orElse("?")).equals(back.leaderId())
            && back.term() >= secondTerm, "restarted " + first + " sees leader " + newLeader);
        assertFalse(back.isLeader());
        awaitTrue(() -> back.primary().equals(Optional.of(new Primary(first, firstTerm))), "primary survived restart");
        assertEquals(sorted(members), sorted(back.members()));
    }

    @Test
    void aMemberWithWipedStorageRejoinsAndCatchesUp() throws Exception {
        final String leader = awaitAgreedLeader(planes.values());
        final long term = planes.get(leader).term();
        planes.get(leader).announcePrimary(leader, term).get(10, TimeUnit.SECONDS);
        final String follower = members.stream().map(Member::id).filter(id -> !id.equals(leader)).findFirst()
            .orElseThrow();
        planes.remove(follower).close();
        deleteTree(dir.resolve(follower));

        final ControlPlane wiped = start(follower);
        awaitTrue(() -> wiped.leaderId().isPresent() && wiped.term() >= term, "wiped " + follower + " sees a leader");
        awaitTrue(() -> wiped.primary().equals(Optional.of(new Primary(leader, term))),
            "wiped member caught up with the primary announcement: " + wiped.describe() + " " + wiped.primary());
        awaitTrue(() -> sorted(wiped.members()).equals(sorted(members)), "wiped member has the member list");
        // It is a voting member again: with the other follower gone, the set still commits.
        final String other = members.stream().map(Member::id).filter(id -> !id.equals(leader) && !id.equals(follower))
            .findFirst().orElseThrow();
        planes.remove(other).close();
        final Primary announced = announceByLeader();
        awaitTrue(() -> wiped.primary().equals(Optional.of(announced)), "committed with the wiped member");
    }

    @Test
    void announcePrimaryIsVisibleOnAllMembersAndTermsOnlyMoveForward() throws Exception {
        final Primary first = announceByLeader();
        final String leader = first.id();
        final long term = first.term();
        final ControlPlane lead = planes.get(leader);
        assertEquals(Optional.of(first), lead.primary());
        awaitTrue(() -> planes.values().stream().allMatch(p -> p.primary().equals(Optional.of(new Primary(leader, term)))),
            "primary visible on all members");

        // Announcing again is harmless; another id in the same term, or an older term, is refused.
        lead.announcePrimary(leader, term).get(10, TimeUnit.SECONDS);
        final String other = members.stream().map(Member::id).filter(id -> !id.equals(leader)).findFirst().orElseThrow();
        final ExecutionException sameTerm = assertThrows(ExecutionException.class,
            () -> lead.announcePrimary(other, term).get(10, TimeUnit.SECONDS));
        assertInstanceOf(IllegalStateException.class, sameTerm.getCause(), sameTerm.toString());
        assertThrows(ExecutionException.class, () -> lead.announcePrimary(leader, term - 1).get(10, TimeUnit.SECONDS));
        assertEquals(Optional.of(new Primary(leader, term)), lead.primary());

        // A follower cannot announce.
        final ExecutionException notLeader = assertThrows(ExecutionException.class,
            () -> planes.get(other).announcePrimary(other, term + 1).get(10, TimeUnit.SECONDS));
        assertInstanceOf(IllegalStateException.class, notLeader.getCause());
    }

    @Test
    void slotMapSetThroughAFollowerReachesAllMembersMovesOnlyForwardAndSurvivesARestart() throws Exception {
        final String leader = awaitAgreedLeader(planes.values());
        final String follower = members.stream().map(Member::id).filter(id -> !id.equals(leader)).findFirst()
            .orElseThrow();
        final ControlPlane f = planes.get(follower);
        assertEquals(null, f.slotMap());
        f.setSlotMap(2, "epoch 2\nshard a 0-16383 n1=h:1\n").get(20, TimeUnit.SECONDS);
        awaitTrue(() -> planes.values().stream().allMatch(p -> "epoch 2\nshard a 0-16383 n1=h:1\n".equals(p.slotMap())),
            "slot map on all members");
        // the same map again is harmless; an older epoch, or another map of the same epoch, is refused
        f.setSlotMap(2, "epoch 2\nshard a 0-16383 n1=h:1\n").get(20, TimeUnit.SECONDS);
        final ExecutionException older = assertThrows(ExecutionException.class,
            () -> planes.get(leader).setSlotMap(1, "epoch 1\n").get(20, TimeUnit.SECONDS));
        assertInstanceOf(IllegalStateException.class, older.getCause(), older.toString());
        assertThrows(ExecutionException.class, () -> f.setSlotMap(2, "epoch 2\n").get(20, TimeUnit.SECONDS));
        planes.get(leader).setSlotMap(3, "epoch 3\n").get(20, TimeUnit.SECONDS);
        awaitTrue(() -> planes.values().stream().allMatch(p -> "epoch 3\n".equals(p.slotMap())), "epoch 3 on all");

        // a member restarted on its storage replays the record
        planes.remove(follower).close();
        start(follower);
        awaitTrue(() -> "epoch 3\n".equals(planes.get(follower).slotMap()), "slot map after a restart");
    }

    @Test
    void slotMigrationStatesAreRecordedUnderTheMapsEpochEndWithANewMapAndSurviveARestart() throws Exception {
        final String leader = awaitAgreedLeader(planes.values());
        final String follower = members.stream().map(Member::id).filter(id -> !id.equals(leader)).findFirst()
            .orElseThrow();
        final ControlPlane f = planes.get(follower);
        f.setSlotMap(4, "epoch 4\n").get(20, TimeUnit.SECONDS);
        f.setSlotMigration(4, 7, ControlPlane.SlotMigration.MIGRATING, "b").get(20, TimeUnit.SECONDS);
        f.setSlotMigration(4, 9, ControlPlane.SlotMigration.IMPORTING, "c").get(20, TimeUnit.SECONDS);
        final Map<Integer, ControlPlane.SlotMigration> two = Map.of(
            7, new ControlPlane.SlotMigration(7, ControlPlane.SlotMigration.MIGRATING, "b"),
            9, new ControlPlane.SlotMigration(9, ControlPlane.SlotMigration.IMPORTING, "c"));
        awaitTrue(() -> planes.values().stream().allMatch(p -> two.equals(p.slotMigrations())), "states on all");
        // a state under another epoch than the map's is refused; STABLE forgets one
        final ExecutionException stale = assertThrows(ExecutionException.class, () -> planes.get(leader)
            .setSlotMigration(3, 8, ControlPlane.SlotMigration.MIGRATING, "b").get(20, TimeUnit.SECONDS));
        assertInstanceOf(IllegalStateException.class, stale.getCause(), stale.toString());
        f.setSlotMigration(4, 9, ControlPlane.SlotMigration.STABLE, "").get(20, TimeUnit.SECONDS);
        awaitTrue(() -> planes.values().stream().allMatch(p -> p.slotMigrations().keySet().equals(java.util.Set.of(7))),
            "slot 9 stable on all");

        // a member restarted on its storage replays them
        planes.remove(follower).close();
        start(follower);
        awaitTrue(() -> planes.get(follower).slotMigrations().keySet().equals(java.util.Set.of(7)),
            "states after a restart");
        // the same map again keeps them; a map of a higher epoch ends them
        planes.get(leader).setSlotMap(4, "epoch 4\n").get(20, TimeUnit.SECONDS);
        assertEquals(java.util.Set.of(7), planes.get(leader).slotMigrations().keySet());
        planes.get(leader).setSlotMap(5, "epoch 5\n").get(20, TimeUnit.SECONDS);
        awaitTrue(() -> planes.values().stream().allMatch(p -> p.slotMigrations().isEmpty()), "ended by epoch 5");
    }

    @Test
    void addsAFourthMemberAndRemovesIt() throws Exception {
        final String leader = awaitAgreedLeader(planes.values());
        awaitTrue(() -> planes.values().stream().allMatch(p -> sorted(p.members()).equals(sorted(members))),
            "initial members recorded");
        final Member d = newMember("d");
        final Recorder dRecorder = new Recorder();
        recorders.put("d", dRecorder);
        final ControlPlane dPlane = ControlPlane.join(setName, d, dir.resolve("d"), dRecorder, config());
        planes.put("d", dPlane);

        // Any member may ask; the request goes to the leader.
        final String follower = members.stream().map(Member::id).filter(id -> !id.equals(leader)).findFirst()
            .orElseThrow();
        planes.get(follower).addMember(d).get(30, TimeUnit.SECONDS);
        final List<Member> four = sorted(Stream.concat(members.stream(), Stream.of(d)).toList());
        awaitTrue(() -> planes.values().stream().allMatch(p -> sorted(p.members()).equals(four)),
            "all four members know all four");
        awaitTrue(() -> dPlane.leaderId().equals(Optional.of(leader)), "d follows " + leader);
        awaitTrue(() -> dRecorder.memberLists.stream().anyMatch(l -> sorted(l).equals(four)), "d's listener heard of four");
        final Member dRecorded = dPlane.members().stream().filter(m -> m.id().equals("d")).findFirst().orElseThrow();
        assertEquals(d.dataPort(), dRecorded.dataPort());

        // d votes: with one of the original three closed, a commit needs three of four, so d must take part.
        final String closedOne = members.stream().map(Member::id).filter(id -> !id.equals(leader)).findFirst()
            .orElseThrow();
        planes.remove(closedOne).close();
        final Primary announced = announceByLeader();
        awaitTrue(() -> dPlane.primary().equals(Optional.of(announced)), "d applied the announcement");
        start(closedOne);

        planes.get(awaitAgreedLeader(planes.values())).removeMember("d").get(30, TimeUnit.SECONDS);
        awaitTrue(() -> planes.entrySet().stream().filter(e -> !e.getKey().equals("d"))
            .allMatch(e -> sorted(e.getValue().members()).equals(sorted(members))), "d removed everywhere");
        planes.remove("d").close();
        // The three commit without d.
        announceByLeader();
    }

    @Test
    void aLeaderThatLosesItsMajorityStepsDownWithinASecond() throws Exception {
        final String leader = awaitAgreedLeader(planes.values());
        final ControlPlane lead = planes.get(leader);
        awaitTrue(lead::hasLeaderLease, leader + " holds the lease while its followers answer");
        final List<ControlPlane> followers = members.stream().map(Member::id).filter(id -> !id.equals(leader))
            .map(planes::remove).toList();
        // Both followers go at once; the clock starts when neither accepts connections on its Ratis port any more
        // (close() shuts the RPC first, then waits for Ratis's threads for up to a second).
        final long closeCalledAt = System.nanoTime();
        final List<Thread> closers = followers.stream().map(p -> Thread.ofPlatform().start(p::close)).toList();
        final List<Integer> ports = members.stream().filter(m -> !m.id().equals(leader)).map(Member::raftPort).toList();
        while (ports.stream().anyMatch(ControlPlaneTest::accepts) && System.nanoTime() - closeCalledAt < 5e9) {
            Thread.sleep(1);
        }
        final long cutAt = System.nanoTime();
        final Recorder rec = recorders.get(leader);
        final long leaseDeadline = cutAt + Duration.ofSeconds(5).toNanos();
        while (lead.hasLeaderLease() && System.nanoTime() < leaseDeadline) {
            Thread.sleep(1);
        }
        final long leaseLostAt = System.nanoTime();
        assertFalse(lead.hasLeaderLease(), lead.describe());
        final long deadline = cutAt + Duration.ofSeconds(5).toNanos();
        while (lead.isLeader() && System.nanoTime() < deadline) {
            Thread.sleep(2);
        }
        final long steppedDownAt = System.nanoTime();
        System.out.printf("control plane step-down: leader %s alone (followers' ports closed %.0f ms after close()),"
            + " lease lost after %.0f ms, stepped down after %.0f ms%n", leader, (cutAt - closeCalledAt) / 1e6,
            (leaseLostAt - cutAt) / 1e6, (steppedDownAt - cutAt) / 1e6);
        assertFalse(lead.isLeader(), lead.describe());
        assertTrue(steppedDownAt - cutAt < Duration.ofMillis(1000).toNanos(),
            "stepped down after " + (steppedDownAt - cutAt) / 1_000_000 + " ms");
        awaitTrue(() -> rec.last() != null && !leader.equals(rec.last().leaderId()),
            "listener told that " + leader + " no longer leads");
        assertTrue(lead.leaderId().isEmpty() || !lead.leaderId().get().equals(leader));
        for (Thread t : closers) {
            t.join();
        }
    }

    @Test
    void configIsValidatedOnce() {
        assertThrows(IllegalArgumentException.class, () -> new ControlConfig()
            .electionTimeoutMin(Duration.ofMillis(300)).electionTimeoutMax(Duration.ofMillis(300)).conclude());
        assertThrows(IllegalArgumentException.class, () -> new ControlConfig()
            .rpcRequestTimeout(Duration.ofMillis(200)).conclude());
        // every election timeout a member accepts gives the control plane settings it accepts
        for (long ms : new long[] {50, 150, 400, 1000, 5000, 60_000}) {
            ControlConfig c = new ReplicaSetConfig().electionTimeout(Duration.ofMillis(ms)).controlConfig().conclude();
            assertEquals(ms, c.electionTimeoutMin().toMillis());
            assertEquals(2 * ms, c.electionTimeoutMax().toMillis());
        }
        assertThrows(IllegalArgumentException.class, () -> new ReplicaSetConfig().electionTimeout(Duration.ofMillis(10)));
        assertThrows(IllegalArgumentException.class, () -> new Member("x", "127.0.0.1", 60_000));
        assertEquals(17_379, new Member("x", "127.0.0.1", 7379).raftPort());
        assertThrows(IllegalArgumentException.class, () -> ControlPlane.start(setName, "zz", members,
            dir.resolve("zz"), new Recorder(), config()));
    }

    // ---- helpers ----

    /**
     * The current leader announces itself for its term. Four Ratis servers in one JVM on a busy two-core machine
     * sometimes miss a heartbeat and re-elect; then the new leader announces.
     */
    private Primary announceByLeader() throws InterruptedException {
        final long deadline = System.nanoTime() + AGREE.toNanos();
        Exception last = null;
        while (System.nanoTime() < deadline) {
            final ControlPlane lead = planes.get(awaitAgreedLeader(planes.values()));
            final Primary primary = new Primary(lead.selfId(), lead.term());
            try {
                lead.announcePrimary(primary.id(), primary.term()).get(5, TimeUnit.SECONDS);
                return primary;
            } catch (ExecutionException | TimeoutException e) {
                last = e;
            }
        }
        throw new AssertionError("no leader could announce itself within " + AGREE, last);
    }

    private Member newMember(String id) throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            final int raftPort = s.getLocalPort();
            return new Member(id, "127.0.0.1", 7000 + id.charAt(0), raftPort);
        }
    }

    private static ControlConfig config() {
        return new ControlConfig();
    }

    private ControlPlane start(String id) throws IOException {
        final Recorder recorder = new Recorder();
        recorders.put(id, recorder);
        final ControlPlane plane = ControlPlane.start(setName, id, members, dir.resolve(id), recorder, config());
        planes.put(id, plane);
        return plane;
    }

    /** The leader every given member names, with that member being leader, or null. */
    private static String agreedLeader(Iterable<ControlPlane> group) {
        String leader = null;
        long term = -1;
        for (ControlPlane p : group) {
            final Optional<String> l = p.leaderId();
            if (l.isEmpty() || leader != null && (!leader.equals(l.get()) || term != p.term())) {
                return null;
            }
            leader = l.get();
            term = p.term();
        }
        for (ControlPlane p : group) {
            if (p.selfId().equals(leader)) {
                return p.isLeader() ? leader : null;
            }
        }
        return null;
    }

    private static String awaitAgreedLeader(Iterable<ControlPlane> group) {
        final long deadline = System.nanoTime() + AGREE.toNanos();
        while (System.nanoTime() < deadline) {
            final String leader = agreedLeader(group);
            if (leader != null) {
                return leader;
            }
            sleep();
        }
        final List<String> views = new ArrayList<>();
        group.forEach(p -> views.add(p.describe()));
        return fail("no agreed leader within " + AGREE + ": " + views);
    }

    private static void awaitTrue(BooleanSupplier condition, String what) {
        final long deadline = System.nanoTime() + AGREE.toNanos();
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return;
            }
            sleep();
        }
        fail("not within " + AGREE + ": " + what);
    }

    private static boolean accepts(int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 100);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static void sleep() {
        try {
            Thread.sleep(10);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private static List<Member> sorted(List<Member> list) {
        return list.stream().sorted(Comparator.comparing(Member::id)).toList();
    }

    private static void deleteTree(Path root) throws IOException {
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
