package io.rdmastore.server.replication;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Configuration of this server as a member of a replica set: the set's name, this member's id, every member's client
 * address (the data plane) and Ratis port (the control plane), the key members present to each other, and the
 * replication stream's tuning. Fluent setters; {@link #conclude()} validates once. Not thread-safe until concluded.
 */
public final class ReplicaSetConfig {
    /** Ratis listens on the member's client port plus this, unless {@link #raftPort} is given. */
    public static final int DEFAULT_RAFT_PORT_OFFSET = 10000;

    private String setName;
    private String nodeId;
    private final Map<String, InetSocketAddress> members = new LinkedHashMap<>();
    private final Map<String, Integer> raftPorts = new LinkedHashMap<>();
    private String key;
    private String peerTransport = "auto";
    private Duration fetchWait = Duration.ofMillis(100);
    private long maxBatchBytes = 4L << 20;
    private Duration peerTimeout = Duration.ofMillis(1500);
    private Duration electionTimeout = Duration.ofMillis(150);
    private boolean join;

    public ReplicaSetConfig setName(String name) {
        this.setName = name;
        return this;
    }

    public String setName() {
        return setName;
    }

    public ReplicaSetConfig nodeId(String id) {
        this.nodeId = id;
        return this;
    }

    public String nodeId() {
        return nodeId;
    }

    /** Adds a member by id with its client address (host:port of its native/RESP port). */
    public ReplicaSetConfig member(String id, InetSocketAddress clientAddress) {
        members.put(id, clientAddress);
        return this;
    }

    /** Every member, in the order given: id to client address. */
    public Map<String, InetSocketAddress> members() {
        return Collections.unmodifiableMap(members);
    }

    /** The Ratis port of member {@code id} (default: its client port + {@value #DEFAULT_RAFT_PORT_OFFSET}). */
    public ReplicaSetConfig raftPort(String id, int port) {
        raftPorts.put(id, port);
        return this;
    }

    public int raftPort(String id) {
        Integer p = raftPorts.get(id);
        return p != null ? p : members.get(id).getPort() + DEFAULT_RAFT_PORT_OFFSET;
    }

    /**
     * The secret members present to each other with every replication request (MongoDB's keyFile); a request with
     * another key is refused. Default: none set, which is allowed on loopback only and logged as a warning.
     */
    public ReplicaSetConfig key(String k) {
        this.key = k;
        return this;
    }

    public String key() {
        return key == null ? "" : key;
    }

    public boolean keySet() {
        return key != null && !key.isEmpty();
    }

    /** Transport for links between members: auto (ucx where both ends have it), tcp or ucx. Default auto. */
    public ReplicaSetConfig peerTransport(String t) {
        this.peerTransport = t;
        return this;
    }

    public String peerTransport() {
        return peerTransport;
    }

    /** How long a secondary's fetch waits at the primary for new records before it returns empty (a heartbeat). */
    public ReplicaSetConfig fetchWait(Duration d) {
        this.fetchWait = d;
        return this;
    }

    public Duration fetchWait() {
        return fetchWait;
    }

    /** Largest batch of records one fetch returns (at least one record is always returned). Default 4 MiB. */
    public ReplicaSetConfig maxBatchBytes(long b) {
        this.maxBatchBytes = b;
        return this;
    }

    public long maxBatchBytes() {
        return maxBatchBytes;
    }

    /** Time-out of one request between members (prepare, a catch-up fetch). Default 1.5 s. */
    public ReplicaSetConfig peerTimeout(Duration d) {
        this.peerTimeout = d;
        return this;
    }

    public Duration peerTimeout() {
        return peerTimeout;
    }

    /**
     * How long a secondary hears nothing from the primary's control plane before it campaigns (between this and
     * twice this, at random); default 150 ms, for fast failover. Raise it on hosts where a member's threads can starve
     * for longer (few cores shared by several members moving large blobs): an election there costs a NOTPRIMARY.
     */
    public ReplicaSetConfig electionTimeout(Duration value) {
        if (value.toMillis() < 50 || value.toMillis() > 60_000) {
            throw new IllegalArgumentException("election timeout must be 50 ms to 60 s, was " + value.toMillis()
                + " ms");
        }
        this.electionTimeout = value;
        return this;
    }

    public Duration electionTimeout() {
        return electionTimeout;
    }

    /** The control plane's settings this configuration implies. */
    public ControlConfig controlConfig() {
        Duration max = electionTimeout.multipliedBy(2);
        Duration atLeastOneSecond = max.compareTo(Duration.ofSeconds(1)) > 0 ? max : Duration.ofSeconds(1);
        return new ControlConfig().electionTimeoutMin(electionTimeout).electionTimeoutMax(max)
            .rpcRequestTimeout(atLeastOneSecond.plusMillis(100)).leaderStepDownWait(atLeastOneSecond);
    }

    /**
     * A new member of a running set: it starts with an empty control-plane configuration and waits until a member
     * adds it ({@code replica-set add}); {@link #members} then needs only this member and one running member.
     */
    public ReplicaSetConfig join(boolean value) {
        this.join = value;
        return this;
    }

    public boolean join() {
        return join;
    }

    /** Validates; returns this. */
    public ReplicaSetConfig conclude() {
        if (setName == null || setName.isBlank() || !setName.matches("[A-Za-z0-9_.-]{1,64}")) {
            throw new IllegalArgumentException("replica set name must be 1..64 letters, digits, '_', '.', '-'; was '"
                + setName + "'");
        }
        Objects.requireNonNull(nodeId, "node id (--node-id) is required in a replica set");
        if (members.isEmpty()) {
            throw new IllegalArgumentException("a replica set needs --members id=host:port,...");
        }
        if (!members.containsKey(nodeId)) {
            throw new IllegalArgumentException("node id '" + nodeId + "' is not among the members " + members.keySet());
        }
        if (!peerTransport.equals("auto") && !peerTransport.equals("tcp") && !peerTransport.equals("ucx")) {
            throw new IllegalArgumentException("peer transport must be auto, tcp or ucx, was " + peerTransport);
        }
        if (maxBatchBytes < 1024) {
            throw new IllegalArgumentException("max batch bytes must be at least 1024, was " + maxBatchBytes);
        }
        return this;
    }

    /**
     * Parses {@code n1=host:port,n2=host:port,...} into this configuration's members.
     *
     * @throws IllegalArgumentException naming the entry that is malformed
     */
    public ReplicaSetConfig members(String list) {
        for (String item : list.split(",")) {
            String t = item.trim();
            if (t.isEmpty()) {
                continue;
            }
            int eq = t.indexOf('=');
            int colon = t.lastIndexOf(':');
            if (eq <= 0 || colon < eq + 2 || colon == t.length() - 1) {
                throw new IllegalArgumentException("member '" + t + "' is not id=host:port");
            }
            String id = t.substring(0, eq);
            String host = t.substring(eq + 1, colon);
            int port;
            try {
                port = Integer.parseInt(t.substring(colon + 1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("member '" + t + "' has a bad port", e);
            }
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException("member '" + t + "' has a bad port " + port);
            }
            if (members.containsKey(id)) {
                throw new IllegalArgumentException("member id '" + id + "' appears twice");
            }
            members.put(id, InetSocketAddress.createUnresolved(host, port));
        }
        return this;
    }

    @Override
    public String toString() {
        return "replica set " + setName + " as " + nodeId + " of " + members.keySet();
    }
}
