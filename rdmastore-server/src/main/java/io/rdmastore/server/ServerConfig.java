package io.rdmastore.server;

import io.rdmastore.store.FsyncPolicy;
import io.rdmastore.store.StoreConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * The server's settings, with fluent setters and typed defaults, validated once by {@link #conclude()} when the server
 * starts. Every setter names its default.
 *
 * <p>Threads: configure on one thread, then hand to {@link RdmaStoreServer}; it is not changed afterwards.
 */
public final class ServerConfig {
    /** The default port, shared by the native protocol and RESP. */
    public static final int DEFAULT_PORT = 7379;
    /** Default {@link #rendezvousThreshold(long)}: 256 KiB, the measured crossover (docs/decisions.md). */
    public static final long DEFAULT_RENDEZVOUS_THRESHOLD = 256 * 1024;

    private String bind = "127.0.0.1";
    private int port = DEFAULT_PORT;
    private Path dataDir = Path.of("data");
    private FsyncPolicy fsync = FsyncPolicy.EVERYSEC;
    private String transport = "auto";
    private String password;
    private Path tlsCertificate;
    private Path tlsKey;
    private int maxKeyBytes = StoreConfig.DEFAULT_MAX_KEY_BYTES;
    private long maxValueBytes = StoreConfig.DEFAULT_MAX_VALUE_BYTES;
    private int maxDocumentBytes = StoreConfig.DEFAULT_MAX_DOCUMENT_BYTES;
    private long maxRequestBytes = -1;
    private int maxConnections = 10_000;
    private long maxPendingReplyBytes = 1L << 30;
    private String ucxIdleStrategy = "adaptive";
    private Duration handshakeTimeout = Duration.ofSeconds(5);
    private long snapshotLogBytes = StoreConfig.DEFAULT_SNAPSHOT_LOG_BYTES;
    private boolean resp = true;
    private boolean timing;
    private io.rdmastore.server.replication.ReplicaSetConfig replicaSet;
    private boolean cluster;
    private long oplogWindowBytes = -1;
    private io.rdmastore.store.blob.BlobConfig blobConfig = new io.rdmastore.store.blob.BlobConfig();
    private Duration blobLeaseTimeout = Duration.ofSeconds(60);
    private long rendezvousThreshold = DEFAULT_RENDEZVOUS_THRESHOLD;
    private Duration rendezvousLeaseTimeout = Duration.ofSeconds(5);

    /** Address to bind; default {@code 127.0.0.1} (loopback only) so a fresh server is not exposed. */
    public ServerConfig bind(String value) {
        bind = value;
        return this;
    }

    /** Port; default 7379; 0 picks a free one ({@link RdmaStoreServer#port()} tells which). */
    public ServerConfig port(int value) {
        port = value;
        return this;
    }

    /** Directory of the store's log and snapshots; default {@code ./data}. */
    public ServerConfig dataDir(Path value) {
        dataDir = value;
        return this;
    }

    /** When the log is fsynced: ALWAYS (before a write is acknowledged), EVERYSEC (default), NO. */
    public ServerConfig fsync(FsyncPolicy value) {
        fsync = value;
        return this;
    }

    /**
     * {@code auto} (default: offer UCX when it loads and works, serve TCP either way), {@code tcp} (never upgrade) or
     * {@code ucx} (UCX must be available or the server does not start; clients without UCX are still served on TCP).
     */
    public ServerConfig transport(String value) {
        transport = value;
        return this;
    }

    /**
     * Serves TLS on the TCP port (native protocol and RESP): the certificate chain and its PKCS#8 private key, PEM
     * files. Clients must then connect with TLS; the password never crosses the network in clear. Default none.
     */
    public ServerConfig tls(Path certificateChain, Path privateKey) {
        tlsCertificate = certificateChain;
        tlsKey = privateKey;
        return this;
    }

    /** The TLS certificate chain (PEM), or null when TLS is off. */
    public Path tlsCertificate() {
        return tlsCertificate;
    }

    /** The TLS private key (PEM), or null when TLS is off. */
    public Path tlsKey() {
        return tlsKey;
    }

    /** Password clients must present in HELLO; default none. Checked before any transport detail leaves the server. */
    public ServerConfig password(String value) {
        password = value;
        return this;
    }

    /** Largest key (and hash field); default 64 KiB. */
    public ServerConfig maxKeyBytes(int value) {
        maxKeyBytes = value;
        return this;
    }

    /** Largest string or hash value; default 512 MiB. */
    public ServerConfig maxValueBytes(long value) {
        maxValueBytes = value;
        return this;
    }

    /** Largest BSON document, filter or update; default 16 MiB. */
    public ServerConfig maxDocumentBytes(int value) {
        maxDocumentBytes = value;
        return this;
    }

    /** Largest request message; default the value limit plus 1 MiB for the key and header. */
    public ServerConfig maxRequestBytes(long value) {
        maxRequestBytes = value;
        return this;
    }

    /** Most clients at once, native and RESP together ({@code maxclients}); one more is told "ERR max number of
     * clients reached" and closed. */
    public ServerConfig maxConnections(int value) {
        maxConnections = value;
        return this;
    }

    /**
     * Most reply bytes queued for a client that does not read them (back-pressure); past it the connection is closed,
     * like Redis's client-output-buffer-limit. Default 1 GiB; a single reply is always queued whatever its size.
     */
    public ServerConfig maxPendingReplyBytes(long value) {
        maxPendingReplyBytes = value;
        return this;
    }

    /**
     * Idle strategy of the UCX agent thread: {@code adaptive} (default: spins through the gaps between requests while
     * they keep coming, sleeps on the worker's event descriptor when they stop, so an idle server does not burn a core
     * and a request wakes it at once), {@code backoff} (spin, yield, then park up to 1 ms), {@code spin} or
     * {@code yield}. Passed to {@code UcxTransport.Context.idleStrategy(String)}.
     */
    public ServerConfig ucxIdleStrategy(String value) {
        ucxIdleStrategy = value;
        return this;
    }

    /** How long a new connection may take to send a valid HELLO; default 5 s. */
    public ServerConfig handshakeTimeout(Duration value) {
        handshakeTimeout = value;
        return this;
    }

    /** Log size that triggers an automatic snapshot; default 64 MiB; 0 disables automatic snapshots. */
    public ServerConfig snapshotLogBytes(long value) {
        snapshotLogBytes = value;
        return this;
    }

    /**
     * Blob settings (threshold, maximum size, disk reserve, fsync); the directory is always {@code <dataDir>/blobs}.
     */
    public ServerConfig blobConfig(io.rdmastore.store.blob.BlobConfig value) {
        blobConfig = value;
        return this;
    }

    /** How long a client may hold a blob lease (BLOB_GET) before the server ends it; default 60 s. */
    public ServerConfig blobLeaseTimeout(Duration value) {
        blobLeaseTimeout = value;
        return this;
    }

    /**
     * GET_LARGE values of at least this many bytes are lent to ucx clients for a one-sided read instead of sent
     * (docs/protocol.md, "Large values"); 0 turns lending off. Default {@value #DEFAULT_RENDEZVOUS_THRESHOLD}.
     */
    public ServerConfig rendezvousThreshold(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("rendezvous-threshold must be >= 0: " + bytes);
        }
        rendezvousThreshold = bytes;
        return this;
    }

    public long rendezvousThreshold() {
        return rendezvousThreshold;
    }

    /** How long a lent value (GET_LARGE) stays pinned when its client does not end the lease; default 5 s. */
    public ServerConfig rendezvousLeaseTimeout(Duration value) {
        if (value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException("rendezvous lease time-out must be positive: " + value);
        }
        rendezvousLeaseTimeout = value;
        return this;
    }

    public Duration rendezvousLeaseTimeout() {
        return rendezvousLeaseTimeout;
    }

    /** The blob settings. */
    public io.rdmastore.store.blob.BlobConfig blobConfig() {
        return blobConfig;
    }

    /** The blob lease time-out. */
    public Duration blobLeaseTimeout() {
        return blobLeaseTimeout;
    }

    /** Whether the RESP face shares the port; default true. */
    public ServerConfig resp(boolean value) {
        resp = value;
        return this;
    }

    /**
     * Whether the server times each native request's Source / Process / Sink phases (paper 000's breakdown) and
     * reports the sums per opcode in INFO's {@code Timing} section; default false, and then no clock is read for it.
     */
    public ServerConfig timing(boolean value) {
        timing = value;
        return this;
    }

    /**
     * Cluster mode (docs/cluster.md): the server serves the hash slots the cluster's slot map gives its shard and
     * redirects clients for the others ({@code MOVED}). Default false.
     */
    public ServerConfig cluster(boolean value) {
        cluster = value;
        return this;
    }

    public boolean cluster() {
        return cluster;
    }

    /** Makes this server a member of a replica set (docs/replication.md); null (the default) runs it standalone. */
    public ServerConfig replicaSet(io.rdmastore.server.replication.ReplicaSetConfig value) {
        replicaSet = value;
        return this;
    }

    public io.rdmastore.server.replication.ReplicaSetConfig replicaSet() {
        return replicaSet;
    }

    /**
     * Bytes of recent log records a replica-set member keeps in memory for secondaries to pull (MongoDB's oplog
     * size); a secondary further behind resynchronises from a snapshot. Default 64 MiB (-1).
     */
    public ServerConfig oplogWindowBytes(long value) {
        oplogWindowBytes = value;
        return this;
    }

    public String bind() {
        return bind;
    }

    public int port() {
        return port;
    }

    public Path dataDir() {
        return dataDir;
    }

    public FsyncPolicy fsync() {
        return fsync;
    }

    public String transport() {
        return transport;
    }

    public String password() {
        return password;
    }

    public int maxKeyBytes() {
        return maxKeyBytes;
    }

    public long maxValueBytes() {
        return maxValueBytes;
    }

    public int maxDocumentBytes() {
        return maxDocumentBytes;
    }

    public long maxRequestBytes() {
        return maxRequestBytes;
    }

    public int maxConnections() {
        return maxConnections;
    }

    public long maxPendingReplyBytes() {
        return maxPendingReplyBytes;
    }

    public String ucxIdleStrategy() {
        return ucxIdleStrategy;
    }

    public Duration handshakeTimeout() {
        return handshakeTimeout;
    }

    public long snapshotLogBytes() {
        return snapshotLogBytes;
    }

    public boolean resp() {
        return resp;
    }

    public boolean timing() {
        return timing;
    }

    /**
     * Validates every setting once and fills derived defaults.
     *
     * @throws IllegalArgumentException naming the bad setting and its value
     */
    public ServerConfig conclude() {
        Objects.requireNonNull(bind, "bind");
        Objects.requireNonNull(dataDir, "dataDir");
        Objects.requireNonNull(fsync, "fsync");
        Objects.requireNonNull(handshakeTimeout, "handshakeTimeout");
        if ((tlsCertificate == null) != (tlsKey == null)) {
            throw new IllegalArgumentException("TLS needs both a certificate chain and a private key");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port out of range: " + port);
        }
        transport = Objects.requireNonNull(transport, "transport").toLowerCase(Locale.ROOT);
        if (!transport.equals("auto") && !transport.equals("tcp") && !transport.equals("ucx")) {
            throw new IllegalArgumentException("transport must be auto, tcp or ucx: " + transport);
        }
        ucxIdleStrategy = Objects.requireNonNull(ucxIdleStrategy, "ucxIdleStrategy").toLowerCase(Locale.ROOT);
        if (!java.util.List.of("adaptive", "backoff", "spin", "yield").contains(ucxIdleStrategy)) {
            throw new IllegalArgumentException("ucxIdleStrategy must be adaptive, backoff, spin or yield: "
                + ucxIdleStrategy);
        }
        if (password != null && password.isEmpty()) {
            password = null;
        }
        positive("maxKeyBytes", maxKeyBytes);
        positive("maxValueBytes", maxValueBytes);
        positive("maxDocumentBytes", maxDocumentBytes);
        positive("maxConnections", maxConnections);
        positive("maxPendingReplyBytes", maxPendingReplyBytes);
        if (maxRequestBytes < 0) {
            maxRequestBytes = Math.max(maxValueBytes, maxDocumentBytes) + (1 << 20);
        }
        positive("maxRequestBytes", maxRequestBytes);
        if (snapshotLogBytes < 0) {
            throw new IllegalArgumentException("snapshotLogBytes must not be negative: " + snapshotLogBytes);
        }
        if (handshakeTimeout.isNegative() || handshakeTimeout.isZero()) {
            throw new IllegalArgumentException("handshakeTimeout must be positive: " + handshakeTimeout);
        }
        return this;
    }

    private static void positive(String name, long value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be positive: " + value);
        }
    }

    /** The store's settings derived from these. */
    StoreConfig storeConfig() {
        return new StoreConfig().dataDir(dataDir).fsync(fsync).maxKeyBytes(maxKeyBytes).maxValueBytes(maxValueBytes)
            .maxDocumentBytes(maxDocumentBytes).snapshotLogBytes(snapshotLogBytes)
            .blobs(blobConfig.clone().directory(dataDir.toAbsolutePath().resolve("blobs")))
            .replicaSetMember(replicaSet != null).oplogWindowBytes(oplogWindowBytes);
    }

    @Override
    public String toString() {
        return "bind=" + bind + " port=" + port + " dataDir=" + dataDir + " fsync=" + fsync + " transport=" + transport
            + " password=" + (password != null ? "set" : "none") + " tls=" + (tlsCertificate != null ? "on" : "off")
            + " maxConnections=" + maxConnections + (timing ? " timing=on" : "") + (cluster ? " cluster=on" : "") + (replicaSet != null ? " " + replicaSet
                : "");
    }
}
