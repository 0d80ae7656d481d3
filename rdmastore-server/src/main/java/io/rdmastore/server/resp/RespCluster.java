package io.rdmastore.server.resp;

import io.rdmastore.client.cluster.HashSlot;
import io.rdmastore.client.cluster.SlotMap;
import io.rdmastore.server.cluster.ClusterNode;
import io.rdmastore.server.replication.ReplicaSet;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Cluster mode on the RESP face (docs/cluster.md): the slot check run before every key-taking command ({@link
 * #route}) and the {@code CLUSTER} subcommands clients use to learn the topology, with Redis's reply shapes.
 *
 * <p>Threads: stateless; any event loop, for its own connection.
 */
final class RespCluster {
    static final String CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot";
    private static final String DISABLED = "ERR This instance has cluster support disabled";

    private RespCluster() {
    }

    /**
     * Checks the slots of a command's keys (from its key positions). Returns true when this node runs it; otherwise
     * writes the error ({@code CROSSSLOT}, {@code MOVED}, {@code CLUSTERDOWN}) and returns false. Allocates nothing
     * unless it redirects.
     */
    static boolean route(ClusterNode cluster, RespConnection c, RespWriter w, RespCommand cmd, byte[][] argv, int argc) {
        int last = cmd.lastKey >= 0 ? cmd.lastKey : argc + cmd.lastKey;
        last = Math.min(last, argc - 1);
        int slot = -1;
        for (int i = cmd.firstKey; i <= last; i += cmd.step) {
            int s = HashSlot.of(argv[i]);
            if (slot < 0) {
                slot = s;
            } else if (s != slot) {
                w.error(CROSSSLOT);
                return false;
            }
        }
        if (slot < 0) {
            return true;
        }
        if (cluster.migrations() && !migrationRoute(cluster, c, w, cmd, argv, slot, cmd.firstKey, last)) {
            return false;
        }
        if (c.slotLock != null || c.asking && cluster.importingFrom(slot) != null) {
            return true;
        }
        String redirect = cluster.redirect(slot, cmd.write, c.replicaReads);
        if (redirect != null) {
            w.error(redirect);
            return false;
        }
        return true;
    }

    /**
     * A slot moving out of here: a command whose keys all exist here runs here, holding the slot's lock shared (a
     * batch move holds it exclusively, so no command sees a key half-moved; a command that finds it taken gets
     * {@code TRYAGAIN}); one whose keys are all gone is sent to the target with {@code -ASK} (once their deletes
     * here are on a majority of the shard, {@link ClusterNode#askAllowed}; TRYAGAIN until then); a mix gets
     * {@code TRYAGAIN}, as in Redis. A slot moving in is served to a client that sent ASKING just before.
     */
    private static boolean migrationRoute(ClusterNode cluster, RespConnection c, RespWriter w, RespCommand cmd,
                                          byte[][] argv, int slot, int first, int last) {
        String target = cluster.migratingTo(slot);
        if (target == null) {
            return true;
        }
        java.util.concurrent.locks.ReentrantReadWriteLock lock = cluster.slotLock(slot);
        if (lock == null || !lock.readLock().tryLock()) {
            w.error(TRYAGAIN);
            return false;
        }
        List<byte[]> keys = new ArrayList<>();
        for (int i = first; i <= last; i += cmd.step) {
            keys.add(argv[i]);
        }
        long present = 0;
        for (byte[] k : keys) {
            present += face(c).store.exists(new byte[][] {k});
        }
        if (present == keys.size()) {
            c.slotLock = lock.readLock();
            return true;
        }
        lock.readLock().unlock();
        if (present == 0 && cluster.askAllowed(slot, face(c).store.oplog().lastIndex())) {
            w.error("ASK " + slot + " " + target);
        } else {
            w.error(TRYAGAIN);
        }
        return false;
    }

    static final String TRYAGAIN = "TRYAGAIN Multiple keys request during rehashing of slot";

    private static RespFace face(RespConnection c) {
        return c.face();
    }

    /** The {@code cluster} INFO section, and {@code redis_mode}. */
    static Map<String, Map<String, String>> info(ClusterNode cluster, KeyMigration migration) {
        Map<String, String> section = new LinkedHashMap<>();
        section.put("cluster_enabled", cluster == null ? "0" : "1");
        if (cluster != null) {
            migration.info(section);
        }
        Map<String, Map<String, String>> out = new LinkedHashMap<>();
        out.put("cluster", section);
        if (cluster != null) {
            out.put("server", Map.of("redis_mode", "cluster"));
        }
        return out;
    }

    static void cluster(RespFace face, RespConnection c, RespWriter w, byte[][] argv, int argc) {
        ClusterNode cluster = face.cluster();
        String sub = new String(argv[1], StandardCharsets.UTF_8).toUpperCase(java.util.Locale.ROOT);
        if (sub.equals("KEYSLOT") && argc == 3) {
            // answered without cluster mode too, unlike Redis: the function does not depend on it
            w.integer(HashSlot.of(argv[2]));
            return;
        }
        if (sub.equals("HELP")) {
            help(w);
            return;
        }
        if (cluster == null) {
            w.error(DISABLED);
            return;
        }
        ClusterNode.View v = cluster.view();
        switch (sub) {
            case "INFO" -> w.verbatim(infoText(v));
            case "MYID" -> w.bulk(myId(face, v));
            case "MYSHARDID" -> w.bulk(v.self() == null ? ClusterNode.redisId("shard:") : shardId(v.self()));
            case "SLOTS" -> slots(face, w, v);
            case "SHARDS" -> shards(face, w, v);
            case "NODES" -> w.verbatim(nodes(face, v));
            case "SETSLOT" -> setSlot(cluster, c, v, w, argv, argc);
            case "COUNTKEYSINSLOT" -> {
                int slot = argc == 3 ? slot(argv[2]) : -1;
                if (slot < 0) {
                    w.error("ERR Invalid slot");
                    return;
                }
                long n = 0;
                for (byte[] k : face.store.keys("*")) {
                    if (HashSlot.of(k) == slot) {
                        n++;
                    }
                }
                w.integer(n);
            }
            case "GETKEYSINSLOT" -> {
                int slot = argc == 4 ? slot(argv[2]) : -1;
                long max = argc == 4 ? number(argv[3]) : -1;
                if (slot < 0) {
                    w.error("ERR Invalid slot");
                    return;
                }
                if (max < 0) {
                    w.error("ERR Invalid number of keys");
                    return;
                }
                List<byte[]> keys = new ArrayList<>();
                for (byte[] k : face.store.keys("*")) {
                    if (keys.size() >= max) {
                        break;
                    }
                    if (HashSlot.of(k) == slot) {
                        keys.add(k);
                    }
                }
                w.arrayHeader(keys.size());
                for (byte[] k : keys) {
                    w.bulk(k);
                }
            }
            default -> w.error("ERR unknown subcommand '" + new String(argv[1], StandardCharsets.UTF_8)
                + "'. Try CLUSTER HELP.");
        }
    }

    /**
     * CLUSTER SETSLOT slot MIGRATING|IMPORTING node | STABLE. The node is named by its id in the map or its Redis id.
     * Ownership itself (Redis's SETSLOT NODE) changes only with a new map of a higher epoch (native CLUSTER_MAP),
     * which also ends the slot's migration state.
     */
    private static void setSlot(ClusterNode cluster, RespConnection c, ClusterNode.View v, RespWriter w,
                                byte[][] argv, int argc) {
        int slot = argc >= 4 ? slot(argv[2]) : -1;
        if (slot < 0) {
            w.error("ERR Invalid or out of range slot");
            return;
        }
        String how = new String(argv[3], StandardCharsets.UTF_8).toUpperCase(java.util.Locale.ROOT);
        if (how.equals("STABLE") && argc == 4) {
            replyWhenRecorded(c, cluster.setStable(slot));
            return;
        }
        if (argc != 5 || !(how.equals("MIGRATING") || how.equals("IMPORTING"))) {
            w.error(how.equals("NODE") ? "ERR slot ownership changes with a new slot map: 'rdmastore cluster reshard'"
                : "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP");
            return;
        }
        String name = new String(argv[4], StandardCharsets.UTF_8);
        SlotMap.Shard peer = null;
        for (SlotMap.Shard s : v.map().shards()) {
            for (SlotMap.Node n : s.nodes()) {
                if (n.id().equals(name) || ClusterNode.redisId(n.id()).equals(name)) {
                    peer = s;
                }
            }
        }
        if (peer == null) {
            w.error("ERR I don't know about node " + name);
            return;
        }
        boolean mine = v.map().owner(slot) == v.self() && v.self() != null;
        if (how.equals("MIGRATING")) {
            if (!mine) {
                w.error("ERR I'm not the owner of hash slot " + slot);
                return;
            }
            replyWhenRecorded(c, cluster.setMigrating(slot, peer.name()));
        } else {
            if (mine) {
                w.error("ERR I'm already the owner of hash slot " + slot);
                return;
            }
            replyWhenRecorded(c, cluster.setImporting(slot, peer.name()));
        }
    }

    /** The state is a durable record (the shard's control plane or file): OK once it is, the reason otherwise. */
    private static void replyWhenRecorded(RespConnection c, java.util.concurrent.CompletableFuture<Void> recorded) {
        c.block();
        recorded.whenComplete((ok, err) -> c.resume(out -> {
            if (err == null) {
                out.ok();
            } else {
                Throwable t = err instanceof java.util.concurrent.CompletionException && err.getCause() != null
                    ? err.getCause() : err;
                out.error("ERR slot state not recorded: " + t.getMessage());
            }
        }));
    }

    /**
     * MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw] [KEYS key...]: moves keys of one slot to another
     * node, as Redis does, and deletes them here. It runs on a thread of its own (the client waits, its event loop does
     * not), holding the slot's lock exclusively from the first read to the delete, so no command sees or writes a key
     * half-moved (they get TRYAGAIN meanwhile). The keys go over one RESP connection as ASKING + RESTORE key ttl
     * payload REPLACE; a key is deleted here only after the target acknowledged all of them.
     */
    static void migrate(RespFace face, RespConnection c, RespWriter w, byte[][] argv, int argc) {
        ClusterNode cluster = face.cluster();
        String host = new String(argv[1], StandardCharsets.UTF_8);
        long port = number(argv[2]);
        long timeout = number(argv[5]);
        if (port < 1 || port > 65535 || timeout < 0) {
            w.error("ERR value is not an integer or out of range");
            return;
        }
        boolean copy = false;
        String password = null;
        List<byte[]> keys = new ArrayList<>();
        if (argv[3].length > 0) {
            keys.add(argv[3]);
        }
        for (int i = 6; i < argc; i++) {
            String opt = new String(argv[i], StandardCharsets.UTF_8).toUpperCase(java.util.Locale.ROOT);
            if (opt.equals("COPY")) {
                copy = true;
            } else if (opt.equals("REPLACE")) {
                continue;
            } else if (opt.equals("AUTH") && i + 1 < argc) {
                password = new String(argv[++i], StandardCharsets.UTF_8);
            } else if (opt.equals("KEYS") && argv[3].length == 0) {
                for (i++; i < argc; i++) {
                    keys.add(argv[i]);
                }
            } else {
                w.error("ERR syntax error");
                return;
            }
        }
        if (keys.isEmpty()) {
            w.simple("NOKEY");
            return;
        }
        ReplicaSet rs = face.replicaSet();
        if (rs != null && rs.role() != ReplicaSet.Role.PRIMARY) {
            // the keys could not be deleted here after the target took them
            w.error("READONLY You can't write against a read only replica.");
            return;
        }
        int slot = HashSlot.of(keys.get(0));
        for (byte[] k : keys) {
            if (HashSlot.of(k) != slot) {
                w.error(CROSSSLOT);
                return;
            }
        }
        java.util.concurrent.locks.ReentrantReadWriteLock lock = cluster == null ? null : cluster.slotLock(slot);
        final boolean keep = copy;
        final String pw = password != null ? password : face.password();
        c.block();
        Thread.ofVirtual().name("rdmastore-migrate").start(() -> {
            String result;
            if (lock != null) {
                lock.writeLock().lock();
            }
            try {
                result = moveKeys(face, slot, host, (int) port, (int) Math.max(timeout, 1000), pw, keys, keep);
            } catch (RuntimeException e) {
                result = "-IOERR error or timeout moving keys to " + host + ":" + port + ": " + e.getMessage();
            } finally {
                if (lock != null) {
                    lock.writeLock().unlock();
                }
            }
            String r = result;
            c.resume(out -> {
                if (r.startsWith("-")) {
                    out.error(r.substring(1));
                } else {
                    out.simple(r);
                }
            });
        });
    }

    /**
     * Runs under the slot's exclusive lock. Returns OK, NOKEY, or an error text starting with "-".
     *
     * <p>Durability (docs/cluster.md, "Resharding"): when the target is a replica set of the map, a {@code WAIT} for
     * a majority of its members follows the RESTOREs on the same connection, and anything less (or a time-out) fails
     * the MIGRATE with the keys still here; a failover of the target then cannot lose a key deleted here. The delete
     * here is then awaited on a majority of this shard before the lock is released, and ASK is answered for the slot
     * only once a majority holds it ({@link ClusterNode#raiseFence}), so a failover here cannot bring back an old
     * copy of a key that clients already write on the target.
     */
    private static String moveKeys(RespFace face, int slot, String host, int port, int timeoutMillis,
                                   String password, List<byte[]> keys, boolean copy) {
        List<byte[]> present = new ArrayList<>();
        List<byte[]> payloads = new ArrayList<>();
        List<Long> ttls = new ArrayList<>();
        java.io.ByteArrayOutputStream req = new java.io.ByteArrayOutputStream();
        int replies = 0;
        if (password != null) {
            command(req, "AUTH".getBytes(StandardCharsets.US_ASCII), password.getBytes(StandardCharsets.UTF_8));
            replies++;
        }
        for (byte[] k : keys) {
            byte[] payload = RespDump.payload(face.store, k);
            if (payload == null) {
                continue;
            }
            long ttl = face.store.pttl(k);
            present.add(k);
            payloads.add(payload);
            ttls.add(Math.max(ttl, 0));
            command(req, "ASKING".getBytes(StandardCharsets.US_ASCII));
            command(req, "RESTORE".getBytes(StandardCharsets.US_ASCII), k,
                Long.toString(Math.max(ttl, 0)).getBytes(StandardCharsets.US_ASCII), payload,
                "REPLACE".getBytes(StandardCharsets.US_ASCII));
            replies += 2;
        }
        if (present.isEmpty()) {
            return "NOKEY";
        }
        int needed = targetSecondaries(face.cluster(), host + ":" + port);
        String moved = password == null || password.equals(face.password())
            ? moveOneSided(face, slot, host + ":" + port, timeoutMillis, present, payloads, ttls, needed) : null;
        if (moved != null) {
            if (moved.startsWith("-")) {
                return moved;
            }
        } else if (needed > 0) {
            command(req, "WAIT".getBytes(StandardCharsets.US_ASCII),
                Integer.toString(needed).getBytes(StandardCharsets.US_ASCII),
                Integer.toString(timeoutMillis).getBytes(StandardCharsets.US_ASCII));
            replies++;
        }
        if (moved == null) {
            face.migration.batchesOverResp.increment();
            face.migration.lastPath = "resp over tcp";
            try (java.net.Socket s = new java.net.Socket()) {
                s.connect(new java.net.InetSocketAddress(host, port), timeoutMillis);
                s.setSoTimeout(timeoutMillis);
                s.setTcpNoDelay(true);
                s.getOutputStream().write(req.toByteArray());
                s.getOutputStream().flush();
                java.io.BufferedInputStream in = new java.io.BufferedInputStream(s.getInputStream());
                String firstError = null;
                String line = "";
                for (int i = 0; i < replies; i++) {
                    line = readLine(in);
                    if (line.startsWith("-") && firstError == null) {
                        firstError = line;
                    }
                }
                if (firstError != null) {
                    return "-ERR Target instance replied with error: " + firstError.substring(1);
                }
                if (needed > 0 && (!line.startsWith(":") || Long.parseLong(line.substring(1)) < needed)) {
                    return "-IOERR the target's replica set did not confirm the keys on a majority within "
                        + timeoutMillis + " ms (WAIT " + needed + " answered " + line + "): they stay here";
                }
            } catch (java.io.IOException | NumberFormatException e) {
                return "-IOERR error or timeout moving keys to " + host + ":" + port + ": " + e.getMessage();
            }
        }
        if (copy) {
            return "OK";
        }
        ReplicaSet rs = face.replicaSet();
        if (rs != null && rs.role() != ReplicaSet.Role.PRIMARY) {
            return "-READONLY this member stopped being the primary while moving keys: they stay on the shard";
        }
        face.store.delete(present.toArray(new byte[0][]));
        long index = face.store.oplog().lastIndex();
        ClusterNode cluster = face.cluster();
        if (cluster != null) {
            cluster.raiseFence(slot, index);
        }
        if (rs != null) {
            try {
                rs.awaitReplicas(index, -1, timeoutMillis).get(timeoutMillis + 1000L,
                    java.util.concurrent.TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                Throwable t = e.getCause() != null ? e.getCause() : e;
                return "-IOERR keys moved, but their delete here is not yet on a majority of this shard (" + t.getMessage()
                    + "): ASK for them waits until it is";
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return "-IOERR interrupted while the delete of moved keys reached a majority";
            }
        }
        return "OK";
    }

    /**
     * The batch one-sided when the target is reachable over ucx ({@link KeyMigration}): null when it is not (the caller
     * sends RESP), "OK" when the target applied every key (and, with {@code needed} > 0, that many of its secondaries
     * hold them), else an error text starting with "-" and the keys stay here.
     */
    private static String moveOneSided(RespFace face, int slot, String address, int timeoutMillis, List<byte[]> keys,
                                       List<byte[]> payloads, List<Long> ttls, int needed) {
        io.rdmastore.client.PeerChannel p = face.migration.oneSided(address, java.time.Duration.ofMillis(timeoutMillis));
        if (p == null) {
            return null;
        }
        try {
            long applied = face.migration.send(address, p, slot, keys, payloads, ttls, needed, timeoutMillis);
            if (applied != keys.size()) {
                return "-IOERR the target applied " + applied + " of " + keys.size() + " keys: they stay here";
            }
            return "OK";
        } catch (RuntimeException e) {
            return "-IOERR error or timeout moving keys one-sided to " + address + ": " + e.getMessage()
                + ": they stay here";
        }
    }

    /**
     * How many secondaries must hold the RESTOREs for a majority of the target's shard: members / 2 when the map
     * names {@code address} in a shard of several members, else 0 (a one-member shard or a node outside the map).
     */
    private static int targetSecondaries(ClusterNode cluster, String address) {
        if (cluster == null) {
            return 0;
        }
        for (SlotMap.Shard s : cluster.map().shards()) {
            for (SlotMap.Node n : s.nodes()) {
                if (n.address().equals(address)) {
                    return s.nodes().size() / 2;
                }
            }
        }
        return 0;
    }

    private static void command(java.io.ByteArrayOutputStream out, byte[]... args) {
        out.writeBytes(("*" + args.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
        for (byte[] a : args) {
            out.writeBytes(("$" + a.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
            out.writeBytes(a);
            out.writeBytes("\r\n".getBytes(StandardCharsets.US_ASCII));
        }
    }

    /** One reply line of a simple, error or integer reply (what AUTH, ASKING and RESTORE answer). */
    private static String readLine(java.io.InputStream in) throws java.io.IOException {
        StringBuilder sb = new StringBuilder();
        int b;
        while ((b = in.read()) != '\n') {
            if (b < 0) {
                throw new java.io.EOFException("connection closed by the target");
            }
            if (b != '\r') {
                sb.append((char) b);
            }
        }
        return sb.toString();
    }

    private static void help(RespWriter w) {
        String[] lines = {"INFO", "MYID", "MYSHARDID", "SLOTS", "SHARDS", "NODES", "KEYSLOT <key>",
            "COUNTKEYSINSLOT <slot>", "GETKEYSINSLOT <slot> <count>",
            "SETSLOT <slot> MIGRATING|IMPORTING <node-id> | STABLE", "HELP"};
        w.arrayHeader(lines.length + 1);
        w.simple("CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are (the map is set with "
            + "'rdmastore cluster create'):");
        for (String l : lines) {
            w.simple(l);
        }
    }

    private static String infoText(ClusterNode.View v) {
        SlotMap m = v.map();
        int assigned = m.assignedSlots();
        int nodes = 0;
        int sized = 0;
        for (SlotMap.Shard s : m.shards()) {
            nodes += s.nodes().size();
            if (s.slotCount() > 0) {
                sized++;
            }
        }
        return "cluster_enabled:1\r\n"
            + "cluster_state:" + (assigned == HashSlot.SLOTS ? "ok" : "fail") + "\r\n"
            + "cluster_slots_assigned:" + assigned + "\r\n"
            + "cluster_slots_ok:" + assigned + "\r\n"
            + "cluster_slots_pfail:0\r\n"
            + "cluster_slots_fail:0\r\n"
            + "cluster_known_nodes:" + nodes + "\r\n"
            + "cluster_size:" + sized + "\r\n"
            + "cluster_current_epoch:" + m.epoch() + "\r\n"
            + "cluster_my_epoch:" + m.epoch() + "\r\n"
            + "cluster_stats_messages_sent:0\r\n"
            + "cluster_stats_messages_received:0\r\n"
            + "total_cluster_links_buffer_limit_exceeded:0\r\n";
    }

    private static String myId(RespFace face, ClusterNode.View v) {
        return ClusterNode.redisId(v.selfId() != null ? v.selfId() : "port:" + face.port());
    }

    private static String shardId(SlotMap.Shard s) {
        return ClusterNode.redisId("shard:" + s.name());
    }

    /** A shard's members, primary first ({@link ClusterNode#leader}). */
    private static List<SlotMap.Node> ordered(RespFace face, ClusterNode.View v, SlotMap.Shard s) {
        List<SlotMap.Node> nodes = new ArrayList<>(s.nodes());
        SlotMap.Node leader = face.cluster().leader(s);
        nodes.remove(leader);
        nodes.add(0, leader);
        return nodes;
    }

    private static void slots(RespFace face, RespWriter w, ClusterNode.View v) {
        int ranges = 0;
        for (SlotMap.Shard s : v.map().shards()) {
            ranges += s.ranges().size();
        }
        w.arrayHeader(ranges);
        for (SlotMap.Shard s : v.map().shards()) {
            List<SlotMap.Node> nodes = ordered(face, v, s);
            for (SlotMap.Range r : s.ranges()) {
                w.arrayHeader(2 + nodes.size());
                w.integer(r.from());
                w.integer(r.to());
                for (SlotMap.Node n : nodes) {
                    w.arrayHeader(4);
                    w.bulk(n.host());
                    w.integer(n.port());
                    w.bulk(ClusterNode.redisId(n.id()));
                    w.mapHeader(0);
                }
            }
        }
    }

    private static void shards(RespFace face, RespWriter w, ClusterNode.View v) {
        w.arrayHeader(v.map().shards().size());
        for (SlotMap.Shard s : v.map().shards()) {
            w.mapHeader(2);
            w.bulk("slots");
            w.arrayHeader(2L * s.ranges().size());
            for (SlotMap.Range r : s.ranges()) {
                w.integer(r.from());
                w.integer(r.to());
            }
            w.bulk("nodes");
            List<SlotMap.Node> nodes = ordered(face, v, s);
            w.arrayHeader(nodes.size());
            for (int i = 0; i < nodes.size(); i++) {
                SlotMap.Node n = nodes.get(i);
                w.mapHeader(7);
                w.bulk("id");
                w.bulk(ClusterNode.redisId(n.id()));
                w.bulk("port");
                w.integer(n.port());
                w.bulk("ip");
                w.bulk(n.host());
                w.bulk("endpoint");
                w.bulk(n.host());
                w.bulk("role");
                w.bulk(i == 0 ? "master" : "replica");
                w.bulk("replication-offset");
                w.integer(0);
                w.bulk("health");
                w.bulk("online");
            }
        }
    }

    /** CLUSTER NODES: one line per node, Redis's fields; the bus port is shown as the client port + 10000. */
    private static String nodes(RespFace face, ClusterNode.View v) {
        StringBuilder sb = new StringBuilder();
        long epoch = v.map().epoch();
        for (SlotMap.Shard s : v.map().shards()) {
            List<SlotMap.Node> nodes = ordered(face, v, s);
            String primaryId = ClusterNode.redisId(nodes.get(0).id());
            for (int i = 0; i < nodes.size(); i++) {
                SlotMap.Node n = nodes.get(i);
                boolean myself = n.id().equals(v.selfId());
                sb.append(ClusterNode.redisId(n.id())).append(' ').append(n.host()).append(':').append(n.port())
                    .append('@').append(n.port() + 10000 > 65535 ? n.port() : n.port() + 10000).append(' ')
                    .append(myself ? "myself," : "").append(i == 0 ? "master" : "slave").append(' ')
                    .append(i == 0 ? "-" : primaryId).append(" 0 0 ").append(epoch).append(" connected");
                if (i == 0) {
                    for (SlotMap.Range r : s.ranges()) {
                        sb.append(' ').append(r);
                    }
                }
                sb.append('\n');
            }
        }
        return sb.toString();
    }

    private static int slot(byte[] a) {
        long n = number(a);
        return n < 0 || n >= HashSlot.SLOTS ? -1 : (int) n;
    }

    /** A non-negative decimal, or -1. */
    private static long number(byte[] a) {
        if (a.length == 0 || a.length > 18) {
            return -1;
        }
        long n = 0;
        for (byte b : a) {
            if (b < '0' || b > '9') {
                return -1;
            }
            n = n * 10 + (b - '0');
        }
        return n;
    }
}
