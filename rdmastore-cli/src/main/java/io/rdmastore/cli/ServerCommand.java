package io.rdmastore.cli;

import io.rdmastore.server.RdmaStoreServer;
import io.rdmastore.server.ServerConfig;
import io.rdmastore.server.replication.ReplicaSetConfig;
import io.rdmastore.store.FsyncPolicy;
import io.rdmastore.store.RecoveryReport;
import io.rdmastore.transport.ucx.UcxTransport;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code rdmastore server}: runs {@link RdmaStoreServer} in this JVM until SIGTERM or Ctrl-C (or an interrupt of the
 * calling thread), which close it gracefully: connections closed, log flushed and fsynced.
 *
 * <p>Settings come from the command line, then {@code --config FILE} (a properties file whose keys are the long
 * option names without dashes: {@code port=7379}, {@code data-dir=/var/lib/rdmastore}), then the defaults; the
 * password may also come from the environment variable {@code RDMASTORE_PASSWORD}. Threads: one call at a time.
 */
@Command(name = "server", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
    description = {"Runs an rdmastore server (native protocol and RESP on one port) until SIGTERM or Ctrl-C.",
        "Settings: command line, then --config FILE (keys are the long option names without dashes, e.g."
            + " port=7379), then defaults."},
    sortOptions = false)
final class ServerCommand implements Callable<Integer> {
    /** Environment variable holding the password, so it stays out of {@code ps} output. */
    static final String PASSWORD_ENV = "RDMASTORE_PASSWORD";
    /** Environment variable holding the replica-set key, so it stays out of {@code ps} output too. */
    static final String REPLICA_SET_KEY_ENV = "RDMASTORE_REPLICA_SET_KEY";
    /** The banner's line that says the server serves; {@code replica-set demo} waits for it in a member's output. */
    static final String LISTENING = "  listening   ";
    private static final String UCX_TLS_PROPERTY = "rdmastore.ucx.tls";

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Option(names = {"-p", "--port"}, paramLabel = "N", description = "Port of native protocol and RESP (default 7379;"
        + " 0 picks a free one).")
    String port;
    @Option(names = {"-b", "--bind"}, paramLabel = "ADDR", description = "Address to listen on (default 127.0.0.1;"
        + " 0.0.0.0 exposes the server: set a password).")
    String bind;
    @Option(names = {"-d", "--data-dir", "--dir"}, paramLabel = "DIR", description = "Directory of the log and"
        + " snapshots (default ./data).")
    String dataDir;
    @Option(names = "--fsync", paramLabel = "POLICY", description = "always | everysec | no (default everysec).")
    String fsync;
    @Option(names = "--transport", paramLabel = "T", description = "auto (offer UCX when it works, default) | tcp"
        + " (never) | ucx (UCX must work or the server does not start).")
    String transport;
    @Option(names = "--password", paramLabel = "PW", description = "Password clients must give (default none; or set"
        + " the environment variable " + PASSWORD_ENV + ").")
    String password;
    @Option(names = "--tls-cert", paramLabel = "PEM", description = "Serve TLS on the port (native and RESP): the"
        + " certificate chain, PEM; with --tls-key. Clients must then connect with TLS.")
    String tlsCert;
    @Option(names = "--tls-key", paramLabel = "PEM", description = "The TLS private key (PKCS#8 PEM) of --tls-cert.")
    String tlsKey;
    @Option(names = "--ucx-tls", paramLabel = "LIST", description = "UCX transports to use, like UCX_TLS (e.g."
        + " posix,cma,self or rc,self); default: all but UCX's tcp wire, which checks no remote keys.")
    String ucxTls;
    @Option(names = "--idle-strategy", paramLabel = "S", description = "Idle strategy of the UCX thread:"
        + " adaptive (default: spins while requests keep coming, sleeps until the next one when they stop) | backoff"
        + " (spin, yield, then park up to 1 ms) | spin (one core always) | yield.")
    String idleStrategy;
    @Option(names = "--max-connections", paramLabel = "N", description = "Most native connections (default 10000).")
    String maxConnections;
    @Option(names = "--max-key-bytes", paramLabel = "SIZE", description = "Largest key (default 64k).")
    String maxKeyBytes;
    @Option(names = "--max-value-bytes", paramLabel = "SIZE", description = "Largest value (default 512m).")
    String maxValueBytes;
    @Option(names = "--blob-threshold", paramLabel = "SIZE", description = "String values from this size on are"
        + " stored as blob files and served from a mapping (default 8m).")
    String blobThreshold;
    @Option(names = "--max-blob-bytes", paramLabel = "SIZE", description = "Largest blob the blob API accepts"
        + " (default 8g); larger puts are refused before any data moves.")
    String maxBlobBytes;
    @Option(names = "--max-document-bytes", paramLabel = "SIZE", description = "Largest document (default 16m).")
    String maxDocumentBytes;
    @Option(names = "--max-request-bytes", paramLabel = "SIZE", description = "Largest request (default the value"
        + " limit plus 1m).")
    String maxRequestBytes;
    @Option(names = "--max-pending-reply-bytes", paramLabel = "SIZE", description = "Reply bytes queued for a slow"
        + " reader before its connection is closed (default 1g).")
    String maxPendingReplyBytes;
    @Option(names = "--rendezvous-threshold", paramLabel = "SIZE", description = "Values from this size on are lent"
        + " to ucx clients for a one-sided read instead of sent (default 256k; 0 = off).")
    String rendezvousThreshold;
    @Option(names = "--snapshot-log-bytes", paramLabel = "SIZE", description = "Log size that triggers a snapshot"
        + " (default 64m; 0 = never).")
    String snapshotLogBytes;
    @Option(names = "--handshake-timeout", paramLabel = "TIME", description = "Time a client has for its HELLO"
        + " (default 5s).")
    String handshakeTimeout;
    @Option(names = "--resp", paramLabel = "BOOL", description = "Serve RESP (Redis clients) on the same port"
        + " (default true).")
    String resp;
    @Option(names = "--replica-set", paramLabel = "NAME", description = "Run as a member of this replica set (letters,"
        + " digits, _ . -); needs --node-id and --members. Writes go to the elected primary; the others replicate.")
    String replicaSetName;
    @Option(names = "--node-id", paramLabel = "ID", description = "This member's id; one of the ids in --members.")
    String nodeId;
    @Option(names = "--members", paramLabel = "LIST", description = "Every member, this one included, with its client"
        + " address: ID=HOST:PORT,ID=HOST:PORT,... (the same list on every member).")
    String members;
    @Option(names = "--replica-set-key", paramLabel = "KEY", description = "Secret the members present to each other"
        + " (or set the environment variable " + REPLICA_SET_KEY_ENV + "); default none, allowed on loopback only.")
    String replicaSetKey;
    @Option(names = "--raft-port", paramLabel = "N", description = "Port of this member's election protocol (Ratis);"
        + " default its client port + " + ReplicaSetConfig.DEFAULT_RAFT_PORT_OFFSET + ", on every member.")
    String raftPort;
    @Option(names = "--election-timeout", paramLabel = "TIME", description = "How long the secondaries hear nothing"
        + " from the primary before one campaigns (up to twice this, at random); default 150ms for fast failover."
        + " Raise it (e.g. 1s) where members share few cores with large blob transfers.")
    String electionTimeout;
    @Option(names = "--join", description = "A new member of a running set: wait until a member adds it with"
        + " 'rdmastore replica-set add' (--members then lists this member and the running ones).")
    boolean join;
    @Option(names = "--cluster", description = "Cluster mode: serve the hash slots the cluster's map gives this"
        + " node's shard and redirect clients for the others (MOVED); the map is made by 'rdmastore cluster create'.")
    boolean cluster;
    @Option(names = {"-c", "--config"}, paramLabel = "FILE", description = "Properties file with the same keys;"
        + " command-line options win.")
    Path config;

    /** The keys a config file may hold, in --help order: each is a long option name without dashes. */
    static final List<String> KEYS = List.of("port", "bind", "data-dir", "fsync", "transport", "password", "tls-cert",
        "tls-key", "ucx-tls", "idle-strategy", "max-connections", "max-key-bytes", "max-value-bytes", "blob-threshold", "max-blob-bytes",
        "max-document-bytes",
        "max-request-bytes", "max-pending-reply-bytes", "snapshot-log-bytes", "rendezvous-threshold", "handshake-timeout", "resp", "replica-set",
        "node-id", "members", "replica-set-key", "raft-port", "election-timeout", "join", "cluster");

    @Override
    public Integer call() throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        Map<String, String> s = settings();
        ServerConfig cfg = toConfig(s);
        String tls = s.get("ucx-tls");
        if (tls != null) {
            // The server's UcxTransport.Context takes its default TLS list from this property when it is built.
            System.setProperty(UCX_TLS_PROPERTY, tls);
        }
        RdmaStoreServer.leakSamplingOffUnlessAsked();
        RdmaStoreServer server = new RdmaStoreServer(cfg);
        try {
            server.start();
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new UserException("cannot start: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            throw new UserException("cannot start: " + e, e);
        }
        Thread hook = new Thread(server::close, "rdmastore-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        banner(out, server, cfg);
        try {
            server.awaitClose();
        } catch (InterruptedException e) {
            // An interrupt is a stop request from an embedding program or a test, like SIGTERM for a process. The
            // server closes before the flag is restored: Ratis's shutdown waits, and a set flag would cut its wait short.
            server.close();
            Thread.currentThread().interrupt();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException alreadyShuttingDown) {
                // the JVM is exiting anyway; the hook has closed or will close the server
            }
        }
        out.println("rdmastore stopped");
        out.flush();
        return 0;
    }

    private static void banner(PrintWriter out, RdmaStoreServer server, ServerConfig cfg) {
        String ucx;
        if (cfg.transport().equals("tcp")) {
            ucx = "disabled by configuration (transport=tcp): every client stays on tcp";
        } else if (server.ucxAvailable()) {
            ucx = "available" + (System.getProperty(UCX_TLS_PROPERTY) != null ? " (UCX_TLS="
                + System.getProperty(UCX_TLS_PROPERTY) + ")" : "") + ": clients on this host move data through"
                + " shared memory, others through RDMA verbs where both have a device, else UCX's tcp";
        } else {
            ucx = "unavailable (" + UcxTransport.probe() + "): every client stays on tcp; apt-get install libucx0";
        }
        RecoveryReport rr = server.store().recoveryReport();
        out.println("rdmastore " + RdmaStoreServer.VERSION + " server");
        out.println(LISTENING + cfg.bind() + ":" + server.port() + " (native protocol"
            + (cfg.resp() ? " and RESP" : "") + ")");
        out.println("  transports  tcp: always (control channel and fallback)");
        out.println("              ucx: " + ucx);
        out.println("  data dir    " + cfg.dataDir().toAbsolutePath() + " (fsync "
            + cfg.fsync().name().toLowerCase(Locale.ROOT) + "; recovered " + rr.snapshotRecords()
            + " snapshot records + " + rr.recordsReplayed() + " log records"
            + (rr.tornTailBytesCut() > 0 ? ", cut a torn tail of " + rr.tornTailBytesCut() + " bytes" : "") + ")");
        out.println("  password    " + (cfg.password() != null ? "required" : "not set"
            + (cfg.bind().startsWith("127.") ? "" : " -- WARNING: anyone who can reach " + cfg.bind()
            + " can read and write")));
        ReplicaSetConfig rs = cfg.replicaSet();
        if (rs != null) {
            StringBuilder list = new StringBuilder();
            rs.members().forEach((id, a) -> list.append(list.isEmpty() ? "" : ",").append(id).append('=')
                .append(a.getHostString()).append(':').append(a.getPort()));
            out.println("  replica set " + rs.setName() + ": this server is member " + rs.nodeId() + " of " + list
                + " (" + rs.members().size() + " members)");
            out.println("              elections on port " + rs.raftPort(rs.nodeId()) + "; member key "
                + (rs.keySet() ? "set" : "not set (loopback only)") + "; writes go to the elected primary, see"
                + " 'rdmastore replica-set status --port " + server.port() + "'");
        }
        if (server.cluster() != null) {
            var v = server.cluster().view();
            out.println("  cluster     " + (v.self() == null ? (server.replicaSet() != null ? "mode on; the slot map"
                + " is read from the replica set's control plane" : "mode on, no slot map yet: 'rdmastore cluster"
                + " create HOST:PORT ...' makes one") : "shard " + v.self().name() + " (" + v.self().slotCount() + " slots),"
                + " map epoch " + v.map().epoch() + ", " + v.map().shards().size() + " shards; 'rdmastore cluster"
                + " status --port " + server.port() + "'"));
        }
        out.println("  stop with Ctrl-C or SIGTERM (graceful: log flushed)");
        out.flush();
    }

    /** Command line over config file over environment (password only); absent keys are left to the defaults. */
    Map<String, String> settings() throws IOException {
        Map<String, String> s = new LinkedHashMap<>();
        if (config != null) {
            s.putAll(readConfig(config));
        }
        String envPassword = System.getenv(PASSWORD_ENV);
        if (envPassword != null && !envPassword.isEmpty()) {
            s.put("password", envPassword);
        }
        String envKey = System.getenv(REPLICA_SET_KEY_ENV);
        if (envKey != null && !envKey.isEmpty()) {
            s.put("replica-set-key", envKey);
        }
        String[][] cli = {{"port", port}, {"bind", bind}, {"data-dir", dataDir}, {"fsync", fsync},
            {"transport", transport}, {"password", password}, {"tls-cert", tlsCert},
            {"tls-key", tlsKey}, {"ucx-tls", ucxTls}, {"idle-strategy", idleStrategy},
            {"max-connections", maxConnections}, {"max-key-bytes", maxKeyBytes}, {"max-value-bytes", maxValueBytes},
            {"blob-threshold", blobThreshold}, {"max-blob-bytes", maxBlobBytes},
            {"max-document-bytes", maxDocumentBytes}, {"max-request-bytes", maxRequestBytes},
            {"max-pending-reply-bytes", maxPendingReplyBytes}, {"snapshot-log-bytes", snapshotLogBytes},
            {"rendezvous-threshold", rendezvousThreshold},
            {"handshake-timeout", handshakeTimeout}, {"resp", resp}, {"replica-set", replicaSetName},
            {"node-id", nodeId}, {"members", members}, {"replica-set-key", replicaSetKey}, {"raft-port", raftPort},
            {"election-timeout", electionTimeout}, {"join", join ? "true" : null},
            {"cluster", cluster ? "true" : null}};
        for (String[] kv : cli) {
            if (kv[1] != null) {
                s.put(kv[0], kv[1]);
            }
        }
        return s;
    }

    static Map<String, String> readConfig(Path file) throws IOException {
        if (!Files.isReadable(file)) {
            throw new UserException("config file " + file + " does not exist or cannot be read");
        }
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            p.load(r);
        }
        Map<String, String> m = new LinkedHashMap<>();
        TreeSet<String> unknown = new TreeSet<>();
        for (String k : p.stringPropertyNames()) {
            String key = k.trim();
            if (KEYS.contains(key)) {
                m.put(key, p.getProperty(k).trim());
            } else {
                unknown.add(key);
            }
        }
        if (!unknown.isEmpty()) {
            throw new UserException("config file " + file + ": unknown key(s) " + unknown + "; known keys: " + KEYS);
        }
        return m;
    }

    static ServerConfig toConfig(Map<String, String> s) {
        ServerConfig c = new ServerConfig();
        ReplicaSetConfig rs = replicaSetConfig(s);
        if (rs != null) {
            c.replicaSet(rs);
            // a member listens where the list says it does unless --port says the same thing
            c.port(rs.members().get(rs.nodeId()).getPort());
        }
        s.forEach((k, v) -> {
            switch (k) {
                case "port" -> c.port((int) Values.number(k, v, 0, 65535));
                case "bind" -> c.bind(v);
                case "data-dir" -> c.dataDir(Path.of(v));
                case "fsync" -> c.fsync(fsyncPolicy(v));
                case "transport" -> c.transport(Values.oneOf(k, v, "auto", "tcp", "ucx"));
                case "password" -> c.password(v);
                case "ucx-tls" -> Values.nonEmpty(k, v);
                case "idle-strategy" -> c.ucxIdleStrategy(Values.oneOf(k, v, "adaptive", "backoff", "spin", "yield"));
                case "max-connections" -> c.maxConnections((int) Values.number(k, v, 1, Integer.MAX_VALUE));
                case "max-key-bytes" -> c.maxKeyBytes((int) Values.size(k, v, 1, Integer.MAX_VALUE));
                case "max-value-bytes" -> c.maxValueBytes(Values.size(k, v, 1, Long.MAX_VALUE));
                case "blob-threshold" -> c.blobConfig().thresholdBytes(Values.size(k, v, 1, Long.MAX_VALUE));
                case "max-blob-bytes" -> c.blobConfig().maxBlobBytes(Values.size(k, v, 0, Long.MAX_VALUE));
                case "max-document-bytes" -> c.maxDocumentBytes((int) Values.size(k, v, 1, Integer.MAX_VALUE));
                case "max-request-bytes" -> c.maxRequestBytes(Values.size(k, v, 1, Long.MAX_VALUE));
                case "max-pending-reply-bytes" -> c.maxPendingReplyBytes(Values.size(k, v, 1, Long.MAX_VALUE));
                case "snapshot-log-bytes" -> c.snapshotLogBytes(Values.size(k, v, 0, Long.MAX_VALUE));
                case "rendezvous-threshold" -> c.rendezvousThreshold(Values.size(k, v, 0, Long.MAX_VALUE));
                case "handshake-timeout" -> c.handshakeTimeout(Values.duration(k, v));
                case "resp" -> c.resp(Values.bool(k, v));
                case "cluster" -> c.cluster(Values.bool(k, v));
                case "replica-set", "node-id", "members", "replica-set-key", "raft-port", "election-timeout", "join" -> {
                    // read by replicaSetConfig
                }
                case "tls-cert" -> c.tls(Path.of(v), c.tlsKey());
                case "tls-key" -> c.tls(c.tlsCertificate(), Path.of(v));
                default -> throw new UserException("unknown setting " + k);
            }
        });
        try {
            return c.conclude();
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new UserException("bad setting: " + e.getMessage(), e);
        }
    }

    /**
     * The replica-set membership the settings describe, or null for a standalone server.
     *
     * @throws UserException naming what is wrong: a member option without {@code --replica-set}, a missing option, a
     *     malformed member list (the reason {@link ReplicaSetConfig} gives), an id not among the members
     */
    static ReplicaSetConfig replicaSetConfig(Map<String, String> s) {
        String name = s.get("replica-set");
        if (name == null) {
            for (String k : List.of("node-id", "members", "replica-set-key", "raft-port", "join")) {
                if (s.containsKey(k)) {
                    throw new UserException("--" + k + " needs --replica-set NAME (it only applies to a member of a"
                        + " replica set)");
                }
            }
            return null;
        }
        if (s.get("node-id") == null) {
            throw new UserException("--replica-set needs --node-id ID: which of the members this server is");
        }
        if (s.get("members") == null) {
            throw new UserException("--replica-set needs --members ID=HOST:PORT,... (every member, this one included)");
        }
        try {
            ReplicaSetConfig rs = new ReplicaSetConfig().setName(name).nodeId(s.get("node-id"))
                .members(s.get("members"));
            if (rs.members().isEmpty()) {
                throw new IllegalArgumentException("--members lists no member; give ID=HOST:PORT,...");
            }
            String key = s.get("replica-set-key");
            if (key != null) {
                rs.key(key);
            }
            if (s.get("raft-port") != null) {
                rs.raftPort(rs.nodeId(), (int) Values.number("raft-port", s.get("raft-port"), 1, 65535));
            }
            if (s.get("election-timeout") != null) {
                rs.electionTimeout(Values.duration("--election-timeout", s.get("election-timeout")));
            }
            rs.join(Boolean.parseBoolean(s.getOrDefault("join", "false")));
            rs.conclude();
            String self = rs.members().get(rs.nodeId()).getPort() + "";
            if (s.get("port") != null && !s.get("port").equals(self)) {
                throw new IllegalArgumentException("--port " + s.get("port") + " differs from this member's port in"
                    + " --members (" + rs.nodeId() + "=..:" + self + "); the other members would look for it there");
            }
            return rs;
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new UserException("bad replica set settings: " + e.getMessage(), e);
        }
    }

    private static FsyncPolicy fsyncPolicy(String v) {
        return FsyncPolicy.valueOf(Values.oneOf("fsync", v, "always", "everysec", "no").toUpperCase(Locale.ROOT));
    }
}
