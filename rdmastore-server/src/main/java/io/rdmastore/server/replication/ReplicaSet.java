package io.rdmastore.server.replication;

import io.rdmastore.client.ClientConfig;
import io.rdmastore.client.PeerChannel;
import io.rdmastore.client.RdmaStoreException;
import io.rdmastore.client.RdmaStoreServerException;
import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.ProtocolException;
import io.rdmastore.client.protocol.WireReader;
import io.rdmastore.client.protocol.WireWriter;
import io.rdmastore.store.Oplog;
import io.rdmastore.store.Store;
import io.rdmastore.store.blob.BlobStore;
import io.rdmastore.store.blob.BlobWrite;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This server as a member of a replica set: who is primary is decided by the embedded Ratis group
 * ({@link ControlPlane}); the data moves on our own oplog stream, which secondaries pull from the primary over their
 * best transport (ucx where both ends have it), and acknowledge by their next pull.
 *
 * <p>Safety (docs/replication.md): a member that Ratis makes leader in term T first asks a majority for their
 * positions and their promise to refuse every older term (PREPARE), catches up to the most up-to-date of them (highest
 * last term, then highest index), and only then stamps T on new writes and accepts them. A member applies records
 * only from a primary of the term it promised, so once it has promised T no deposed primary can count it for a
 * majority. A secondary whose log holds records the primary does not have keeps them in a rollback file and
 * resynchronises from a snapshot.
 *
 * <p>Threads: request handlers run on transport threads and never block on the network; elections and catch-up run on
 * the control thread, the pull loop on its own thread. State that must change atomically with what a member has
 * applied (its promised term and its log) is guarded by {@link #memberLock}.
 */
public final class ReplicaSet implements ControlPlane.Listener, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicaSet.class);
    private volatile StagedBlobs stagedBlobs;
    /** How this secondary received its last blob (INFO blob_last_path, replica-set status). */
    private volatile String lastBlobPath = "none yet";
    private volatile long blobsStaged;
    private volatile long blobsPulled;
    private static final int READ_CHUNK = 4 << 20;

    /** A member's role as this member sees it. */
    public enum Role { STARTING, SECONDARY, CANDIDATE, PRIMARY }

    /** Replies to the face that asked (a native session or a RESP connection): any thread may call them. */
    public interface Replier {
        /** Holds the request's place in the connection's reply order; returns a placeholder. */
        Object defer();

        /** Gives the placeholder its reply. */
        void complete(Object placeholder, byte[] reply);

        /** The transport of the connection ("tcp", "ucx"). */
        String transportName();

        /** Why that transport was chosen. */
        default String transportReason() {
            return "";
        }
    }

    /** What the primary knows of one secondary. */
    private static final class Progress {
        final String id;
        volatile long ackIndex;
        volatile long round;
        volatile long lastContactNanos;
        volatile String transport = "?";
        volatile String transportReason = "";

        Progress(String id) {
            this.id = id;
        }
    }

    /** A fetch waiting at the primary for new records (a long poll). */
    private final class PendingFetch {
        final Replier replier;
        final Object placeholder;
        final long requestId;
        final long from;
        final long maxBytes;
        final AtomicBoolean done = new AtomicBoolean();
        volatile ScheduledFuture<?> timer;

        PendingFetch(Replier replier, Object placeholder, long requestId, long from, long maxBytes) {
            this.replier = replier;
            this.placeholder = placeholder;
            this.requestId = requestId;
            this.from = from;
            this.maxBytes = maxBytes;
        }

        void complete() {
            if (!done.compareAndSet(false, true)) {
                return;
            }
            ScheduledFuture<?> t = timer;
            if (t != null) {
                t.cancel(false);
            }
            replier.complete(placeholder, fetchReply(requestId, from, maxBytes));
        }
    }

    /** A WAIT (native or RESP) or a read fence, completed when enough members have what it waits for. */
    private static final class Waiter {
        final long index;
        final long round;
        final int needed;
        final boolean majority;
        final CompletableFuture<Long> future = new CompletableFuture<>();
        volatile ScheduledFuture<?> timer;

        Waiter(long index, long round, int needed, boolean majority) {
            this.index = index;
            this.round = round;
            this.needed = needed;
            this.majority = majority;
        }
    }

    private final Store store;
    private final ReplicaSetConfig config;
    private final Path dataDir;
    private final String password;
    private final Object memberLock = new Object();
    private final Map<String, PeerChannel> peers = new ConcurrentHashMap<>();
    private final Map<String, Progress> progress = new ConcurrentHashMap<>();
    private final Map<String, PendingFetch> pendingFetches = new ConcurrentHashMap<>();
    private final List<Waiter> waiters = new CopyOnWriteArrayList<>();
    private final AtomicLong confirmRounds = new AtomicLong();
    private final ExecutorService control;
    private final ExecutorService transfers;
    private final ScheduledExecutorService timers;
    /** Connects to members ahead of need (a connection set-up can take a second; it must not hold up timers). */
    private final ScheduledExecutorService warmer;
    /** Requests to other members that may block while connecting (prepare). */
    private final ExecutorService rpc = Executors.newCachedThreadPool(r -> daemon(r, "rdmastore-repl-rpc"));
    private final Thread puller;
    private final AtomicLong transferIds = new AtomicLong(System.currentTimeMillis());
    private final Map<Long, Path> transferFiles = new ConcurrentHashMap<>();
    private ControlPlane controlPlane;
    /** The set's members (id to client address): from the configuration, then from the control plane's record. */
    private volatile Map<String, InetSocketAddress> members;
    /** Written under memberLock (persisted before it is acted on); read anywhere. */
    private volatile long acceptedTerm;
    private volatile Role role = Role.STARTING;
    /** The term this member is primary of (meaningful while role is PRIMARY). */
    private volatile long primaryTerm;
    private volatile String leaderId;
    private volatile long leaderTerm;
    private volatile boolean closed;
    /** The secondary's view: the primary it pulls from and how. */
    private volatile String pullingFrom;
    private volatile String pullTransport = "none";
    private volatile String pullReason = "";
    private volatile long lastPullNanos;
    private volatile long lastRoundSeen;
    private volatile long primaryCommitIndex;
    private volatile long resyncs;
    /** Redis's min-replicas-to-write / min-replicas-max-lag: 0 replicas means no such rule. */
    private volatile int minReplicasToWrite;
    private volatile int minReplicasMaxLagSeconds = 10;
    private volatile boolean tooFewReplicas;
    private volatile long rollbacks;

    public ReplicaSet(Store store, ReplicaSetConfig config, Path dataDir, String password) {
        this.store = store;
        this.config = config.conclude();
        this.dataDir = dataDir;
        this.password = password;
        this.control = Executors.newSingleThreadExecutor(r -> daemon(r, "rdmastore-repl-control"));
        this.transfers = Executors.newSingleThreadExecutor(r -> daemon(r, "rdmastore-repl-transfer"));
        this.timers = Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "rdmastore-repl-timer"));
        this.warmer = Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "rdmastore-repl-warm"));
        this.puller = daemon(this::pullLoop, "rdmastore-repl-pull");
        this.members = new LinkedHashMap<>(config.members());
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    /** Starts the control plane and the pull loop. The store must refuse client writes already (a member config). */
    public void start() throws IOException {
        synchronized (memberLock) {
            acceptedTerm = Math.max(readAcceptedTerm(), store.lastPosition()[0]);
        }
        cleanTransfers();
        store.appendListener(this::onAppend);
        if (!config.keySet()) {
            LOG.warn("replica set {} has no key (--replica-set-key): any client that can reach a member's port can"
                + " join its replication stream; set one outside a trusted loopback", config.setName());
        }
        List<ControlPlane.Member> initial = new ArrayList<>();
        for (Map.Entry<String, InetSocketAddress> m : config.members().entrySet()) {
            initial.add(new ControlPlane.Member(m.getKey(), m.getValue().getHostString(), m.getValue().getPort(),
                config.raftPort(m.getKey())));
        }
        puller.start();
        // Keep a warm connection to every member: an election's PREPARE must not wait for a connection set-up.
        warmer.scheduleWithFixedDelay(this::warmPeers, 0, 1, TimeUnit.SECONDS);
        timers.scheduleWithFixedDelay(this::checkGoodReplicas, 100, 100, TimeUnit.MILLISECONDS);
        // Events can race (a leader notified before Ratis calls it ready): reconcile with Ratis's view regularly.
        timers.scheduleWithFixedDelay(() -> control.execute(this::reconcile), 250, 250, TimeUnit.MILLISECONDS);
        if (config.join()) {
            InetSocketAddress self = config.members().get(config.nodeId());
            controlPlane = ControlPlane.join(config.setName(), new ControlPlane.Member(config.nodeId(),
                self.getHostString(), self.getPort(), config.raftPort(config.nodeId())), dataDir.resolve("raft"), this,
                config.controlConfig());
            LOG.info("{}: joining; waiting to be added by a member (replica-set add)", config);
        } else {
            controlPlane = ControlPlane.start(config.setName(), config.nodeId(), initial, dataDir.resolve("raft"),
                this, config.controlConfig());
        }
        LOG.info("{}: control plane started (Ratis port {}), term accepted so far {}", config, config.raftPort(
            config.nodeId()), acceptedTerm);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Control: who is primary
    // ---------------------------------------------------------------------------------------------------------------

    @Override
    public void membersChanged(List<ControlPlane.Member> list) {
        if (list.isEmpty()) {
            return;
        }
        Map<String, InetSocketAddress> m = new LinkedHashMap<>();
        for (ControlPlane.Member x : list) {
            m.put(x.id(), InetSocketAddress.createUnresolved(x.host(), x.dataPort()));
        }
        if (!m.equals(members)) {
            LOG.info("members of {} now {}", config.setName(), m.keySet());
            members = m;
            for (String id : new ArrayList<>(progress.keySet())) {
                if (!m.containsKey(id)) {
                    progress.remove(id);
                }
            }
            checkWaiters();
        }
    }

    /**
     * Adds a member at run time (started with {@code --join}): Ratis catches its control log up and commits the new
     * configuration; its data follows by the usual pull (a snapshot first when it starts empty).
     */
    public CompletableFuture<Void> addMember(String id, String host, int port, int raftPort) {
        return controlPlane.addMember(new ControlPlane.Member(id, host, port, raftPort));
    }

    /** Removes a member at run time; the majority is counted on the rest from then on. */
    public CompletableFuture<Void> removeMember(String id) {
        return controlPlane.removeMember(id);
    }

    @Override
    public void leaderChanged(String newLeader, long term) {
        leaderId = newLeader;
        leaderTerm = term;
        if (closed) {
            return;
        }
        control.execute(() -> onLeaderChanged(newLeader, term));
    }

    private void onLeaderChanged(String newLeader, long term) {
        if (closed || term != leaderTerm || !java.util.Objects.equals(newLeader, leaderId)) {
            return; // a newer change is queued behind this one
        }
        if (config.nodeId().equals(newLeader)) {
            if (role != Role.PRIMARY || primaryTerm != term) {
                becomePrimary(term);
            }
        } else if (role == Role.PRIMARY || role == Role.CANDIDATE || role == Role.STARTING) {
            stepDown(newLeader == null ? "no primary at the moment (election in progress)"
                : "the primary is now " + newLeader + " (term " + term + ")");
        } else {
            // Still a secondary: refused writes now name the new primary.
            store.allowWrites(false, "NOTPRIMARY " + notPrimaryText());
        }
    }

    /** Redis's min-replicas-to-write: the primary refuses writes while fewer secondaries are in touch. */
    public void minReplicasToWrite(int n) {
        minReplicasToWrite = n;
        checkGoodReplicas();
    }

    /** Redis's min-replicas-max-lag, in seconds: how recent a secondary's last pull must be to count. */
    public void minReplicasMaxLagSeconds(int seconds) {
        minReplicasMaxLagSeconds = seconds;
        checkGoodReplicas();
    }

    /** Refuses or lets in writes on the primary as min-replicas-to-write says. */
    private void checkGoodReplicas() {
        if (role != Role.PRIMARY && !tooFewReplicas) {
            return; // a secondary: never wait for memberLock, an apply may hold it
        }
        synchronized (memberLock) {
            if (role != Role.PRIMARY) {
                tooFewReplicas = false;
                return;
            }
            long now = System.nanoTime();
            long maxLag = TimeUnit.SECONDS.toNanos(minReplicasMaxLagSeconds);
            int good = 0;
            for (Progress p : progress.values()) {
                if (now - p.lastContactNanos <= maxLag) {
                    good++;
                }
            }
            boolean tooFew = minReplicasToWrite > 0 && good < minReplicasToWrite;
            if (tooFew != tooFewReplicas) {
                tooFewReplicas = tooFew;
                store.allowWrites(!tooFew, tooFew ? "NOREPLICAS Not enough good replicas to write." : null);
                LOG.info("{} writes: {} of {} required secondaries in touch", tooFew ? "refusing" : "accepting", good,
                    minReplicasToWrite);
            }
        }
    }

    /** On the control thread: makes the role agree with Ratis's view when an event was missed or came too early. */
    private void reconcile() {
        ControlPlane cp = controlPlane;
        if (closed || cp == null) {
            return;
        }
        boolean leader = cp.isLeader();
        long term = cp.term();
        if (leader && (role != Role.PRIMARY || primaryTerm != term)) {
            LOG.info("reconciling: Ratis leader of term {} but {}; taking the term", term, role);
            becomePrimary(term);
        } else if (!leader && (role == Role.PRIMARY || role == Role.CANDIDATE)) {
            stepDown("Ratis no longer sees this member as leader (term " + term + ")");
        }
    }

    private boolean stillLeader(long term) {
        ControlPlane cp = controlPlane;
        return !closed && cp != null && cp.isLeader() && cp.term() == term;
    }

    /** Runs on the control thread: prepare a majority, catch up, then accept writes in {@code term}. */
    private void becomePrimary(long term) {
        long started = System.nanoTime();
        synchronized (memberLock) {
            if (acceptedTerm > term) {
                LOG.info("not taking term {}: term {} was promised already", term, acceptedTerm);
                return;
            }
            promiseLocked(term);
            role = Role.CANDIDATE;
            store.allowWrites(false, "NOTPRIMARY election in progress (term " + term + ")");
        }
        failWaiters("NOTPRIMARY election in progress");
        LOG.info("elected leader of term {}: learning the positions of a majority", term);
        Map<String, long[]> positions = new LinkedHashMap<>();
        positions.put(config.nodeId(), store.lastPosition());
        int majority = majority();
        while (sizeOf(positions) < majority) {
            if (!stillLeader(term)) {
                LOG.info("lost leadership of term {} while preparing", term);
                stepDown("lost the election of term " + term);
                return;
            }
            int missing;
            synchronized (positions) {
                missing = majority - positions.size();
            }
            // Done as soon as a majority answered: a paused member must not hold up the election.
            java.util.concurrent.CountDownLatch answered = new java.util.concurrent.CountDownLatch(missing);
            for (String id : members.keySet()) {
                synchronized (positions) {
                    if (positions.containsKey(id)) {
                        continue;
                    }
                }
                // Connecting can block (a paused member accepts but never answers): one thread per call.
                CompletableFuture.supplyAsync(() -> prepare(id, term), rpc).thenCompose(f -> f).thenAccept(p -> {
                    synchronized (positions) {
                        positions.put(id, p);
                    }
                    answered.countDown();
                });
            }
            try {
                if (!answered.await(config.peerTimeout().toMillis(), TimeUnit.MILLISECONDS)) {
                    sleep(20);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        Map.Entry<String, long[]> best;
        synchronized (positions) {
            best = positions.entrySet().stream().max(Comparator.<Map.Entry<String, long[]>>comparingLong(
                e -> e.getValue()[0]).thenComparingLong(e -> e.getValue()[1])).orElseThrow();
        }
        long[] mine = store.lastPosition();
        if (!best.getKey().equals(config.nodeId()) && newer(best.getValue(), mine)) {
            LOG.info("catching up from {} at ({}, {}); this member is at ({}, {})", best.getKey(), best.getValue()[0],
                best.getValue()[1], mine[0], mine[1]);
            try {
                catchUp(best.getKey(), term, best.getValue());
            } catch (RuntimeException | IOException e) {
                LOG.warn("catching up from {} for term {} failed: {}", best.getKey(), term, e.toString());
                stepDown("catch-up failed");
                retryElection(term);
                return;
            }
        }
        synchronized (memberLock) {
            if (acceptedTerm != term || !stillLeader(term)) {
                role = Role.SECONDARY;
                LOG.info("term {} ended before this member could take it", term);
                return;
            }
            progress.clear();
            tooFewReplicas = false;
            store.term(term);
            primaryTerm = term;
            role = Role.PRIMARY;
            store.allowWrites(true, null);
        }
        long[] at = store.lastPosition();
        LOG.info("primary of term {} at index {}, accepting writes ({} ms after election)", term, at[1],
            (System.nanoTime() - started) / 1_000_000);
        controlPlane.announcePrimary(config.nodeId(), term).exceptionally(t -> {
            LOG.debug("announcing the primary of term {}: {}", term, t.toString());
            return null;
        });
    }

    /** Still Ratis's leader but not primary (a catch-up failed): try again shortly, as long as the term lasts. */
    private void retryElection(long term) {
        timers.schedule(() -> control.execute(() -> {
            if (stillLeader(term) && role != Role.PRIMARY) {
                becomePrimary(term);
            }
        }), 200, TimeUnit.MILLISECONDS);
    }

    private static int sizeOf(Map<String, long[]> positions) {
        synchronized (positions) {
            return positions.size();
        }
    }

    private static boolean newer(long[] a, long[] b) {
        return a[0] > b[0] || (a[0] == b[0] && a[1] > b[1]);
    }

    private void stepDown(String why) {
        boolean was;
        synchronized (memberLock) {
            was = role == Role.PRIMARY;
            role = Role.SECONDARY;
            store.allowWrites(false, "NOTPRIMARY " + notPrimaryText());
        }
        if (was) {
            LOG.info("stepped down as primary: {}", why);
        }
        failWaiters("NOTPRIMARY " + why);
        for (PendingFetch pf : pendingFetches.values()) {
            pf.complete();
        }
    }

    /** Records a promise to refuse every term below {@code term}. The caller holds memberLock. */
    private void promiseLocked(long term) {
        if (term <= acceptedTerm) {
            return;
        }
        acceptedTerm = term;
        writeAcceptedTerm(term);
        if (role == Role.PRIMARY && primaryTerm < term) {
            role = Role.SECONDARY;
            store.allowWrites(false, "NOTPRIMARY a newer primary is being elected (term " + term + ")");
            timers.execute(() -> stepDown("a member promised term " + term));
        }
    }

    private int majority() {
        return members.size() / 2 + 1;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Requests between members (transport threads)
    // ---------------------------------------------------------------------------------------------------------------

    private boolean keyMatches(WireReader r) {
        return config.key().equals(r.string("key", 4096));
    }

    /**
     * Reads the set's key that starts every request between members; null when it matches, else the refusal's text.
     */
    public String checkKey(WireReader r) {
        return keyMatches(r) ? null : "AUTH replication key mismatch: this member belongs to replica set "
            + config.setName() + " and the request did not present its key";
    }

    private static byte[] error(long id, String text) {
        return new WireWriter(64 + text.length()).header(ProtocolDescriptor.STATUS_ERROR, id).rawString(text)
            .toByteArray();
    }

    /**
     * Handles one replication opcode (30..39); returns the reply, or null when the reply was deferred through
     * {@code replier}.
     */
    public byte[] handle(int opcode, long id, WireReader r, Replier replier) {
        if (!keyMatches(r)) {
            return error(id, "AUTH replication key mismatch: this member belongs to replica set "
                + config.setName() + " and the request did not present its key");
        }
        return switch (opcode) {
            case ProtocolDescriptor.REPL_PREPARE -> onPrepare(id, r, replier);
            case ProtocolDescriptor.REPL_FETCH -> onFetch(id, r, replier);
            case ProtocolDescriptor.REPL_SNAPSHOT -> onSnapshot(id, r, replier);
            case ProtocolDescriptor.REPL_READ -> onRead(id, r);
            case ProtocolDescriptor.REPL_TERMS -> onTerms(id, r);
            default -> error(id, "ERR unknown replication opcode " + opcode);
        };
    }

    /**
     * A promise waits for an apply in progress (they must not interleave), so it is answered off the transport
     * thread.
     */
    private byte[] onPrepare(long id, WireReader r, Replier replier) {
        long term = r.i64("term");
        String candidate = r.string("candidate", 256);
        r.end();
        Object placeholder = replier.defer();
        rpc.execute(() -> replier.complete(placeholder, prepareReply(id, term, candidate)));
        return null;
    }

    private byte[] prepareReply(long id, long term, String candidate) {
        long[] pos;
        long accepted;
        synchronized (memberLock) {
            if (term < acceptedTerm) {
                return error(id, "STALETERM " + acceptedTerm);
            }
            promiseLocked(term);
            accepted = acceptedTerm;
            pos = store.lastPosition();
        }
        LOG.info("promised term {} to {}; this member is at ({}, {})", term, candidate, pos[0], pos[1]);
        return new WireWriter(64).header(ProtocolDescriptor.STATUS_OK, id).i64(accepted).i64(pos[0]).i64(pos[1])
            .toByteArray();
    }

    private byte[] onFetch(long id, WireReader r, Replier replier) {
        long term = r.i64("term");
        String member = r.string("member", 256);
        long prevTerm = r.i64("prevTerm");
        long prevIndex = r.i64("prevIndex");
        long ack = r.i64("ack");
        long round = r.i64("round");
        int maxBytes = r.i32("maxBytes");
        int waitMillis = r.i32("waitMillis");
        boolean catchUp = r.u8("catchUp") == 1;
        r.end();
        long accepted = acceptedTerm;
        if (term > accepted) {
            // A newer term exists: adopt it (off this thread: a promise waits for an apply in progress).
            rpc.execute(() -> {
                synchronized (memberLock) {
                    promiseLocked(term);
                }
            });
            return error(id, "NOTPRIMARY this member does not lead term " + term);
        }
        if (term < accepted) {
            return error(id, "STALETERM " + accepted);
        }
        boolean primary = role == Role.PRIMARY && primaryTerm == term;
        if (primary) {
            Progress p = progress.computeIfAbsent(member, Progress::new);
            p.transport = replier.transportName();
            p.transportReason = replier.transportReason();
            p.lastContactNanos = System.nanoTime();
            if (ack > p.ackIndex) {
                p.ackIndex = ack;
            }
            if (round > p.round) {
                p.round = round;
            }
            checkWaiters();
        } else if (!catchUp || role == Role.PRIMARY || role == Role.CANDIDATE) {
            // Only a candidate catching up reads a member that does not lead: a secondary that took DIVERGED or a
            // snapshot from a stale member could lose records a majority acknowledged.
            return error(id, "NOTPRIMARY this member does not lead term " + term);
        }
        Oplog oplog = store.oplog();
        if (prevIndex > 0) {
            long t = oplog.termAt(prevIndex);
            if (t == -1) {
                if (prevIndex > oplog.lastIndex()) {
                    return error(id, "DIVERGED this log ends at index " + oplog.lastIndex());
                }
                return error(id, "TOOOLD index " + prevIndex + " is no longer in the oplog window (from "
                    + oplog.firstIndex() + ")");
            }
            if (t != prevTerm) {
                return error(id, "DIVERGED index " + prevIndex + " has term " + t + " here, not " + prevTerm);
            }
        } else if (oplog.firstIndex() > 1 && oplog.lastIndex() > 0) {
            return error(id, "TOOOLD the oplog window starts at index " + oplog.firstIndex());
        }
        long from = prevIndex + 1;
        long max = Math.max(1024, Math.min(maxBytes, config.maxBatchBytes()));
        if (!primary || waitMillis <= 0 || from <= oplog.lastIndex() || round < confirmRounds.get()) {
            return fetchReply(id, from, max);
        }
        PendingFetch pf = new PendingFetch(replier, replier.defer(), id, from, max);
        PendingFetch old = pendingFetches.put(member, pf);
        if (old != null) {
            old.complete();
        }
        pf.timer = timers.schedule(() -> {
            pendingFetches.remove(member, pf);
            pf.complete();
        }, waitMillis, TimeUnit.MILLISECONDS);
        // A write may have landed between the check above and the registration.
        if (from <= oplog.lastIndex() || role != Role.PRIMARY) {
            pendingFetches.remove(member, pf);
            pf.complete();
        }
        return null;
    }

    /** A FETCH reply: this member's term, the majority-replicated index, the confirm round and records from {@code from}. */
    private byte[] fetchReply(long id, long from, long maxBytes) {
        List<Oplog.Entry> entries = new ArrayList<>();
        int n = store.oplog().read(from, maxBytes, entries);
        if (n < 0) {
            return error(id, "TOOOLD index " + from + " is no longer in the oplog window");
        }
        long size = 64;
        for (Oplog.Entry e : entries) {
            size += 20 + e.frame().length;
        }
        WireWriter w = new WireWriter((int) Math.min(Integer.MAX_VALUE - 64, size))
            .header(ProtocolDescriptor.STATUS_OK, id)
            .i64(role == Role.PRIMARY ? primaryTerm : acceptedTerm).u8(role == Role.PRIMARY ? 1 : 0)
            .i64(commitIndex()).i64(confirmRounds.get()).i32(entries.size());
        for (Oplog.Entry e : entries) {
            w.i64(e.term()).i64(e.index()).bytes(e.frame());
        }
        return w.toByteArray();
    }


    private byte[] onSnapshot(long id, WireReader r, Replier replier) {
        long term = r.i64("term");
        boolean catchUp = r.u8("catchUp") == 1;
        r.end();
        if (term < acceptedTerm) {
            return error(id, "STALETERM " + acceptedTerm);
        }
        if (!(role == Role.PRIMARY && primaryTerm == term) && (!catchUp || role == Role.CANDIDATE)) {
            return error(id, "NOTPRIMARY this member does not lead term " + term);
        }
        Object placeholder = replier.defer();
        transfers.execute(() -> {
            byte[] reply;
            try {
                Store.SnapshotFile s = store.snapshotForTransfer();
                long handle = transferIds.incrementAndGet();
                Path dir = Files.createDirectories(dataDir.resolve("transfers"));
                Path link = dir.resolve(handle + ".rsnap");
                try {
                    Files.createLink(link, s.path());
                } catch (IOException | UnsupportedOperationException e) {
                    Files.copy(s.path(), link, StandardCopyOption.REPLACE_EXISTING);
                }
                transferFiles.put(handle, link);
                trimTransfers();
                reply = new WireWriter(64).header(ProtocolDescriptor.STATUS_OK, id).i64(handle).i64(s.term())
                    .i64(s.index()).i64(Files.size(link)).toByteArray();
                LOG.info("snapshot at ({}, {}) lent for a resync ({} bytes)", s.term(), s.index(), Files.size(link));
            } catch (IOException | RuntimeException e) {
                reply = error(id, "ERR snapshot for a resync failed: " + e.getMessage());
            }
            replier.complete(placeholder, reply);
        });
        return null;
    }

    /** Keeps the files of the last few resyncs; older ones go. */
    private void trimTransfers() throws IOException {
        List<Long> handles = new ArrayList<>(transferFiles.keySet());
        handles.sort(null);
        for (int i = 0; i < handles.size() - 4; i++) {
            Path p = transferFiles.remove(handles.get(i));
            if (p != null) {
                Files.deleteIfExists(p);
            }
        }
    }

    private void cleanTransfers() throws IOException {
        Path dir = dataDir.resolve("transfers");
        if (Files.isDirectory(dir)) {
            try (Stream<Path> files = Files.list(dir)) {
                for (Path p : files.toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    /** Kinds of file REPL_READ reads (blobs move one-sided: REPL_BLOB_LEND). */
    private static final int READ_TRANSFER = 0;

    private byte[] onRead(long id, WireReader r) {
        int kind = r.u8("kind");
        long handle = r.i64("handle");
        long offset = r.i64("offset");
        int max = r.i32("max");
        r.end();
        Path file = kind == READ_TRANSFER ? transferFiles.get(handle) : null;
        if (file == null) {
            return error(id, kind != READ_TRANSFER ? "ERR REPL_READ reads snapshot transfers only (kind 0), not " + kind
                : "ERR no transfer " + handle + " (it ended or this member restarted)");
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            int n = (int) Math.max(0, Math.min(Math.min(max, READ_CHUNK), size - offset));
            WireWriter w = new WireWriter(n + 32).header(ProtocolDescriptor.STATUS_OK, id);
            ByteBuffer b = ByteBuffer.allocate(n);
            while (b.hasRemaining() && ch.read(b, offset + b.position()) > 0) {
                // keep reading
            }
            return w.raw(b.array()).toByteArray();
        } catch (IOException e) {
            return error(id, "ERR reading " + file.getFileName() + ": " + e.getMessage());
        }
    }

    /** Copies {@code length} bytes of a snapshot file lent by {@code from} into {@code out}. */
    private void copyFrom(String from, int kind, long handle, long length, Path out) throws IOException {
        PeerChannel p = peer(from);
        Files.deleteIfExists(out);
        try (FileChannel ch = FileChannel.open(out, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            long offset = 0;
            while (offset < length) {
                long at = offset;
                byte[] chunk = p.await(p.call(ProtocolDescriptor.REPL_READ, w -> w.string(config.key()).u8(kind)
                    .i64(handle).i64(at).i32(READ_CHUNK), (st, r) -> r.rest(), Duration.ofSeconds(30)),
                    Duration.ofSeconds(30));
                if (chunk.length == 0) {
                    throw new IOException("transfer from " + from + " ended at " + offset + " of " + length
                        + " bytes");
                }
                ByteBuffer b = ByteBuffer.wrap(chunk);
                while (b.hasRemaining()) {
                    offset += ch.write(b, offset);
                }
            }
            ch.force(true);
        }
    }

    /**
     * Where a secondary finds a blob a put staged on it ahead of the record (the server's blob service): the sealed
     * content for a token, waiting up to {@code waitMillis} for a stage still arriving; null when there is none.
     */
    @FunctionalInterface
    public interface StagedBlobs {
        BlobStore.Sealed take(long token, long length, int crc32c, long waitMillis);
    }

    /** Gives the secondary its staged blobs (set before {@link #start}). */
    public void stagedBlobs(StagedBlobs staged) {
        this.stagedBlobs = staged;
    }

    /**
     * Brings the blob files {@code refs} ({version, length, crc}) from {@code from} into this store (docs/blobs.md,
     * "Distribution to a replica set"): a copy the put staged here already (pulled from the client or along a
     * pipeline) is installed as it is; otherwise this member leases {@code from}'s file and pulls it one-sided, in
     * chunks, several in flight, and checks its CRC32C. Nothing is visible before the file is complete, checked and
     * durable: the record naming it is applied after.
     */
    private void copyBlobs(String from, List<long[]> refs) throws IOException {
        PeerChannel p = peer(from);
        for (long[] ref : refs) {
            long version = ref[0];
            long length = ref[1];
            int crc = (int) ref[2];
            Duration t = config.peerTimeout().plusMillis(length / 50_000);
            long token = p.await(p.call(ProtocolDescriptor.REPL_BLOB_LEND, w -> w.string(config.key()).i64(version)
                .u8(0), (st, r) -> st == ProtocolDescriptor.STATUS_NULL ? -1L : lendToken(r, length, crc),
                config.peerTimeout()), config.peerTimeout());
            if (token == -1) {
                throw new IOException("blob " + version + " is not on " + from + " (overwritten since)");
            }
            StagedBlobs staged = stagedBlobs;
            if (token != 0 && staged != null) {
                BlobStore.Sealed s = staged.take(token, length, crc, t.toMillis());
                if (s != null) {
                    store.blobs().installSealed(s, version);
                    lastBlobPath = "staged by the put (" + (s.syncNanos() / 1000) + " us fsync)";
                    blobsStaged++;
                    continue;
                }
            }
            long t0 = System.nanoTime();
            long[] lease = new long[1];
            byte[] descriptor = p.await(p.call(ProtocolDescriptor.REPL_BLOB_LEND, w -> w.string(config.key())
                .i64(version).u8(1), (st, r) -> {
                    if (st == ProtocolDescriptor.STATUS_NULL) {
                        return null;
                    }
                    r.i64("length");
                    r.i32("crc32c");
                    r.i64("token");
                    lease[0] = r.i64("lease id");
                    byte[] d = r.bytes("descriptor", 64 * 1024);
                    r.end();
                    return d;
                }, config.peerTimeout()), config.peerTimeout());
            if (descriptor == null) {
                throw new IOException("blob " + version + " is not on " + from + " (overwritten since)");
            }
            BlobWrite write = store.blobs().begin(length);
            int got;
            try {
                got = length == 0 ? crc : p.pull(descriptor, length, write::write, t);
            } catch (IOException | RuntimeException e) {
                store.blobs().abort(write);
                throw new IOException("pulling blob " + version + " from " + from + " failed: " + e.getMessage(), e);
            } finally {
                if (lease[0] != 0) {
                    try {
                        p.await(p.call(ProtocolDescriptor.BLOB_GET_DONE, w -> w.i64(lease[0]), (st, r) -> null,
                            config.peerTimeout()), config.peerTimeout());
                    } catch (RuntimeException e) {
                        LOG.debug("ending the lease of blob {} on {}: {}", version, from, e.toString());
                    }
                }
            }
            if (got != crc) {
                store.blobs().abort(write);
                throw new IOException(String.format("blob %d from %s arrived with CRC32C %08x, the record says %08x",
                    version, from, got, crc));
            }
            store.blobs().installSealed(store.blobs().seal(write, crc, true), version);
            lastBlobPath = "pulled from " + from + " over " + p.transport() + " ("
                + (System.nanoTime() - t0) / 1_000_000 + " ms)";
            blobsPulled++;
        }
    }

    private static long lendToken(WireReader r, long length, int crc) {
        long l = r.i64("length");
        int c = r.i32("crc32c");
        long token = r.i64("token");
        r.i64("lease id");
        r.bytes("descriptor", 64 * 1024);
        r.end();
        if (l != length || c != crc) {
            throw new ProtocolException("blob length or CRC differs from the record's");
        }
        return token;
    }

    /** Copies the blob files that {@code entries} name and this member lacks (network I/O: never under memberLock). */
    private void copyMissingBlobs(String from, List<Oplog.Entry> entries) throws IOException {
        List<long[]> blobs = store.missingBlobs(entries);
        if (!blobs.isEmpty()) {
            copyBlobs(from, blobs);
        }
    }

    private byte[] onTerms(long id, WireReader r) {
        long from = r.i64("from");
        long to = r.i64("to");
        r.end();
        Oplog oplog = store.oplog();
        long lo = Math.max(from, oplog.firstIndex());
        long hi = Math.min(to, oplog.lastIndex());
        List<long[]> runs = new ArrayList<>();
        for (long i = lo; i <= hi; i++) {
            long t = oplog.termAt(i);
            if (runs.isEmpty() || runs.getLast()[0] != t) {
                runs.add(new long[] {t, i, i});
            } else {
                runs.getLast()[2] = i;
            }
        }
        WireWriter w = new WireWriter(32 + runs.size() * 24).header(ProtocolDescriptor.STATUS_OK, id).i32(runs.size());
        for (long[] run : runs) {
            w.i64(run[0]).i64(run[1]).i64(run[2]);
        }
        return w.toByteArray();
    }

    // ---------------------------------------------------------------------------------------------------------------
    // The primary: waking pulls, counting acknowledgements
    // ---------------------------------------------------------------------------------------------------------------

    /** Per thread: [0] inside a native request whose reply is not sent yet, [1] a wake is owed when it is. */
    private static final ThreadLocal<int[]> REQUEST = ThreadLocal.withInitial(() -> new int[2]);

    /**
     * A native request starts on this thread: the pulls its writes would wake are woken after its reply is sent
     * ({@link #exitRequest}), so a {@code w:1} writer does not wait while the secondaries' replies are built.
     */
    public static void enterRequest() {
        REQUEST.get()[0] = 1;
    }

    /** The request's reply is sent: wakes the pulls its writes owe. */
    public void exitRequest() {
        int[] r = REQUEST.get();
        r[0] = 0;
        if (r[1] != 0) {
            r[1] = 0;
            wakePulls();
        }
    }

    /** Called by the store after each committed write (on the writer's thread, locks released). */
    private void onAppend() {
        if (pendingFetches.isEmpty()) {
            return;
        }
        int[] r = REQUEST.get();
        if (r[0] != 0) {
            r[1] = 1;
            return;
        }
        wakePulls();
    }

    private void wakePulls() {
        for (Map.Entry<String, PendingFetch> e : pendingFetches.entrySet()) {
            if (pendingFetches.remove(e.getKey(), e.getValue())) {
                e.getValue().complete();
            }
        }
    }

    /** The highest index a majority holds (the primary counts with its own log). */
    public long commitIndex() {
        if (role != Role.PRIMARY) {
            return primaryCommitIndex;
        }
        List<Long> acks = new ArrayList<>();
        acks.add(store.oplog().lastIndex());
        for (Progress p : progress.values()) {
            acks.add(p.ackIndex);
        }
        acks.sort(Comparator.reverseOrder());
        int m = majority();
        return acks.size() >= m ? acks.get(m - 1) : 0;
    }

    private int secondariesAt(long index) {
        int n = 0;
        for (Progress p : progress.values()) {
            if (p.ackIndex >= index) {
                n++;
            }
        }
        return n;
    }

    private int confirmedAt(long round) {
        int n = 1;
        for (Progress p : progress.values()) {
            if (p.round >= round) {
                n++;
            }
        }
        return n;
    }

    private void checkWaiters() {
        if (waiters.isEmpty()) {
            return;
        }
        for (Waiter w : waiters) {
            boolean ok;
            if (w.round > 0) {
                ok = confirmedAt(w.round) >= majority() && 1 + secondariesAt(w.index) >= majority();
            } else if (w.majority) {
                ok = 1 + secondariesAt(w.index) >= majority();
            } else {
                ok = secondariesAt(w.index) >= w.needed;
            }
            if (ok && waiters.remove(w)) {
                ScheduledFuture<?> t = w.timer;
                if (t != null) {
                    t.cancel(false);
                }
                w.future.complete((long) secondariesAt(w.index));
            }
        }
    }

    private void failWaiters(String why) {
        for (Waiter w : waiters) {
            if (waiters.remove(w)) {
                w.future.completeExceptionally(new IllegalStateException(why));
            }
        }
    }

    /**
     * WAIT: completes when {@code numReplicas} secondaries (or, with -1, a majority of the set counting the primary)
     * hold every record up to {@code index}. On time-out a Redis-style WAIT ({@code numReplicas >= 0}) completes with
     * the count reached; a majority wait fails with a TIMEOUT message. Fails with NOTPRIMARY when this member is not
     * (or stops being) the primary.
     */
    public CompletableFuture<Long> awaitReplicas(long index, int numReplicas, long timeoutMillis) {
        if (role != Role.PRIMARY) {
            return CompletableFuture.failedFuture(new IllegalStateException("NOTPRIMARY " + notPrimaryText()));
        }
        boolean majority = numReplicas < 0;
        Waiter w = new Waiter(index, 0, numReplicas, majority);
        return register(w, timeoutMillis, () -> majority
            ? "TIMEOUT write concern majority not satisfied within " + timeoutMillis + " ms (" + (1 + secondariesAt(
                index)) + " of " + members.size() + " members hold index " + index + ")"
            : null);
    }

    /**
     * A read fence: completes once a majority of the set has confirmed, after this call, that this member is still
     * the primary of its term (each secondary's next pull echoes the round), and a majority holds every record this
     * member held when the fence began (so nothing read before it can be rolled back). Fails with NOTPRIMARY or
     * TIMEOUT.
     */
    public CompletableFuture<Long> confirmPrimary(long timeoutMillis) {
        if (role != Role.PRIMARY) {
            return CompletableFuture.failedFuture(new IllegalStateException("NOTPRIMARY " + notPrimaryText()));
        }
        // The read before the fence saw at most what the log holds now: that must be on a majority too, or a
        // write that is later rolled back could have been read (a dirty read, not a linearizable one).
        long index = store.oplog().lastIndex();
        long round = confirmRounds.incrementAndGet();
        Waiter w = new Waiter(index, round, 0, true);
        CompletableFuture<Long> f = register(w, timeoutMillis, () -> "TIMEOUT a majority did not confirm this"
            + " primary within " + timeoutMillis + " ms");
        // Wake every waiting pull so each secondary answers the round at once.
        for (Map.Entry<String, PendingFetch> e : pendingFetches.entrySet()) {
            if (pendingFetches.remove(e.getKey(), e.getValue())) {
                e.getValue().complete();
            }
        }
        return f;
    }

    private CompletableFuture<Long> register(Waiter w, long timeoutMillis, java.util.function.Supplier<String> onTimeout) {
        waiters.add(w);
        checkWaiters();
        if (!w.future.isDone()) {
            w.timer = timers.schedule(() -> {
                if (waiters.remove(w)) {
                    String text = onTimeout.get();
                    if (text == null) {
                        w.future.complete((long) secondariesAt(w.index));
                    } else {
                        w.future.completeExceptionally(new IllegalStateException(text));
                    }
                }
            }, Math.max(1, timeoutMillis), TimeUnit.MILLISECONDS);
        }
        if (role != Role.PRIMARY && waiters.remove(w)) {
            w.future.completeExceptionally(new IllegalStateException("NOTPRIMARY " + notPrimaryText()));
        }
        return w.future;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // The secondary: pulling and applying
    // ---------------------------------------------------------------------------------------------------------------

    private PeerChannel peer(String id) {
        return peers.computeIfAbsent(id, k -> {
            InetSocketAddress a = members.get(k);
            if (a == null) {
                throw new IllegalStateException("member " + k + " is not in the set " + members.keySet());
            }
            return PeerChannel.open(new ClientConfig(a.getHostString(), a.getPort(), config.peerTransport(), password,
                config.peerTimeout().plus(config.fetchWait())));
        });
    }

    private void dropPeer(String id) {
        PeerChannel p = peers.remove(id);
        if (p != null) {
            p.close();
        }
    }

    private void warmPeers() {
        for (String id : members.keySet()) {
            if (closed || id.equals(config.nodeId())) {
                continue;
            }
            try {
                peer(id).call(ProtocolDescriptor.ROLE, w -> { }, (st, r) -> null, config.peerTimeout())
                    .exceptionally(t -> {
                        dropPeer(id);
                        return null;
                    });
            } catch (RuntimeException e) {
                dropPeer(id);
            }
        }
    }

    private CompletableFuture<long[]> prepare(String id, long term) {
        return peer(id).call(ProtocolDescriptor.REPL_PREPARE, w -> w.string(config.key()).i64(term)
            .string(config.nodeId()), (st, r) -> {
                r.i64("accepted");
                long lastTerm = r.i64("lastTerm");
                long lastIndex = r.i64("lastIndex");
                r.end();
                return new long[] {lastTerm, lastIndex};
            }, config.peerTimeout());
    }

    /** A FETCH reply as the secondary reads it. */
    private record Batch(long term, boolean fromPrimary, long commitIndex, long round, List<Oplog.Entry> entries) {
    }

    private Batch fetch(String from, long term, long[] prev, long ack, long round, int waitMillis, boolean catchUp) {
        PeerChannel p = peer(from);
        CompletableFuture<Batch> call = p.call(ProtocolDescriptor.REPL_FETCH, w -> w.string(config.key()).i64(term)
            .string(config.nodeId()).i64(prev[0]).i64(prev[1]).i64(ack).i64(round).i32((int) config.maxBatchBytes())
            .i32(waitMillis).u8(catchUp ? 1 : 0), (st, r) -> {
                long t = r.i64("term");
                boolean fromPrimary = r.u8("primary") == 1;
                long commit = r.i64("commit");
                long rd = r.i64("round");
                int n = r.i32("count");
                List<Oplog.Entry> entries = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    long et = r.i64("entryTerm");
                    long ei = r.i64("entryIndex");
                    entries.add(new Oplog.Entry(et, ei, r.bytes("frame", Integer.MAX_VALUE - 64)));
                }
                r.end();
                return new Batch(t, fromPrimary, commit, rd, entries);
            }, config.peerTimeout().plus(Duration.ofMillis(waitMillis)));
        return p.await(call, config.peerTimeout().plus(Duration.ofMillis(waitMillis)));
    }

    private void pullLoop() {
        int failures = 0;
        while (!closed) {
            String target = leaderId;
            if (role != Role.SECONDARY || target == null || target.equals(config.nodeId())) {
                pullingFrom = null;
                sleep(role == Role.STARTING ? 10 : 20);
                continue;
            }
            long term = acceptedTerm;
            try {
                long[] prev = store.lastPosition();
                Batch b = fetch(target, term, prev, prev[1], lastRoundSeen, (int) config.fetchWait().toMillis(), false);
                String pullingFromBefore = pullingFrom;
                pullingFrom = target;
                if (!target.equals(pullingFromBefore)) {
                    pullTransport = peer(target).transport();
                    pullReason = peer(target).transportReason();
                }
                lastPullNanos = System.nanoTime();
                failures = 0;
                if (!b.fromPrimary()) {
                    // the member stopped leading while this pull waited: its records are not the set's
                    sleep(10);
                    continue;
                }
                copyMissingBlobs(target, b.entries());
                synchronized (memberLock) {
                    if (b.term() < acceptedTerm || role != Role.SECONDARY) {
                        continue;
                    }
                    if (b.term() > acceptedTerm) {
                        promiseLocked(b.term());
                    }
                    if (!b.entries().isEmpty()) {
                        store.applyReplicated(b.entries());
                    }
                }
                primaryCommitIndex = b.commitIndex();
                lastRoundSeen = b.round();
            } catch (RdmaStoreServerException e) {
                String m = String.valueOf(e.getMessage());
                if (m.startsWith("STALETERM ")) {
                    adoptTerm(m);
                } else if (m.startsWith("DIVERGED")) {
                    LOG.warn("this member's log diverged from the primary {}: {}", target, m);
                    resyncQuietly(target, true);
                } else if (m.startsWith("TOOOLD")) {
                    LOG.info("behind the primary {}'s oplog window ({}): resynchronising from a snapshot", target, m);
                    resyncQuietly(target, false);
                } else {
                    // NOTPRIMARY: the new leader is still catching up, or this member's view is stale.
                    sleep(Math.min(200, 10 << Math.min(failures++, 4)));
                }
            } catch (RdmaStoreException | IllegalStateException e) {
                if (!closed) {
                    LOG.debug("pull from {} failed: {}", target, e.toString());
                    dropPeer(target);
                    pullingFrom = null;
                    sleep(Math.min(500, 20 << Math.min(failures++, 4)));
                }
            } catch (RuntimeException | IOException e) {
                if (!closed) {
                    LOG.warn("applying records from {} failed: {}", target, e.toString());
                    sleep(200);
                }
            }
        }
    }

    private void adoptTerm(String staleTermMessage) {
        try {
            long t = Long.parseLong(staleTermMessage.substring("STALETERM ".length()).trim());
            synchronized (memberLock) {
                promiseLocked(t);
            }
        } catch (NumberFormatException e) {
            LOG.warn("unreadable reply: {}", staleTermMessage);
        }
    }

    private void resyncQuietly(String from, boolean diverged) {
        try {
            resync(from, acceptedTerm, diverged, false);
        } catch (IOException | RuntimeException e) {
            LOG.warn("resync from {} failed: {}", from, e.toString());
            dropPeer(from);
            sleep(500);
        }
    }

    /** Brings this member to {@code target}'s position by pulling from {@code from} (a new primary's catch-up). */
    private void catchUp(String from, long term, long[] target) throws IOException {
        while (newer(target, store.lastPosition())) {
            if (!stillLeader(term)) {
                throw new IllegalStateException("lost leadership of term " + term + " while catching up");
            }
            long[] prev = store.lastPosition();
            try {
                Batch b = fetch(from, term, prev, 0, 0, 0, true);
                if (b.entries().isEmpty()) {
                    throw new IllegalStateException(from + " returned nothing after index " + prev[1]);
                }
                copyMissingBlobs(from, b.entries());
                synchronized (memberLock) {
                    store.applyReplicated(b.entries());
                }
            } catch (RdmaStoreServerException e) {
                String m = String.valueOf(e.getMessage());
                if (m.startsWith("DIVERGED") || m.startsWith("TOOOLD")) {
                    resync(from, term, m.startsWith("DIVERGED"), true);
                } else {
                    throw e;
                }
            }
        }
    }

    /**
     * Replaces this member's data with a snapshot of {@code from}'s, keeping what this log holds beyond the common
     * prefix in a rollback file first when the logs diverged.
     */
    private void resync(String from, long term, boolean diverged, boolean catchUp) throws IOException {
        long started = System.nanoTime();
        PeerChannel p = peer(from);
        if (diverged) {
            keepRollback(from);
        }
        long[] snap = p.await(p.call(ProtocolDescriptor.REPL_SNAPSHOT, w -> w.string(config.key()).i64(term)
            .u8(catchUp ? 1 : 0),
            (st, r) -> new long[] {r.i64("handle"), r.i64("term"), r.i64("index"), r.i64("size")},
            Duration.ofMinutes(10)), Duration.ofMinutes(10));
        Path part = dataDir.resolve("resync-snapshot.rsnap.tmp");
        copyFrom(from, READ_TRANSFER, snap[0], snap[3], part);
        copyBlobs(from, store.missingBlobs(part));
        synchronized (memberLock) {
            store.installSnapshot(part);
        }
        resyncs++;
        LOG.info("resynchronised from {}: snapshot at ({}, {}), {} bytes, {} ms", from, snap[1], snap[2], snap[3],
            (System.nanoTime() - started) / 1_000_000);
    }

    /** Writes the records of this log that {@code from}'s log does not hold to a rollback file. */
    private void keepRollback(String from) throws IOException {
        Oplog oplog = store.oplog();
        long first = oplog.firstIndex();
        long last = oplog.lastIndex();
        if (last < first) {
            return;
        }
        PeerChannel p = peer(from);
        List<long[]> runs = p.await(p.call(ProtocolDescriptor.REPL_TERMS, w -> w.string(config.key()).i64(first)
            .i64(last), (st, r) -> {
                int n = r.i32("count");
                List<long[]> out = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    out.add(new long[] {r.i64("term"), r.i64("from"), r.i64("to")});
                }
                return out;
            }, config.peerTimeout()), config.peerTimeout());
        long common = first - 1;
        for (long i = first; i <= last; i++) {
            long mine = oplog.termAt(i);
            long theirs = -1;
            for (long[] run : runs) {
                if (i >= run[1] && i <= run[2]) {
                    theirs = run[0];
                    break;
                }
            }
            if (mine != theirs) {
                break;
            }
            common = i;
        }
        List<Oplog.Entry> tail = new ArrayList<>();
        long next = common + 1;
        while (next <= last) {
            List<Oplog.Entry> batch = new ArrayList<>();
            if (oplog.read(next, 16L << 20, batch) <= 0) {
                break;
            }
            tail.addAll(batch);
            next = batch.getLast().index() + 1;
        }
        if (store.writeRollback(tail) != null) {
            rollbacks++;
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // What the faces show
    // ---------------------------------------------------------------------------------------------------------------

    public Role role() {
        return role;
    }

    public String setName() {
        return config.setName();
    }

    public String nodeId() {
        return config.nodeId();
    }

    /** The term of the current primary as this member knows it. */
    public long term() {
        return role == Role.PRIMARY ? primaryTerm : Math.max(leaderTerm, acceptedTerm);
    }

    /** The id of the primary, or null when unknown. */
    public String primaryId() {
        if (role == Role.PRIMARY) {
            return config.nodeId();
        }
        return leaderId;
    }

    /** This member's control plane (null before {@link #start()}); the cluster keeps its slot map there. */
    public ControlPlane controlPlane() {
        return controlPlane;
    }

    /** The primary's client address ("host:port"), or "" when unknown. */
    public String primaryAddress() {
        String id = primaryId();
        InetSocketAddress a = id == null ? null : members.get(id);
        return a == null ? "" : a.getHostString() + ":" + a.getPort();
    }

    public Map<String, InetSocketAddress> members() {
        return members;
    }

    /** The text after NOTPRIMARY in errors for writes refused here. */
    public String notPrimaryText() {
        String p = role == Role.PRIMARY ? null : leaderId;
        if (p == null || p.equals(config.nodeId())) {
            return "no primary at the moment (election in progress)";
        }
        return "this member is a secondary; the primary is " + p + " at " + primaryAddress();
    }

    /** A secondary as the primary sees it: its client address, acknowledged index, and ms since its last pull. */
    public record Secondary(String id, String host, int port, long ackIndex, long lagMs, String transport,
                            String transportReason) {
    }

    /** The secondaries that pulled from this member while it is primary (empty on a secondary). */
    public List<Secondary> secondaries() {
        if (role != Role.PRIMARY) {
            return List.of();
        }
        long now = System.nanoTime();
        List<Secondary> out = new ArrayList<>();
        for (Progress p : progress.values()) {
            InetSocketAddress a = members.get(p.id);
            out.add(new Secondary(p.id, a == null ? "?" : a.getHostString(), a == null ? 0 : a.getPort(), p.ackIndex,
                (now - p.lastContactNanos) / 1_000_000, p.transport, p.transportReason));
        }
        return out;
    }

    /** A secondary's link to its primary: a pull answered within the last 2 s. */
    public boolean linkUp() {
        return pullingFrom != null && System.nanoTime() - lastPullNanos < 2_000_000_000L;
    }

    /** INFO replication, with Redis's field names where Redis has one. */
    public Map<String, String> info() {
        Map<String, String> m = new LinkedHashMap<>();
        long[] pos = store.lastPosition();
        m.put("role", role == Role.PRIMARY ? "master" : "slave");
        m.put("replica_set", config.setName());
        m.put("node_id", config.nodeId());
        m.put("member_state", role.name().toLowerCase(java.util.Locale.ROOT));
        m.put("term", Long.toString(term()));
        m.put("primary", primaryId() == null ? "" : primaryId());
        if (role == Role.PRIMARY) {
            List<Secondary> secondaries = secondaries();
            m.put("connected_slaves", Integer.toString(secondaries.size()));
            for (int i = 0; i < secondaries.size(); i++) {
                Secondary x = secondaries.get(i);
                m.put("slave" + i, "id=" + x.id() + ",ip=" + x.host() + ",port=" + x.port() + ",state="
                    + (x.lagMs() < 2000 ? "online" : "lost") + ",offset=" + x.ackIndex() + ",lag=" + (x.lagMs() / 1000)
                    + ",lag_ms=" + x.lagMs() + ",lag_records=" + Math.max(0, pos[1] - x.ackIndex()) + ",transport="
                    + x.transport());
                m.put("slave" + i + "_transport_reason", x.transportReason());
            }
            m.put("commit_index", Long.toString(commitIndex()));
        } else {
            String addr = primaryAddress();
            int colon = addr.lastIndexOf(':');
            m.put("master_host", colon > 0 ? addr.substring(0, colon) : "");
            m.put("master_port", colon > 0 ? addr.substring(colon + 1) : "0");
            m.put("master_link_status", linkUp() ? "up" : "down");
            m.put("master_last_io_seconds_ago", lastPullNanos == 0 ? "-1"
                : Long.toString((System.nanoTime() - lastPullNanos) / 1_000_000_000L));
            m.put("master_sync_in_progress", "0");
            m.put("slave_repl_offset", Long.toString(pos[1]));
            m.put("slave_read_only", "1");
            m.put("master_link_transport", pullTransport);
            m.put("master_link_transport_reason", pullReason);
            m.put("commit_index", Long.toString(primaryCommitIndex));
        }
        m.put("master_repl_offset", Long.toString(pos[1]));
        m.put("last_term", Long.toString(pos[0]));
        m.put("oplog_first_index", Long.toString(store.oplog().firstIndex()));
        m.put("oplog_bytes", Long.toString(store.oplog().bytes()));
        m.put("resyncs", Long.toString(resyncs));
        m.put("blob_last_path", lastBlobPath);
        m.put("blobs_staged", Long.toString(blobsStaged));
        m.put("blobs_pulled", Long.toString(blobsPulled));
        m.put("rollbacks", Long.toString(rollbacks));
        return m;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Persistence of the promised term
    // ---------------------------------------------------------------------------------------------------------------

    private Path termFile() {
        return dataDir.resolve("replica-set.term");
    }

    private long readAcceptedTerm() {
        try {
            return Long.parseLong(Files.readString(termFile(), StandardCharsets.US_ASCII).trim());
        } catch (IOException | NumberFormatException e) {
            return 0;
        }
    }

    /** Durable before the promise is acted on: a restarted member must not forget it. */
    private void writeAcceptedTerm(long term) {
        Path tmp = dataDir.resolve("replica-set.term.tmp");
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
                ch.write(ByteBuffer.wrap(Long.toString(term).getBytes(StandardCharsets.US_ASCII)));
                ch.force(true);
            }
            Files.move(tmp, termFile(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new IllegalStateException("cannot persist the promised term " + term + ": " + e.getMessage(), e);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        closed = true;
        stepDown("shutting down");
        if (controlPlane != null) {
            try {
                controlPlane.close();
            } catch (RuntimeException e) {
                LOG.warn("closing the control plane: {}", e.toString());
            }
        }
        puller.interrupt();
        control.shutdownNow();
        transfers.shutdownNow();
        timers.shutdownNow();
        warmer.shutdownNow();
        rpc.shutdownNow();
        try {
            puller.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (PeerChannel p : peers.values()) {
            p.close();
        }
        peers.clear();
    }
}
