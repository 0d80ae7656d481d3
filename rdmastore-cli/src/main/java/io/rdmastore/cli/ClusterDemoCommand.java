package io.rdmastore.cli;

import io.rdmastore.server.replication.ReplicaSetConfig;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import redis.clients.jedis.Connection;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisCluster;

/**
 * {@code rdmastore cluster demo}: a sharded cluster, watched. Starts {@code --shards} shards of {@code --members}
 * member processes each (a replica set per shard when there are several) on free loopback ports with their data in a
 * temporary directory, makes the cluster ({@code cluster create}), loads keys through Jedis's cluster client, moves
 * slots from the first shard to the second ({@code cluster reshard}) while a writer keeps writing, SIGKILLs the first
 * shard's primary, then reads every key back through the cluster client and checks each holds its last acknowledged
 * value (or a later write whose outcome the writer could not know). A write counts as acknowledged once a majority of
 * its shard holds it ({@code SET} then {@code WAIT}, as a Redis user makes a write survive a failover): a write only
 * in the killed primary's log ({@code w:1}) may be lost with it, as in Redis and MongoDB.
 *
 * <p>Every wait is bounded, by its own limit and by {@code --timeout} for the whole run; the members are stopped and
 * the directory deleted on every way out (a shutdown hook covers Ctrl-C). Threads: the command's thread and one writer.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, versionProvider = Main.Version.class, sortOptions = false,
    description = {"Starts a cluster on this machine (SHARDS shards of MEMBERS member processes each, free loopback"
        + " ports, temporary data dir), loads keys through Jedis's cluster client, reshards while a writer writes,"
        + " kills a shard's primary (SIGKILL) and checks that every key still reads its last acknowledged value."
        + " Stops every member and deletes the directory at the end.",
        "Exit code 0 when every key was readable with its last acknowledged value, 1 otherwise."})
final class ClusterDemoCommand extends MemberDemo implements Callable<Integer> {
    private static final Duration MEMBER_START = Duration.ofSeconds(120);

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--shards", paramLabel = "N", defaultValue = "3", description = "Shards (default ${DEFAULT-VALUE}).")
    int shards;
    @Option(names = "--members", paramLabel = "N", defaultValue = "3", description = "Members per shard, 1 or 3"
        + " (default ${DEFAULT-VALUE}: a replica set each; 1 where memory is short: no primary to kill then).")
    int membersPerShard;
    @Option(names = "--keys", paramLabel = "N", defaultValue = "2000", description = "Keys (default ${DEFAULT-VALUE}).")
    int keys;
    @Option(names = "--slots", paramLabel = "N", defaultValue = "1000",
        description = "Slots moved from the first shard to the second (default ${DEFAULT-VALUE}).")
    int slots;
    @Option(names = "--transport", paramLabel = "T", defaultValue = "auto",
        description = "Transport between the members: auto (default) | tcp | ucx.")
    String transport;
    @Option(names = "--timeout", paramLabel = "TIME", defaultValue = "300s",
        description = "Limit of the whole demo (default ${DEFAULT-VALUE}).")
    String timeout;


    @Override
    public Integer call() throws IOException, InterruptedException {
        Main.quietLogs();
        transport = Values.oneOf("--transport", transport, "auto", "tcp", "ucx");
        if (shards < 2 || shards > 8) {
            throw new UserException("--shards must be 2 to 8 (the demo moves slots from one shard to another)");
        }
        if (membersPerShard != 1 && membersPerShard != 3) {
            throw new UserException("--members must be 1 or 3");
        }
        if (keys < 1 || keys > 100_000 || slots < 1 || slots > 16384 / shards) {
            throw new UserException("--keys must be 1 to 100000 and --slots 1 to " + 16384 / shards);
        }
        return runWithMembers("cluster-demo", spec.commandLine().getOut(), timeout, this::run);
    }

    private int run(Path dir) throws InterruptedException {
        int n = shards * membersPerShard;
        List<Integer> ports = MemberProcess.freePorts(n, membersPerShard > 1 ? ReplicaSetConfig.DEFAULT_RAFT_PORT_OFFSET
            : 0);
        out.println("rdmastore cluster demo: " + shards + " shards x " + membersPerShard + " member"
            + (membersPerShard > 1 ? "s (a replica set each)" : "") + " on 127.0.0.1, data and logs in " + dir);
        List<String> firstOfShard = new ArrayList<>();
        for (int s = 0; s < shards; s++) {
            String set = "s" + (s + 1);
            StringBuilder list = new StringBuilder();
            for (int m = 0; m < membersPerShard; m++) {
                list.append(list.isEmpty() ? "" : ",").append(set).append("-n").append(m + 1).append("=127.0.0.1:")
                    .append(ports.get(s * membersPerShard + m));
            }
            for (int m = 0; m < membersPerShard; m++) {
                String id = membersPerShard > 1 ? set + "-n" + (m + 1) : "shard-" + (s + 1);
                int port = ports.get(s * membersPerShard + m);
                List<String> args = new ArrayList<>(List.of("--cluster", "--bind", "127.0.0.1", "--port",
                    String.valueOf(port), "--data-dir", dir.resolve(id).toString(), "--fsync", "everysec",
                    "--transport", transport, "--idle-strategy", "adaptive"));
                if (membersPerShard > 1) {
                    // several JVMs per core here: a longer election timeout keeps a busy member from being deposed
                    args.addAll(List.of("--replica-set", set, "--node-id", id, "--members", list.toString(),
                        "--election-timeout", "1s"));
                }
                members.add(new MemberProcess(id, port, dir.resolve(id), dir.resolve(id + ".log"), args));
                if (m == 0) {
                    firstOfShard.add("127.0.0.1:" + port);
                }
            }
        }
        progress("starting " + n + " member processes (rdmastore server --cluster"
            + (membersPerShard > 1 ? " --replica-set sI ..." : "") + ")");
        for (MemberProcess m : members) {
            m.launch();
        }
        for (MemberProcess m : members) {
            m.awaitReady(remaining(MEMBER_START));
        }
        progress("all " + n + " serve");

        // a replica set's shard needs its primary first: create is retried until every shard has one
        String created = null;
        long createDeadline = System.nanoTime() + remaining(Duration.ofSeconds(60)).toNanos();
        while (created == null) {
            Run r = cluster(List.of("create").toArray(String[]::new), firstOfShard);
            if (r.code == 0) {
                created = r.out;
            } else if (System.nanoTime() - createDeadline > 0) {
                out.println("(error) cluster create kept failing: " + r.err.strip());
                return 1;
            } else {
                Thread.sleep(500);
            }
        }
        progress(created.lines().filter(l -> l.startsWith("cluster created")).findFirst()
            .orElse("cluster created: " + created.strip()));

        Set<HostAndPort> seeds = new HashSet<>();
        members.forEach(m -> seeds.add(new HostAndPort("127.0.0.1", m.port())));
        // one connection per node: the WAIT after a SET goes out on the connection the SET used (single writer)
        GenericObjectPoolConfig<Connection> pool = new GenericObjectPoolConfig<>();
        pool.setMaxTotal(1);
        try (JedisCluster jc = new JedisCluster(seeds, 5000, 5000, 10, null, pool)) {
            // per key, the generations that may be read: from the last one a majority acknowledged (acked) to the
            // newest one written (tried); those in between failed with an unknown outcome
            AtomicLongArray acked = new AtomicLongArray(keys);
            AtomicLongArray tried = new AtomicLongArray(keys);
            long l0 = System.nanoTime();
            for (int i = 0; i < keys; i++) {
                if (!setOnMajority(jc, "key:" + i, "g0-" + i)) {
                    out.println("(error) key:" + i + " was not on a majority of its shard within 5 s");
                    return 1;
                }
            }
            progress(String.format(Locale.ROOT, "loaded %d keys through JedisCluster (%.0f ms; each SET followed by"
                + " WAIT for a majority of its shard), spread over %d shards", keys, (System.nanoTime() - l0) / 1e6,
                shards));

            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong writes = new AtomicLong();
            AtomicLong failures = new AtomicLong();
            Thread writer = new Thread(() -> {
                for (long g = 1; !stop.get(); g++) {
                    for (int i = 0; i < keys && !stop.get(); i++) {
                        String key = "key:" + i;
                        tried.set(i, g);
                        try {
                            if (setOnMajority(jc, key, "g" + g + "-" + i)) {
                                acked.set(i, g);
                                writes.incrementAndGet();
                                continue;
                            }
                        } catch (RuntimeException e) {
                            // refused, or lost with its connection: counted below
                        }
                        failures.incrementAndGet(); // outcome unknown: generation g may or may not be applied
                        sleepQuietly(20);
                    }
                }
            }, "cluster-demo-writer");
            writer.start();
            try {
                long r0 = System.nanoTime();
                Run reshard = cluster(new String[] {"reshard", "--from", membersPerShard > 1 ? "s1" : "shard-1", "--to",
                    membersPerShard > 1 ? "s2" : "shard-2", "--slots", String.valueOf(slots)}, List.of());
                if (reshard.code != 0) {
                    out.println("(error) cluster reshard failed: " + reshard.err.strip());
                    return 1;
                }
                progress(String.format(Locale.ROOT, "moved %d slots from the first shard to the second while writing"
                    + " (%.0f ms; %d writes so far, %d refused or timed out and retried)", slots,
                    (System.nanoTime() - r0) / 1e6, writes.get(), failures.get()));
                if (membersPerShard > 1) {
                    MemberProcess primary = primaryOf("s1");
                    if (primary == null) {
                        out.println("(error) shard s1 has no primary to kill");
                        return 1;
                    }
                    long before = writes.get();
                    primary.kill();
                    long k0 = System.nanoTime();
                    progress("SIGKILL " + primary.id() + ", the primary of shard s1");
                    long until = System.nanoTime() + remaining(Duration.ofSeconds(60)).toNanos();
                    while (primaryOf("s1") == null && System.nanoTime() - until < 0) {
                        Thread.sleep(100);
                    }
                    MemberProcess next = primaryOf("s1");
                    progress(next == null ? "(error) shard s1 elected no new primary within 60 s"
                        : String.format(Locale.ROOT, "shard s1's new primary: %s, %.0f ms after the kill", next.id(),
                            (System.nanoTime() - k0) / 1e6));
                    // the writer goes on through the new primary (Jedis backs off between retries): 200 writes or 10 s
                    long goOn = System.nanoTime() + remaining(Duration.ofSeconds(10)).toNanos();
                    while (writes.get() - before < 200 && System.nanoTime() - goOn < 0) {
                        Thread.sleep(100);
                    }
                    progress("writes since the kill: " + (writes.get() - before) + " acknowledged, "
                        + failures.get() + " refused or timed out in all (retried)");
                }
            } finally {
                stop.set(true);
                writer.join(30_000);
            }

            // read every key back (a shard just elected may answer MOVED/READONLY for a moment: retried, bounded)
            int ok = 0;
            int lost = 0;
            List<String> bad = new ArrayList<>();
            long readUntil = System.nanoTime() + remaining(Duration.ofSeconds(60)).toNanos();
            for (int i = 0; i < keys; i++) {
                String got = null;
                while (true) {
                    try {
                        got = jc.get("key:" + i);
                        break;
                    } catch (RuntimeException e) {
                        if (System.nanoTime() - readUntil > 0) {
                            break;
                        }
                        sleepQuietly(100);
                    }
                }
                long gen = generation(got, i);
                if (gen >= acked.get(i) && gen <= tried.get(i)) {
                    ok++;
                } else {
                    lost++;
                    if (bad.size() < 5) {
                        bad.add("key:" + i + " = " + got + " (acknowledged g" + acked.get(i) + "-" + i + ")");
                    }
                }
            }
            out.println(ok + " of " + keys + " keys read their last acknowledged value through JedisCluster; " + lost
                + " lost" + (bad.isEmpty() ? "" : ": " + String.join("; ", bad)));
            Run status = cluster(new String[] {"status"}, List.of());
            out.print(status.out);
            out.flush();
            return lost == 0 ? 0 : 1;
        }
    }

    /**
     * SET, then WAIT for a majority of the key's shard (Redis's way to a durable write; with one member, none to wait
     * for). The pool's one connection per node sends the WAIT where the SET went, except for a SET that followed an ASK
     * to a slot's importing shard (whose primary the demo never kills). False: not confirmed on a majority in 5 s.
     */
    private boolean setOnMajority(JedisCluster jc, String key, String value) {
        jc.set(key, value);
        int secondaries = membersPerShard / 2;
        return secondaries == 0 || jc.waitReplicas(key, secondaries, 5000) >= secondaries;
    }

    /** The generation of value {@code v} ("gG-i") written to key i, or -1 when it is none the demo wrote there. */
    static long generation(String v, int i) {
        String tail = "-" + i;
        if (v == null || !v.startsWith("g") || !v.endsWith(tail)) {
            return -1;
        }
        try {
            return Long.parseLong(v, 1, v.length() - tail.length(), 10);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** The member of replica set {@code set} that says it is primary, or null. */
    private MemberProcess primaryOf(String set) {
        try (ReplicaSetProbe probe = new ReplicaSetProbe("tcp", null, Duration.ofSeconds(2))) {
            for (MemberProcess m : members) {
                if (m.id().startsWith(set + "-") && m.isAlive()) {
                    try {
                        ReplicaSetProbe.Role r = probe.role(m.address());
                        if (r.code() == ReplicaSetProbe.PRIMARY) {
                            return m;
                        }
                    } catch (RuntimeException e) {
                        // down or electing
                    }
                }
            }
        }
        return null;
    }

    /** Output of one in-process {@code rdmastore cluster ...} run. */
    private record Run(int code, String out, String err) {
    }

    /** Runs {@code rdmastore cluster ARGS... [-p PORT of a live member] ADDRESSES...} in this process. */
    private Run cluster(String[] args, List<String> addresses) {
        List<String> argv = new ArrayList<>(List.of("cluster"));
        argv.addAll(List.of(args));
        if (addresses.isEmpty()) {
            MemberProcess live = members.stream().filter(m -> m.isAlive()).findFirst().orElseThrow();
            argv.addAll(List.of("-p", String.valueOf(live.port())));
        } else {
            argv.addAll(addresses);
        }
        StringWriter o = new StringWriter();
        StringWriter e = new StringWriter();
        CommandLine cl = Main.commandLine(new ByteArrayInputStream(new byte[0]), false);
        cl.setOut(new PrintWriter(o, true));
        cl.setErr(new PrintWriter(e, true));
        int code = cl.execute(argv.toArray(String[]::new));
        return new Run(code, o.toString(), e.toString());
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
