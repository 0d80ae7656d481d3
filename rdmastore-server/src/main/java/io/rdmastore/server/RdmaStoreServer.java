package io.rdmastore.server;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.WireWriter;
import io.rdmastore.server.resp.RespFace;
import io.rdmastore.server.replication.ReplicaSet;
import io.rdmastore.server.replication.ReplicaSetConfig;
import io.rdmastore.store.FsyncPolicy;
import io.rdmastore.store.RecoveryReport;
import io.rdmastore.store.Store;
import io.rdmastore.store.StoreStats;
import io.rdmastore.transport.Authenticator;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.Listener;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.Transport;
import io.rdmastore.transport.tcp.TcpTransport;
import io.rdmastore.transport.ucx.UcxTransport;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The standalone server: one store, one port serving the native protocol (TCP, upgraded to UCX where both ends can)
 * and the RESP face.
 *
 * <pre>{@code
 * try (RdmaStoreServer server = new RdmaStoreServer(new ServerConfig().port(0).dataDir(dir)).start()) {
 *     int port = server.port();
 * }
 * }</pre>
 *
 * <p>Threads: {@link #start()} and {@link #close()} may be called from any thread (close is idempotent); native
 * requests execute on transport threads (see {@link NativeSession}). Lifecycle events are logged at INFO.
 */
public final class RdmaStoreServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaStoreServer.class);
    /** The server's version, reported by INFO. */
    public static final String VERSION = "0.1.0";

    private final ServerConfig config;
    private final Map<NativeSession, Long> sessions = new ConcurrentHashMap<>();
    private final AtomicLong clientIds = new AtomicLong();
    private final Recorder processRecorder = new Recorder(3);
    private final Histogram processHistogram = new Histogram(3);
    /** Per-opcode Source / Process / Sink sums; null unless {@link ServerConfig#timing()} is on. */
    private final ServerTiming timing;
    private final long startMillis = System.currentTimeMillis();
    private final CountDownLatch closedLatch = new CountDownLatch(1);
    private ScheduledThreadPoolExecutor retry;
    private Store store;
    private BlobService blobs;
    private ValueLeases values;
    private TcpTransport tcp;
    private UcxTransport ucx;
    private String ucxStatus = "not loaded";
    private Network network;
    private Listener listener;
    private RespFace resp;
    private ReplicaSet replicaSet;
    private io.rdmastore.server.cluster.ClusterNode cluster;
    /** Channels to other shards' members, for their ROLE; used by the cluster's primary watcher thread only. */
    private final Map<String, io.rdmastore.client.PeerChannel> clusterPeers = new java.util.concurrent.ConcurrentHashMap<>();
    private static final long CLUSTER_PRIMARY_POLL_MILLIS = 500;
    /** The password clients present in HELLO (UTF-8), null for none; CONFIG SET requirepass replaces it. */
    private volatile byte[] password;
    private volatile int port;
    private volatile boolean closed;
    private boolean started;

    public RdmaStoreServer(ServerConfig config) {
        this.config = config;
        this.timing = config.timing() ? new ServerTiming() : null;
    }

    /**
     * Opens the store (recovering it), loads the transports and starts listening.
     *
     * @return this
     * @throws IllegalArgumentException on a bad setting
     * @throws IllegalStateException when {@code transport=ucx} is configured but UCX cannot be used
     * @throws RuntimeException from the store (e.g. a corrupt log) or the transport (port in use); everything opened
     *     so far is closed again
     */
    public synchronized RdmaStoreServer start() {
        if (started) {
            throw new IllegalStateException("server already started");
        }
        started = true;
        config.conclude();
        LOG.info("rdmastore {} starting: {}", VERSION, config);
        try {
            startUnchecked();
        } catch (RuntimeException | Error e) {
            LOG.error("start failed: {}", e.toString());
            close();
            throw e;
        }
        return this;
    }

    private void startUnchecked() {
        retry = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "rdmastore-reply-retry");
            t.setDaemon(true);
            return t;
        });
        retry.setRemoveOnCancelPolicy(true);

        Path dir = config.dataDir().toAbsolutePath();
        store = Store.open(config.storeConfig().dataDir(dir));
        blobs = new BlobService(store, retry, config.blobLeaseTimeout());
        values = new ValueLeases(store, retry, config.rendezvousThreshold(), config.rendezvousLeaseTimeout());
        RecoveryReport rr = store.recoveryReport();
        LOG.info("data dir {} (fsync {}): recovered snapshot {} ({} records), {} log segments, {} log records,"
                + " {} torn-tail bytes cut, in {} ms", dir, config.fsync(),
            rr.snapshotUsed() != null ? rr.snapshotUsed().getFileName() : "none", rr.snapshotRecords(),
            rr.segmentsReplayed(), rr.recordsReplayed(), rr.tornTailBytesCut(), rr.durationMillis());

        // The transport's frame limit stays above max-request-bytes, so an oversize request gets a clear ERR reply
        // from the session; only frames beyond the transport's limit cost the connection.
        TcpTransport.Context tcpCtx = new TcpTransport.Context();
        long frameLimit = Math.max(tcpCtx.maxMessageLength(), Math.max(config.maxRequestBytes() + (1 << 20),
            config.maxValueBytes() + (64 << 10)));
        tcpCtx.maxMessageLength((int) Math.min(Integer.MAX_VALUE - (1 << 20), frameLimit));
        if (config.tlsCertificate() != null) {
            tcpCtx.tlsServer(config.tlsCertificate(), config.tlsKey());
        }
        if (config.cluster()) {
            cluster = new io.rdmastore.server.cluster.ClusterNode(dir, () -> replicaSet);
        }
        // built without the RESP port too: the native protocol's data-type commands run through its commands
        resp = new RespFace(store, new RespFace.Context()
            .password(config.password())
            .version(VERSION)
            .serverInfo(this::respInfo)
            .replicaSet(() -> replicaSet)
            .cluster(() -> cluster)
            .nativeClients(this::nativeClients)
            .clientIds(clientIds::incrementAndGet)
            .admission(this::admission)
            .passwordChanged(p -> password = p == null ? null : p.getBytes(StandardCharsets.UTF_8))
            .maxOutputBytes(config.maxPendingReplyBytes())
            .config(new ConfigView()));
        if (config.resp()) {
            tcpCtx.foreignProtocol(resp::initialize);
        }
        tcp = new TcpTransport(tcpCtx);
        Network.Context net = new Network.Context().carrier(tcp).authenticator(authenticator())
            .handshakeTimeout(config.handshakeTimeout())
            .upgradesEnabled(!config.transport().equals("tcp"));
        if (config.transport().equals("tcp")) {
            ucxStatus = "disabled by configuration (transport=tcp)";
        } else {
            loadUcx();
            if (ucx != null) {
                net.upgrade(ucx);
            } else if (config.transport().equals("ucx")) {
                throw new IllegalStateException("transport=ucx is configured but UCX cannot be used: " + ucxStatus);
            }
        }
        LOG.info("transports: tcp available; ucx {}", ucxStatus);
        network = new Network(net);
        listener = network.listen(new InetSocketAddress(config.bind(), config.port()), this::onConnection);
        port = listener.localAddress().getPort();
        LOG.info("listening on {}:{} (native protocol v{}{}), password {}", config.bind(), port,
            ProtocolDescriptor.VERSION, config.resp() ? " and RESP" : "", config.password() != null ? "required"
                : "not set");
        if (config.replicaSet() != null) {
            replicaSet = new ReplicaSet(store, config.replicaSet(), dir, config.password());
            replicaSet.stagedBlobs(blobs::takeStaged);
            try {
                replicaSet.start();
            } catch (java.io.IOException e) {
                throw new IllegalStateException("cannot start the replica set member: " + e.getMessage(), e);
            }
        }
        if (cluster != null) {
            cluster.watchPrimaries(this::clusterPrimaryOf, CLUSTER_PRIMARY_POLL_MILLIS);
        }
        // A pipeline member lends what it receives to the next: over a channel like a client's, with this password.
        String peerTransport = config.replicaSet() != null ? config.replicaSet().peerTransport()
            : config.transport().equals("tcp") ? "tcp" : "auto";
        java.util.function.Function<String, io.rdmastore.client.PeerChannel> opener = address -> {
            int colon = address.lastIndexOf(':');
            if (colon <= 0) {
                throw new IllegalArgumentException("member address must be host:port, was '" + address + "'");
            }
            byte[] pw = password;
            return io.rdmastore.client.PeerChannel.open(new io.rdmastore.client.ClientConfig(
                address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)), peerTransport,
                pw == null ? null : new String(pw, StandardCharsets.UTF_8), java.time.Duration.ofSeconds(30)));
        };
        blobs.peers(opener, () -> replicaSet != null ? replicaSet.nodeId() : config.bind() + ":" + port);
        if (cluster != null && !peerTransport.equals("tcp")) {
            // MIGRATE moves batches one-sided to targets reachable over ucx (docs/cluster.md)
            resp.migration().peers(opener);
        }
    }

    /** A missing or broken UCX is a reason to serve TCP only, never to fail (unless UCX was required). */
    private void loadUcx() {
        try {
            UcxTransport u = new UcxTransport(new UcxTransport.Context().idleStrategy(config.ucxIdleStrategy()));
            if (u.isAvailable()) {
                ucx = u;
                ucxStatus = "available (idle strategy " + config.ucxIdleStrategy() + ")";
            } else {
                ucxStatus = "unavailable: " + u.unavailabilityCause();
                u.close();
            }
        } catch (RuntimeException | LinkageError e) {
            ucxStatus = "unavailable: " + e;
        }
    }

    /** One password for every face: HELLO checks the one RESP's CONFIG SET requirepass last set (or the config's). */
    private Authenticator authenticator() {
        password = config.password() == null ? null : config.password().getBytes(StandardCharsets.UTF_8);
        return credentials -> {
            byte[] expected = password;
            if (expected == null) {
                return null;
            }
            if (credentials.length == 0) {
                return "NOAUTH password required";
            }
            return MessageDigest.isEqual(expected, credentials) ? null : "WRONGPASS invalid password";
        };
    }

    private MessageHandler onConnection(Connection connection) {
        if (closed) {
            connection.close();
            return new Refused("ERR server is shutting down");
        }
        String refusal = admission();
        if (refusal != null) {
            LOG.info("refusing {}: {}", connection.remoteAddress(), refusal);
            return new Refused(refusal);
        }
        NativeSession s = new NativeSession(this, store, config, connection);
        sessions.put(s, clientIds.incrementAndGet());
        connection.attach(s);
        LOG.debug("native client {} on {}: {}", connection.remoteAddress(), connection.transportName(),
            connection.selectionReason());
        return s;
    }

    /** {@code maxclients} counts native and RESP clients alike: null admits one more, else the refusal text. */
    private String admission() {
        int open = sessions.size() + (resp != null ? resp.connectedClients() : 0);
        return open >= config.maxConnections()
            ? "ERR max number of clients reached (" + config.maxConnections() + ")" : null;
    }

    /**
     * The handler of a connection over the limit: answers its requests with {@code text} and closes it shortly after
     * the first. Nothing is sent unasked, because the handshake's WELCOME may still be on its way after this handler is
     * created.
     */
    private final class Refused implements MessageHandler {
        private final String text;
        private boolean closing;

        Refused(String text) {
            this.text = text;
        }

        @Override
        public void onMessage(Connection connection, MemorySegment message) {
            if (message.byteSize() >= ProtocolDescriptor.HEADER_LENGTH) {
                long id = message.get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED
                    .withOrder(java.nio.ByteOrder.BIG_ENDIAN), ProtocolDescriptor.REQUEST_ID_OFFSET);
                connection.offer(new WireWriter(128).header(ProtocolDescriptor.STATUS_ERROR, id).rawString(text)
                    .message());
            }
            if (!closing) {
                closing = true;
                // Closing at once could discard the error before the transport flushed it; give it a moment.
                retry.schedule(connection::close, 200, TimeUnit.MILLISECONDS);
            }
        }
    }

    void sessionClosed(NativeSession s, Throwable cause) {
        sessions.remove(s);
        if (cause != null) {
            LOG.debug("native client {} closed: {}", s.connection().remoteAddress(), cause.toString());
        }
    }

    BlobService blobs() {
        return blobs;
    }

    /** Values lent by GET_LARGE. */
    ValueLeases values() {
        return values;
    }

    /** Values lent to clients right now (GET_LARGE leases; for tests and INFO). */
    public int valueLeases() {
        return values == null ? 0 : values.leases();
    }

    /** Blob leases currently lent to clients (for tests and INFO). */
    public int blobLeases() {
        return blobs == null ? 0 : blobs.leases();
    }

    /** Blob puts currently transferring or committing. */
    public int blobPutsInFlight() {
        return blobs == null ? 0 : blobs.putsInFlight();
    }

    /** Blob puts whose reads have not all ended (a put abandoned mid-transfer stays here until they do). */
    public int blobPullsPending() {
        return blobs == null ? 0 : blobs.pullsPending();
    }

    /**
     * Bytes of memory registered for blob transfers right now (leases, pulls, pipeline lends): back to its baseline of
     * 0 once every transfer ended, whatever its outcome.
     */
    public long blobRegisteredBytes() {
        return blobs == null ? 0 : blobs.registeredBytes();
    }

    /** Blobs staged on this member and not yet named by a record (or expired). */
    public int blobStagesHeld() {
        return blobs == null ? 0 : blobs.stagesHeld();
    }

    /** The blob store (after {@link #start()}). */
    public io.rdmastore.store.blob.BlobStore blobStore() {
        return store.blobs();
    }

    /** The RESP face's commands, which the native protocol's data-type opcodes run through (after start). */
    RespFace respFace() {
        return resp;
    }

    /** The client id of a native session (for CLIENT LIST), 0 when it is gone. */
    long clientId(NativeSession s) {
        Long id = sessions.get(s);
        return id == null ? 0 : id;
    }

    ScheduledExecutorService retryExecutor() {
        return retry;
    }

    /** The per-opcode phase timer, or null when timing is off (the sessions then read no clock for it). */
    ServerTiming timing() {
        return timing;
    }

    /** Records one store operation's processing time; wait-free, no allocation. */
    void recordProcessNanos(long nanos) {
        processRecorder.recordValue(nanos);
    }

    /** The port the server listens on (the real one when 0 was configured). */
    public int port() {
        return port;
    }

    /** The store; for tests and embedding. */
    /** This server's replica-set membership, or null when it runs standalone. */
    public ReplicaSet replicaSet() {
        return replicaSet;
    }

    /** The primary id the member at {@code address} names (native ROLE over tcp), or null. Cluster watcher thread. */
    private String clusterPrimaryOf(String address) {
        io.rdmastore.client.PeerChannel ch = clusterPeers.computeIfAbsent(address, a -> {
            int colon = a.lastIndexOf(':');
            byte[] pw = password;
            return io.rdmastore.client.PeerChannel.open(new io.rdmastore.client.ClientConfig(a.substring(0, colon),
                Integer.parseInt(a.substring(colon + 1)), "tcp", pw == null ? null : new String(pw,
                StandardCharsets.UTF_8), java.time.Duration.ofSeconds(1)));
        });
        java.time.Duration t = java.time.Duration.ofSeconds(1);
        return ch.await(ch.call(ProtocolDescriptor.ROLE, w -> { }, (st, r) -> {
            int role = r.u8("role");
            r.i64("term");
            r.string("setName", 1 << 16);
            String self = r.string("selfId", 1 << 16);
            String primary = r.string("primaryId", 1 << 16);
            return role == ProtocolDescriptor.ROLE_PRIMARY ? self : primary.isEmpty() ? null : primary;
        }, t), t);
    }

    /** This server's part in a sharded cluster, or null when it does not run in cluster mode. */
    public io.rdmastore.server.cluster.ClusterNode cluster() {
        return cluster;
    }

    public Store store() {
        return store;
    }

    public ServerConfig config() {
        return config;
    }

    /** Native connections open now. */
    public int nativeConnections() {
        return sessions.size();
    }

    /** Whether UCX is loaded and offered to clients. */
    public boolean ucxAvailable() {
        return ucx != null;
    }

    // ---- INFO ----

    private synchronized Histogram processSnapshot() {
        processHistogram.add(processRecorder.getIntervalHistogram());
        return processHistogram.copy();
    }

    private Map<String, Map<String, String>> sections(Connection connection) {
        Map<String, Map<String, String>> out = new LinkedHashMap<>();
        Map<String, String> server = new LinkedHashMap<>();
        server.put("rdmastore_version", VERSION);
        server.put("native_protocol_version", String.valueOf(ProtocolDescriptor.VERSION));
        server.put("uptime_in_seconds", String.valueOf((System.currentTimeMillis() - startMillis) / 1000));
        server.put("bind", config.bind());
        server.put("tcp_port", String.valueOf(port));
        server.put("transports", ucx != null ? "tcp,ucx" : "tcp");
        server.put("ucx", ucxStatus);
        if (ucx != null) {
            server.put("ucx_copied_sent_bytes", String.valueOf(ucx.copiedBytesSent()));
            server.put("ucx_copied_received_bytes", String.valueOf(ucx.copiedBytesReceived()));
        }
        server.put("native_clients", String.valueOf(sessions.size()));
        server.put("resp_clients", String.valueOf(resp != null ? resp.connectedClients() : 0));
        server.put("max_connections", String.valueOf(config.maxConnections()));
        out.put("server", server);
        if (connection != null) {
            Map<String, String> conn = new LinkedHashMap<>();
            conn.put("transport", connection.transportName());
            conn.put("transport_reason", connection.selectionReason());
            conn.put("connection", connection.describe());
            out.put("connection", conn);
        }
        Map<String, String> store = new LinkedHashMap<>();
        try {
            StoreStats st = this.store.stats();
            store.put("keys", String.valueOf(st.keys()));
            store.put("expires", String.valueOf(st.expires()));
            store.put("used_offheap_bytes", String.valueOf(st.usedOffHeapBytes()));
            store.put("large_value_mapped_bytes", String.valueOf(st.largeValueMappedBytes()));
            store.put("log_bytes", String.valueOf(st.logBytes()));
            store.put("fsync", st.fsync().name().toLowerCase(Locale.ROOT));
            store.put("changes_since_last_snapshot", String.valueOf(st.changesSinceLastSave()));
            store.put("last_snapshot", st.lastSnapshotEpochMillis() == 0 ? "never"
                : Instant.ofEpochMilli(st.lastSnapshotEpochMillis()).toString());
            store.put("collections", String.valueOf(st.collections()));
            store.put("documents", String.valueOf(st.documents()));
            // as MongoDB's docsExamined: a figure that grows with the collections' sizes means unindexed filters
            store.put("documents_examined", String.valueOf(this.store.documentsExamined()));
        } catch (RuntimeException e) {
            store.put("error", e.toString());
        }
        try {
            RecoveryReport rr = this.store.recoveryReport();
            store.put("recovery_records_replayed", String.valueOf(rr.recordsReplayed()));
            store.put("recovery_torn_tail_bytes_cut", String.valueOf(rr.tornTailBytesCut()));
            store.put("recovery_millis", String.valueOf(rr.durationMillis()));
        } catch (RuntimeException e) {
            store.put("recovery_error", e.toString());
        }
        out.put("store", store);
        Histogram h = processSnapshot();
        Map<String, String> latency = new LinkedHashMap<>();
        latency.put("process_count", String.valueOf(h.getTotalCount()));
        latency.put("process_p50_ns", String.valueOf(h.getValueAtPercentile(50)));
        latency.put("process_p99_ns", String.valueOf(h.getValueAtPercentile(99)));
        latency.put("process_p999_ns", String.valueOf(h.getValueAtPercentile(99.9)));
        latency.put("process_max_ns", String.valueOf(h.getMaxValue()));
        out.put("latency", latency);
        if (replicaSet != null) {
            out.put("replication", replicaSet.info());
        } else {
            Map<String, String> repl = new LinkedHashMap<>();
            repl.put("role", "master");
            repl.put("connected_slaves", "0");
            repl.put("master_repl_offset", String.valueOf(this.store.lastPosition()[1]));
            out.put("replication", repl);
        }
        if (blobs != null) {
            Map<String, String> b = new LinkedHashMap<>();
            b.put("blob_registered_bytes", String.valueOf(blobs.registeredBytes()));
            b.put("blob_leases", String.valueOf(blobs.leases()));
            b.put("blob_transfers_in_flight", String.valueOf(blobs.pullsPending()));
            b.put("blob_stages_held", String.valueOf(blobs.stagesHeld()));
            b.put("blob_last_put", describe(blobs.lastPut()));
            b.put("blob_last_stage", describe(blobs.lastStage()));
            if (values != null) {
                b.put("value_leases", String.valueOf(values.leases()));
                b.put("value_leases_lent", String.valueOf(values.lent()));
                b.put("value_set_large", String.valueOf(values.pulled()));
                b.put("value_set_large_bytes", String.valueOf(values.pulledBytes()));
                b.put("value_set_large_in_place", String.valueOf(values.pulledInPlace()));
                b.put("value_set_large_in_parts", String.valueOf(values.pulledInParts()));
                b.put("value_registered_bytes", String.valueOf(values.registeredBytes()));
                b.put("rendezvous_threshold", String.valueOf(config.rendezvousThreshold()));
            }
            out.put("blobs", b);
        }
        Map<String, String> phases = new LinkedHashMap<>();
        phases.put("timing", timing != null ? "on" : "off");
        if (timing != null) {
            phases.putAll(timing.snapshot());
        }
        out.put("timing", phases);
        return out;
    }

    private static String describe(io.rdmastore.client.BlobInfo.Member r) {
        return r == null ? "none" : r.path() + ",ok=" + (r.ok() ? 1 : 0) + ",transfer_us=" + r.transferNanos() / 1000
            + ",crc_us=" + r.crcNanos() / 1000 + ",sync_us=" + r.syncNanos() / 1000;
    }

    /** INFO text for a native connection, Redis style: {@code # Section} headers and {@code name:value} lines. */
    String info(Connection connection) {
        StringBuilder sb = new StringBuilder(1024);
        for (Map.Entry<String, Map<String, String>> s : sections(connection).entrySet()) {
            sb.append("# ").append(Character.toUpperCase(s.getKey().charAt(0))).append(s.getKey().substring(1))
                .append("\r\n");
            for (Map.Entry<String, String> f : s.getValue().entrySet()) {
                sb.append(f.getKey()).append(':').append(f.getValue().replace('\n', ' ').replace('\r', ' '))
                    .append("\r\n");
            }
            sb.append("\r\n");
        }
        return sb.toString();
    }

    private Map<String, Map<String, String>> respInfo() {
        Map<String, Map<String, String>> all = sections(null);
        Map<String, String> rdmastore = new LinkedHashMap<>(all.get("server"));
        long onUcx = 0;
        for (NativeSession s : sessions.keySet()) {
            if (!s.connection().transportName().equals("tcp")) {
                onUcx++;
            }
        }
        rdmastore.put("native_clients_tcp", String.valueOf(sessions.size() - onUcx));
        rdmastore.put("native_clients_ucx", String.valueOf(onUcx));
        rdmastore.putAll(all.get("latency"));
        return Map.of("rdmastore", rdmastore);
    }

    private List<RespFace.NativeClient> nativeClients() {
        List<RespFace.NativeClient> out = new ArrayList<>();
        long now = System.currentTimeMillis();
        for (Map.Entry<NativeSession, Long> e : sessions.entrySet()) {
            Connection c = e.getKey().connection();
            out.add(new RespFace.NativeClient(e.getValue(), String.valueOf(c.remoteAddress()),
                config.bind() + ":" + port, c.transportName(), "", (now - e.getKey().createdMillis()) / 1000,
                c.selectionReason()));
        }
        return out;
    }

    /** CONFIG GET/SET through RESP: the settings are read-only at run time. */
    private final class ConfigView implements RespFace.ConfigHooks {
        @Override
        public Map<String, String> all() {
            Map<String, String> m = new LinkedHashMap<>();
            m.put("bind", config.bind());
            m.put("port", String.valueOf(port));
            m.put("dir", config.dataDir().toAbsolutePath().toString());
            m.put("appendfsync", config.fsync().name().toLowerCase(Locale.ROOT));
            m.put("appendonly", "yes");
            m.put("maxclients", String.valueOf(config.maxConnections()));
            m.put("rdmastore-transport", config.transport());
            m.put("rdmastore-max-key-bytes", String.valueOf(config.maxKeyBytes()));
            m.put("rdmastore-max-value-bytes", String.valueOf(config.maxValueBytes()));
            m.put("rdmastore-max-document-bytes", String.valueOf(config.maxDocumentBytes()));
            return m;
        }

        @Override
        public String set(String name, String value) {
            return all().containsKey(name) ? "CONFIG SET '" + name + "' is not supported at run time; restart with"
                + " the new setting" : "Unknown option or number of arguments for CONFIG SET - '" + name + "'";
        }
    }

    // ---- shutdown ----

    /**
     * Graceful shutdown: stops accepting, closes connections, flushes the store's log and closes the store.
     * Idempotent.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        LOG.info("shutting down (port {})", port);
        if (listener != null) {
            quietly("listener", listener::close);
        }
        if (cluster != null) {
            quietly("cluster", () -> {
                cluster.close();
                for (io.rdmastore.client.PeerChannel ch : clusterPeers.values()) {
                    ch.close();
                }
            });
        }
        if (replicaSet != null) {
            quietly("replica set", replicaSet::close);
        }
        for (NativeSession s : sessions.keySet()) {
            quietly("connection", s.connection()::close);
        }
        if (resp != null) {
            quietly("RESP connections", resp::closeAll);
        }
        if (blobs != null) {
            quietly("blobs", blobs::close);
        }
        if (values != null) {
            quietly("value leases", values::close);
        }
        if (store != null) {
            quietly("store flush", store::flush);
            quietly("store", store::close);
        }
        if (network != null) {
            quietly("network", network::close);
        }
        if (ucx != null) {
            quietly("ucx", ucx::close);
        }
        if (tcp != null) {
            quietly("tcp", tcp::close);
        }
        if (retry != null) {
            retry.shutdownNow();
        }
        LOG.info("stopped");
        closedLatch.countDown();
    }

    private static void quietly(String what, Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            LOG.warn("closing {} failed: {}", what, e.toString());
        }
    }

    /** Waits until {@link #close()} has finished. */
    public void awaitClose() throws InterruptedException {
        closedLatch.await();
    }

    // ---- command line ----

    /**
     * For a server process (its {@code main}, the CLI's {@code server}): Netty samples no buffers for leaks unless the
     * JVM is told to ({@code -Dio.netty.leakDetection.level=simple|advanced|paranoid}). Its default records the stack
     * trace of one buffer in 128, and every request allocates its reply's buffer: half a per cent of the server's CPU
     * samples in a YCSB run over tcp (docs/decisions.md, "tcp: per-call work"). The tests run the transports and the
     * RESP face paranoid. Not done for a server embedded in another program: the level is the whole JVM's.
     */
    public static void leakSamplingOffUnlessAsked() {
        if (System.getProperty("io.netty.leakDetection.level") == null
            && System.getProperty("io.netty.leakDetectionLevel") == null) {
            io.netty.util.ResourceLeakDetector.setLevel(io.netty.util.ResourceLeakDetector.Level.DISABLED);
        }
    }

    /**
     * Runs a server until SIGTERM/SIGINT, which close it gracefully. Options: {@code --bind ADDR --port N --dir PATH
     * --fsync always|everysec|no --transport auto|tcp|ucx --password PW --maxclients N --ucx-idle
     * adaptive|backoff|spin|yield --tls-cert PEM --tls-key PEM --no-resp --rendezvous-threshold BYTES
     * --snapshot-log-bytes BYTES}. Prints {@code rdmastore listening on HOST:PORT} on stdout once it serves.
     */
    public static void main(String[] args) throws InterruptedException {
        leakSamplingOffUnlessAsked();
        ServerConfig config;
        try {
            config = parseArgs(args);
        } catch (IllegalArgumentException e) {
            System.err.println("rdmastore: " + e.getMessage());
            System.err.println("usage: rdmastore-server [--bind ADDR] [--port N] [--dir PATH]"
                + " [--fsync always|everysec|no] [--transport auto|tcp|ucx] [--password PW] [--maxclients N]"
                + " [--ucx-idle adaptive|backoff|spin|yield] [--tls-cert PEM --tls-key PEM] [--no-resp] [--timing]"
                + " [--cluster] [--rendezvous-threshold BYTES] [--snapshot-log-bytes BYTES]"
                + " [--replica-set NAME --node-id ID --members ID=HOST:PORT,... [--replica-set-key KEY] [--raft-port N]"
                + " [--join]]");
            System.exit(2);
            return;
        }
        RdmaStoreServer server = new RdmaStoreServer(config);
        try {
            server.start();
        } catch (RuntimeException e) {
            System.err.println("rdmastore: cannot start: " + e.getMessage());
            System.exit(1);
            return;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(server::close, "rdmastore-shutdown"));
        System.out.println("rdmastore listening on " + config.bind() + ":" + server.port());
        System.out.flush();
        server.awaitClose();
    }

    private static ReplicaSetConfig replicaSet(ServerConfig c) {
        if (c.replicaSet() == null) {
            c.replicaSet(new ReplicaSetConfig());
        }
        return c.replicaSet();
    }

    static ServerConfig parseArgs(String[] args) {
        ServerConfig c = new ServerConfig();
        int raftPort = 0;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--no-resp")) {
                c.resp(false);
                continue;
            }
            if (a.equals("--timing")) {
                c.timing(true);
                continue;
            }
            if (a.equals("--cluster")) {
                c.cluster(true);
                continue;
            }
            if (a.equals("--join")) {
                replicaSet(c).join(true);
                continue;
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("option " + a + " needs a value");
            }
            String v = args[++i];
            try {
                switch (a) {
                    case "--bind" -> c.bind(v);
                    case "--port" -> c.port(Integer.parseInt(v));
                    case "--dir" -> c.dataDir(Path.of(v));
                    case "--fsync" -> c.fsync(FsyncPolicy.valueOf(v.toUpperCase(Locale.ROOT)));
                    case "--transport" -> c.transport(v);
                    case "--password" -> c.password(v);
                    case "--maxclients" -> c.maxConnections(Integer.parseInt(v));
                    case "--tls-cert" -> c.tls(Path.of(v), c.tlsKey());
                    case "--tls-key" -> c.tls(c.tlsCertificate(), Path.of(v));
                    case "--ucx-idle" -> c.ucxIdleStrategy(v);
                    case "--rendezvous-threshold" -> c.rendezvousThreshold(Long.parseLong(v));
                    case "--snapshot-log-bytes" -> c.snapshotLogBytes(Long.parseLong(v));
                    case "--replica-set" -> replicaSet(c).setName(v);
                    case "--node-id" -> replicaSet(c).nodeId(v);
                    case "--members" -> replicaSet(c).members(v);
                    case "--replica-set-key" -> replicaSet(c).key(v);
                    case "--raft-port" -> raftPort = Integer.parseInt(v);
                    case "--election-timeout" -> replicaSet(c).electionTimeout(
                        java.time.Duration.ofMillis(Long.parseLong(v)));
                    default -> throw new IllegalArgumentException("unknown option " + a);
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("option " + a + " needs a number, got '" + v + "'", e);
            }
        }
        if (c.replicaSet() != null) {
            if (raftPort > 0) {
                c.replicaSet().raftPort(c.replicaSet().nodeId(), raftPort);
            }
            c.replicaSet().conclude();
        }
        return c.conclude();
    }
}
