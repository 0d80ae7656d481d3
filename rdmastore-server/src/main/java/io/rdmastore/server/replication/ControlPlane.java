package io.rdmastore.server.replication;

import io.rdmastore.server.replication.ControlStateMachine.State;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ratis.RaftConfigKeys;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.client.RaftClientConfigKeys;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.apache.ratis.proto.RaftProtos.ServerRpcProto;
import org.apache.ratis.netty.NettyConfigKeys;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.SetConfigurationRequest;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.rpc.SupportedRpcType;
import org.apache.ratis.server.DivisionInfo;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One member's view of the replica set's control plane: an embedded Apache Ratis server whose group is the set's
 * members and whose state machine holds the member list and the last announced primary. Ratis elects the leader; the
 * data plane makes the leader the primary ({@link #announcePrimary}) and streams the oplog itself. Ratis carries no
 * data.
 *
 * <p>Threads: every method may be called from any thread. Queries ({@link #isLeader()}, {@link #term()},
 * {@link #leaderId()}, {@link #members()}, {@link #primary()}) read this member's current view without blocking or
 * network round trips; a follower's view may lag the leader's. {@link Listener} calls come from one thread of this
 * control plane ({@code rdmastore-control-<id>}), in order, never concurrently. Futures complete on Ratis or
 * control-plane threads: do not block in their dependent stages.
 */
public final class ControlPlane implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ControlPlane.class);
    private static final long RETRY_SLEEP_MS = 100;

    /**
     * A member of the replica set: its id (also its Ratis peer id), the host both its ports are on, its data port
     * (native protocol, oplog streaming) and its Ratis port.
     */
    public record Member(String id, String host, int dataPort, int raftPort) {
        /** Offset of the default Ratis port from the data port. */
        public static final int RAFT_PORT_OFFSET = 10_000;

        public Member {
            if (id == null || id.isBlank()) {
                throw new IllegalArgumentException("member id must not be blank");
            }
            if (host == null || host.isBlank()) {
                throw new IllegalArgumentException("member " + id + ": host must not be blank");
            }
            if (dataPort < 1 || dataPort > 65535 || raftPort < 1 || raftPort > 65535) {
                throw new IllegalArgumentException(
                    "member " + id + ": ports out of range: data " + dataPort + ", raft " + raftPort);
            }
        }

        /** A member whose Ratis port is its data port + {@value #RAFT_PORT_OFFSET}. */
        public Member(String id, String host, int dataPort) {
            this(id, host, dataPort, dataPort + RAFT_PORT_OFFSET);
        }

        RaftPeer toPeer() {
            return RaftPeer.newBuilder().setId(id).setAddress(InetSocketAddress.createUnresolved(host, raftPort))
                .build();
        }
    }

    /** The primary as last announced through the control plane: a member id and the primary's term. */
    public record Primary(String id, long term) {
        public Primary {
            Objects.requireNonNull(id, "id");
        }
    }

    /** What a member learns of the control plane's changes. Called on the control plane's thread; must not block. */
    public interface Listener {
        /**
         * This member's view of the leader or the term changed; {@code leaderId} is null while unknown (elections,
         * this member cut off). This member reports itself as leader only once it is ready ({@link #isLeader()}),
         * and reports null the moment it stops. The first call gives the view at start.
         */
        void leaderChanged(String leaderId, long term);

        /** The agreed member list changed (also called once at start). */
        default void membersChanged(List<Member> members) {}
    }

    private final String setName;
    private final String selfId;
    private final RaftPeerId selfPeerId;
    private final RaftGroupId groupId;
    private final List<Member> initialMembers;
    private final Listener listener;
    private final ControlConfig config;
    private final RaftProperties properties;
    private final ControlStateMachine stateMachine;
    private final ScheduledExecutorService events;
    private final ExecutorService admin;
    private final ClientId localClientId = ClientId.randomId();
    private final AtomicLong callIds = new AtomicLong();
    private final RaftServer server;
    private final RaftServer.Division division;
    private volatile boolean closed;
    /** Set once the constructor has assigned {@link #division}; Ratis calls back before that. */
    private volatile boolean running;

    // Owned by the events thread.
    private String lastLeader;
    private long lastTerm = -1;
    private List<Member> lastMembers;
    private long initMembersTerm = -1;
    private long behindSinceNanos;
    private long lastNudgeNanos;

    /** This member's Ratis storage for the group did not exist at start: a new set, a new member, or a wiped one. */
    private final boolean freshStorage;

    private ControlPlane(String setName, Member self, List<Member> initialMembers, Path storageDir, Listener listener,
                         ControlConfig config) throws IOException {
        this.setName = setName;
        this.selfId = self.id();
        this.selfPeerId = RaftPeerId.valueOf(self.id());
        this.groupId = groupId(setName);
        this.initialMembers = List.copyOf(initialMembers);
        this.listener = listener;
        this.config = config;
        this.properties = properties(self, storageDir, config);
        this.stateMachine = new ControlStateMachine(this::wake);
        this.events = Executors.newSingleThreadScheduledExecutor(r -> {
            final Thread t = new Thread(r, "rdmastore-control-" + selfId);
            t.setDaemon(true);
            return t;
        });
        this.admin = Executors.newSingleThreadExecutor(r -> {
            final Thread t = new Thread(r, "rdmastore-control-admin-" + selfId);
            t.setDaemon(true);
            return t;
        });
        final RaftGroup group = RaftGroup.valueOf(groupId, initialMembers.stream().map(Member::toPeer).toList());
        this.freshStorage = !Files.isDirectory(storageDir.resolve(groupId.getUuid().toString()));
        RaftServer built = null;
        try {
            Files.createDirectories(storageDir);
            built = RaftServer.newBuilder()
                .setServerId(selfPeerId)
                .setGroup(group)
                .setStateMachine(stateMachine)
                .setProperties(properties)
                // RECOVER opens this group's storage if present and formats it with the given group if not.
                .setOption(RaftStorage.StartupOption.RECOVER)
                .build();
            built.start();
            this.server = built;
            this.division = built.getDivision(groupId);
        } catch (IOException | RuntimeException e) {
            events.shutdownNow();
            admin.shutdownNow();
            if (built != null) {
                try {
                    built.close();
                } catch (IOException | RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
        running = true;
        LOG.info("control plane {} started: set {} (group {}), raft {}:{}, {}", selfId, setName, groupId.getUuid(),
            self.host(), self.raftPort(), config);
        final long pollNanos = config.viewPollInterval().toNanos();
        events.scheduleWithFixedDelay(this::refresh, 0, pollNanos, TimeUnit.NANOSECONDS);
    }

    /**
     * Starts this member's control plane. {@code initialMembers} is the set as it was created (it must include
     * {@code selfId}); it formats fresh storage and is otherwise ignored: a member restarted on its storage recovers
     * the agreed configuration from its Ratis log, and a member whose storage was wiped starts from the initial group
     * and is caught up by the leader. Returns once the Ratis server runs; the leader is reported to the listener.
     *
     * @param storageDir Ratis's directory (the server passes {@code <dataDir>/raft}); created if missing
     * @throws IOException when the storage cannot be opened or the Ratis port not bound
     */
    public static ControlPlane start(String setName, String selfId, List<Member> initialMembers, Path storageDir,
                                     Listener listener, ControlConfig config) throws IOException {
        validate(setName, initialMembers);
        Objects.requireNonNull(selfId, "selfId");
        final Member self = initialMembers.stream().filter(m -> m.id().equals(selfId)).findFirst()
            .orElseThrow(() -> new IllegalArgumentException(
                "selfId " + selfId + " is not among the initial members " + initialMembers
                    + "; a new member starts with join()"));
        return new ControlPlane(setName, self, initialMembers, storageDir, Objects.requireNonNull(listener, "listener"),
            Objects.requireNonNull(config, "config").conclude());
    }

    /**
     * Starts a member that is not yet in the set: its Ratis server waits, with an empty configuration, until a member
     * of the set calls {@link #addMember} for it; the leader then sends it the control log. Restarted on its storage
     * after it was added, it recovers like any member.
     */
    public static ControlPlane join(String setName, Member self, Path storageDir, Listener listener,
                                    ControlConfig config) throws IOException {
        validate(setName, List.of(self));
        return new ControlPlane(setName, self, List.of(), storageDir, Objects.requireNonNull(listener, "listener"),
            Objects.requireNonNull(config, "config").conclude());
    }

    private static void validate(String setName, List<Member> members) {
        if (setName == null || setName.isBlank()) {
            throw new IllegalArgumentException("set name must not be blank");
        }
        final HashSet<String> ids = new HashSet<>();
        for (Member m : Objects.requireNonNull(members, "members")) {
            if (!ids.add(Objects.requireNonNull(m, "member").id())) {
                throw new IllegalArgumentException("member id " + m.id() + " appears twice in " + members);
            }
        }
    }

    /** The Ratis group id of a replica set: a name-based UUID of its name, the same on every member. */
    public static RaftGroupId groupId(String setName) {
        return RaftGroupId.valueOf(
            UUID.nameUUIDFromBytes(("rdmastore-replica-set:" + setName).getBytes(StandardCharsets.UTF_8)));
    }

    private static RaftProperties properties(Member self, Path storageDir, ControlConfig config) {
        final RaftProperties p = new RaftProperties();
        RaftConfigKeys.Rpc.setType(p, SupportedRpcType.NETTY);
        NettyConfigKeys.Server.setHost(p, self.host());
        NettyConfigKeys.Server.setPort(p, self.raftPort());
        RaftServerConfigKeys.setStorageDir(p, List.of(storageDir.toFile()));
        RaftServerConfigKeys.Rpc.setTimeoutMin(p, duration(config.electionTimeoutMin()));
        RaftServerConfigKeys.Rpc.setTimeoutMax(p, duration(config.electionTimeoutMax()));
        RaftServerConfigKeys.Rpc.setRequestTimeout(p, duration(config.rpcRequestTimeout()));
        RaftServerConfigKeys.LeaderElection.setLeaderStepDownWaitTime(p, duration(config.leaderStepDownWait()));
        RaftServerConfigKeys.setCloseThreshold(p, duration(config.pauseShutdownThreshold()));
        // Membership changes may take a while (a new member catches up first): the client waits, then retries the
        // same call id, which Ratis's retry cache answers once.
        RaftClientConfigKeys.Rpc.setRequestTimeout(p, TimeDuration.valueOf(3, TimeUnit.SECONDS));
        return p;
    }

    private static TimeDuration duration(Duration d) {
        return TimeDuration.valueOf(d.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** This member's id. */
    public String selfId() {
        return selfId;
    }

    /** The replica set's name. */
    public String setName() {
        return setName;
    }

    /** This member is the Ratis leader of the current term and ready (its first entry of the term is applied). */
    public boolean isLeader() {
        final DivisionInfo info = division.getInfo();
        return info.isLeader() && info.isLeaderReady();
    }

    /**
     * Stronger than {@link #isLeader()}: this member leads and, within the last 0.9 × the shortest election timeout,
     * heard back from enough followers to make a majority with itself. Followers do not elect anyone else for the
     * shortest election timeout after a heartbeat, so no other member can have become leader meanwhile. A leader whose
     * process was paused (GC, SIGSTOP) or cut off fails this at once on resuming, before Ratis steps it down. Builds
     * Ratis's role report (a small allocation): call it where a decision is taken, not per request. Under heavy CPU
     * load it may read false for a moment while the member still leads; treat false as "not now", not as a step-down.
     */
    public boolean hasLeaderLease() {
        final DivisionInfo info = division.getInfo();
        if (!info.isLeader() || !info.isLeaderReady()) {
            return false;
        }
        final RoleInfoProto role = info.getRoleInfoProto();
        if (!role.hasLeaderInfo()) {
            return false;
        }
        final long leaseMs = config.electionTimeoutMin().toMillis() * 9 / 10;
        final Collection<RaftPeer> voters = division.getRaftConf().getCurrentPeers();
        int heard = 0;
        for (RaftPeer voter : voters) {
            if (voter.getId().equals(selfPeerId)) {
                heard++;
            }
        }
        for (ServerRpcProto follower : role.getLeaderInfo().getFollowerInfoList()) {
            if (follower.getLastRpcElapsedTimeMs() < leaseMs) {
                final ByteString id = follower.getId().getId();
                for (RaftPeer voter : voters) {
                    if (voter.getId().toByteString().equals(id)) {
                        heard++;
                        break;
                    }
                }
            }
        }
        return heard > voters.size() / 2;
    }

    /** The current Ratis term as this member sees it. */
    public long term() {
        return division.getInfo().getCurrentTerm();
    }

    /** The leader as this member sees it; empty while unknown. Itself only while {@link #isLeader()}. */
    public Optional<String> leaderId() {
        return Optional.ofNullable(viewLeader(division.getInfo()));
    }

    /**
     * The agreed member list as applied on this member. Until the set's first record is applied here (a new set
     * before its first leader, a wiped member before catch-up) it is the initial member list this member started with.
     */
    public List<Member> members() {
        final List<Member> agreed = stateMachine.state().members();
        return agreed.isEmpty() ? initialMembers : agreed;
    }

    /** The last primary announcement applied on this member; empty if none yet. */
    public Optional<Primary> primary() {
        return Optional.ofNullable(stateMachine.state().primary());
    }

    /** This member's Ratis role and term, for logs and INFO output. */
    public String describe() {
        final DivisionInfo info = division.getInfo();
        return selfId + " " + info.getCurrentRole() + " term " + info.getCurrentTerm() + " leader "
            + info.getLeaderId() + " committed " + division.getRaftLog().getLastCommittedIndex() + " applied "
            + info.getLastAppliedIndex();
    }

    /**
     * Announces {@code id} as primary for {@code term}. Leader only: fails at once with {@link IllegalStateException}
     * on a member that is not {@link #isLeader()}, and with Ratis's NotLeaderException if it stops being leader
     * before the record commits. Completes when the announcement is committed and applied on this member. A term
     * lower than the last announced one, or the same term with another id, is refused on every member alike.
     */
    public CompletableFuture<Void> announcePrimary(String id, long term) {
        Objects.requireNonNull(id, "id");
        if (!isLeader()) {
            return CompletableFuture.failedFuture(new IllegalStateException(
                selfId + " is not the control-plane leader (leader: " + leaderId().orElse("unknown") + ")"));
        }
        return submitLocal(ControlStateMachine.announcePrimary(new Primary(id, term)));
    }

    /** The cluster's slot map text as applied on this member (docs/cluster.md), or null when none was set. */
    public String slotMap() {
        return stateMachine.state().slotMap();
    }

    /**
     * A slot's migration state as recorded by {@link #setSlotMigration}: {@link #MIGRATING} to, or {@link #IMPORTING}
     * from, the shard named {@code peer} (its name in the slot map).
     */
    public record SlotMigration(int slot, byte kind, String peer) {
        public static final byte STABLE = 0;
        public static final byte MIGRATING = 1;
        public static final byte IMPORTING = 2;
    }

    /**
     * The migration states of slots as applied on this member, recorded under the slot map held (a new map empties
     * it); an immutable map that is replaced whole, so a reference compare finds changes.
     */
    public Map<Integer, SlotMigration> slotMigrations() {
        return stateMachine.state().slotMigrations();
    }

    /**
     * Records slot {@code slot}'s migration state ({@link SlotMigration#STABLE} forgets it) under the slot map of
     * {@code epoch}. Any member may call it; completes once committed; fails with {@link IllegalStateException} when
     * the map held has another epoch, and after {@link ControlConfig#adminTimeout()} without a leader.
     */
    public CompletableFuture<Void> setSlotMigration(long epoch, int slot, byte kind, String peer) {
        Objects.requireNonNull(peer, "peer");
        return adminTask(client -> retry(System.nanoTime() + config.adminTimeout().toNanos(), "slot " + slot + " state",
            () -> client.io().send(Message.valueOf(ControlStateMachine.setSlotState(epoch, slot, kind, peer)))));
    }

    /**
     * Records the cluster's slot map {@code text} at {@code epoch}. Any member may call it; the record goes to the
     * leader. Completes once committed; fails with {@link IllegalStateException} when a higher epoch (or another map
     * of the same epoch) is held already, and after {@link ControlConfig#adminTimeout()} without a leader.
     */
    public CompletableFuture<Void> setSlotMap(long epoch, String text) {
        Objects.requireNonNull(text, "text");
        return adminTask(client -> retry(System.nanoTime() + config.adminTimeout().toNanos(), "slot map " + epoch,
            () -> client.io().send(Message.valueOf(ControlStateMachine.setSlotMap(epoch, text)))));
    }

    /**
     * Adds a member: a Ratis configuration change (the leader first catches the new member up, so it must be running,
     * started by {@link #join}) and then a record of its ports in the member list. Any member may call it; the request
     * goes to the leader. Completes when both are committed; fails after {@link ControlConfig#adminTimeout()}.
     * Adding a member that is already in the set updates its record.
     */
    public CompletableFuture<Void> addMember(Member member) {
        Objects.requireNonNull(member, "member");
        return adminTask(client -> {
            final long deadline = System.nanoTime() + config.adminTimeout().toNanos();
            retry(deadline, "add " + member.id(), () -> client.admin().setConfiguration(
                SetConfigurationRequest.Arguments.newBuilder()
                    .setServersInNewConf(List.of(member.toPeer()))
                    .setMode(SetConfigurationRequest.Mode.ADD)
                    .build()));
            retry(deadline, "record " + member.id(),
                () -> client.io().send(Message.valueOf(ControlStateMachine.addMember(member))));
        });
    }

    /**
     * Removes a member: a Ratis configuration change without it, then the removal from the member list. Any member
     * may call it; removing the leader makes it step down once the change commits. The removed member's control
     * plane should then be closed.
     */
    public CompletableFuture<Void> removeMember(String id) {
        Objects.requireNonNull(id, "id");
        return adminTask(client -> {
            final long deadline = System.nanoTime() + config.adminTimeout().toNanos();
            retry(deadline, "remove " + id, () -> {
                final Collection<RaftPeer> current = division.getRaftConf().getCurrentPeers();
                final List<RaftPeer> next = new ArrayList<>(current);
                if (!next.removeIf(p -> p.getId().toString().equals(id))) {
                    return null;
                }
                // Compare-and-set on the configuration this member sees: a concurrent change fails it and we retry
                // on the newer configuration rather than undo that change.
                return client.admin().setConfiguration(SetConfigurationRequest.Arguments.newBuilder()
                    .setServersInCurrentConf(List.copyOf(current))
                    .setServersInNewConf(next)
                    .setMode(SetConfigurationRequest.Mode.COMPARE_AND_SET)
                    .build());
            });
            retry(deadline, "unrecord " + id,
                () -> client.io().send(Message.valueOf(ControlStateMachine.removeMember(id))));
        });
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        events.shutdownNow();
        admin.shutdownNow();
        try {
            server.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            try {
                events.awaitTermination(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            LOG.info("control plane {} closed", selfId);
        }
    }

    @Override
    public String toString() {
        return "ControlPlane{" + setName + "/" + selfId + "}";
    }

    // ---- view ----

    private String viewLeader(DivisionInfo info) {
        final RaftPeerId leader = info.getLeaderId();
        if (leader == null) {
            return null;
        }
        if (leader.equals(selfPeerId)) {
            return info.isLeader() && info.isLeaderReady() ? selfId : null;
        }
        return leader.toString();
    }

    /** Called on Ratis threads: re-read the view on the events thread soon. */
    private void wake() {
        if (closed || !running) {
            return;
        }
        try {
            events.execute(this::refresh);
        } catch (RejectedExecutionException e) {
            // closing
        }
    }

    /** Events thread only. */
    private void refresh() {
        if (closed || !running) {
            return;
        }
        try {
            final DivisionInfo info = division.getInfo();
            final long term = info.getCurrentTerm();
            final String leader = viewLeader(info);
            if (term != lastTerm || !Objects.equals(leader, lastLeader)) {
                lastTerm = term;
                lastLeader = leader;
                LOG.info("control plane {}: leader {} term {}", selfId, leader == null ? "unknown" : leader, term);
                listener.leaderChanged(leader, term);
            }
            final State state = stateMachine.state();
            final List<Member> members = state.members().isEmpty() ? initialMembers : state.members();
            if (!members.equals(lastMembers)) {
                lastMembers = members;
                listener.membersChanged(members);
            }
            if (selfId.equals(leader) && state.members().isEmpty() && !initialMembers.isEmpty()
                && initMembersTerm != term) {
                // A new set's first leader records the initial member list with their data ports; the record
                // applies only while the list is empty, so two leaders racing to write it agree.
                initMembersTerm = term;
                submitLocal(ControlStateMachine.initMembers(initialMembers)).whenComplete((ok, error) -> {
                    if (error != null) {
                        LOG.debug("{}: initial member list not recorded in term {}: {}", selfId, term, error.toString());
                    }
                });
            }
            nudgeIfStuck(info, leader);
        } catch (RuntimeException e) {
            LOG.warn("{}: control plane listener or view refresh failed", selfId, e);
        }
    }

    /**
     * Events thread. A member whose storage was wiped rejoins with an empty log, but a leader that still remembers
     * how far this member had matched (Ratis's FollowerInfo) keeps probing from that index and never resends the log
     * from the start. It resends once it has a new entry to send, so a fresh member that sees a leader yet has
     * applied nothing for a while writes a no-op record through the leader. A new set never gets here: its first
     * leader's first entry reaches every member at once.
     */
    private void nudgeIfStuck(DivisionInfo info, String leader) {
        if (!freshStorage || leader == null || leader.equals(selfId) || info.getLastAppliedIndex() >= 0) {
            behindSinceNanos = 0;
            return;
        }
        final long now = System.nanoTime();
        final long grace = config.electionTimeoutMax().toNanos() * 4;
        if (behindSinceNanos == 0) {
            behindSinceNanos = now;
        } else if (now - behindSinceNanos > grace && now - lastNudgeNanos > grace) {
            lastNudgeNanos = now;
            LOG.info("{}: fresh storage and nothing applied while {} leads; asking for the log", selfId, leader);
            adminTask(client -> retry(System.nanoTime() + config.adminTimeout().toNanos(), "no-op",
                () -> client.io().send(Message.valueOf(ControlStateMachine.noop()))));
        }
    }

    // ---- writes ----

    private CompletableFuture<Void> submitLocal(ByteString record) {
        final RaftClientRequest request = RaftClientRequest.newBuilder()
            .setClientId(localClientId)
            .setServerId(selfPeerId)
            .setGroupId(groupId)
            .setCallId(callIds.incrementAndGet())
            .setMessage(Message.valueOf(record))
            .setType(RaftClientRequest.writeRequestType())
            .build();
        final CompletableFuture<RaftClientReply> reply;
        try {
            reply = server.submitClientRequestAsync(request);
        } catch (IOException e) {
            return CompletableFuture.failedFuture(e);
        }
        return reply.thenAccept(ControlPlane::check)
            .orTimeout(config.adminTimeout().toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Throws when the reply is a failure or our state machine refused the record. */
    private static void check(RaftClientReply reply) {
        if (!reply.isSuccess()) {
            final Exception e = reply.getException();
            throw new CompletionException(e != null ? e : new IOException("control record failed: " + reply));
        }
        final ByteString content = reply.getMessage() == null ? ByteString.EMPTY : reply.getMessage().getContent();
        if (!content.isEmpty()) {
            throw new CompletionException(new IllegalStateException(content.toStringUtf8()));
        }
    }

    private interface AdminCall {
        RaftClientReply call() throws IOException;
    }

    private interface AdminBody {
        void run(RaftClient client) throws IOException;
    }

    private CompletableFuture<Void> adminTask(AdminBody body) {
        final CompletableFuture<Void> result = new CompletableFuture<>();
        try {
            admin.execute(() -> {
                final RaftGroup group = RaftGroup.valueOf(groupId, division.getRaftConf().getCurrentPeers());
                try (RaftClient client = RaftClient.newBuilder()
                    .setProperties(properties)
                    .setRaftGroup(group)
                    .setRetryPolicy(RetryPolicies.retryUpToMaximumCountWithFixedSleep(10,
                        TimeDuration.valueOf(RETRY_SLEEP_MS, TimeUnit.MILLISECONDS)))
                    .build()) {
                    body.run(client);
                    result.complete(null);
                } catch (IOException | RuntimeException e) {
                    result.completeExceptionally(e);
                }
            });
        } catch (RejectedExecutionException e) {
            result.completeExceptionally(new IllegalStateException("control plane " + selfId + " is closed"));
        }
        return result;
    }

    /** Admin thread: runs {@code call} until it succeeds, is refused by the state machine, or the deadline passes. */
    private void retry(long deadline, String what, AdminCall call) throws IOException {
        while (true) {
            if (closed) {
                throw new IOException("control plane " + selfId + " closed during " + what);
            }
            Throwable failure;
            try {
                final RaftClientReply reply = call.call();
                if (reply == null) {
                    return;
                }
                check(reply);
                return;
            } catch (CompletionException e) {
                if (e.getCause() instanceof IllegalStateException refused) {
                    throw refused;
                }
                failure = e.getCause();
            } catch (IOException e) {
                failure = e;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new IOException(what + " did not complete within " + config.adminTimeout(), failure);
            }
            LOG.debug("{}: {} retried: {}", selfId, what, failure.toString());
            try {
                Thread.sleep(RETRY_SLEEP_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException(what + " interrupted", e);
            }
        }
    }
}
