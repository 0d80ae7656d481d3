package io.rdmastore.bench;

import io.rdmastore.client.ClientConfig;
import io.rdmastore.client.PeerChannel;
import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreException;
import io.rdmastore.client.WriteConcern;
import io.rdmastore.client.protocol.ProtocolDescriptor;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;
import redis.clients.jedis.Jedis;

/**
 * E6 (papers 000 and 001): replica-set writes. Three members on loopback (one process each, {@code --fsync everysec})
 * over ucx and over tcp (clients and the members' own links on the same transport), against the same server alone
 * ({@code none}), and redis-server with two replicas ({@code replicaof}) and {@code WAIT 1 0} after each SET as the TCP
 * anchor. Measures:
 * <ul>
 *   <li>SET latency p50 / p99 / p99.9 (HdrHistogram) for 64 B, 1 KiB and 16 KiB values with 1 and 16 clients (each a
 *   connection and a thread, one write in flight), at {@code w:1} and {@code w:majority} (the client's own write
 *   concern: a WAIT pipelined behind each write);</li>
 *   <li>throughput with two secondaries as a fraction of {@code none}: 16 clients, 1 KiB, {@value #PIPELINE_DEPTH}
 *   writes in flight per connection;</li>
 *   <li>failover: SIGKILL of the primary, then the time until a client that rediscovers the primary through ROLE gets a
 *   {@code w:majority} write acknowledged; the killed member is restarted and caught up before the next kill.</li>
 * </ul>
 * One group runs at a time (ucx: its standalone server and set; then tcp; then redis), and within a group each size and
 * client count runs none, w1 and wmajority back to back, so those ratios compare figures taken under the same load;
 * idle servers of other groups would still poll and take the measured ones' cores on a small machine.
 *
 * <p>Threads: the driver runs on the calling thread; each cell's client threads own one connection each.
 */
public final class E6Replication implements Experiment {
    static final int[] SIZES = {64, 1 << 10, 16 << 10};
    static final int[] CLIENTS = {1, 16};
    static final int[] QUICK_SIZES = {1 << 10};
    static final int[] QUICK_CLIENTS = {1, 4};
    static final int PIPELINE_DEPTH = 8;
    static final int THROUGHPUT_SIZE = 1 << 10;
    static final int KEYS_PER_CLIENT = 64;
    static final String[] VARIANTS = {"none", "w1", "wmajority"};
    static final String SET_NAME = "rs0";
    static final String FSYNC = "everysec";

    @Override
    public String id() {
        return "E6";
    }

    @Override
    public String title() {
        return "replica-set write latency (w:1, w:majority), throughput and failover: ucx vs tcp vs redis + WAIT";
    }

    /** One write on one connection; throws when it fails or is refused. One thread at a time. */
    @FunctionalInterface
    interface Write {
        void run(byte[] key, byte[] value) throws Exception;
    }

    /** {@code keys.length} writes in flight on one connection; returns once every one is acknowledged. */
    @FunctionalInterface
    interface Batch {
        void run(byte[][] keys, byte[] value) throws Exception;
    }

    /** A system and variant, with one writer per client connection (index i is connection i). */
    record Lane(String system, String variant, List<Write> writers, List<Batch> batches) {
    }

    /**
     * One latency or throughput measurement.
     *
     * @param errors writes in the window that failed with an {@link RdmaStoreException} (e.g. a write concern not
     *               confirmed because the primary changed); they are neither timed nor counted as done
     */
    record Cell(String system, String variant, int size, int clients, double p50, double p99, double p999,
                double opsPerS, long count, long errors) {
    }

    /** Everything one run measured. */
    record Results(List<Cell> latency, List<Cell> throughput, Map<String, List<Double>> failoverMs,
                   Map<String, String> links, List<String> missing, String loadBefore, String loadAfter) {
    }

    @Override
    public void run(boolean quick, Report report) throws Exception {
        int[] sizes = quick ? QUICK_SIZES : SIZES;
        int[] clients = quick ? QUICK_CLIENTS : CLIENTS;
        long warmNanos = quick ? 100_000_000L : 300_000_000L;
        long windowNanos = quick ? 200_000_000L : 1_000_000_000L;
        int kills = Integer.getInteger("rdmastore.bench.e6.kills", quick ? 3 : 12);
        int maxClients = clients[clients.length - 1];
        String loadBefore = loadAverage();
        // one group at a time: idle servers still poll (ucx backoff), and on two cores eight idle JVMs beside the
        // measured ones cost more than the time-shift between groups
        List<String> groups = List.of("ucx", "tcp", "redis");
        int cellsTotal = sizes.length * clients.length * 8 + 6 + kills;
        Progress progress = new Progress("E6", cellsTotal);
        List<Cell> latency = new ArrayList<>();
        List<Cell> throughput = new ArrayList<>();
        Map<String, List<Double>> failover = new LinkedHashMap<>();
        Map<String, String> links = new LinkedHashMap<>();
        List<String> missing = new ArrayList<>();
        for (String group : groups) {
            try (Systems systems = Systems.start(maxClients, group)) {
                links.putAll(systems.links());
                missing.addAll(systems.missing);
                List<Lane> lanes = systems.lanes();
                for (int size : sizes) {
                    for (int n : clients) {
                        for (Lane lane : lanes) {
                            latency.add(latencyCell(lane, size, n, warmNanos, windowNanos));
                            progress.step(lane.system() + " " + lane.variant() + " " + Sizes.human(size) + " x" + n);
                        }
                    }
                }
                for (Lane lane : systems.rdmastoreLanes()) {
                    throughput.add(throughputCell(lane, maxClients, warmNanos, windowNanos));
                    progress.step(lane.system() + " " + lane.variant() + " pipelined");
                }
                // failover on the ucx set, or on the tcp set where ucx did not run
                String system = "rdmastore-" + group;
                if (failover.isEmpty() && systems.set(system) != null) {
                    failover.put(system, failover(systems.set(system), group, kills, progress));
                }
            }
        }
        progress.done();
        Results results = new Results(latency, throughput, failover, links, missing, loadBefore, loadAverage());
        report(quick, report, sizes, clients, maxClients, windowNanos, results);
    }

    /** The 1, 5 and 15 minute load averages from /proc/loadavg, or "unknown". */
    static String loadAverage() {
        try {
            String[] f = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).trim().split("\\s+");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (java.io.IOException | RuntimeException e) {
            return "unknown";
        }
    }

    static String transportOf(String system) {
        return system.substring(system.indexOf('-') + 1);
    }

    // ---- the systems ----

    /**
     * Every server of the run and the client connections to them: for each transport a standalone server and a
     * three-member set, and the redis primary with its two replicas. Closing closes the clients, then the servers.
     */
    static final class Systems implements AutoCloseable {
        /** Servers, added by the threads that start them (so a failed start still closes the others). */
        final List<AutoCloseable> closeLast = java.util.Collections.synchronizedList(new ArrayList<>());
        final List<AutoCloseable> closeFirst = new ArrayList<>();
        final Map<String, ReplicaSetServers> sets = new LinkedHashMap<>();
        final List<Lane> lanes = new ArrayList<>();
        final List<String> missing = new ArrayList<>();
        final Map<String, String> links = new LinkedHashMap<>();

        /** Starts one group: {@code ucx} or {@code tcp} (a standalone server and a set), or {@code redis}. */
        static Systems start(int clients, String group) throws Exception {
            Systems s = new Systems();
            try {
                s.open(clients, group);
            } catch (Exception | Error e) {
                s.close();
                throw e;
            }
            return s;
        }

        private void open(int clients, String group) throws Exception {
            long t0 = System.nanoTime();
            boolean redis = group.equals("redis") && RedisServer.ensureInstalled();
            List<String> transports = group.equals("redis") ? List.of() : List.of(group);
            ExecutorService starter = Executors.newFixedThreadPool(8);
            try {
                Map<String, Future<ServerProcess>> alone = new LinkedHashMap<>();
                Map<String, Future<ReplicaSetServers>> replicated = new LinkedHashMap<>();
                for (String t : transports) {
                    String serverTransport = t.equals("ucx") ? "auto" : "tcp";
                    alone.put(t, starter.submit(() -> started(ServerProcess.start("--transport", serverTransport,
                        "--fsync", FSYNC))));
                    replicated.put(t, starter.submit(() -> started(ReplicaSetServers.start(SET_NAME, 3,
                        "--transport", serverTransport, "--fsync", FSYNC))));
                }
                Future<List<RedisServer>> redisSet = redis ? starter.submit(() -> {
                    List<RedisServer> r = startRedis();
                    closeLast.addAll(r);
                    return r;
                }) : null;
                for (String t : transports) {
                    get(alone.get(t));
                    sets.put("rdmastore-" + t, get(replicated.get(t)));
                }
                if (redisSet != null) {
                    get(redisSet);
                }
                long t1 = System.nanoTime();
                for (String t : transports) {
                    String system = "rdmastore-" + t;
                    ServerProcess a = get(alone.get(t));
                    List<RdmaStoreClient> single;
                    try {
                        single = connect(clients, () -> RdmaStoreClient.connect(a.uri(t)), t);
                    } catch (IllegalStateException | RdmaStoreException e) {
                        if (t.equals("ucx")) {
                            // no UCX here: the run goes on over tcp and the report says why ucx is missing
                            missing.add("rdmastore-ucx: " + e.getMessage());
                            sets.remove(system);
                            continue;
                        }
                        throw e;
                    }
                    ReplicaSetServers set = sets.get(system);
                    List<RdmaStoreClient> members = connect(clients,
                        () -> RdmaStoreClient.connect(set.uri("transport=" + t + "&timeout=30s")), t);
                    links.put(system, caughtUpLinks(members.getFirst(), t, set));
                    lanes.add(lane(system, "none", single, WriteConcern.W1));
                    lanes.add(lane(system, "w1", members, WriteConcern.W1));
                    lanes.add(lane(system, "wmajority", members, WriteConcern.MAJORITY));
                }
                if (redisSet != null) {
                    RedisServer primary = get(redisSet).getFirst();
                    List<E2Resp> conns = new ArrayList<>();
                    for (int i = 0; i < clients; i++) {
                        E2Resp r = new E2Resp(primary.port());
                        closeFirst.add(r);
                        conns.add(r);
                    }
                    List<Write> w1 = new ArrayList<>();
                    List<Write> wm = new ArrayList<>();
                    for (E2Resp r : conns) {
                        w1.add(r::set);
                        wm.add((k, v) -> {
                            if (r.setWait(k, v, 1) < 1) {
                                throw new IllegalStateException("E6: redis WAIT 1 0 answered fewer than 1 replica");
                            }
                        });
                    }
                    lanes.add(new Lane("redis", "w1", w1, List.of()));
                    lanes.add(new Lane("redis", "wmajority", wm, List.of()));
                } else if (group.equals("redis")) {
                    missing.add("redis: redis-server is not installed (apt-get install redis-server)");
                }
                System.err.printf(Locale.ROOT, "%nE6: %s servers up in %.1f s, %d clients per system connected and the "
                    + "sets caught up in %.1f s%n", group, (t1 - t0) / 1e9, clients, (System.nanoTime() - t1) / 1e9);
            } finally {
                // every start finishes (and registers what it started) before a failure closes them
                starter.shutdown();
                if (!starter.awaitTermination(300, TimeUnit.SECONDS)) {
                    System.err.println("E6: server starts still running after 300 s");
                }
            }
        }

        private <T extends AutoCloseable> T started(T server) {
            closeLast.add(server);
            return server;
        }

        /** Opens {@code n} clients and checks each runs on {@code transport}. */
        private List<RdmaStoreClient> connect(int n, Callable<RdmaStoreClient> open, String transport)
            throws Exception {
            List<RdmaStoreClient> out = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                RdmaStoreClient c = open.call();
                closeFirst.add(c);
                if (!c.transport().equals(transport)) {
                    throw new IllegalStateException("asked for " + transport + " but the client runs on "
                        + c.transport() + " (" + c.transportReason() + ")");
                }
                out.add(c);
            }
            return out;
        }

        private static Lane lane(String system, String variant, List<RdmaStoreClient> clients, WriteConcern w) {
            List<Write> writes = new ArrayList<>();
            List<Batch> batches = new ArrayList<>();
            for (RdmaStoreClient base : clients) {
                RdmaStoreClient c = w == WriteConcern.W1 ? base : base.withWriteConcern(w);
                writes.add((k, v) -> {
                    if (!c.set(k, v)) {
                        throw new IllegalStateException("E6: " + system + " " + variant + " SET was not written");
                    }
                });
                batches.add((keys, v) -> {
                    // all but the last asynchronously; the last one waits (and drives a ucx worker) for the batch
                    List<CompletableFuture<Boolean>> sent = new ArrayList<>(keys.length);
                    for (int i = 0; i < keys.length - 1; i++) {
                        sent.add(c.setAsync(keys[i], v));
                    }
                    boolean ok = c.set(keys[keys.length - 1], v);
                    for (CompletableFuture<Boolean> f : sent) {
                        ok &= f.join();
                    }
                    if (!ok) {
                        throw new IllegalStateException("E6: " + system + " " + variant + " SET was not written");
                    }
                });
            }
            return new Lane(system, variant, writes, batches);
        }

        /** A redis primary with appendfsync everysec and two replicas of it, once both replicas are in sync. */
        private static List<RedisServer> startRedis() throws Exception {
            List<RedisServer> out = new ArrayList<>();
            try {
                String[] aof = {"--appendonly", "yes", "--appendfsync", FSYNC};
                RedisServer primary = RedisServer.start(aof);
                out.add(primary);
                for (int i = 0; i < 2; i++) {
                    String[] args = Arrays.copyOf(aof, aof.length + 3);
                    args[aof.length] = "--replicaof";
                    args[aof.length + 1] = "127.0.0.1";
                    args[aof.length + 2] = Integer.toString(primary.port());
                    out.add(RedisServer.start(args));
                }
                try (Jedis j = new Jedis("127.0.0.1", primary.port(), 10_000)) {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                    String info = "";
                    while (System.nanoTime() - deadline < 0) {
                        info = j.info("replication");
                        if (info.contains("connected_slaves:2") && info.split("state=online", -1).length == 3) {
                            return out;
                        }
                        Thread.sleep(50);
                    }
                    throw new IllegalStateException("E6: the redis replicas did not come online in 60 s: " + info);
                }
            } catch (Exception | Error e) {
                for (RedisServer r : out) {
                    r.close();
                }
                throw e;
            }
        }

        List<Lane> lanes() {
            return lanes;
        }

        List<Lane> rdmastoreLanes() {
            return lanes.stream().filter(l -> !l.system().equals("redis")).toList();
        }

        ReplicaSetServers set(String system) {
            return sets.get(system);
        }

        Map<String, String> links() {
            return links;
        }

        @Override
        public void close() {
            for (AutoCloseable c : closeFirst) {
                closeQuietly(c);
            }
            for (AutoCloseable c : List.copyOf(closeLast)) {
                closeQuietly(c);
            }
        }

        private static void closeQuietly(AutoCloseable c) {
            try {
                c.close();
            } catch (Exception e) {
                System.err.println("E6: closing " + c + ": " + e);
            }
        }

        private static <T> T get(Future<T> f) throws Exception {
            try {
                return f.get(180, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof Exception x) {
                    throw x;
                }
                throw e;
            }
        }
    }

    /**
     * Waits until both secondaries have caught up and the primary lists them (an election on a loaded machine may move
     * the primary meanwhile); returns their links.
     */
    static String caughtUpLinks(RdmaStoreClient client, String transport, ReplicaSetServers set)
        throws InterruptedException, java.io.IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(240);
        int restarts = 0;
        while (true) {
            awaitCaughtUp(client, transport, 2, Duration.ofSeconds(120));
            try {
                return memberLinks(client.info(), transport);
            } catch (IllegalStateException | RdmaStoreException e) {
                if (System.nanoTime() - deadline > 0) {
                    throw e;
                }
                // a secondary whose pull connection fell back to another transport (its ucx upgrade timed out on a
                // loaded machine) keeps it until it reconnects: restart that member, at most 3 times
                ReplicaSetServers.Member wrong = wrongLink(e.getMessage(), set);
                if (wrong != null && restarts++ < 3) {
                    System.err.println("E6: " + e.getMessage() + "; restarting " + wrong);
                    wrong.kill();
                    wrong.start();
                } else {
                    Thread.sleep(200);
                }
            }
        }
    }

    /** The member a {@link #memberLinks} failure names as pulling over the wrong transport, or null. */
    private static ReplicaSetServers.Member wrongLink(String message, ReplicaSetServers set) {
        String prefix = "E6: the secondary ";
        if (message == null || !message.startsWith(prefix)) {
            return null;
        }
        String id = message.substring(prefix.length(), message.indexOf(' ', prefix.length()));
        return set.members().stream().filter(m -> m.id.equals(id)).findFirst().orElse(null);
    }

    /**
     * The transports of the primary's links to its secondaries, from its INFO replication ({@code slaveN:...,
     * transport=ucx}); fails when one of them is not on {@code transport}.
     */
    static String memberLinks(String info, String transport) {
        List<String> links = new ArrayList<>();
        for (String line : info.split("\r?\n")) {
            if (line.matches("slave\\d+:.*")) {
                String id = field(line, "id=");
                String t = field(line, "transport=");
                links.add(id + " " + t);
                if (!t.equals(transport)) {
                    throw new IllegalStateException("E6: the secondary " + id + " pulls over " + t + ", not "
                        + transport + ": " + line);
                }
            }
        }
        if (links.size() != 2) {
            throw new IllegalStateException("E6: the primary lists " + links.size() + " secondaries, not 2:\n" + info);
        }
        return String.join(", ", links);
    }

    private static String field(String line, String name) {
        int at = line.indexOf(name);
        if (at < 0) {
            return "?";
        }
        int end = line.indexOf(',', at);
        return line.substring(at + name.length(), end < 0 ? line.length() : end).trim();
    }

    /**
     * Waits until {@code secondaries} secondaries hold everything the primary has: a SET then {@code WAIT
     * secondaries} on a connection of its own to the primary the client knows, repeated until WAIT counts them all.
     */
    static void awaitCaughtUp(RdmaStoreClient client, String transport, int secondaries, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        byte[] key = "e6:caught-up".getBytes(StandardCharsets.US_ASCII);
        String last = "";
        while (System.nanoTime() - deadline < 0) {
            String primary = client.primary();
            int colon = primary.lastIndexOf(':');
            Duration t = Duration.ofSeconds(10);
            try (PeerChannel p = PeerChannel.open(new ClientConfig(primary.substring(0, colon),
                Integer.parseInt(primary.substring(colon + 1)), transport, null, t))) {
                CompletableFuture<Boolean> set = p.call(ProtocolDescriptor.SET,
                    w -> w.u8(0).i64(0).bytes(key).bytes(key), (st, r) -> st == ProtocolDescriptor.STATUS_OK, t);
                CompletableFuture<Long> wait = p.call(ProtocolDescriptor.WAIT, w -> w.i32(secondaries).i64(2_000),
                    (st, r) -> r.i64("acked"), t);
                p.await(set, t);
                long acked = p.await(wait, t);
                if (acked >= secondaries) {
                    return;
                }
                last = acked + " of " + secondaries + " secondaries";
            } catch (RdmaStoreException e) {
                // the primary moved or is not ready: a write through the client finds the current one
                last = e.getMessage();
                try {
                    client.set(key, key);
                } catch (RdmaStoreException again) {
                    last = again.getMessage();
                }
            }
        }
        throw new IllegalStateException("E6: the secondaries did not catch up within " + timeout.toSeconds()
            + " s: " + last);
    }

    // ---- measurements ----

    private static byte[][] keys(String tag, int size, int client) {
        byte[][] keys = new byte[KEYS_PER_CLIENT][];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = ("e6:" + tag + ":" + size + ":" + client + ":" + i).getBytes(StandardCharsets.US_ASCII);
        }
        return keys;
    }

    /**
     * A body run by each client thread until {@code end}; returns operations done inside the window and adds the
     * window's failed ones to {@code errors[client]}.
     */
    @FunctionalInterface
    private interface Body {
        long run(int client, Histogram h, long[] errors, long measureFrom, long end) throws Exception;
    }

    /** Runs {@code clients} threads, warm-up then a measured window, and merges their histograms. */
    private static Cell runThreads(String system, String variant, int size, int clients, long warmNanos,
                                   long windowNanos, Body body) throws InterruptedException {
        long start = System.nanoTime() + 50_000_000L;
        long measureFrom = start + warmNanos;
        long end = measureFrom + windowNanos;
        Histogram[] hist = new Histogram[clients];
        long[] counts = new long[clients];
        long[] errors = new long[clients];
        AtomicReference<Throwable> error = new AtomicReference<>();
        Thread[] threads = new Thread[clients];
        for (int i = 0; i < clients; i++) {
            Histogram h = new Histogram(60_000_000_000L, 3);
            hist[i] = h;
            int slot = i;
            threads[i] = new Thread(() -> {
                LockSupport.parkNanos(start - System.nanoTime());
                try {
                    counts[slot] = body.run(slot, h, errors, measureFrom, end);
                } catch (Throwable t) {
                    error.compareAndSet(null, t);
                }
            }, "e6-client-" + i);
            threads[i].start();
        }
        long joinDeadline = end + 60_000_000_000L;
        for (Thread t : threads) {
            t.join(Math.max(1, (joinDeadline - System.nanoTime()) / 1_000_000L));
            if (t.isAlive()) {
                throw new IllegalStateException("E6: " + system + " " + variant + ": client thread " + t.getName()
                    + " still busy 60 s after its window");
            }
        }
        if (error.get() != null) {
            throw new IllegalStateException("E6: " + system + " " + variant + " " + Sizes.human(size) + " x"
                + clients + ": a client failed: " + error.get(), error.get());
        }
        Histogram all = new Histogram(60_000_000_000L, 3);
        long total = 0;
        long failed = 0;
        for (int i = 0; i < clients; i++) {
            all.add(hist[i]);
            total += counts[i];
            failed += errors[i];
        }
        if (total == 0) {
            // every client was inside one write for the whole window (an election stalled the set): the cell is
            // reported as stalled, not as a figure
            System.err.println("E6: " + system + " " + variant + " " + Sizes.human(size) + " x" + clients
                + ": no write completed in the window (" + failed + " failed)");
            return new Cell(system, variant, size, clients, Double.NaN, Double.NaN, Double.NaN, 0, 0, failed);
        }
        return new Cell(system, variant, size, clients, all.getValueAtPercentile(50) / 1e3,
            all.getValueAtPercentile(99) / 1e3, all.getValueAtPercentile(99.9) / 1e3, total / (windowNanos / 1e9),
            total, failed);
    }

    /** One write in flight per client; latency of each write in the window. */
    static Cell latencyCell(Lane lane, int size, int clients, long warmNanos, long windowNanos)
        throws InterruptedException {
        byte[] value = E2Latency.value(size);
        return runThreads(lane.system(), lane.variant(), size, clients, warmNanos, windowNanos,
            (client, h, errors, from, end) -> {
                Write w = lane.writers().get(client);
                byte[][] keys = keys(lane.variant(), size, client);
                long n = 0;
                long now = System.nanoTime();
                for (int i = 0; now < end; i++) {
                    long t0 = now;
                    boolean ok = true;
                    try {
                        w.run(keys[i % keys.length], value);
                    } catch (RdmaStoreException e) {
                        ok = false;
                    }
                    now = System.nanoTime();
                    if (t0 >= from) {
                        if (ok) {
                            h.recordValue(Math.min(now - t0, 60_000_000_000L));
                            n++;
                        } else {
                            errors[client]++;
                        }
                    }
                }
                return n;
            });
    }

    /** {@value #PIPELINE_DEPTH} writes in flight per client; latency is per batch, throughput counts writes. */
    static Cell throughputCell(Lane lane, int clients, long warmNanos, long windowNanos) throws InterruptedException {
        byte[] value = E2Latency.value(THROUGHPUT_SIZE);
        return runThreads(lane.system(), lane.variant(), THROUGHPUT_SIZE, clients, warmNanos, windowNanos,
            (client, h, errors, from, end) -> {
                Batch b = lane.batches().get(client);
                byte[][] keys = keys("tp-" + lane.variant(), THROUGHPUT_SIZE, client);
                byte[][][] batches = new byte[keys.length / PIPELINE_DEPTH][][];
                for (int i = 0; i < batches.length; i++) {
                    batches[i] = Arrays.copyOfRange(keys, i * PIPELINE_DEPTH, (i + 1) * PIPELINE_DEPTH);
                }
                long n = 0;
                long now = System.nanoTime();
                for (int i = 0; now < end; i++) {
                    long t0 = now;
                    boolean ok = true;
                    try {
                        b.run(batches[i % batches.length], value);
                    } catch (RdmaStoreException | java.util.concurrent.CompletionException e) {
                        ok = false;
                    }
                    now = System.nanoTime();
                    if (t0 >= from) {
                        if (ok) {
                            h.recordValue(Math.min(now - t0, 60_000_000_000L));
                            n += PIPELINE_DEPTH;
                        } else {
                            errors[client] += PIPELINE_DEPTH;
                        }
                    }
                }
                return n;
            });
    }

    /**
     * Kills the primary {@code kills} times; each time measures from SIGKILL until a {@code w:majority} SET through a
     * replica-set client (which rediscovers the primary with ROLE on the members it knows) is acknowledged, then
     * restarts the killed member and waits until it has caught up (not after the last kill: the set is closed next).
     * Returns the times in milliseconds.
     */
    static List<Double> failover(ReplicaSetServers set, String transport, int kills, Progress progress)
        throws Exception {
        List<Double> out = new ArrayList<>();
        byte[] value = E2Latency.value(1 << 10);
        try (RdmaStoreClient c = RdmaStoreClient.connect(set.uri("transport=" + transport
            + "&w=majority&timeout=2s"))) {
            for (int k = 0; k < kills; k++) {
                byte[] key = ("e6:failover:" + k).getBytes(StandardCharsets.US_ASCII);
                if (!c.set(key, value)) {
                    throw new IllegalStateException("E6: failover: SET before kill " + k + " was not written");
                }
                ReplicaSetServers.Member victim = set.byAddress(c.primary());
                if (victim == null) {
                    throw new IllegalStateException("E6: failover: the primary " + c.primary() + " is no member");
                }
                long killed = System.nanoTime();
                victim.kill();
                long deadline = killed + TimeUnit.SECONDS.toNanos(60);
                RdmaStoreException last = null;
                while (true) {
                    try {
                        if (c.set(key, value)) {
                            break;
                        }
                    } catch (RdmaStoreException e) {
                        last = e; // refused, or sent to the dead primary (outcome unknown): SET again
                    }
                    if (System.nanoTime() - deadline > 0) {
                        throw new IllegalStateException("E6: failover: no w:majority write acknowledged within 60 s "
                            + "of killing the primary " + victim + ": " + last, last);
                    }
                }
                double ms = (System.nanoTime() - killed) / 1e6;
                if (set.byAddress(c.primary()) == victim) {
                    throw new IllegalStateException("E6: failover: the killed member " + victim
                        + " is still named primary");
                }
                out.add(ms);
                if (k + 1 < kills) {
                    victim.start();
                    awaitCaughtUp(c, transport, set.members().size() - 1, Duration.ofSeconds(120));
                }
                progress.step("failover " + (k + 1) + ": " + Math.round(ms) + " ms");
            }
        }
        return out;
    }

    // ---- report ----

    private static void report(boolean quick, Report report, int[] sizes, int[] clients, int maxClients,
                               long windowNanos, Results r) {
        Map<String, Cell> by = new LinkedHashMap<>();
        for (Cell c : r.latency()) {
            by.put(key(c.system(), c.variant(), c.size(), c.clients()), c);
        }
        Map<String, Cell> tp = new LinkedHashMap<>();
        for (Cell c : r.throughput()) {
            tp.put(c.system() + "/" + c.variant(), c);
        }
        List<Row> rows = new ArrayList<>();
        // p50 first: the chart and the summary take the first metric
        for (String metric : List.of("p50_us", "p99_us", "p999_us", "closed_loop_ops_per_s")) {
            for (Cell c : r.latency()) {
                double v = switch (metric) {
                    case "p50_us" -> c.p50();
                    case "p99_us" -> c.p99();
                    case "p999_us" -> c.p999();
                    default -> c.opsPerS();
                };
                if (c.count() > 0) {
                    rows.add(new Row("E6", c.system(), c.variant(), c.size(), c.clients(), metric, v));
                }
            }
        }
        for (Cell c : r.throughput()) {
            rows.add(new Row("E6", c.system(), c.variant(), c.size(), c.clients(), "ops_per_s", c.opsPerS()));
            Cell none = tp.get(c.system() + "/none");
            if (!c.variant().equals("none") && none != null && none.opsPerS() > 0) {
                rows.add(new Row("E6", c.system(), c.variant(), c.size(), c.clients(), "fraction_of_none",
                    c.opsPerS() / none.opsPerS()));
            }
        }
        for (Map.Entry<String, List<Double>> e : r.failoverMs().entrySet()) {
            double[] ms = e.getValue().stream().mapToDouble(Double::doubleValue).sorted().toArray();
            if (ms.length > 0) {
                rows.add(new Row("E6", e.getKey(), "failover", 1 << 10, 1, "failover_ms", ms[ms.length - 1]));
                rows.add(new Row("E6", e.getKey(), "failover", 1 << 10, 1, "failover_p50_ms", median(ms)));
            }
        }

        List<String> header = List.of("size", "clients", "system", "variant", "p50 us", "p99 us", "p99.9 us",
            "ops/s", "p50 / none", "failed");
        List<List<String>> body = new ArrayList<>();
        for (int size : sizes) {
            for (int n : clients) {
                for (Cell c : r.latency()) {
                    if (c.size() != size || c.clients() != n) {
                        continue;
                    }
                    Cell none = by.get(key(c.system(), "none", size, n));
                    String vsNone = c.system().equals("redis") || c.variant().equals("none") || none == null ? "-"
                        : String.format(Locale.ROOT, "%.2fx", c.p50() / none.p50());
                    body.add(List.of(Sizes.human(size), Integer.toString(n), c.system(), c.variant(),
                        E2Latency.f(c.p50()), E2Latency.f(c.p99()), E2Latency.f(c.p999()), E1RoundTrips.fmt(c.opsPerS()),
                        vsNone, c.count() == 0 ? "stalled" : Long.toString(c.errors())));
                }
            }
        }
        List<String> tpHeader = List.of("system", "none ops/s", "w1 ops/s", "w1 / none", "wmajority ops/s",
            "wmajority / none");
        List<List<String>> tpBody = new ArrayList<>();
        for (String system : List.of("rdmastore-ucx", "rdmastore-tcp")) {
            Cell none = tp.get(system + "/none");
            Cell w1 = tp.get(system + "/w1");
            Cell wm = tp.get(system + "/wmajority");
            if (none == null) {
                continue;
            }
            tpBody.add(List.of(system, E1RoundTrips.fmt(none.opsPerS()), ops(w1), frac(w1, none), ops(wm),
                frac(wm, none)));
        }
        List<String> foHeader = List.of("system", "kills", "p50 ms", "max ms", "each kill, ms");
        List<List<String>> foBody = new ArrayList<>();
        for (Map.Entry<String, List<Double>> e : r.failoverMs().entrySet()) {
            double[] ms = e.getValue().stream().mapToDouble(Double::doubleValue).sorted().toArray();
            foBody.add(List.of(e.getKey(), Integer.toString(ms.length), ms.length == 0 ? "-" : num(median(ms)),
                ms.length == 0 ? "-" : num(ms[ms.length - 1]), String.join(" ", e.getValue().stream()
                    .map(E6Replication::num).toList())));
        }
        List<String> tHeader = List.of("target", "measured", "goal", "verdict");
        List<List<String>> tBody = targets(by, tp, r.failoverMs());

        String notes = notes(quick, windowNanos, maxClients, r) + "\n\nThroughput with two secondaries (" + maxClients
            + " clients, " + Sizes.human(THROUGHPUT_SIZE) + ", " + PIPELINE_DEPTH + " writes in flight per client):"
            + "\n\n" + Report.table(tpHeader, tpBody) + "\nFailover (SIGKILL of the primary to the first acknowledged"
            + " w:majority write; Ratis's default timeouts):\n\n" + Report.table(foHeader, foBody)
            + "\nTargets (issue 11; 1 KiB, 1 client for latency):\n\n" + Report.table(tHeader, tBody);
        System.out.println();
        System.out.println("E6: replica-set write latency, one write in flight per client");
        System.out.print(Report.plain(header, body));
        System.out.println();
        System.out.print(Report.plain(tpHeader, tpBody));
        System.out.println();
        System.out.print(Report.plain(foHeader, foBody));
        System.out.println();
        System.out.print(Report.plain(tHeader, tBody));
        try {
            Charts.bar(report.directory().resolve("E6-p50-log.png"), "E6: write latency p50 (us, log scale)", rows,
                true);
        } catch (java.io.IOException e) {
            System.err.println("E6: chart not written: " + e);
        }
        report.add("E6", "replica-set write latency, throughput and failover", Report.table(header, body), notes
            + "\n\n![E6 p50, log scale](E6-p50-log.png)\n", rows);
    }

    static String key(String system, String variant, int size, int clients) {
        return system + "/" + variant + "/" + size + "/" + clients;
    }

    private static String notes(boolean quick, long windowNanos, int maxClients, Results r) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "SET latency with one write in flight per client (each client its own "
            + "connection and thread), %.1f s per cell after a warm-up%s. rdmastore: 3 members on loopback, one JVM "
            + "each, --fsync %s, server idle strategy backoff (three members cannot each spin a core on this "
            + "machine); w1 = the primary's reply, wmajority = the client's write concern majority (a WAIT for a "
            + "majority pipelined behind each SET, no extra round trip); none = the same server alone, "
            + "no replicas. ucx: clients and members on ucx (--transport auto, UCX over shared memory here); tcp: "
            + "--transport tcp everywhere. redis: redis-server with appendonly yes, appendfsync %s, and two "
            + "replicas (replicaof); w1 = SET, wmajority = SET and WAIT 1 0 sent together (a majority of three). "
            + "One group at a time (ucx: its standalone server and set; then tcp; then redis), and within a group "
            + "each size and client count runs none, w1 and wmajority back to back, so those ratios share the "
            + "machine's load (idle servers still poll: all eight JVMs at once starved the measured ones on 2 "
            + "cores). Up to %d clients. failed: writes in the window "
            + "that failed with a client error (an election moving the primary on a loaded machine fails w:majority "
            + "writes whose WAIT was cut off); they are not timed. stalled: no write completed in the window.",
            windowNanos / 1e9, quick ? " (--quick: one size, fewer clients, 3 kills)" : "", FSYNC, FSYNC, maxClients));
        if (!r.links().isEmpty()) {
            sb.append(" Member links (from the primary's INFO replication): ");
            List<String> parts = new ArrayList<>();
            r.links().forEach((k, v) -> parts.add(k + ": " + v));
            sb.append(String.join("; ", parts)).append('.');
        }
        sb.append(" Load average (1, 5, 15 min) before: ").append(r.loadBefore()).append(", after: ")
            .append(r.loadAfter()).append(" on ").append(Runtime.getRuntime().availableProcessors())
            .append(" cores; far above the core count, every waiting thread queues for a core and latencies grow to "
                + "milliseconds.");
        for (String m : r.missing()) {
            sb.append(" Not measured: ").append(m).append('.');
        }
        return sb.toString();
    }

    /** The targets as table rows: what was measured, the goal, met or missed. */
    static List<List<String>> targets(Map<String, Cell> by, Map<String, Cell> tp, Map<String, List<Double>> failover) {
        List<List<String>> out = new ArrayList<>();
        int kib = 1 << 10;
        Cell ucxM = by.get(key("rdmastore-ucx", "wmajority", kib, 1));
        Cell tcpM = by.get(key("rdmastore-tcp", "wmajority", kib, 1));
        Cell redisM = by.get(key("redis", "wmajority", kib, 1));
        Cell ucxNone = by.get(key("rdmastore-ucx", "none", kib, 1));
        out.add(ratioTarget("w:majority p50 redis+WAIT / ucx", redisM, ucxM, ">= 5x", true, 5));
        out.add(ratioTarget("w:majority p50 tcp / ucx", tcpM, ucxM, ">= 5x", true, 5));
        out.add(ratioTarget("w:majority p50 ucx / none ucx", ucxM, ucxNone, "<= 3x", false, 3));
        for (String t : List.of("ucx", "tcp")) {
            Cell w1 = by.get(key("rdmastore-" + t, "w1", kib, 1));
            Cell none = by.get(key("rdmastore-" + t, "none", kib, 1));
            if (w1 != null && none != null) {
                double over = (w1.p50() / none.p50() - 1) * 100;
                if (!Double.isFinite(over)) {
                    continue;
                }
                out.add(List.of("w:1 p50 overhead over none, " + t, String.format(Locale.ROOT, "%+.1f %%", over),
                    "< 10 %", over < 10 ? "met" : "missed"));
            }
        }
        for (String t : List.of("ucx", "tcp")) {
            Cell none = tp.get("rdmastore-" + t + "/none");
            for (String v : List.of("w1", "wmajority")) {
                Cell c = tp.get("rdmastore-" + t + "/" + v);
                if (c != null && none != null && none.opsPerS() > 0) {
                    double f = c.opsPerS() / none.opsPerS();
                    double goal = v.equals("w1") ? 0.9 : 0.7;
                    out.add(List.of("throughput " + v + " / none, " + t, String.format(Locale.ROOT, "%.0f %%",
                        f * 100), String.format(Locale.ROOT, ">= %.0f %%", goal * 100), f >= goal ? "met" : "missed"));
                }
            }
        }
        for (Map.Entry<String, List<Double>> e : failover.entrySet()) {
            double[] ms = e.getValue().stream().mapToDouble(Double::doubleValue).sorted().toArray();
            if (ms.length > 0) {
                double p50 = median(ms);
                double max = ms[ms.length - 1];
                out.add(List.of("failover p50, " + e.getKey(), num(p50) + " ms", "< 1000 ms",
                    p50 < 1000 ? "met" : "missed"));
                out.add(List.of("failover max, " + e.getKey(), num(max) + " ms", "< 2000 ms",
                    max < 2000 ? "met" : "missed"));
            }
        }
        return out;
    }

    private static List<String> ratioTarget(String name, Cell a, Cell b, String goal, boolean atLeast,
                                            double factor) {
        if (a == null || b == null) {
            return List.of(name, "not measured", goal, "-");
        }
        double x = a.p50() / b.p50();
        if (!Double.isFinite(x)) {
            return List.of(name, "not measured (a cell stalled)", goal, "-");
        }
        boolean met = atLeast ? x >= factor : x <= factor;
        return List.of(name, String.format(Locale.ROOT, "%.2fx (%s / %s us)", x, E2Latency.f(a.p50()),
            E2Latency.f(b.p50())), goal, met ? "met" : "missed");
    }

    static double median(double[] sorted) {
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    private static String num(double v) {
        return String.format(Locale.ROOT, "%.0f", v);
    }

    private static String ops(Cell c) {
        return c == null ? "-" : E1RoundTrips.fmt(c.opsPerS());
    }

    private static String frac(Cell c, Cell none) {
        return c == null || none.opsPerS() <= 0 ? "-"
            : String.format(Locale.ROOT, "%.0f %%", c.opsPerS() / none.opsPerS() * 100);
    }
}
