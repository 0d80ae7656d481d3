package io.rdmastore.server.resp;

import io.rdmastore.server.replication.ReplicaSet;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * The RESP face of a replica set: ROLE, WAIT (the client blocks, the event loop does not), READONLY / READWRITE, and
 * the Sentinel discovery calls clients use to find the primary ({@code SENTINEL get-master-addr-by-name} and
 * friends), answered by the members themselves. A standalone server answers as a master without replicas.
 * Stateless; called on the connection's event loop.
 */
final class RespReplication {
    /** WAIT 0 blocks until satisfied, as in Redis; bounded here so a forgotten client does not wait for ever. */
    private static final long WAIT_FOREVER_MILLIS = 365L * 24 * 3600 * 1000;

    private RespReplication() {
    }

    /** ROLE: ["master", offset, [[ip, port, offset]...]] or ["slave", host, port, state, offset]. */
    static void role(RespFace face, RespWriter w) {
        ReplicaSet rs = face.replicaSet();
        long offset = face.store.lastPosition()[1];
        if (rs == null || rs.role() == ReplicaSet.Role.PRIMARY) {
            w.arrayHeader(3);
            w.bulk("master");
            w.integer(offset);
            if (rs == null) {
                w.arrayHeader(0);
                return;
            }
            List<ReplicaSet.Secondary> slaves = rs.secondaries();
            w.arrayHeader(slaves.size());
            for (ReplicaSet.Secondary x : slaves) {
                w.arrayHeader(3);
                w.bulk(x.host());
                w.bulk(Integer.toString(x.port()));
                w.bulk(Long.toString(x.ackIndex()));
            }
            return;
        }
        String primary = rs.primaryAddress();
        w.arrayHeader(5);
        w.bulk("slave");
        w.bulk(host(primary));
        w.integer(Long.parseLong(port(primary)));
        w.bulk(rs.linkUp() ? "connected" : "connect");
        w.integer(offset);
    }

    /** WAIT numreplicas timeout: how many secondaries hold this client's writes, once enough do or time is up. */
    static void await(RespFace face, RespConnection c, RespWriter w, byte[][] argv) {
        if (!RespCommands.parseLong(c, argv[1]) || c.num < 0 || c.num > Integer.MAX_VALUE) {
            w.error("ERR value is out of range, must be positive");
            return;
        }
        int replicas = (int) c.num;
        if (!RespCommands.parseLong(c, argv[2])) {
            w.error("ERR timeout is not an integer or out of range");
            return;
        }
        if (c.num < 0) {
            w.error("ERR timeout is negative");
            return;
        }
        long timeout = c.num == 0 ? WAIT_FOREVER_MILLIS : c.num;
        ReplicaSet rs = face.replicaSet();
        if (rs == null) {
            w.integer(0);
            return;
        }
        if (rs.role() != ReplicaSet.Role.PRIMARY) {
            w.error("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica"
                + " is configured to be writable (which is not the default) writes to replicas are just local and are"
                + " not propagated.");
            return;
        }
        c.block();
        rs.awaitReplicas(c.lastWriteIndex, replicas, timeout).whenComplete((n, err) -> c.resume(out -> {
            if (err == null) {
                out.integer(n);
            } else {
                Throwable t = err.getCause() != null ? err.getCause() : err;
                // the primary stepped down meanwhile: what reached the secondaries is unknown, so none is claimed
                out.integer(0);
                if (t.getMessage() == null) {
                    return;
                }
            }
        }));
    }

    /**
     * The Sentinel calls clients use for discovery. Each member answers for its own set: the set's name is the
     * master's name, its primary the master, the other members its replicas.
     */
    static void sentinel(RespFace face, RespWriter w, byte[][] argv, int argc) {
        ReplicaSet rs = face.replicaSet();
        String sub = new String(argv[1], StandardCharsets.UTF_8).toLowerCase(java.util.Locale.ROOT);
        if (rs == null) {
            w.error("ERR this server is not a member of a replica set: no Sentinel view (start it with --replica-set)");
            return;
        }
        String name = argc > 2 ? new String(argv[2], StandardCharsets.UTF_8) : null;
        switch (sub) {
            case "get-master-addr-by-name" -> {
                if (argc != 3) {
                    w.error("ERR wrong number of arguments for 'sentinel|get-master-addr-by-name' command");
                } else if (!rs.setName().equals(name) || rs.primaryAddress().isEmpty()) {
                    w.nullBulk();
                } else {
                    String a = rs.primaryAddress();
                    int colon = a.lastIndexOf(':');
                    w.arrayHeader(2);
                    w.bulk(a.substring(0, colon));
                    w.bulk(a.substring(colon + 1));
                }
            }
            case "masters" -> {
                w.arrayHeader(1);
                master(rs, w);
            }
            case "master" -> {
                if (!rs.setName().equals(name)) {
                    w.error("ERR No such master with that name");
                } else {
                    master(rs, w);
                }
            }
            case "replicas", "slaves" -> {
                if (!rs.setName().equals(name)) {
                    w.error("ERR No such master with that name");
                    return;
                }
                String primary = rs.primaryId();
                List<Map.Entry<String, InetSocketAddress>> others = rs.members().entrySet().stream()
                    .filter(e -> !e.getKey().equals(primary)).toList();
                w.arrayHeader(others.size());
                for (Map.Entry<String, InetSocketAddress> e : others) {
                    fields(w, "name", e.getValue().getHostString() + ":" + e.getValue().getPort(), "ip",
                        e.getValue().getHostString(), "port", Integer.toString(e.getValue().getPort()), "flags",
                        "slave", "master-host", host(rs.primaryAddress()), "master-port", port(rs.primaryAddress()));
                }
            }
            case "sentinels" -> w.arrayHeader(0);
            case "myid" -> w.bulk(rs.nodeId());
            default -> w.error("ERR Unknown sentinel subcommand '" + sub + "'");
        }
    }

    private static void master(ReplicaSet rs, RespWriter w) {
        String a = rs.primaryAddress();
        fields(w, "name", rs.setName(), "ip", host(a), "port", port(a), "flags", a.isEmpty() ? "master,s_down" : "master",
            "num-slaves", Integer.toString(Math.max(0, rs.members().size() - 1)), "quorum",
            Integer.toString(rs.members().size() / 2 + 1));
    }

    private static String host(String addr) {
        int colon = addr.lastIndexOf(':');
        return colon > 0 ? addr.substring(0, colon) : "";
    }

    private static String port(String addr) {
        int colon = addr.lastIndexOf(':');
        return colon > 0 ? addr.substring(colon + 1) : "0";
    }

    /** A flat array of name, value pairs (what Sentinel answers, in RESP2 and RESP3 alike). */
    private static void fields(RespWriter w, String... kv) {
        w.arrayHeader(kv.length);
        for (String s : kv) {
            w.bulk(s);
        }
    }
}
