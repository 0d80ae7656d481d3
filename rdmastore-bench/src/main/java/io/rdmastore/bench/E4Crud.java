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
 * {@code _id} range, over ucx and over tcp (one server at a time). Phases run in order, each bounded by a count and a
 * time budget: insert, update by {@code _id} ({@code $inc}), query by {@code _id}, query by a field filter, delete by
 * {@code _id}. Every reply is checked (a wrong answer fails the run).
 *
 * <p>Threads: the calling thread starts the servers and the client threads and joins them; each client is used by its
 * own thread only.
 */
public final class E4Crud implements Experiment {
    static final String[] OPS = {"insert", "update", "query_id", "query_field", "delete"};
    static final int[] CLIENTS = {1, 4};
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
        int docsPerThread = quick ? 200 : 2_000;
        long phaseNanos = quick ? 300_000_000L : 4_000_000_000L;
        Map<String, Double> rate = new LinkedHashMap<>();
        Progress progress = new Progress("E4", 2 * CLIENTS.length);
        for (String transport : List.of("ucx", "tcp")) {
            for (int clients : CLIENTS) {
                // one client thread: the server's worker spins for the lowest latency; four threads on two cores:
                // yield, so the server does not take a core from the clients that drive their own waits
                String idle = clients == 1 ? "spin" : "yield";
                try (ServerProcess server = transport.equals("ucx")
                    ? ServerProcess.start("--transport", "auto", "--ucx-idle", idle, "--fsync", "everysec")
                    : ServerProcess.start("--transport", "tcp", "--fsync", "everysec")) {
                    double[] r = run(server, transport, clients, docsPerThread, phaseNanos);
                    for (int i = 0; i < OPS.length; i++) {
                        rate.put(transport + "/" + OPS[i] + "/" + clients, r[i]);
                    }
                }
                progress.step(transport + " x" + clients);
            }
        }
        progress.done();
        report(rate, docsPerThread, report);
    }

    /** One system and thread count: ops/s per phase, in {@link #OPS} order. */
    private static double[] run(ServerProcess server, String transport, int clients, int docsPerThread,
                                long phaseNanos) throws Exception {
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
            // each server is a fresh JVM: run every operation once through the JIT before measuring (a cold insert
            // costs ~8x a warm one), on a collection of its own
            DocumentCollection warm = conns.get(0).collection(COLLECTION + "-warmup");
            long warmed = phase(warm, "insert", 0, 3_000, phaseNanos / 8);
            for (int p = 1; p < OPS.length; p++) {
                phase(warm, OPS[p], 0, (int) warmed, phaseNanos / 8);
            }
            double[] out = new double[OPS.length];
            int[] done = new int[clients];
            for (int p = 0; p < OPS.length; p++) {
                String op = OPS[p];
                long[] counts = new long[clients];
                Throwable[] failure = new Throwable[1];
                CyclicBarrier start = new CyclicBarrier(clients + 1);
                List<Thread> threads = new ArrayList<>();
                for (int t = 0; t < clients; t++) {
                    int thread = t;
                    DocumentCollection coll = conns.get(t).collection(COLLECTION);
                    // delete removes what insert made: as many as were inserted, no more
                    int limit = op.equals("insert") ? docsPerThread : done[t];
                    Thread th = new Thread(() -> {
                        try {
                            start.await(30, TimeUnit.SECONDS);
                            counts[thread] = phase(coll, op, thread, limit, phaseNanos);
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
                long t0 = System.nanoTime();
                for (Thread th : threads) {
                    th.join(phaseNanos / 1_000_000 + 60_000);
                    if (th.isAlive()) {
                        th.interrupt();
                        throw new IllegalStateException("E4: " + th.getName() + " did not finish " + op);
                    }
                }
                double seconds = (System.nanoTime() - t0) / 1e9;
                if (failure[0] != null) {
                    throw new IllegalStateException("E4: " + op + " over " + transport + " x" + clients + " failed: "
                        + failure[0], failure[0]);
                }
                long total = 0;
                for (int t = 0; t < clients; t++) {
                    total += counts[t];
                    if (op.equals("insert")) {
                        done[t] = (int) counts[t];
                    }
                }
                out[p] = total / seconds;
            }
            return out;
        } finally {
            for (RdmaStoreClient c : conns) {
                c.close();
            }
        }
    }

    static long id(int thread, int i) {
        return (long) thread * 1_000_000_000L + i;
    }

    /** One thread's share of a phase: at most {@code limit} operations or {@code phaseNanos}; returns how many ran. */
    private static long phase(DocumentCollection coll, String op, int thread, int limit, long phaseNanos) {
        long end = System.nanoTime() + phaseNanos;
        BsonString payload = new BsonString("x".repeat(100));
        int i = 0;
        // updates and queries cycle over the inserted documents until the budget or the count is spent
        int rounds = op.equals("insert") || op.equals("delete") ? 1 : 20;
        long n = 0;
        long max = (long) limit * rounds;
        while (n < max && System.nanoTime() - end < 0) {
            long id = id(thread, i);
            switch (op) {
                case "insert" -> {
                    BsonDocument d = new BsonDocument("_id", new BsonInt64(id)).append("k", new BsonInt64(id))
                        .append("n", new BsonInt32(0)).append("payload", payload);
                    BsonValue got = coll.insertOne(d);
                    if (!new BsonInt64(id).equals(got)) {
                        throw new IllegalStateException("insert returned _id " + got + " for " + id);
                    }
                }
                case "update" -> {
                    UpdateResult u = coll.updateOne(new BsonDocument("_id", new BsonInt64(id)),
                        new BsonDocument("$inc", new BsonDocument("n", new BsonInt32(1))));
                    if (u.matched() != 1) {
                        throw new IllegalStateException("update of _id " + id + " matched " + u.matched());
                    }
                }
                case "query_id" -> check(coll.find(new BsonDocument("_id", new BsonInt64(id)), 1), id);
                case "query_field" -> check(coll.find(new BsonDocument("k", new BsonInt64(id)), 1), id);
                case "delete" -> {
                    long deleted = coll.deleteOne(new BsonDocument("_id", new BsonInt64(id)));
                    if (deleted != 1) {
                        throw new IllegalStateException("delete of _id " + id + " removed " + deleted);
                    }
                }
                default -> throw new IllegalArgumentException(op);
            }
            n++;
            i = i + 1 == limit ? 0 : i + 1;
        }
        return n;
    }

    private static void check(List<BsonDocument> found, long id) {
        if (found.size() != 1 || !new BsonInt64(id).equals(found.getFirst().get("_id"))) {
            throw new IllegalStateException("query for " + id + " found " + found);
        }
    }

    private static void report(Map<String, Double> rate, int docsPerThread, Report report) {
        List<String> header = new ArrayList<>(List.of("op", "clients", "ucx ops/s", "tcp ops/s", "ucx/tcp"));
        List<List<String>> body = new ArrayList<>();
        List<Row> rows = new ArrayList<>();
        StringBuilder targets = new StringBuilder();
        for (int clients : CLIENTS) {
            for (String op : OPS) {
                Double u = rate.get("ucx/" + op + "/" + clients);
                Double t = rate.get("tcp/" + op + "/" + clients);
                body.add(List.of(op, Integer.toString(clients), E1RoundTrips.fmt(u), E1RoundTrips.fmt(t),
                    String.format(Locale.ROOT, "%.1fx", u / t)));
                rows.add(new Row("E4", "rdmastore-ucx", op, 0, clients, "ops_per_s", u));
                rows.add(new Row("E4", "rdmastore-tcp", op, 0, clients, "ops_per_s", t));
                targets.append(String.format(Locale.ROOT, "%s x%d %.1fx %s; ", op, clients, u / t,
                    u >= 5 * t ? "met" : "missed"));
            }
        }
        String notes = "Documents of about 150 bytes ({_id, k, n, payload}); " + docsPerThread + " per thread, each "
            + "thread on its own connection and _id range. Each phase is bounded by a count and a time budget, after a warm-up pass of every operation on another collection; updates "
            + "and queries cycle over the inserted documents. query_field filters on k (equal to _id) with limit 1: "
            + "the store has no secondary index, so it is a scan and its cost grows with the collection. Servers: ucx "
            + "with --ucx-idle spin for one client thread and yield for four (two cores: spinning would starve the "
            + "clients, which drive their own waits); tcp-only server for tcp.\n\nTarget (ucx >= 5x tcp per "
            + "operation): " + targets.toString().trim();
        System.out.println();
        System.out.println("E4: CRUD throughput");
        System.out.print(Report.plain(header, body));
        System.out.println(notes);
        report.add("E4", "document CRUD throughput, 1 and 4 client threads", Report.table(header, body), notes, rows);
    }
}
