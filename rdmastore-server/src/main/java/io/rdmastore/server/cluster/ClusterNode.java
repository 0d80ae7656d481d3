package io.rdmastore.server.cluster;

import io.rdmastore.client.cluster.SlotMap;
import io.rdmastore.server.replication.ControlPlane;
import io.rdmastore.server.replication.ControlPlane.SlotMigration;
import io.rdmastore.server.replication.ReplicaSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;

/**
 * This node's part in a sharded cluster: its copy of the {@link SlotMap}, which shard it belongs to, and the routing
 * decision for a slot ({@link #redirect}).
 *
 * <p>Where the map lives. A member of a replica set keeps it in the set's Ratis control plane (a {@code
 * SET_SLOT_MAP} record; every member of the shard applies the same map, and the control plane refuses a lower epoch);
 * its id in the map is its member id. A node without a replica set is a one-member shard: it keeps the map, and the
 * id it was given in it, in {@code <dataDir>/cluster.map}, written whole and renamed into place. Either way the map
 * survives restarts and only moves to a higher epoch.
 *
 * <p>Resharding state ({@link #setMigrating}, {@link #setImporting}) is recorded where the map is, under the map's
 * epoch: a replica set's control plane ({@code SET_SLOT_STATE}), so its next primary and a restarted member answer
 * for the move as before, or a one-member shard's {@code <dataDir>/cluster.slots}. A map of a higher epoch ends
 * every state recorded under the one before. The per-slot locks and ASK fences are this node's own, in memory.
 *
 * <p>Threads: thread-safe. {@link #redirect} and {@link #view()} are called on every key-taking command from I/O
 * threads; they read volatile fields and allocate only for a redirect. {@link #install} may be called from any thread;
 * installs are serialised.
 */
public final class ClusterNode {
    private static final Logger LOG = LoggerFactory.getLogger(ClusterNode.class);
    static final String FILE = "cluster.map";
    /** A one-member shard's slot migration states: "epoch E", then "slot kind peer" lines. */
    static final String SLOTS_FILE = "cluster.slots";

    /** A map with this node's place in it, computed once per map. */
    public record View(SlotMap map, String selfId, SlotMap.Shard self) {
    }

    private final Path file;
    private final Supplier<ReplicaSet> replicaSet;
    /** Per migrating slot: commands hold it shared while they run, a batch move holds it exclusively. */
    private final Map<Integer, ReentrantReadWriteLock> slotLocks = new ConcurrentHashMap<>();
    /** Per migrating slot: {term, oplog index} a majority must hold before this node answers ASK (askAllowed). */
    private final Map<Integer, long[]> fences = new ConcurrentHashMap<>();
    /** Other shards' primaries as their members last said (shard name to member id); hints, not agreement. */
    private final Map<String, String> primaryHints = new ConcurrentHashMap<>();
    private volatile java.util.concurrent.ScheduledExecutorService watcher;

    /**
     * Asks the member at {@code host:port} which member of its replica set is primary (native ROLE); returns its id,
     * or null when it knows none. Called on the watcher thread; may block up to a short time-out.
     */
    public interface PrimaryProbe {
        String primaryId(String address) throws Exception;
    }
    private volatile View view;
    /** The control-plane text the current view was parsed from (replica sets): a reference compare finds changes. */
    private volatile String viewText;

    /**
     * @param dataDir the server's data directory ({@code cluster.map} of a one-member shard is read from it now)
     * @param replicaSet the server's replica set, or a supplier of null when it runs without one
     * @throws UncheckedIOException when the map file exists but cannot be read
     * @throws IllegalArgumentException when it is not a valid map
     */
    public ClusterNode(Path dataDir, Supplier<ReplicaSet> replicaSet) {
        this.file = dataDir.resolve(FILE);
        this.replicaSet = Objects.requireNonNull(replicaSet);
        View v = new View(SlotMap.EMPTY, null, null);
        if (Files.exists(file)) {
            try {
                String text = Files.readString(file, StandardCharsets.UTF_8);
                int nl = text.indexOf('\n');
                if (!text.startsWith("self ") || nl < 0) {
                    throw new IllegalArgumentException(file + " does not start with a 'self' line");
                }
                String self = text.substring(5, nl).strip();
                SlotMap map = SlotMap.parse(text.substring(nl + 1));
                v = new View(map, self, map.shardOfNode(self));
                LOG.info("cluster: {} from {}, this node {}", map, file, self);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + file, e);
            }
        }
        view = v;
        local = readLocal(dataDir.resolve(SLOTS_FILE));
    }

    /** The current map and this node's place in it. */
    public View view() {
        ReplicaSet rs = replicaSet.get();
        if (rs == null) {
            return view;
        }
        ControlPlane cp = rs.controlPlane();
        String text = cp == null ? null : cp.slotMap();
        if (text != null && text != viewText) {
            View v;
            try {
                SlotMap map = SlotMap.parse(text);
                v = new View(map, rs.nodeId(), map.shardOfNode(rs.nodeId()));
            } catch (IllegalArgumentException e) {
                LOG.warn("cluster: the control plane holds a slot map this node cannot read: {}", e.getMessage());
                v = view;
            }
            view = v;
            viewText = text;
        } else if (view.selfId() == null) {
            view = new View(view.map(), rs.nodeId(), null);
        }
        return view;
    }

    /** The map this node holds (epoch 0 and no shards before {@code cluster create}). */
    public SlotMap map() {
        return view().map();
    }

    /** This node's id in the map: its replica-set member id, else the id it was given; null before any map. */
    public String selfId() {
        return view().selfId();
    }

    /** Redis's 40-hex-digit node id for a node id of the map: the SHA-1 of it, so it is the same on every node. */
    public static String redisId(String nodeId) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1")
                .digest(nodeId.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Where a client asking for {@code slot} must go: null when this node serves it, else the error text ({@code
     * MOVED slot host:port}, or {@code CLUSTERDOWN} for a slot no shard serves).
     *
     * @param write whether the command writes
     * @param replicaReads whether the client asked to read from secondaries (READONLY); a secondary of the owning
     *     shard serves its reads then, and sends it to the primary otherwise
     */
    public String redirect(int slot, boolean write, boolean replicaReads) {
        View v = view();
        SlotMap.Shard owner = v.map().owner(slot);
        if (owner == null) {
            return "CLUSTERDOWN Hash slot not served";
        }
        if (owner != v.self()) {
            return "MOVED " + slot + " " + leader(owner).address();
        }
        ReplicaSet rs = replicaSet.get();
        if (rs != null && rs.role() != ReplicaSet.Role.PRIMARY && (write || !replicaReads)) {
            String primary = rs.primaryAddress();
            if (!primary.isEmpty()) {
                return "MOVED " + slot + " " + primary;
            }
        }
        return null;
    }

    /**
     * Installs {@code map}: a replica set records it in its control plane (every member applies it), a one-member
     * shard writes its file. {@code selfId} is this node's id in the map, used by a node without a replica set (a
     * member is known by its member id).
     *
     * @return completes once the map is durable here; fails with {@link IllegalStateException} when this node holds a
     *     higher epoch (or another map of the same epoch), or when the map does not name this node
     */
    public synchronized CompletableFuture<Void> install(SlotMap map, String selfId) {
        ReplicaSet rs = replicaSet.get();
        String id = rs != null ? rs.nodeId() : selfId;
        if (id == null || id.isEmpty() || map.shardOfNode(id) == null) {
            return CompletableFuture.failedFuture(new IllegalStateException("the slot map does not name this node ("
                + (id == null || id.isEmpty() ? "no id given" : id) + ")"));
        }
        View current = view();
        if (map.epoch() < current.map().epoch() || map.epoch() == current.map().epoch()
            && !map.equals(current.map())) {
            return CompletableFuture.failedFuture(new IllegalStateException("slot map of epoch " + map.epoch()
                + " refused: epoch " + current.map().epoch() + " is held already"));
        }
        if (rs != null) {
            ControlPlane cp = rs.controlPlane();
            if (cp == null) {
                return CompletableFuture.failedFuture(new IllegalStateException("the replica set is not started"));
            }
            return cp.setSlotMap(map.epoch(), map.encode()).thenRun(() -> LOG.info("cluster: {} recorded", map));
        }
        try {
            writeDurably(file, "self " + id + "\n" + map.encode());
        } catch (IOException e) {
            return CompletableFuture.failedFuture(new UncheckedIOException("cannot write " + file, e));
        }
        // the migration states recorded under the old epoch end with it (migrationState ignores them)
        view = new View(map, id, map.shardOfNode(id));
        LOG.info("cluster: {} installed, this node {} in shard {}", map, id, view.self().name());
        return CompletableFuture.completedFuture(null);
    }

    // ---- slot migration (docs/cluster.md, "Resharding") ----

    /** The migration states recorded (control plane or file) and what they mean under one view; swapped whole. */
    private record Migrations(Map<Integer, SlotMigration> recorded, View view, Map<Integer, String> migrating,
                              Map<Integer, String> importing) {
        static final Migrations NONE = new Migrations(Map.of(), null, Map.of(), Map.of());
    }

    private volatile Migrations migrationCache = Migrations.NONE;

    /**
     * The states recorded under the map held, as this node's view reads them: MIGRATING counts only for a slot its
     * shard owns, IMPORTING only for one it does not (a new map settles a move without any SETSLOT).
     */
    private Migrations migrationState() {
        View v = view();
        Map<Integer, SlotMigration> recorded;
        ReplicaSet rs = replicaSet.get();
        if (rs != null) {
            ControlPlane cp = rs.controlPlane();
            recorded = cp == null ? Map.of() : cp.slotMigrations();
        } else {
            Local l = local;
            recorded = l.epoch() == v.map().epoch() ? l.states() : Map.of();
        }
        Migrations m = migrationCache;
        if (m.recorded() == recorded && m.view() == v) {
            return m;
        }
        Map<Integer, String> out = new HashMap<>();
        Map<Integer, String> in = new HashMap<>();
        for (SlotMigration x : recorded.values()) {
            boolean mine = v.self() != null && v.map().owner(x.slot()) == v.self();
            if (x.kind() == SlotMigration.MIGRATING && mine) {
                out.put(x.slot(), x.peer());
            } else if (x.kind() == SlotMigration.IMPORTING && !mine) {
                in.put(x.slot(), x.peer());
            }
        }
        m = new Migrations(recorded, v, Map.copyOf(out), Map.copyOf(in));
        migrationCache = m;
        return m;
    }

    /**
     * Whether any slot is being moved out of or into this node: false makes routing skip the checks below. A
     * secondary of a replica set never answers for a move (it sends clients to its primary, which does): its copy
     * of the keys may lag, so a key missing here may still be on the shard.
     */
    public boolean migrations() {
        Migrations m = migrationState();
        if (m.migrating().isEmpty() && m.importing().isEmpty()) {
            return false;
        }
        ReplicaSet rs = replicaSet.get();
        return rs == null || rs.role() == ReplicaSet.Role.PRIMARY;
    }

    /** The address a slot this node owns is moving to (the target shard's primary as known here), or null. */
    public String migratingTo(int slot) {
        String shard = migrationState().migrating().get(slot);
        if (shard == null) {
            return null;
        }
        SlotMap.Shard target = view().map().shard(shard);
        return target == null ? null : leader(target).address();
    }

    /** The name of the shard a slot is moving in from, or null (always null on a secondary, see migrations()). */
    public String importingFrom(int slot) {
        String source = migrationState().importing().get(slot);
        ReplicaSet rs = source == null ? null : replicaSet.get();
        return rs != null && rs.role() != ReplicaSet.Role.PRIMARY ? null : source;
    }

    /**
     * CLUSTER SETSLOT slot MIGRATING: this node's shard owns the slot and starts moving its keys to shard {@code
     * target}. Completes once recorded durably (a replica set: committed by its control plane, so its next primary
     * keeps answering for the move; a one-member shard: its file fsynced).
     */
    public CompletableFuture<Void> setMigrating(int slot, String target) {
        return record(slot, SlotMigration.MIGRATING, target);
    }

    /** CLUSTER SETSLOT slot IMPORTING: keys of the slot arrive from shard {@code source}; ASKING clients are served. */
    public CompletableFuture<Void> setImporting(int slot, String source) {
        return record(slot, SlotMigration.IMPORTING, source);
    }

    /** CLUSTER SETSLOT slot STABLE: forgets the slot's migration state. */
    public CompletableFuture<Void> setStable(int slot) {
        return record(slot, SlotMigration.STABLE, "");
    }

    private CompletableFuture<Void> record(int slot, byte kind, String peer) {
        long epoch = view().map().epoch();
        ReplicaSet rs = replicaSet.get();
        if (rs != null) {
            ControlPlane cp = rs.controlPlane();
            if (cp == null) {
                return CompletableFuture.failedFuture(new IllegalStateException("the replica set is not started"));
            }
            return cp.setSlotMigration(epoch, slot, kind, peer).thenRun(() -> LOG.info("cluster: slot {} {} {}"
                + " recorded", slot, kindName(kind), peer));
        }
        synchronized (this) {
            Local l = local;
            Map<Integer, SlotMigration> next = new HashMap<>(l.epoch() == epoch ? l.states() : Map.of());
            if (kind == SlotMigration.STABLE) {
                next.remove(slot);
            } else {
                next.put(slot, new SlotMigration(slot, kind, peer));
            }
            Local written = new Local(epoch, Map.copyOf(next));
            StringBuilder text = new StringBuilder("epoch ").append(epoch).append('\n');
            for (SlotMigration x : written.states().values()) {
                text.append(x.slot()).append(' ').append(x.kind()).append(' ').append(x.peer()).append('\n');
            }
            try {
                writeDurably(file.resolveSibling(SLOTS_FILE), text.toString());
            } catch (IOException e) {
                return CompletableFuture.failedFuture(new UncheckedIOException("cannot write " + SLOTS_FILE, e));
            }
            local = written;
        }
        LOG.info("cluster: slot {} {} {}", slot, kindName(kind), peer);
        return CompletableFuture.completedFuture(null);
    }

    private static String kindName(byte kind) {
        return kind == SlotMigration.MIGRATING ? "migrating to" : kind == SlotMigration.IMPORTING ? "importing from"
            : "stable";
    }

    /** A one-member shard's migration states, read from and written to {@code cluster.slots}. */
    private record Local(long epoch, Map<Integer, SlotMigration> states) {
    }

    private volatile Local local = new Local(-1, Map.of());

    private static Local readLocal(Path path) {
        if (!Files.exists(path)) {
            return new Local(-1, Map.of());
        }
        try {
            List<String> lines = Files.readAllLines(path, StandardCharsets.UTF_8);
            if (lines.isEmpty() || !lines.get(0).startsWith("epoch ")) {
                throw new IllegalArgumentException(path + " does not start with an 'epoch' line");
            }
            long epoch = Long.parseLong(lines.get(0).substring(6).strip());
            Map<Integer, SlotMigration> states = new HashMap<>();
            for (String line : lines.subList(1, lines.size())) {
                String[] f = line.strip().split(" ", 3);
                if (f.length == 3) {
                    int slot = Integer.parseInt(f[0]);
                    states.put(slot, new SlotMigration(slot, Byte.parseByte(f[1]), f[2]));
                }
            }
            return new Local(epoch, Map.copyOf(states));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + path, e);
        }
    }

    /** Writes {@code text} to a temporary file, fsyncs it and renames it over {@code path} (and fsyncs the dir). */
    private static void writeDurably(Path path, String text) throws IOException {
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
            StandardOpenOption.TRUNCATE_EXISTING)) {
            ch.write(java.nio.ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)));
            ch.force(true);
        }
        Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        try (FileChannel dir = FileChannel.open(path.getParent(), StandardOpenOption.READ)) {
            dir.force(true);
        }
    }

    /** The lock of a migrating slot (null when the slot does not migrate out of here). */
    public ReentrantReadWriteLock slotLock(int slot) {
        if (!migrationState().migrating().containsKey(slot)) {
            return null;
        }
        return slotLocks.computeIfAbsent(slot, s -> new ReentrantReadWriteLock());
    }

    /**
     * Whether this node may send clients to the target with {@code -ASK} for a key of a migrating slot it does not
     * hold: only once its replica set holds on a majority every record up to the slot's fence (the deletes of its
     * moved keys, see {@link #raiseFence}; for a primary that did not see those deletes itself, everything its log
     * held when it first answered for the slot in its term). Else a failover could bring back a moved key here
     * while clients already write it on the target. A one-member shard always may.
     *
     * @param lastIndex this node's oplog index now (the fence of a slot first seen in this term)
     */
    public boolean askAllowed(int slot, long lastIndex) {
        ReplicaSet rs = replicaSet.get();
        if (rs == null) {
            return true;
        }
        long term = rs.term();
        long[] f = fences.compute(slot, (s, old) -> old == null || old[0] != term ? new long[] {term, lastIndex} : old);
        return rs.commitIndex() >= f[1];
    }

    /** After a MIGRATE deleted moved keys here at oplog index {@code index}: ASK waits until a majority holds it. */
    public void raiseFence(int slot, long index) {
        ReplicaSet rs = replicaSet.get();
        if (rs == null) {
            return;
        }
        long term = rs.term();
        fences.merge(slot, new long[] {term, index}, (old, now) -> old[0] != term ? now
            : new long[] {term, Math.max(old[1], index)});
    }

    // ---- other shards' primaries ----

    /**
     * The member of {@code shard} to send clients to: for this node's own replica set the primary it knows, for other
     * shards the primary their members last named (see {@link #watchPrimaries}), else the map's first member.
     */
    public SlotMap.Node leader(SlotMap.Shard shard) {
        String id = null;
        ReplicaSet rs = replicaSet.get();
        if (rs != null && shard == view().self()) {
            id = rs.primaryId();
        } else if (shard.nodes().size() > 1) {
            id = primaryHints.get(shard.name());
        }
        if (id != null) {
            for (SlotMap.Node n : shard.nodes()) {
                if (n.id().equals(id)) {
                    return n;
                }
            }
        }
        return shard.first();
    }

    /**
     * Every {@code periodMillis}, asks a member of each other shard of several members who its primary is, so MOVED
     * replies and CLUSTER SLOTS/NODES name a shard's new primary soon after its failover (each shard's own control
     * plane elected it; nothing is agreed here). Stopped by {@link #close()}.
     */
    public synchronized void watchPrimaries(PrimaryProbe probe, long periodMillis) {
        if (watcher != null) {
            return;
        }
        watcher = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "rdmastore-cluster-primaries");
            t.setDaemon(true);
            return t;
        });
        watcher.scheduleWithFixedDelay(() -> pollPrimaries(probe), 0, periodMillis,
            java.util.concurrent.TimeUnit.MILLISECONDS);
    }

    private void pollPrimaries(PrimaryProbe probe) {
        View v = view();
        for (SlotMap.Shard s : v.map().shards()) {
            if (s == v.self() || s.nodes().size() < 2) {
                continue;
            }
            // ask the hinted primary first: it answers for itself while it leads
            List<SlotMap.Node> order = new java.util.ArrayList<>(s.nodes());
            SlotMap.Node hinted = leader(s);
            order.remove(hinted);
            order.add(0, hinted);
            for (SlotMap.Node n : order) {
                try {
                    String id = probe.primaryId(n.address());
                    if (id != null && !id.isEmpty()) {
                        String before = primaryHints.put(s.name(), id);
                        if (!id.equals(before)) {
                            LOG.info("cluster: shard {} primary is {}", s.name(), id);
                        }
                        break;
                    }
                } catch (Exception e) {
                    LOG.debug("cluster: {} of shard {} did not say who its primary is: {}", n.id(), s.name(),
                        e.toString());
                }
            }
        }
    }

    /** Stops the primary watcher. */
    public synchronized void close() {
        if (watcher != null) {
            watcher.shutdownNow();
            watcher = null;
        }
    }
}
