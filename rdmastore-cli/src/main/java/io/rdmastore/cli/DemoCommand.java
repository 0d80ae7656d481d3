package io.rdmastore.cli;

import io.rdmastore.client.ClientConfig;
import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreException;
import io.rdmastore.server.RdmaStoreServer;
import io.rdmastore.server.ServerConfig;
import io.rdmastore.store.FsyncPolicy;
import io.rdmastore.transport.ucx.UcxTransport;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import org.HdrHistogram.Histogram;
import org.bson.BsonDocument;
import org.bson.BsonValue;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code rdmastore demo}: the tour. Starts a server in this JVM on an ephemeral port with its data in a temporary
 * directory (deleted at the end), then for each transport this machine offers -- kernel tcp, UCX over shared memory
 * ({@code UCX_TLS=posix,cma,self}) and UCX over its own tcp ({@code tcp,self}), each on a server of its own -- connects a client,
 * shows the transport and why it was chosen, does real work (strings, a hash, documents) and times sync GETs of a small
 * value. Ends with a table and the ratio of each UCX row to tcp.
 *
 * <p>The UCX wire is chosen through the system property {@code rdmastore.ucx.tls}, which the server's and the client's
 * {@code UcxTransport.Context} read when they are built; the demo sets it around each phase and restores it. Threads:
 * one call at a time (the property is process-wide).
 */
@Command(name = "demo", mixinStandardHelpOptions = true, versionProvider = Main.Version.class, sortOptions = false,
    description = {"Starts a server in-process (ephemeral port, temporary data dir), then for each transport here --"
        + " tcp, ucx over shared memory, ucx over UCX's tcp -- connects, does real work, times sync GETs and prints"
        + " a comparison table. Takes under 30 s."})
final class DemoCommand implements Callable<Integer> {
    static final String TLS_PROPERTY = "rdmastore.ucx.tls";
    static final String IDLE_PROPERTY = "rdmastore.ucx.idle";
    static final String SHM_TLS = "posix,cma,self";
    static final String UCX_TCP_TLS = "tcp,self";

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Option(names = "--ops", paramLabel = "N", defaultValue = "20000",
        description = "Timed GETs per transport (default ${DEFAULT-VALUE}).")
    int ops;
    @Option(names = "--seconds", paramLabel = "S", defaultValue = "3",
        description = "Time limit of each timed run, in seconds (default ${DEFAULT-VALUE}).")
    double seconds;
    @Option(names = "--value-bytes", paramLabel = "B", defaultValue = "64",
        description = "Size of the value the timed run GETs (default ${DEFAULT-VALUE}).")
    int valueBytes;
    @Option(names = "--idle-strategy", paramLabel = "S", defaultValue = "adaptive",
        description = "Idle strategy of the server's UCX worker: adaptive (default: spins through the gaps between"
            + " requests while they keep coming, sleeps until a peer rings when they stop) | spin (one core while the"
            + " demo runs) | yield | backoff (parks up to 1 ms between requests).")
    String idleStrategy;
    @Option(names = "--no-ucx-tcp", description = "Skip the row of UCX over its own tcp (and its server).")
    boolean noUcxTcp;

    private PrintWriter out;

    /** One measured transport. */
    record Row(String transport, String wire, String reason, long ops, double roundTripsPerSecond, double p50Micros,
               double p99Micros, String error) {
    }

    @Override
    public Integer call() throws IOException {
        Main.quietLogs();
        out = spec.commandLine().getOut();
        if (ops <= 0 || seconds <= 0 || valueBytes <= 0 || valueBytes > (64 << 20)) {
            throw new UserException("--ops and --seconds must be positive, --value-bytes between 1 and 64m");
        }
        long start = System.nanoTime();
        Path dir = Files.createTempDirectory("rdmastore-demo");
        idleStrategy = Values.oneOf("--idle-strategy", idleStrategy, "adaptive", "backoff", "spin", "yield");
        String savedTls = System.getProperty(TLS_PROPERTY);
        String savedIdle = System.getProperty(IDLE_PROPERTY);
        // Clients build their UcxTransport from system properties; the server gets the strategy from its config.
        System.setProperty(IDLE_PROPERTY, idleStrategy);
        List<Row> rows = new ArrayList<>();
        boolean ucx;
        try {
            out.println("rdmastore demo: a server in this JVM on an ephemeral port, data in " + dir
                + " (deleted at the end)");
            out.println();
            System.setProperty(TLS_PROPERTY, SHM_TLS);
            // the tcp row gets a server whose (unused) UCX worker sleeps, so a spinning worker never takes tcp's core
            try (RdmaStoreServer server = startServer(dir.resolve("tcp"), "adaptive")) {
                ucx = server.ucxAvailable();
                out.println("server on 127.0.0.1:" + server.port() + "; ucx " + (ucx ? "available (UCX_TLS=" + SHM_TLS
                    + ")" : "unavailable"));
                rows.add(variant(server, "tcp", "kernel tcp, loopback", "tcp"));
            }
            if (ucx) {
                out.println();
                try (RdmaStoreServer server = startServer(dir.resolve("shm"), idleStrategy)) {
                    out.println("server on 127.0.0.1:" + server.port() + " with UCX_TLS=" + SHM_TLS + ", its UCX worker "
                        + idleStrategy);
                    rows.add(variant(server, "ucx", "shared memory (" + SHM_TLS + ")", "ucx"));
                }
            } else {
                String cause;
                try {
                    cause = UcxTransport.probe();
                } catch (RuntimeException | LinkageError e) {
                    cause = e.toString();
                }
                out.println();
                out.println("UCX is not available here (" + cause + "), so only tcp is shown. Install it with:"
                    + " apt-get install libucx0 (and run 'rdmastore doctor').");
            }
            if (ucx && !noUcxTcp) {
                System.setProperty(TLS_PROPERTY, UCX_TCP_TLS);
                out.println();
                try (RdmaStoreServer server = startServer(dir.resolve("ucx-tcp"), idleStrategy)) {
                    out.println("server on 127.0.0.1:" + server.port() + " with UCX_TLS=" + UCX_TCP_TLS
                        + " (UCX's own tcp, what two hosts without RDMA devices would use)");
                    rows.add(variant(server, "ucx", "UCX tcp (" + UCX_TCP_TLS + ")", "ucx"));
                }
            }
        } finally {
            restore(TLS_PROPERTY, savedTls);
            restore(IDLE_PROPERTY, savedIdle);
            deleteTree(dir);
        }
        out.println();
        table(rows);
        ratios(rows);
        out.printf(Locale.ROOT, "demo took %.1f s; data dir deleted%n", (System.nanoTime() - start) / 1e9);
        out.flush();
        return rows.stream().anyMatch(r -> r.error() != null && r.transport().equals("tcp")) ? 1 : 0;
    }

    private RdmaStoreServer startServer(Path dir, String idle) {
        return new RdmaStoreServer(new ServerConfig().port(0).bind("127.0.0.1").dataDir(dir)
            .fsync(FsyncPolicy.EVERYSEC).ucxIdleStrategy(idle)).start();
    }

    private Row variant(RdmaStoreServer server, String transport, String wire, String requested) {
        out.println();
        out.println("== " + transport + " over " + wire + " ==");
        out.flush();
        ClientConfig cfg = new ClientConfig("127.0.0.1", server.port(), requested, null, Duration.ofSeconds(5));
        try (RdmaStoreClient c = RdmaStoreClient.connect(cfg)) {
            String reason = c.transportReason();
            out.println("client transport: " + c.transport() + " -- " + reason);
            serverView(c);
            work(c, transport + (wire.startsWith("UCX tcp") ? "-tcp" : ""));
            return timed(c, c.transport(), wire, reason);
        } catch (RdmaStoreException e) {
            out.println("(error) " + transport + " over " + wire + " did not run: " + e.getMessage());
            return new Row(transport, wire, "", 0, 0, 0, 0, e.getMessage());
        } finally {
            out.flush();
        }
    }

    /** The server's side of this connection, from INFO: what it runs on, as the server describes it. */
    private void serverView(RdmaStoreClient c) {
        for (String line : c.info().split("\r?\n")) {
            if (line.startsWith("connection:")) {
                out.println("server sees:      " + line.substring("connection:".length()));
            }
        }
    }

    private void work(RdmaStoreClient c, String tag) {
        String key = "demo:" + tag + ":greeting";
        String value = "hello over " + tag;
        c.set(key, value);
        out.println("SET " + key + " " + ShellSession.quote(value) + " -> OK; GET -> "
            + ShellSession.quote(c.get(key)));
        c.incrBy("demo:" + tag + ":counter", 41);
        out.println("INCR demo:" + tag + ":counter -> " + c.incr("demo:" + tag + ":counter"));
        String hash = "demo:" + tag + ":user:1";
        c.hset(hash, Map.of("name", "ada", "lang", "java"));
        out.println("HSET " + hash + " name ada lang java; HGETALL -> " + c.hgetAll(hash));
        BsonValue id = c.collection("demo_users").insertOne(BsonDocument.parse("{\"name\": \"ada\", \"via\": \""
            + tag + "\", \"age\": 36}"));
        List<BsonDocument> found = c.collection("demo_users").find(BsonDocument.parse("{\"via\": \"" + tag + "\","
            + " \"age\": {\"$gt\": 30}}"), 10);
        out.println("doc insert demo_users -> _id " + id.asObjectId().getValue().toHexString()
            + "; doc find {via: '" + tag + "', age: {$gt: 30}} -> " + found.size() + " document"
            + (found.size() == 1 ? "" : "s"));
    }

    /** The longest warm-up of each timed run. */
    private static final long WARM_UP_NANOS = 1_000_000_000L;

    private Row timed(RdmaStoreClient c, String transport, String wire, String reason) {
        byte[] key = "demo:timed".getBytes(StandardCharsets.UTF_8);
        byte[] value = new byte[valueBytes];
        Arrays.fill(value, (byte) 'v');
        c.set(key, value);
        // long enough for the JIT to compile the client's and the server's paths (tens of thousands of calls): timed
        // after 2,000, every transport ran largely interpreted and ucx's rows showed tens of microseconds
        long warmUpEnd = System.nanoTime() + WARM_UP_NANOS;
        for (int i = 0; i < 50_000 && System.nanoTime() < warmUpEnd; i++) {
            c.get(key);
        }
        Histogram h = new Histogram(3);
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        long wrong = 0;
        long done = 0;
        long t0 = System.nanoTime();
        long now = t0;
        while (done < ops && now < deadline) {
            byte[] v = c.get(key);
            long t = System.nanoTime();
            h.recordValue(t - now);
            now = t;
            if (v == null || v.length != valueBytes) {
                wrong++;
            }
            done++;
        }
        double elapsed = (now - t0) / 1e9;
        if (wrong > 0) {
            out.println("(error) " + wrong + " GETs returned a wrong value");
        }
        Row r = new Row(transport, wire, reason, done, done / elapsed, h.getValueAtPercentile(50) / 1000.0,
            h.getValueAtPercentile(99) / 1000.0, wrong > 0 ? wrong + " wrong values" : null);
        out.printf(Locale.ROOT, "timed: %,d sync GETs of %d bytes in %.2f s: %,.0f round trips/s, p50 %.1f us,"
            + " p99 %.1f us%n", done, valueBytes, elapsed, r.roundTripsPerSecond(), r.p50Micros(), r.p99Micros());
        return r;
    }

    private void table(List<Row> rows) {
        String[] head = {"transport", "wire", "reason", "ops", "round trips/s", "p50 us", "p99 us"};
        List<String[]> cells = new ArrayList<>();
        for (Row r : rows) {
            cells.add(r.error() != null && r.ops() == 0
                ? new String[] {r.transport(), r.wire(), "not run: " + shorten(r.error(), 60), "-", "-", "-", "-"}
                : new String[] {r.transport(), r.wire(), shorten(r.reason(), 60), String.format(Locale.ROOT, "%,d",
                    r.ops()), String.format(Locale.ROOT, "%,.0f", r.roundTripsPerSecond()),
                    String.format(Locale.ROOT, "%.1f", r.p50Micros()), String.format(Locale.ROOT, "%.1f",
                    r.p99Micros())});
        }
        int[] width = new int[head.length];
        for (int i = 0; i < head.length; i++) {
            width[i] = head[i].length();
            for (String[] c : cells) {
                width[i] = Math.max(width[i], c[i].length());
            }
        }
        out.println(row(head, width));
        StringBuilder sep = new StringBuilder("|");
        for (int i = 0; i < head.length; i++) {
            sep.append(i >= 3 ? "-".repeat(width[i] + 1) + ":|" : "-".repeat(width[i] + 2) + "|");
        }
        out.println(sep);
        for (String[] c : cells) {
            out.println(row(c, width));
        }
    }

    private static String row(String[] c, int[] width) {
        StringBuilder b = new StringBuilder("|");
        for (int i = 0; i < c.length; i++) {
            String cell = c[i];
            String pad = " ".repeat(width[i] - cell.length());
            b.append(' ').append(i >= 3 ? pad + cell : cell + pad).append(" |");
        }
        return b.toString();
    }

    private void ratios(List<Row> rows) {
        Row tcp = rows.stream().filter(r -> r.transport().equals("tcp") && r.ops() > 0).findFirst().orElse(null);
        boolean any = false;
        for (Row r : rows) {
            if (r.transport().equals("tcp") || r.ops() == 0 || tcp == null) {
                continue;
            }
            any = true;
            out.printf(Locale.ROOT, "%s over %s vs tcp: %.2fx the round trips/s, p50 latency %.2fx (%.1f us vs"
                    + " %.1f us)%n", r.transport(), r.wire(), r.roundTripsPerSecond() / tcp.roundTripsPerSecond(),
                r.p50Micros() / tcp.p50Micros(), r.p50Micros(), tcp.p50Micros());
        }
        if (!any) {
            out.println("no ucx row to compare with tcp");
        }
        out.println("(one connection, one request in flight, client and server in one JVM on this machine: the"
            + " ratios are the claim, not the absolute numbers)");
    }

    private static void restore(String property, String value) {
        if (value == null) {
            System.clearProperty(property);
        } else {
            System.setProperty(property, value);
        }
    }

    private static String shorten(String s, int max) {
        return s.length() <= max ? s : s.substring(0, max - 3) + "...";
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            System.err.println("rdmastore demo: could not delete " + dir + ": " + e.getMessage());
        }
    }
}
