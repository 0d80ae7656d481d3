package io.rdmastore.bench;

import io.rdmastore.client.DocumentCollection;
import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.UpdateResult;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import org.bson.BsonDocument;
import org.bson.BsonInt32;
import org.bson.BsonInt64;
import org.bson.BsonString;
import org.bson.BsonValue;

/**
 * E4 (paper 002): document CRUD throughput with 1 and 4 client threads, each thread on its own connection and its own
 * {@code _id} range, over ucx and over tcp (one server at a time). Time-based phases, after a warm-up in the same JVM,
 * repeated in each CPU mode: insert, update by {@code _id} ({@code $inc}), query by {@code _id}, query by a field
 * filter, delete by {@code _id}, each over a collection of fixed size. Every reply is checked (a wrong answer fails the
 * run).
 *
 * <p>Threads: the calling thread starts the servers and the client threads and joins them; each client is used by its
 * own thread only.
 */
public final class E4Crud implements Experiment {
    static final String[] OPS = {"insert", "update", "query_id", "query_field", "delete"};
    static final int[] CLIENTS = {1, 4};
    /**
     * Warm-up per operation on each fresh server, unless --warmup says otherwise. A fresh server's update path over ucx
     * ran at 1-28k ops/s for its first 1.6-2 s (JIT compiling beside two spinning threads on two cores) before reaching
     * 100-140k; with 1 s, single-client phases kept one slow repeat (update x1 60-137k against 116-138k with 3 s).
     */
    static final long WARM_NANOS = 3_000_000_000L;
    static final String COLLECTION = "e4";

    @Override
    public String id() {
        return "E4";
    }

    @Override
    public String title() {
        return "document insert/update/query (_id, field)/delete throughput, 1 and 4 client threads: ucx vs tcp";
    }

    @Override
    public void run(boolean quick, Report report) throws Exception {
        run(BenchOptions.defaults(quick), report);
    }

    /** A cell's key: transport, operation, client threads, CPU mode. */
    static String key(String transport, String op, int clients, String mode) {
        return transport + "/" + op + "/" + clients + "/" + mode;
    }

    /** Phase lengths and repeats. */
    record Plan(int docsPerThread, long warmNanos, long phaseNanos, List<CpuState.Mode> modes, int repeats) {
    }

    @Override
    public void run(BenchOptions options, Report report) throws Exception {
        Plan plan = new Plan(options.quick() ? 200 : 2_000, options.warmNanos(WARM_NANOS, 50_000_000L),
            options.measureNanos(600_000_000L, 150_000_000L), options.cpuModes(), options.repeats());
        Map<String, List<Double>> rate = new LinkedHashMap<>();
        Map<String, String> mechanisms = new LinkedHashMap<>();
        Progress progress = new Progress("E4", 2 * CLIENTS.length * plan.modes().size() * plan.repeats());
        for (String transport : List.of("ucx", "tcp")) {
            for (int clients : CLIENTS) {
                // one client thread: the server's worker spins for the lowest latency; four threads on two cores:
                // the default (adaptive), so the server does not take a core from the clients that drive their own
                // waits (measured against yield: 110-238k ops/s against 73-100k; -Drdmastore.bench.e4.ucxIdleMany)
                String idle = clients == 1 ? "spin" : System.getProperty("rdmastore.bench.e4.ucxIdleMany", "adaptive");
                try (ServerProcess server = transport.equals("ucx")
                    ? ServerProcess.start("--transport", "auto", "--ucx-idle", idle, "--fsync", "everysec")
                    : ServerProcess.start("--transport", "tcp", "--fsync", "everysec")) {
                    run(server, transport, clients, plan, rate, mechanisms, progress);
                }
            }
        }
        progress.done();
        report(rate, plan, mechanisms, report);
    }

    /**
     * One server and thread count: loads each thread's documents, warms every operation up on another collection,
     * then runs every phase for each CPU mode and repeat; adds one ops/s sample per phase to {@code rate}.
     */
    private static void run(ServerProcess server, String transport, int clients, Plan plan,
                            Map<String, List<Double>> rate, Map<String, String> mechanisms, Progress progress)
        throws Exception {
        List<RdmaStoreClient> conns = new ArrayList<>();
        try {
            for (int t = 0; t < clients; t++) {
                RdmaStoreClient c = RdmaStoreClient.connect(server.uri(transport));
                conns.add(c);
                if (!c.transport().equals(transport)) {
                    throw new IllegalStateException("E4: asked for " + transport + " but the client runs on "
                        + c.transport() + " (" + c.transportReason() + ")");
                }
            }
            // each server is a fresh JVM: run every operation through the JIT before measuring (a cold insert costs
            // ~8x a warm one), on a collection of its own with as many documents as one thread has
            DocumentCollection warm = conns.get(0).collection(COLLECTION + "-warmup");
            // query_field's field is indexed, as a user would index a field they query by
            warm.createIndex("k");
            conns.get(0).collection(COLLECTION).createIndex("k");
            for (int i = 0; i < plan.docsPerThread(); i++) {
                insert(warm, id(0, i));
            }
            for (String op : OPS) {
                phase(warm, op, 0, plan.docsPerThread(), plan.warmNanos());
            }
            for (int t = 0; t < clients; t++) {
                DocumentCollection coll = conns.get(t).collection(COLLECTION);
                for (int i = 0; i < plan.docsPerThread(); i++) {
                    insert(coll, id(t, i));
                }
            }
            for (CpuState.Mode mode : plan.modes()) {
                for (int r = 0; r < plan.repeats(); r++) {
                    for (String op : OPS) {
                        double ops;
                        try (CpuState.Guard g = CpuState.enter(mode, plan.phaseNanos() + 120_000_000_000L)) {
                            mechanisms.put(mode.label(), g.mechanism());
                            ops = phase(conns, transport, op, plan);
                        }
                        rate.computeIfAbsent(key(transport, op, clients, mode.label()), k -> new ArrayList<>())
                            .add(ops);
                    }
                    progress.step(transport + " x" + clients + " " + mode.label());
                }
            }
        } finally {
            for (RdmaStoreClient c : conns) {
                c.close();
            }
        }
    }

    /** One phase on every connection at once, each in its own thread; the sum of the threads' rates. */
    private static double phase(List<RdmaStoreClient> conns, String transport, String op, Plan plan)
        throws Exception {
        int clients = conns.size();
        double[] rates = new double[clients];
        Throwable[] failure = new Throwable[1];
        CyclicBarrier start = new CyclicBarrier(clients + 1);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < clients; t++) {
            int thread = t;
            DocumentCollection coll = conns.get(t).collection(COLLECTION);
            Thread th = new Thread(() -> {
                try {
                    start.await(30, TimeUnit.SECONDS);
                    long[] r = phase(coll, op, thread, plan.docsPerThread(), plan.phaseNanos());
                    rates[thread] = r[0] / (r[1] / 1e9);
                } catch (Throwable e) {
                    synchronized (failure) {
                        if (failure[0] == null) {
                            failure[0] = e;
                        }
                    }
                }
            }, "e4-" + transport + "-" + t);
            threads.add(th);
            th.start();
        }
        start.await(30, TimeUnit.SECONDS);
        for (Thread th : threads) {
            th.join(plan.phaseNanos() / 1_000_000 + 60_000);
            if (th.isAlive()) {
                th.interrupt();
                throw new IllegalStateException("E4: " + th.getName() + " did not finish " + op);
            }
        }
        if (failure[0] != null) {
            throw new IllegalStateException("E4: " + op + " over " + transport + " x" + clients + " failed: "
                + failure[0], failure[0]);
        }
        double total = 0;
        for (double r : rates) {
            total += r;
        }
        return total;
    }

    static long id(int thread, int i) {
        return (long) thread * 1_000_000_000L + i;
    }

    /** Documents the insert phase adds (and removes again, untimed) start here in each thread's _id range. */
    static final int SPARE = 500_000_000;

    private static final BsonString PAYLOAD = new BsonString("x".repeat(100));

    private static void insert(DocumentCollection coll, long id) {
        BsonDocument d = new BsonDocument("_id", new BsonInt64(id)).append("k", new BsonInt64(id))
            .append("n", new BsonInt32(0)).append("payload", PAYLOAD);
        BsonValue got = coll.insertOne(d);
        if (!new BsonInt64(id).equals(got)) {
            throw new IllegalStateException("insert returned _id " + got + " for " + id);
        }
    }

    private static void delete(DocumentCollection coll, long id) {
        long deleted = coll.deleteOne(new BsonDocument("_id", new BsonInt64(id)));
        if (deleted != 1) {
            throw new IllegalStateException("delete of _id " + id + " removed " + deleted);
        }
    }

    /**
     * One thread's share of a phase, for {@code phaseNanos}, over the thread's {@code docs} documents, which it leaves
     * as it found them: insert adds a spare document (timed) and deletes it again (untimed); delete removes one of the
     * documents (timed) and inserts it again (untimed); updates and queries cycle over the documents. Returns
     * {operations, nanoseconds spent in the timed calls}.
     */
    private static long[] phase(DocumentCollection coll, String op, int thread, int docs, long phaseNanos) {
        long end = System.nanoTime() + phaseNanos;
        int i = 0;
        long n = 0;
        long timed = 0;
        int spare = 0;
        do {
            long id = id(thread, i);
            long t0 = System.nanoTime();
            switch (op) {
                case "insert" -> {
                    long s = id(thread, SPARE + spare++);
                    insert(coll, s);
                    timed += System.nanoTime() - t0;
                    delete(coll, s);
                }
                case "update" -> {
                    UpdateResult u = coll.updateOne(new BsonDocument("_id", new BsonInt64(id)),
                        new BsonDocument("$inc", new BsonDocument("n", new BsonInt32(1))));
                    if (u.matched() != 1) {
                        throw new IllegalStateException("update of _id " + id + " matched " + u.matched());
                    }
                    timed += System.nanoTime() - t0;
                }
                case "query_id" -> {
                    check(coll.find(new BsonDocument("_id", new BsonInt64(id)), 1), id);
                    timed += System.nanoTime() - t0;
                }
                case "query_field" -> {
                    check(coll.find(new BsonDocument("k", new BsonInt64(id)), 1), id);
                    timed += System.nanoTime() - t0;
                }
                case "delete" -> {
                    delete(coll, id);
                    timed += System.nanoTime() - t0;
                    insert(coll, id);
                }
                default -> throw new IllegalArgumentException(op);
            }
            n++;
            i = i + 1 == docs ? 0 : i + 1;
        } while (System.nanoTime() - end < 0);
        return new long[] {n, Math.max(1, timed)};
    }

    private static void check(List<BsonDocument> found, long id) {
        if (found.size() != 1 || !new BsonInt64(id).equals(found.getFirst().get("_id"))) {
            throw new IllegalStateException("query for " + id + " found " + found);
        }
    }

    private static void report(Map<String, List<Double>> rate, Plan plan, Map<String, String> mechanisms,
                               Report report) {
        List<String> header = new ArrayList<>(List.of("cpu", "op", "clients", "ucx ops/s", "tcp ops/s", "ucx/tcp",
            "ucx/tcp range"));
        List<List<String>> body = new ArrayList<>();
        List<Row> rows = new ArrayList<>();
        StringBuilder targets = new StringBuilder();
        for (CpuState.Mode mode : plan.modes()) {
            String ml = mode.label();
            targets.append("\n- ").append(ml).append(": ");
            for (int clients : CLIENTS) {
                for (String op : OPS) {
                    Spread u = Spread.of(rate.getOrDefault(key("ucx", op, clients, ml), List.of()));
                    Spread t = Spread.of(rate.getOrDefault(key("tcp", op, clients, ml), List.of()));
                    Row.Tags tags = Row.Tags.of(ml, "everysec", null);
                    rows.add(u.row("E4", "rdmastore-ucx", op, 0, clients, "ops_per_s", tags));
                    rows.add(t.row("E4", "rdmastore-tcp", op, 0, clients, "ops_per_s", tags));
                    double x = u.median() / t.median();
                    // the ratio's range: worst ucx repeat against best tcp repeat, and the other way round
                    double lo = u.min() / t.max();
                    double hi = u.max() / t.min();
                    body.add(List.of(ml, op, Integer.toString(clients), u.format(E1RoundTrips::fmt),
                        t.format(E1RoundTrips::fmt), String.format(Locale.ROOT, "%.1fx", x),
                        String.format(Locale.ROOT, "%.2fx-%.2fx", lo, hi)));
                    targets.append(String.format(Locale.ROOT, "%s x%d %.1fx (%.2fx-%.2fx) %s; ", op, clients, x, lo,
                        hi, (x >= 2 && lo > 1 ? "met" : "missed") + (u.n() < 2 || t.n() < 2 ? " (one repeat: no spread)"
                            : "")));
                }
            }
        }
        String notes = String.format(Locale.ROOT, "Documents of about 150 bytes ({_id, k, n, payload}); %d per thread, "
                + "each thread on its own connection and _id range, loaded before the phases. Each phase runs %.2f s, "
                + "after a warm-up of %.2f s per operation on another collection in the same client JVM against the "
                + "same server process, repeated %d time(s) per CPU mode (%s); ops/s is the median with the range "
                + "(min-max) of the repeats, ucx/tcp the ratio of medians, and its range the worst ucx repeat over the "
                + "best tcp one to the best over the worst. Each thread's rate is its operations over the time spent "
                + "in them; the phase's is the sum over threads. The collection keeps its size: insert adds a spare "
                + "document (timed) and deletes it again (untimed), delete removes a document (timed) and inserts it "
                + "again (untimed); updates and queries cycle over the documents. query_field filters on k (equal to "
                + "_id) with limit 1, through an index on k created before the documents are loaded (createIndex; "
                + "inserts and deletes maintain it). Servers: ucx "
                + "with --ucx-idle spin for one client thread and its default, adaptive, for four (two cores: spinning "
                + "would starve the clients, which drive their own waits); tcp-only server for tcp; both --fsync "
                + "everysec.%n%nTarget "
                + "(issue 13: ucx >= 2x tcp per operation, with a range that does not cross 1x):%s",
            plan.docsPerThread(), plan.phaseNanos() / 1e9, plan.warmNanos() / 1e9, plan.repeats(),
            E2Latency.describe(plan.modes(), mechanisms), targets.toString().stripTrailing());
        System.out.println();
        System.out.println("E4: CRUD throughput");
        System.out.print(Report.plain(header, body));
        System.out.println(notes);
        report.add("E4", "document CRUD throughput, 1 and 4 client threads", Report.table(header, body), notes, rows);
    }
}
