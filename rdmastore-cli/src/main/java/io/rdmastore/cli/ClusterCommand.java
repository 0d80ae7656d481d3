package io.rdmastore.cli;

import io.rdmastore.client.PeerChannel;
import io.rdmastore.client.RdmaStoreException;
import io.rdmastore.client.cluster.HashSlot;
import io.rdmastore.client.cluster.SlotMap;
import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.WireReader;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code rdmastore cluster <create|status>}: a sharded cluster's administration (docs/cluster.md). {@code create} asks
 * each given node who it is (native CLUSTER_MAP and ROLE), makes one shard of each replica set and of each node
 * without one, splits the 16384 slots evenly between them and installs the map, with an epoch above any the nodes
 * hold, on every shard. {@code status} shows the map a node holds and what every node of it says.
 *
 * <p>Threads: one call at a time.
 */
@Command(name = "cluster", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
    description = {"Sharded clusters: 16384 hash slots split between shards (a replica set, or one node each);"
        + " Redis cluster clients (JedisCluster, Lettuce, redis-cli -c) route by slot and follow MOVED.",
        "Start each node with 'rdmastore server --cluster ...' (and --replica-set ... for a shard of several members)."},
    subcommands = {ClusterCommand.Create.class, ClusterCommand.Status.class, ClusterCommand.Reshard.class,
        ClusterCommand.Rebalance.class, ClusterDemoCommand.class})
final class ClusterCommand implements Runnable {
    private static final long STRING_LIMIT = 16 << 20;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /** What a node says of itself: cluster mode, its id in the map, its replica set, the map's epoch and text. */
    record Self(boolean cluster, String selfId, String setName, long epoch, String map) {
    }

    static Self self(ReplicaSetProbe probe, String address, Duration timeout) {
        PeerChannel c = probe.channel(address);
        return c.await(c.call(ProtocolDescriptor.CLUSTER_MAP, w -> w.u8(0), (st, r) -> decodeSelf(r), timeout),
            timeout);
    }

    private static Self decodeSelf(WireReader r) {
        return new Self(r.u8("cluster") == 1, r.string("selfId", 4096), r.string("setName", 4096),
            r.i64("epoch"), r.string("map", STRING_LIMIT));
    }

    static void install(ReplicaSetProbe probe, String address, String selfId, SlotMap map, Duration timeout) {
        PeerChannel c = probe.channel(address);
        c.await(c.call(ProtocolDescriptor.CLUSTER_MAP, w -> w.u8(1).string(selfId).string(map.encode()),
            (st, r) -> null, timeout), timeout);
    }

    /** Options both subcommands share. */
    static class Common {
        @Option(names = {"-a", "--password"}, paramLabel = "PW", description = "The nodes' password (or set the"
            + " environment variable " + ServerCommand.PASSWORD_ENV + ").")
        String password;
        @Option(names = "--timeout", paramLabel = "TIME", defaultValue = "30s",
            description = "How long each node has to answer (default ${DEFAULT-VALUE}).")
        String timeout;

        ReplicaSetProbe probe() {
            String pw = password != null ? password : System.getenv(ServerCommand.PASSWORD_ENV);
            return new ReplicaSetProbe("tcp", pw == null || pw.isEmpty() ? null : pw, duration());
        }

        Duration duration() {
            return Values.duration("--timeout", timeout);
        }
    }

    /** Options of the subcommands that ask one node of the cluster ({@code -h}, {@code -p}). */
    static class NodeCommon extends Common {
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;
        @Option(names = {"-h", "--host"}, paramLabel = "HOST", defaultValue = "127.0.0.1",
            description = "A node's host (default ${DEFAULT-VALUE}).")
        String host;
        @Option(names = {"-p", "--port"}, paramLabel = "PORT", defaultValue = "7379",
            description = "That node's port (default ${DEFAULT-VALUE}).")
        int port;
        @Option(names = "--help", usageHelp = true, description = "Shows this help and exits (-h is the host).")
        boolean help;
    }

    /** Options of the subcommands that move slots (reshard, rebalance). */
    static class MoveCommon extends NodeCommon {
        @Option(names = "--batch", defaultValue = "100", paramLabel = "N", description = "Keys per MIGRATE"
            + " (default ${DEFAULT-VALUE}).")
        int batch;
        @Option(names = "--retry-for", defaultValue = "60s", paramLabel = "TIME", description = "How long to keep"
            + " retrying when a shard's primary is lost mid-move (its replica set elects another, found with ROLE)"
            + " before giving up (default ${DEFAULT-VALUE}; 0 gives up at once). Running the same command again"
            + " finishes an interrupted move.")
        String retryFor;

        Duration retryDuration() {
            return Values.duration("--retry-for", retryFor);
        }
    }

    @Command(name = "create", versionProvider = Main.Version.class, sortOptions = false,
        description = {"Makes a cluster of running nodes (started with --cluster): each replica set is one shard, each"
            + " node without one is a shard of its own; the slots are split evenly, as redis-cli does."},
        footer = {"", "Example: rdmastore cluster create 127.0.0.1:7000 127.0.0.1:7001 127.0.0.1:7002"})
    static final class Create extends Common implements Callable<Integer> {
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;
        @Parameters(arity = "1..*", paramLabel = "HOST:PORT", description = "The nodes (one member of each replica"
            + " set is enough; its members are found by asking it).")
        List<String> addresses;
        @Option(names = "--replicas", paramLabel = "N", defaultValue = "-1", description = "Check that every shard has"
            + " N secondaries (shards get them from their replica set: rdmastore server --replica-set ...).")
        int replicas;
        @Option(names = "--force", description = "Replace the map of nodes that are in a cluster already.")
        boolean force;

        @Override
        public Integer call() {
            Main.quietLogs();
            PrintWriter out = spec.commandLine().getOut();
            PrintWriter err = spec.commandLine().getErr();
            Duration t = duration();
            try (ReplicaSetProbe probe = probe()) {
                SlotMap map = create(probe, t);
                out.print(map.encode());
                out.println("cluster created: epoch " + map.epoch() + ", " + map.shards().size() + " shards, "
                    + map.assignedSlots() + " slots; 'rdmastore cluster status' shows it");
                out.flush();
                return 0;
            } catch (UserException | RdmaStoreException | IllegalArgumentException e) {
                err.println("rdmastore cluster create: " + e.getMessage());
                err.flush();
                return 1;
            }
        }

        private SlotMap create(ReplicaSetProbe probe, Duration t) {
            // shard name -> (members, the address to send its map to, the id a one-node shard is given)
            Map<String, List<SlotMap.Node>> members = new LinkedHashMap<>();
            Map<String, String> sendTo = new LinkedHashMap<>();
            Map<String, String> selfIds = new LinkedHashMap<>();
            long epoch = 0;
            int single = 0;
            for (String address : addresses) {
                Self self;
                ReplicaSetProbe.Role role;
                try {
                    self = self(probe, address, t);
                    role = probe.role(address);
                } catch (RdmaStoreException e) {
                    throw new UserException(address + ": " + e.getMessage());
                }
                if (!self.cluster()) {
                    throw new UserException(address + " does not run in cluster mode (start it with --cluster)");
                }
                if (self.epoch() > 0 && !force) {
                    throw new UserException(address + " is in a cluster already (map epoch " + self.epoch()
                        + "); --force replaces its map");
                }
                epoch = Math.max(epoch, self.epoch());
                if (self.setName().isEmpty()) {
                    String name = "shard-" + (++single);
                    String[] hp = hostPort(address);
                    members.put(name, List.of(new SlotMap.Node(address, hp[0], Integer.parseInt(hp[1]))));
                    sendTo.put(name, address);
                    selfIds.put(name, address);
                } else if (!members.containsKey(self.setName())) {
                    List<SlotMap.Node> nodes = new ArrayList<>();
                    for (Map.Entry<String, String> m : role.members().entrySet()) {
                        String[] hp = hostPort(m.getValue());
                        SlotMap.Node n = new SlotMap.Node(m.getKey(), hp[0], Integer.parseInt(hp[1]));
                        // the primary first: clients are sent to a shard's first member
                        if (m.getKey().equals(role.primaryId())) {
                            nodes.add(0, n);
                        } else {
                            nodes.add(n);
                        }
                    }
                    members.put(self.setName(), nodes);
                    sendTo.put(self.setName(), address);
                    selfIds.put(self.setName(), "");
                }
            }
            if (replicas >= 0) {
                for (Map.Entry<String, List<SlotMap.Node>> e : members.entrySet()) {
                    if (e.getValue().size() != replicas + 1) {
                        throw new UserException("shard " + e.getKey() + " has " + (e.getValue().size() - 1)
                            + " secondaries, --replicas asks for " + replicas + " (a shard's secondaries are its"
                            + " replica set's: start its members with --replica-set NAME --members ...)");
                    }
                }
            }
            List<SlotMap.Range> ranges = SlotMap.evenRanges(members.size());
            List<SlotMap.Shard> shards = new ArrayList<>();
            int i = 0;
            for (Map.Entry<String, List<SlotMap.Node>> e : members.entrySet()) {
                shards.add(new SlotMap.Shard(e.getKey(), List.of(ranges.get(i++)), e.getValue()));
            }
            SlotMap map = new SlotMap(epoch + 1, shards);
            for (SlotMap.Shard s : shards) {
                try {
                    install(probe, sendTo.get(s.name()), selfIds.get(s.name()), map, t);
                } catch (RdmaStoreException e) {
                    throw new UserException("shard " + s.name() + " at " + sendTo.get(s.name()) + ": " + e.getMessage()
                        + (s == shards.get(0) ? "" : " (the shards before it hold the new map; run create again with"
                        + " --force once it is fixed)"));
                }
            }
            return map;
        }
    }

    @Command(name = "status", versionProvider = Main.Version.class, sortOptions = false,
        description = {"Shows the slot map a node holds and, for every node in it, its role and the map epoch it"
            + " holds. Exits 1 when a slot is unserved, a node does not answer or holds another epoch."})
    static final class Status extends NodeCommon implements Callable<Integer> {

        @Override
        public Integer call() {
            Main.quietLogs();
            PrintWriter out = spec.commandLine().getOut();
            PrintWriter err = spec.commandLine().getErr();
            Duration t = duration();
            try (ReplicaSetProbe probe = probe()) {
                Self self = self(probe, host + ":" + port, t);
                if (!self.cluster()) {
                    err.println("rdmastore cluster status: " + host + ":" + port + " does not run in cluster mode");
                    err.flush();
                    return 1;
                }
                if (self.map().isEmpty()) {
                    out.println("no cluster yet: 'rdmastore cluster create HOST:PORT ...' makes one");
                    out.flush();
                    return 1;
                }
                SlotMap map = SlotMap.parse(self.map());
                List<String> problems = new ArrayList<>();
                out.printf("epoch %d, %d shards, %d of %d slots assigned%n", map.epoch(), map.shards().size(),
                    map.assignedSlots(), HashSlot.SLOTS);
                if (map.assignedSlots() != HashSlot.SLOTS) {
                    problems.add((HashSlot.SLOTS - map.assignedSlots()) + " slots unserved");
                }
                out.printf("%-12s %-20s %-12s %-22s %-11s %s%n", "SHARD", "SLOTS", "NODE", "ADDRESS", "ROLE", "EPOCH");
                for (SlotMap.Shard s : map.shards()) {
                    StringBuilder slots = new StringBuilder();
                    for (SlotMap.Range r : s.ranges()) {
                        slots.append(slots.isEmpty() ? "" : ",").append(r);
                    }
                    for (SlotMap.Node n : s.nodes()) {
                        String role;
                        String epoch;
                        try {
                            Self other = self(probe, n.address(), t);
                            role = probe.role(n.address()).roleName();
                            epoch = Long.toString(other.epoch());
                            if (other.epoch() != map.epoch()) {
                                problems.add(n.id() + " holds epoch " + other.epoch());
                            }
                        } catch (RdmaStoreException e) {
                            role = "unreachable";
                            epoch = "-";
                            problems.add(n.id() + " unreachable: " + e.getMessage());
                        }
                        out.printf("%-12s %-20s %-12s %-22s %-11s %s%n", s.name(), slots, n.id(), n.address(), role,
                            epoch);
                    }
                }
                out.println(problems.isEmpty() ? "state: ok" : "state: degraded: " + String.join("; ", problems));
                out.flush();
                return problems.isEmpty() ? 0 : 1;
            } catch (UserException | RdmaStoreException | IllegalArgumentException e) {
                err.println("rdmastore cluster status: " + e.getMessage());
                err.flush();
                return 1;
            }
        }
    }

    @Command(name = "reshard", versionProvider = Main.Version.class, sortOptions = false,
        description = {"Moves slots, with their keys, from one shard to another while clients keep working: each slot"
            + " is marked MIGRATING on the source and IMPORTING on the target, its keys move in batches (MIGRATE; clients"
            + " are sent to the target with -ASK for keys already moved), then a map of a higher epoch gives the slots"
            + " to the target, on the target first."})
    static final class Reshard extends MoveCommon implements Callable<Integer> {
        @Option(names = "--from", required = true, paramLabel = "SHARD", description = "The shard giving slots.")
        String from;
        @Option(names = "--to", required = true, paramLabel = "SHARD", description = "The shard receiving them.")
        String to;
        @Option(names = "--slots", required = true, paramLabel = "N", description = "How many slots to move (the"
            + " source's highest).")
        int count;

        @Override
        public Integer call() {
            Main.quietLogs();
            PrintWriter out = spec.commandLine().getOut();
            PrintWriter err = spec.commandLine().getErr();
            Duration t = duration();
            try (ReplicaSetProbe probe = probe()) {
                SlotMap map = reshard(probe, t, out);
                out.println("resharded: " + count + " slots from " + from + " to " + to + ", map epoch " + map.epoch());
                out.flush();
                return 0;
            } catch (UserException | RdmaStoreException | IllegalArgumentException | RespLink.ErrorReply
                     | java.io.UncheckedIOException e) {
                err.println("rdmastore cluster reshard: " + e.getMessage());
                err.flush();
                return 1;
            }
        }

        private SlotMap reshard(ReplicaSetProbe probe, Duration t, PrintWriter out) {
            Self self = self(probe, host + ":" + port, t);
            if (self.map().isEmpty()) {
                throw new UserException(host + ":" + port + " holds no slot map");
            }
            SlotMap map = SlotMap.parse(self.map());
            Newest newest = finishInstall(probe, map, t, retryDuration(), out);
            if (newest.finished()) {
                return newest.map();
            }
            // the node asked may lag behind its shard (a member that just restarted)
            map = newest.map();
            SlotMap.Shard src = map.shard(from);
            SlotMap.Shard dst = map.shard(to);
            if (src == null || dst == null || src == dst) {
                throw new UserException("--from and --to must name two shards of the map: " + shardNames(map));
            }
            List<Integer> slots = new ArrayList<>();
            for (int s = HashSlot.SLOTS - 1; s >= 0 && slots.size() < count; s--) {
                if (map.owner(s) == src) {
                    slots.add(s);
                }
            }
            if (slots.size() < count || count < 1) {
                throw new UserException("shard " + from + " has " + src.slotCount() + " slots; cannot move " + count);
            }
            String pw = password != null ? password : System.getenv(ServerCommand.PASSWORD_ENV);
            return move(probe, map, src, dst, slots, pw == null || pw.isEmpty() ? null : pw, batch, t,
                retryDuration(), out);
        }

        /**
         * A reshard interrupted while it installed its new map leaves shards at different epochs; its keys are moved
         * already. Asks every shard (any member that answers) for its map: when they differ, installs the newest on
         * the shards that lack it (the command is done: finished). Else returns the newest map any member holds (a
         * shard that does not answer fails the move later, with its own message).
         */
        static Newest finishInstall(ReplicaSetProbe probe, SlotMap map, Duration t, Duration retryFor,
                                     PrintWriter out) {
            SlotMap newest = map;
            List<SlotMap.Shard> behind = new ArrayList<>();
            Map<String, Long> epochs = new LinkedHashMap<>();
            for (SlotMap.Shard sh : map.shards()) {
                // a replica set's members apply only committed maps, so the highest any of them holds is the
                // shard's (a member that was down catches up by itself)
                for (SlotMap.Node n : sh.nodes()) {
                    try {
                        Self s = self(probe, n.address(), t);
                        epochs.merge(sh.name(), s.epoch(), Math::max);
                        if (s.epoch() > newest.epoch() && !s.map().isEmpty()) {
                            newest = SlotMap.parse(s.map());
                        }
                    } catch (RuntimeException e) {
                        // down: the others answer
                    }
                }
            }
            for (SlotMap.Shard sh : newest.shards()) {
                Long e = epochs.get(sh.name());
                if (e != null && e < newest.epoch()) {
                    behind.add(sh);
                }
            }
            if (behind.isEmpty()) {
                return new Newest(newest, false);
            }
            out.println("the map of epoch " + newest.epoch() + " reached only some shards (an interrupted reshard):"
                + " installing it on " + String.join(", ", behind.stream().map(SlotMap.Shard::name).toList())
                + "; no other slot is moved");
            for (SlotMap.Shard sh : behind) {
                installOnShard(probe, sh, newest, t, retryFor, out);
            }
            return new Newest(newest, true);
        }

        /** The newest map the shards hold, and whether installing it on the shards that lacked it ended the run. */
        record Newest(SlotMap map, boolean finished) {
        }

        /**
         * Moves {@code slots} of {@code src} to {@code dst} with their keys (SETSLOT, GETKEYSINSLOT, MIGRATE on the
         * shards' primaries), then installs the map of the next epoch, on the target first. Returns that map.
         */
        static SlotMap move(ReplicaSetProbe probe, SlotMap map, SlotMap.Shard src, SlotMap.Shard dst,
                            List<Integer> slots, String pw, int batch, Duration t, Duration retryFor,
                            PrintWriter out) {
            String from = src.name();
            String to = dst.name();
            long moved = 0;
            long failingSince = 0;
            int i = 0;
            SlotMap.Node source = null;
            SlotMap.Node target = null;
            RespLink s = null;
            String path = null;
            RespLink d = null;
            try {
                while (i < slots.size()) {
                    int slot = slots.get(i);
                    try {
                        if (s == null) {
                            SlotMap.Node was = source;
                            SlotMap.Node wasTarget = target;
                            source = primary(probe, src);
                            target = primary(probe, dst);
                            if (was == null) {
                                out.println("moving " + slots.size() + " slots from " + from + " (" + source.address()
                                    + ") to " + to + " (" + target.address() + ")");
                            } else if (!was.equals(source) || !wasTarget.equals(target)) {
                                out.println("primaries now: " + from + " " + source.address() + ", " + to + " "
                                    + target.address());
                            }
                            out.flush();
                            s = new RespLink(source.address(), pw, t);
                            d = new RespLink(target.address(), pw, t);
                        }
                        // both are durable records, sent again after a failure (the same state again is harmless)
                        d.call("CLUSTER", "SETSLOT", slot, "IMPORTING", source.id());
                        s.call("CLUSTER", "SETSLOT", slot, "MIGRATING", target.id());
                        while (true) {
                            List<?> keys = (List<?>) s.call("CLUSTER", "GETKEYSINSLOT", slot, batch);
                            if (keys.isEmpty()) {
                                break;
                            }
                            List<Object> args = new ArrayList<>(List.of("MIGRATE", target.host(), target.port(), "",
                                0, t.toMillis(), "REPLACE"));
                            if (pw != null) {
                                args.add("AUTH");
                                args.add(pw);
                            }
                            args.add("KEYS");
                            args.addAll(keys);
                            s.call(args.toArray());
                            moved += keys.size();
                        }
                        i++;
                        if (failingSince != 0) {
                            out.println("slot " + slot + " moved: going on");
                            failingSince = 0;
                        } else if (slots.size() >= 20 && i % (slots.size() / 4) == 0 && i < slots.size()) {
                            out.println(i + " of " + slots.size() + " slots moved (" + moved + " keys)");
                        }
                        out.flush();
                    } catch (RuntimeException e) {
                        if (!retriable(e)) {
                            throw e;
                        }
                        closeQuietly(s);
                        closeQuietly(d);
                        s = null;
                        d = null;
                        long now = System.nanoTime();
                        if (failingSince == 0) {
                            failingSince = now;
                            out.println("slot " + slot + ": " + e.getMessage() + "; waiting for the shards' primaries"
                                + " (up to " + retryFor.toSeconds() + " s)");
                            out.flush();
                        }
                        if (now - failingSince >= retryFor.toNanos()) {
                            throw new UserException("gave up on slot " + slot + " after " + retryFor.toSeconds()
                                + " s: " + e.getMessage() + ". " + i + " of " + slots.size() + " slots are moved; no key"
                                + " is lost (moved keys are on " + to + ", the others on " + from + ", clients are"
                                + " sent between them); run the same command again to finish the move", e);
                        }
                        sleep(500);
                    }
                }
                path = moveInfo(s);
            } finally {
                closeQuietly(s);
                closeQuietly(d);
            }
            // the new owner first: until the source learns the map it sends clients on with -ASK, never back
            List<SlotMap.Shard> shards = new ArrayList<>();
            for (SlotMap.Shard sh : map.shards()) {
                java.util.TreeSet<Integer> owned = new java.util.TreeSet<>();
                for (SlotMap.Range r : sh.ranges()) {
                    for (int x = r.from(); x <= r.to(); x++) {
                        owned.add(x);
                    }
                }
                if (sh == src) {
                    owned.removeAll(slots);
                } else if (sh == dst) {
                    owned.addAll(slots);
                }
                shards.add(new SlotMap.Shard(sh.name(), ranges(owned), sh.nodes()));
            }
            SlotMap next = new SlotMap(map.epoch() + 1, shards);
            List<SlotMap.Shard> order = new ArrayList<>(next.shards());
            order.sort(java.util.Comparator.comparingInt(sh -> sh.name().equals(to) ? 0 : sh.name().equals(from) ? 1 : 2));
            for (SlotMap.Shard sh : order) {
                installOnShard(probe, sh, next, t, retryFor, out);
            }
            out.println("moved " + moved + " keys in " + slots.size() + " slots" + (path == null ? "" : " (" + path
                + ")"));
            return next;
        }

        /** How the source says its last batch moved (INFO's migrate_last_path), or null when it does not say. */
        private static String moveInfo(RespLink source) {
            if (source == null) {
                return null;
            }
            try {
                Object info = source.call("INFO", "cluster");
                String text = info instanceof byte[] b ? new String(b, java.nio.charset.StandardCharsets.UTF_8)
                    : String.valueOf(info);
                for (String line : text.split("\r?\n")) {
                    if (line.startsWith("migrate_last_path:") && !line.endsWith(":none")) {
                        return "keys by " + line.substring("migrate_last_path:".length()).strip();
                    }
                }
            } catch (RuntimeException e) {
                // only a remark
            }
            return null;
        }

        /**
         * Installs {@code map} on {@code shard} through any member that takes it (a replica set's member hands it to
         * its control plane), retrying for up to {@code retryFor} while none does.
         */
        static void installOnShard(ReplicaSetProbe probe, SlotMap.Shard shard, SlotMap map, Duration t,
                                   Duration retryFor, PrintWriter out) {
            long deadline = System.nanoTime() + retryFor.toNanos();
            RuntimeException last = null;
            while (true) {
                for (SlotMap.Node n : shard.nodes()) {
                    try {
                        install(probe, n.address(), n.id(), map, t);
                        return;
                    } catch (RuntimeException e) {
                        // a member that is down or electing: the next one, or the same again a little later
                        if (String.valueOf(e.getMessage()).contains("slot map refused")
                            || String.valueOf(e.getMessage()).contains("refused: epoch")) {
                            throw e;
                        }
                        last = e;
                    }
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new UserException("the map of epoch " + map.epoch() + " could not be installed on shard "
                        + shard.name() + ": " + last.getMessage() + "; the keys are moved; run the same command again"
                        + " to install it on the shards that lack it", last);
                }
                out.println("shard " + shard.name() + " did not take the map of epoch " + map.epoch() + " ("
                    + last.getMessage() + "): retrying");
                out.flush();
                sleep(500);
            }
        }

        /** Failures a lost or changing primary causes; the others (a refused SETSLOT, a bad key) end the move. */
        private static boolean retriable(RuntimeException e) {
            if (e instanceof RespLink.ErrorReply r) {
                String m = r.getMessage();
                return !(m.startsWith("ERR I'm") || m.startsWith("ERR I don't know") || m.startsWith("ERR Invalid")
                    || m.startsWith("ERR syntax") || m.startsWith("CROSSSLOT") || m.contains("refused: the slot map's epoch"));
            }
            return e instanceof java.io.UncheckedIOException || e instanceof UserException
                || e instanceof RdmaStoreException;
        }

        private static void closeQuietly(RespLink link) {
            if (link != null) {
                link.close();
            }
        }

        private static void sleep(long ms) {
            try {
                Thread.sleep(ms);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new UserException("interrupted");
            }
        }

        /** The member of {@code shard} that takes writes: its replica set's primary, or its only node. */
        private static SlotMap.Node primary(ReplicaSetProbe probe, SlotMap.Shard shard) {
            for (SlotMap.Node n : shard.nodes()) {
                ReplicaSetProbe.Role role;
                try {
                    role = probe.role(n.address());
                } catch (RuntimeException e) {
                    continue;
                }
                if (role.code() == ReplicaSetProbe.STANDALONE || role.code() == ReplicaSetProbe.PRIMARY) {
                    return n;
                }
                for (SlotMap.Node p : shard.nodes()) {
                    if (p.address().equals(role.primaryAddress())) {
                        return p;
                    }
                }
            }
            throw new UserException("shard " + shard.name() + " has no reachable primary");
        }

        private static String shardNames(SlotMap map) {
            List<String> names = new ArrayList<>();
            for (SlotMap.Shard s : map.shards()) {
                names.add(s.name());
            }
            return String.join(", ", names);
        }

        private static List<SlotMap.Range> ranges(java.util.SortedSet<Integer> slots) {
            List<SlotMap.Range> out = new ArrayList<>();
            int start = -1;
            int prev = -2;
            for (int s : slots) {
                if (s != prev + 1) {
                    if (start >= 0) {
                        out.add(new SlotMap.Range(start, prev));
                    }
                    start = s;
                }
                prev = s;
            }
            if (start >= 0) {
                out.add(new SlotMap.Range(start, prev));
            }
            return out;
        }
    }

    @Command(name = "rebalance", versionProvider = Main.Version.class, sortOptions = false,
        description = {"Evens out the slots between the shards (each gets 16384 / shards, +-1), moving them live as"
            + " 'cluster reshard' does: from the shard with the most slots to the one with the fewest, until even."})
    static final class Rebalance extends MoveCommon implements Callable<Integer> {
        @Override
        public Integer call() {
            Main.quietLogs();
            PrintWriter out = spec.commandLine().getOut();
            PrintWriter err = spec.commandLine().getErr();
            Duration t = duration();
            String pw = password != null ? password : System.getenv(ServerCommand.PASSWORD_ENV);
            pw = pw == null || pw.isEmpty() ? null : pw;
            try (ReplicaSetProbe probe = probe()) {
                Self self = self(probe, host + ":" + port, t);
                if (self.map().isEmpty()) {
                    throw new UserException(host + ":" + port + " holds no slot map");
                }
                // the newest map of the shards, finishing an interrupted install first (then the moves go on from it)
                SlotMap map = Reshard.finishInstall(probe, SlotMap.parse(self.map()), t, retryDuration(), out).map();
                int n = map.shards().size();
                int moves = 0;
                while (true) {
                    SlotMap.Shard most = null;
                    SlotMap.Shard fewest = null;
                    for (SlotMap.Shard s : map.shards()) {
                        if (most == null || s.slotCount() > most.slotCount()) {
                            most = s;
                        }
                        if (fewest == null || s.slotCount() < fewest.slotCount()) {
                            fewest = s;
                        }
                    }
                    int even = HashSlot.SLOTS / n;
                    int count = Math.min(most.slotCount() - even, even - fewest.slotCount());
                    if (most.slotCount() - fewest.slotCount() <= 1 || count <= 0) {
                        count = most.slotCount() - fewest.slotCount() > 1 ? 1 : 0;
                    }
                    if (count == 0) {
                        break;
                    }
                    List<Integer> slots = new ArrayList<>();
                    for (int s = HashSlot.SLOTS - 1; s >= 0 && slots.size() < count; s--) {
                        if (map.owner(s) == most) {
                            slots.add(s);
                        }
                    }
                    map = Reshard.move(probe, map, most, fewest, slots, pw, batch, t, retryDuration(), out);
                    moves++;
                }
                out.println(moves == 0 ? "balanced already: map epoch " + map.epoch()
                    : "rebalanced in " + moves + " moves: map epoch " + map.epoch());
                out.flush();
                return 0;
            } catch (UserException | RdmaStoreException | IllegalArgumentException | RespLink.ErrorReply
                     | java.io.UncheckedIOException e) {
                err.println("rdmastore cluster rebalance: " + e.getMessage());
                err.flush();
                return 1;
            }
        }
    }

    private static String[] hostPort(String address) {
        int colon = address.lastIndexOf(':');
        if (colon <= 0 || colon == address.length() - 1) {
            throw new UserException("'" + address + "' is not HOST:PORT");
        }
        try {
            Integer.parseInt(address.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new UserException("'" + address + "' has a bad port");
        }
        return new String[] {address.substring(0, colon), address.substring(colon + 1)};
    }
}
