package io.rdmastore.server.cluster;

import io.rdmastore.client.cluster.SlotMap;
import io.rdmastore.server.replication.ControlPlane;
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
 * <p>Resharding state ({@link #setMigrating}, {@link #setImporting}, the per-slot locks) is this node's own, in
 * memory: it lasts until a map of a higher epoch settles the slot, or a restart.
 *
 * <p>Threads: thread-safe. {@link #redirect} and {@link #view()} are called on every key-taking command from I/O
 * threads; they read volatile fields and allocate only for a redirect. {@link #install} may be called from any thread;
 * installs are serialised.
 */
public final class ClusterNode {
    private static final Logger LOG = LoggerFactory.getLogger(ClusterNode.class);
    static final String FILE = "cluster.map";

    /** A map with this node's place in it, computed once per map. */
    public record View(SlotMap map, String selfId, SlotMap.Shard self) {
    }

    private final Path file;
    private final Supplier<ReplicaSet> replicaSet;
    /** Slots this node is moving out (slot to the target's address) and in (slot to the source's address). */
    private final Map<Integer, String> migrating = new ConcurrentHashMap<>();
    private final Map<Integer, String> importing = new ConcurrentHashMap<>();
    /** Per migrating slot: commands hold it shared while they run, a batch move holds it exclusively. */
    private final Map<Integer, ReentrantReadWriteLock> slotLocks = new ConcurrentHashMap<>();
    /** Whether any slot migrates here: the only thing the routing hot path reads when none does. */
    private volatile boolean migrations;
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
            settle(v);
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
            Path tmp = file.resolveSibling(FILE + ".tmp");
            byte[] bytes = ("self " + id + "\n" + map.encode()).getBytes(StandardCharsets.UTF_8);
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
                ch.write(java.nio.ByteBuffer.wrap(bytes));
                ch.force(true);
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            try (FileChannel dir = FileChannel.open(file.getParent(), StandardOpenOption.READ)) {
                dir.force(true);
            }
        } catch (IOException e) {
            return CompletableFuture.failedFuture(new UncheckedIOException("cannot write " + file, e));
        }
        view = new View(map, id, map.shardOfNode(id));
        settle(view);
        LOG.info("cluster: {} installed, this node {} in shard {}", map, id, view.self().name());
        return CompletableFuture.completedFuture(null);
    }

    // ---- slot migration (docs/cluster.md, "Resharding") ----

    /** Whether any slot is being moved out of or into this node: false makes routing skip the checks below. */
    public boolean migrations() {
        return migrations;
    }

    /** The address a slot this node owns is moving to, or null. */
    public String migratingTo(int slot) {
        return migrations ? migrating.get(slot) : null;
    }

    /** The address a slot is moving in from, or null. */
    public String importingFrom(int slot) {
        return migrations ? importing.get(slot) : null;
    }

    /** CLUSTER SETSLOT slot MIGRATING: this node's shard owns the slot and starts moving its keys to {@code target}. */
    public void setMigrating(int slot, String target) {
        importing.remove(slot);
        slotLocks.computeIfAbsent(slot, s -> new ReentrantReadWriteLock());
        migrating.put(slot, target);
        migrations = true;
        LOG.info("cluster: slot {} migrating to {}", slot, target);
    }

    /** CLUSTER SETSLOT slot IMPORTING: keys of the slot arrive from {@code source}; ASKING clients are served here. */
    public void setImporting(int slot, String source) {
        migrating.remove(slot);
        importing.put(slot, source);
        migrations = true;
        LOG.info("cluster: slot {} importing from {}", slot, source);
    }

    /** CLUSTER SETSLOT slot STABLE: forgets the slot's migration state. */
    public void setStable(int slot) {
        migrating.remove(slot);
        importing.remove(slot);
        migrations = !migrating.isEmpty() || !importing.isEmpty();
    }

    /** The lock of a migrating slot (null when the slot does not migrate out of here). */
    public ReentrantReadWriteLock slotLock(int slot) {
        return slotLocks.get(slot);
    }

    /** A new map ends the moves it settles: slots now owned elsewhere stop migrating, slots now owned here importing. */
    private void settle(View v) {
        if (!migrations) {
            return;
        }
        migrating.keySet().removeIf(slot -> v.map().owner(slot) != v.self());
        importing.keySet().removeIf(slot -> v.map().owner(slot) == v.self());
        migrations = !migrating.isEmpty() || !importing.isEmpty();
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
