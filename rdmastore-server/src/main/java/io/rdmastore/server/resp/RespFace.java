package io.rdmastore.server.resp;

import io.netty.channel.ChannelPipeline;
import io.rdmastore.store.Store;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The Redis-compatible face of the server (RESP2 and RESP3 on the server's TCP port). The TCP carrier calls
 * {@link #initialize(ChannelPipeline)} for every connection whose first bytes are not the native preface; from then on
 * the connection speaks RESP and every command runs against the {@link Store} given here, so writes made through RESP go
 * through the same durable log as native writes.
 *
 * <p>Threads: thread-safe. {@link #initialize} is called on the connection's event loop; each connection's commands then
 * run on that loop. The hooks in {@link Context} are called from event loops and must not block for long.
 */
public final class RespFace {
    private static final Logger LOG = LoggerFactory.getLogger(RespFace.class);

    /** The Redis version the face reports in HELLO and INFO; clients pick features by it. */
    public static final String REDIS_VERSION = "7.0.15";

    /** Redis's default {@code proto-max-bulk-len}: 512 MB. */
    public static final long DEFAULT_MAX_BULK_LENGTH = 512L * 1024 * 1024;

    /** Settings reachable through CONFIG GET/SET that the face does not own itself (the server's). */
    public interface ConfigHooks {
        /** Every setting the server exposes, name to current value; names are lower case. */
        Map<String, String> all();

        /**
         * Changes one setting.
         *
         * @return null on success, or the error text (without the "ERR " prefix) when the name is unknown to the
         *     server or the value is refused
         */
        String set(String name, String value);
    }

    /** A native (non-RESP) client, for CLIENT LIST and INFO clients. */
    public record NativeClient(long id, String address, String localAddress, String transport, String name,
                               long ageSeconds, String detail) {
    }

    /** Configuration; validated once by the {@link RespFace} constructor. Not thread-safe; build it on one thread. */
    public static final class Context {
        private String password;
        private long maxBulkLength = DEFAULT_MAX_BULK_LENGTH;
        private Supplier<Map<String, Map<String, String>>> serverInfo = Map::of;
        /** The server's replica-set membership (null: standalone), for ROLE, WAIT, SENTINEL and INFO replication. */
        private Supplier<io.rdmastore.server.replication.ReplicaSet> replicaSet = () -> null;
        private ConfigHooks config;
        /** The server's cluster mode (null: off), for slot routing, CLUSTER and INFO cluster. */
        private Supplier<io.rdmastore.server.cluster.ClusterNode> cluster = () -> null;
        private Supplier<? extends Collection<NativeClient>> nativeClients = List::of;
        private LongSupplier clientIds;
        private int port;
        private Supplier<String> admission = () -> null;
        private java.util.function.Consumer<String> passwordChanged = p -> { };
        private long maxOutputBytes = 1L << 30;
        private long longCommandElements = 1000;
        private int longCommandThreads = RespLongCommands.defaultThreads();

        /**
         * Long commands (KEYS, SMEMBERS, HGETALL, SORT, LRANGE, SUNION, ... of at least this many elements, see
         * {@link RespLongCommands}) run on the face's pool instead of the connection's event loop. Long.MAX_VALUE: all
         * commands run on the loop. Default 1000, at least 1.
         */
        public Context longCommandElements(long value) {
            longCommandElements = value;
            return this;
        }

        /** Threads of the long-command pool. Default half the cores, 1 to 4. */
        public Context longCommandThreads(int value) {
            longCommandThreads = value;
            return this;
        }

        /**
         * Told the new password (null: none) when CONFIG SET requirepass changes it, so the server's other faces (the
         * native protocol's HELLO) use the same one. Called on an event loop. Default: nothing.
         */
        public Context passwordChanged(java.util.function.Consumer<String> value) {
            passwordChanged = Objects.requireNonNull(value);
            return this;
        }

        /**
         * Decides whether one more client may connect (the server's {@code maxclients}, shared with native clients):
         * returns null to admit, else the error text sent before the close. Called on an event loop. Default admits all.
         */
        public Context admission(Supplier<String> value) {
            admission = Objects.requireNonNull(value);
            return this;
        }

        /**
         * Most reply bytes queued for a client that does not read them; past it the client is disconnected, as by
         * Redis's {@code client-output-buffer-limit}. 0 means no limit. Default 1 GiB.
         */
        public Context maxOutputBytes(long value) {
            maxOutputBytes = value;
            return this;
        }
        private String version;

        /** The {@code requirepass} password of the {@code default} user; null or empty means none. Default none. */
        public Context password(String value) {
            password = value == null || value.isEmpty() ? null : value;
            return this;
        }

        /** {@code proto-max-bulk-len}: the largest argument accepted. Default 512 MB, at least 1 MB. */
        public Context maxBulkLength(long value) {
            maxBulkLength = value;
            return this;
        }

        /**
         * Extra INFO content: section name (lower case, e.g. "server", "rdmastore") to fields. Fields of a section the
         * face writes itself are appended to it; other sections are added. Default none.
         */
        public Context replicaSet(Supplier<io.rdmastore.server.replication.ReplicaSet> value) {
            replicaSet = Objects.requireNonNull(value);
            return this;
        }

        /** The server's part in a sharded cluster (a supplier of null: not in cluster mode). Default off. */
        public Context cluster(Supplier<io.rdmastore.server.cluster.ClusterNode> value) {
            cluster = Objects.requireNonNull(value);
            return this;
        }

        public Context serverInfo(Supplier<Map<String, Map<String, String>>> value) {
            serverInfo = Objects.requireNonNull(value);
            return this;
        }

        /** The server's settings for CONFIG GET/SET. Default: only the face's own settings. */
        public Context config(ConfigHooks value) {
            config = value;
            return this;
        }

        /** Native clients to show in CLIENT LIST and count in INFO. Default none. */
        public Context nativeClients(Supplier<? extends Collection<NativeClient>> value) {
            nativeClients = Objects.requireNonNull(value);
            return this;
        }

        /** Source of client ids shared with native connections. Default: the face's own counter from 1. */
        public Context clientIds(LongSupplier value) {
            clientIds = value;
            return this;
        }

        /** The TCP port, for INFO server. Default 0 (unknown). */
        public Context port(int value) {
            port = value;
            return this;
        }

        /** rdmastore's version, for INFO server's {@code rdmastore_version}. Default: the jar's, else "unknown". */
        public Context version(String value) {
            version = value;
            return this;
        }

        void conclude() {
            if (maxBulkLength < 1024 * 1024 || maxBulkLength > Integer.MAX_VALUE - 16) {
                throw new IllegalArgumentException("maxBulkLength must be between 1 MB and 2 GB, got " + maxBulkLength);
            }
            if (maxOutputBytes < 0) {
                throw new IllegalArgumentException("maxOutputBytes must be >= 0, got " + maxOutputBytes);
            }
            if (longCommandElements < 1) {
                throw new IllegalArgumentException("longCommandElements must be >= 1, got " + longCommandElements);
            }
            if (longCommandThreads < 1 || longCommandThreads > 64) {
                throw new IllegalArgumentException("longCommandThreads must be between 1 and 64, got "
                    + longCommandThreads);
            }
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port out of range: " + port);
            }
        }
    }

    final Store store;
    final RespCommands commands;
    /** Clients blocked on list keys (BLPOP ...), transactions and WATCH, pub/sub. */
    final RespBlocking blocking;
    final RespMulti multi;
    final RespPubSub pubsub;
    final RespNotify notify;
    /** Runs long commands off the event loops (and off native sessions' transport threads). */
    final RespLongCommands longCommands;
    private final Context ctx;
    private final AtomicLong ownIds = new AtomicLong();
    private final Map<Long, RespConnection> clients = new ConcurrentHashMap<>();
    final long startMillis = System.currentTimeMillis();
    private volatile String password;
    private volatile long maxBulkLength;

    final LongAdder commandsProcessed = new LongAdder();
    final LongAdder connectionsReceived = new LongAdder();
    final LongAdder protocolErrors = new LongAdder();
    final LongAdder keyspaceHits = new LongAdder();
    final LongAdder keyspaceMisses = new LongAdder();
    /** Per command (by ordinal): calls, microseconds spent, calls that replied an error; for INFO commandstats. */
    final LongAdder[] commandCalls = adders();
    final LongAdder[] commandMicros = adders();
    final LongAdder[] commandFailed = adders();
    final LongAdder commandsRejected = new LongAdder();
    /** Error replies by their code (the first word: ERR, WRONGTYPE, ...); for INFO errorstats. */
    final Map<String, LongAdder> errorCodes = new ConcurrentHashMap<>();
    final LongAdder errorReplies = new LongAdder();
    /** Redis settings accepted and shown but not applied (encodings, eviction, ...). */
    final RespSettings settings = new RespSettings();
    /** MIGRATE's one-sided batches, both ends (docs/cluster.md). */
    final KeyMigration migration = new KeyMigration(this);
    final String version;

    /** A face serving {@code store}; the caller keeps owning the store and closes it after the listener. */
    public RespFace(Store store, Context context) {
        this.store = Objects.requireNonNull(store, "store");
        context.conclude();
        this.ctx = context;
        this.password = context.password;
        this.maxBulkLength = context.maxBulkLength;
        this.blocking = new RespBlocking(this);
        this.multi = new RespMulti(this);
        this.pubsub = new RespPubSub(this);
        this.notify = new RespNotify(this);
        this.commands = new RespCommands(this);
        this.longCommands = new RespLongCommands(store, context.longCommandElements, context.longCommandThreads);
        store.keyListener(new Store.KeyListener() {
            @Override
            public void keyChanged(byte[] key, boolean expired) {
                if (multi.anyWatched()) {
                    multi.keyChanged(new Bytes(key));
                }
                blocking.keyChanged(key);
                notify.keyChanged(key, expired);
            }

            @Override
            public boolean wantsKeys() {
                return multi.anyWatched() || blocking.anyBlocked() || notify.flags != 0;
            }

            @Override
            public boolean wantsCreations() {
                return (notify.flags & RespNotify.NEW) != 0;
            }

            @Override
            public void keyCreated(byte[] key) {
                notify.created(key);
            }

            @Override
            public void flushing(java.util.function.Predicate<byte[]> live) {
                multi.flushing(live);
            }
        });
        String v = context.version != null ? context.version : RespFace.class.getPackage().getImplementationVersion();
        this.version = v != null ? v : "unknown";
    }

    private static LongAdder[] adders() {
        LongAdder[] a = new LongAdder[RespCommand.count()];
        for (int i = 0; i < a.length; i++) {
            a[i] = new LongAdder();
        }
        return a;
    }

    /** Counts one error reply under its code; called by the writers of every connection. */
    void countError(String text) {
        int sp = text.indexOf(' ');
        String code = sp > 0 ? text.substring(0, sp) : text;
        if (code.length() > 32) {
            code = code.substring(0, 32);
        }
        errorReplies.increment();
        errorCodes.computeIfAbsent(code, k -> new LongAdder()).increment();
    }

    /** CONFIG RESETSTAT: zeroes the command and error statistics. */
    void resetStats() {
        for (int i = 0; i < commandCalls.length; i++) {
            commandCalls[i].reset();
            commandMicros[i].reset();
            commandFailed[i].reset();
        }
        commandsRejected.reset();
        errorCodes.clear();
        errorReplies.reset();
        keyspaceHits.reset();
        keyspaceMisses.reset();
    }

    /**
     * Installs the RESP handler on a connection's pipeline. Pass it as the TCP carrier's foreign-protocol consumer; the
     * carrier then re-fires the bytes it has already read, which the handler decodes as RESP. Call on the channel's
     * event loop.
     */
    public void initialize(ChannelPipeline pipeline) {
        long id = ctx.clientIds != null ? ctx.clientIds.getAsLong() : ownIds.incrementAndGet();
        connectionsReceived.increment();
        pipeline.addLast("resp", new RespConnection(this, id, password == null));
    }

    /** The number of RESP connections open now. */
    public int connectedClients() {
        return clients.size();
    }

    /** Total commands processed since start. */
    public long commandsProcessed() {
        return commandsProcessed.sum();
    }

    /** Whether {@code maxmemory} is set and the memory in use (heap and off-heap) is over it. Any thread. */
    boolean overMaxmemory() {
        String v = settings.get("maxmemory");
        if (v == null || v.equals("0")) {
            return false;
        }
        long max;
        try {
            max = Long.parseLong(v);
        } catch (NumberFormatException e) {
            return false;
        }
        Runtime rt = Runtime.getRuntime();
        long used = rt.totalMemory() - rt.freeMemory() + store.stats().usedOffHeapBytes();
        return max > 0 && used > max;
    }

    /**
     * With {@code maxmemory} set, an {@code allkeys-*} policy and the memory in use over it, deletes random keys (at
     * most 10000 per call) until it is not, each with an {@code evicted} keyspace event. rdmastore keeps no access
     * times, so the LRU, LFU and random policies all evict at random; the {@code volatile-*} policies evict nothing.
     * Called before a command that may use more memory and when the setting changes; the caller's event loop.
     */
    void evictIfNeeded() {
        if (!overMaxmemory()) {
            return;
        }
        String policy = settings.get("maxmemory-policy");
        if (policy == null || !policy.startsWith("allkeys")) {
            return;
        }
        for (int i = 0; i < 10_000 && overMaxmemory(); i++) {
            byte[] k = store.randomKey();
            if (k == null) {
                return;
            }
            if (store.delete(k) > 0) {
                notify.evicted(k);
            }
        }
    }

    /** A connection closed: it leaves the blocked-client queues, its watches and its subscriptions. */
    void disconnected(RespConnection c) {
        blocking.disconnected(c);
        multi.discard(c);
        pubsub.unsubscribeAll(c);
    }

    /** MIGRATE's one-sided key moves: the native opcode MIGRATE_PULL lands here, and the server gives it channels. */
    public KeyMigration migration() {
        return migration;
    }

    /** Tests: {@code hook} runs on the long-command pool before each long command (null: none). */
    public void beforeLongCommand(Runnable hook) {
        longCommands.beforeRun = hook;
    }

    /** Closes every RESP connection (server shutdown). */
    public void closeAll() {
        migration.close();
        blocking.close();
        longCommands.close();
        for (RespConnection c : clients.values()) {
            c.kill();
        }
        LOG.info("closed {} RESP connections", clients.size());
    }

    // ---- package-private state for the commands ----

    void register(RespConnection c) {
        clients.put(c.id, c);
    }

    void unregister(RespConnection c) {
        clients.remove(c.id);
    }

    void commandsProcessed(long n) {
        commandsProcessed.add(n);
    }

    List<RespConnection> clients() {
        List<RespConnection> list = new ArrayList<>(clients.values());
        list.sort((a, b) -> Long.compare(a.id, b.id));
        return list;
    }

    RespConnection client(long id) {
        return clients.get(id);
    }

    Collection<NativeClient> nativeClients() {
        try {
            return ctx.nativeClients.get();
        } catch (RuntimeException e) {
            LOG.warn("native client list hook failed", e);
            return List.of();
        }
    }

    Map<String, Map<String, String>> extraInfo() {
        try {
            Map<String, Map<String, String>> out = new LinkedHashMap<>(RespCluster.info(cluster(), migration));
            for (Map.Entry<String, Map<String, String>> e : ctx.serverInfo.get().entrySet()) {
                out.merge(e.getKey(), e.getValue(), (a, b) -> {
                    Map<String, String> m = new LinkedHashMap<>(a);
                    m.putAll(b);
                    return m;
                });
            }
            return out;
        } catch (RuntimeException e) {
            LOG.warn("server info hook failed", e);
            return Map.of();
        }
    }

    int port() {
        return ctx.port;
    }

    /** Null when one more client may connect, else the refusal text. */
    String admit() {
        try {
            return ctx.admission.get();
        } catch (RuntimeException e) {
            LOG.warn("admission hook failed", e);
            return "ERR server error";
        }
    }

    long maxOutputBytes() {
        return ctx.maxOutputBytes;
    }

    String password() {
        return password;
    }

    long maxBulkLength() {
        return maxBulkLength;
    }

    /** The face's own settings plus the server's, name to value, in a stable order. */
    Map<String, String> configAll() {
        Map<String, String> all = new LinkedHashMap<>();
        all.put("requirepass", password == null ? "" : password);
        all.put("proto-max-bulk-len", Long.toString(maxBulkLength));
        all.put("databases", "1");
        var sc = store.config();
        if (sc != null) {
            all.put("appendonly", "yes");
            all.put("appendfsync", sc.fsync().name().toLowerCase(java.util.Locale.ROOT));
            all.put("dir", String.valueOf(sc.dataDir()));
        }
        all.putAll(settings.all());
        if (ctx.config != null) {
            try {
                all.putAll(ctx.config.all());
            } catch (RuntimeException e) {
                LOG.warn("config hook failed", e);
            }
        }
        return all;
    }

    /** Sets one setting; null on success, else the error text without "ERR ". */
    /** This server's part in a sharded cluster, or null when not in cluster mode. */
    io.rdmastore.server.cluster.ClusterNode cluster() {
        return ctx.cluster.get();
    }

    /** This server's replica-set membership, or null when it runs standalone. */
    io.rdmastore.server.replication.ReplicaSet replicaSet() {
        return ctx.replicaSet.get();
    }

    String configSet(String name, String value) {
        if ((name.equals("min-replicas-to-write") || name.equals("min-replicas-max-lag")) && replicaSet() != null) {
            try {
                int v = Integer.parseInt(value.trim());
                if (v < 0) {
                    return "argument must be between 0 and 2147483647 inclusive";
                }
                if (name.equals("min-replicas-to-write")) {
                    replicaSet().minReplicasToWrite(v);
                } else {
                    replicaSet().minReplicasMaxLagSeconds(v);
                }
            } catch (NumberFormatException e) {
                return "argument couldn't be parsed into an integer";
            }
        }
        switch (name) {
            case "requirepass" -> {
                password = value.isEmpty() ? null : value;
                // Connections already authenticated keep their sessions, as in Redis; new ones need the new password.
                ctx.passwordChanged.accept(password);
                LOG.info("requirepass {} (RESP and native)", password == null ? "cleared" : "changed");
                return null;
            }
            case "proto-max-bulk-len" -> {
                long v = RespCommands.parseMemory(value);
                if (v < 1024 * 1024 || v > Integer.MAX_VALUE - 16) {
                    return "argument must be a memory value between 1mb and 2gb";
                }
                maxBulkLength = v;
                return null;
            }
            case "notify-keyspace-events" -> {
                int f = RespNotify.parse(value);
                if (f < 0) {
                    return "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";
                }
                notify.flags = (f & (RespNotify.KEYSPACE | RespNotify.KEYEVENT)) == 0 ? 0 : f;
                settings.set(name, RespNotify.format(f));
                return null;
            }
            case "appendonly" -> {
                // every write is logged; there is no switching it off
                return value.equalsIgnoreCase("yes") ? null
                    : "rdmastore logs every write: appendonly is always yes";
            }
            default -> {
                if (RespSettings.knows(name)) {
                    String err = settings.set(name, value);
                    if (err == null && name.startsWith("maxmemory")) {
                        evictIfNeeded();
                    }
                    return err;
                }
                if (ctx.config != null) {
                    return ctx.config.set(name, value);
                }
                return "Unknown option or number of arguments for CONFIG SET - '" + name + "'";
            }
        }
    }
}
