package io.rdmastore.bench;

import io.rdmastore.client.BlobBuffer;
import io.rdmastore.client.BlobClient;
import io.rdmastore.client.BlobInfo;
import io.rdmastore.client.RdmaStoreClient;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * E5 (paper 000): Get and Put of 91 MB, 219 MB and 528 MB blobs (the paper's model sizes, generated data) over ucx
 * (one-sided reads of a leased, memory-mapped blob) and tcp (the same reads, streamed by the tcp provider), Redis
 * SET/GET of the same values (proto-max-bulk-len raised; appendfsync always, so a SET is as durable at its reply as a
 * blob put), and memcpy of the same size in this process as the limit.
 * Get is end to end: lease, chunked pull into the client's registered buffer (reused across gets, as with
 * {@link BlobClient#allocate}), CRC32C check on a second thread, lease end. Put includes the
 * client's CRC, the server's pull, its CRC check and the fsync and rename that make the blob durable.
 */
public final class E5Blobs implements Experiment {
    private static final long MB = 1_000_000L;
    /** How long each system warms up before its timed calls ({@link #warmUp}). */
    private static final long WARM_UP_MILLIS = 3000;

    @Override
    public String id() {
        return "E5";
    }

    @Override
    public String title() {
        return "Get and Put of 91/219/528 MB blobs: ucx one-sided vs tcp streamed vs Redis, memcpy as the limit";
    }

    @Override
    public void run(boolean quick, Report report) throws Exception {
        long[] sizes = quick ? new long[]{8 * MB} : new long[]{91 * MB, 219 * MB, 528 * MB};
        int repeats = quick ? 1 : 3;
        long warm = (quick ? 200L : WARM_UP_MILLIS) * 1_000_000L;
        long max = Arrays.stream(sizes).max().orElseThrow();
        long deadline = System.nanoTime() + (quick ? 60L : 170L) * 1_000_000_000L;
        // key "system/variant/size" -> seconds per blob, one sample per repeat
        Map<String, List<Double>> samples = new LinkedHashMap<>();
        List<String> systems = new ArrayList<>(List.of("rdmastore-ucx", "rdmastore-tcp"));
        Progress progress = new Progress("E5", sizes.length * (systems.size() * 2 + 3));
        try (Arena arena = Arena.ofShared()) {
            MemorySegment a = arena.allocate(max, 4096);
            MemorySegment b = arena.allocate(max, 4096);
            fill(a, max);
            memcpy(a, b, sizes, repeats, samples, progress);
            // backoff: during a Get the server does no work (the client reads its memory with process_vm_readv), and a
            // spinning server would take one of two cores from the client's copy and its CRC32C checker
            try (ServerProcess server = ServerProcess.start("--transport", "auto", "--ucx-idle", "backoff", "--fsync",
                    "everysec")) {
                for (String system : systems) {
                    String transport = system.substring("rdmastore-".length());
                    try (RdmaStoreClient client = RdmaStoreClient.connect(server.uri(transport))) {
                        if (!client.transport().equals(transport)) {
                            throw new IllegalStateException("asked for " + transport + " but the client runs on "
                                + client.transport() + ": " + client.transportReason());
                        }
                        BlobClient blobs = client.blobs();
                        try (BlobBuffer src = blobs.wrap(a); BlobBuffer dst = blobs.wrap(b)) {
                            byte[] warmKey = "e5-warm-up".getBytes(StandardCharsets.UTF_8);
                            warmUp(warm, deadline, () -> {
                                blobs.put(warmKey, src, sizes[0]);
                                blobs.get(warmKey, dst, null);
                            });
                            blobs.delete(warmKey);
                            for (long size : sizes) {
                                byte[] key = ("e5-" + size).getBytes(StandardCharsets.UTF_8);
                                for (int r = 0; r < repeats; r++) {
                                    check(deadline);
                                    long t0 = System.nanoTime();
                                    BlobInfo put = blobs.put(key, src, size);
                                    sample(samples, system + "/put/" + size, System.nanoTime() - t0);
                                    if (put.length() != size) {
                                        throw new IllegalStateException("put stored " + put.length() + " bytes");
                                    }
                                }
                                progress.step(transport + " put " + Sizes.human(size));
                                for (int r = 0; r < repeats + 1; r++) {
                                    check(deadline);
                                    long t0 = System.nanoTime();
                                    BlobInfo got = blobs.get(key, dst, null);
                                    long t = System.nanoTime() - t0;
                                    if (got == null || got.length() != size) {
                                        throw new IllegalStateException("get of " + size + " bytes returned " + got);
                                    }
                                    // the first get maps the file and warms the page cache: not a sample
                                    if (r > 0) {
                                        sample(samples, system + "/get/" + size, t);
                                    }
                                }
                                progress.step(transport + " get " + Sizes.human(size));
                                blobs.delete(key);
                            }
                        }
                    }
                }
            }
            if (RedisServer.ensureInstalled()) {
                // each SET durable before its reply, as a blob put is (its file fsynced and renamed into place)
                try (RedisServer redis = RedisServer.start("--proto-max-bulk-len", "1gb", "--client-query-buffer-limit",
                        "1gb", "--appendonly", "yes", "--appendfsync", "always");
                     SocketChannel ch = SocketChannel.open(new InetSocketAddress("127.0.0.1", redis.port()))) {
                    ch.socket().setTcpNoDelay(true);
                    warmUp(warm, deadline, () -> {
                        redisSet(ch, sizes[0], a);
                        redisGet(ch, sizes[0], b);
                    });
                    for (long size : sizes) {
                        for (int r = 0; r < repeats; r++) {
                            check(deadline);
                            long t0 = System.nanoTime();
                            redisSet(ch, size, a);
                            sample(samples, "redis/put/" + size, System.nanoTime() - t0);
                            t0 = System.nanoTime();
                            redisGet(ch, size, b);
                            sample(samples, "redis/get/" + size, System.nanoTime() - t0);
                        }
                        progress.step("redis " + Sizes.human(size));
                    }
                }
            } else {
                System.out.println("E5: redis-server not installed; Redis rows skipped (apt-get install redis-server)");
            }
        }
        progress.done();
        report(sizes, samples, warm / 1e9, report);
    }

    /** memcpy of each size from {@code a} to {@code b}, {@code repeats} times: the limit rows of E5 and E7. */
    static void memcpy(MemorySegment a, MemorySegment b, long[] sizes, int repeats, Map<String, List<Double>> samples,
                       Progress progress) {
        for (long size : sizes) {
            for (int r = 0; r < repeats; r++) {
                long t0 = System.nanoTime();
                MemorySegment.copy(a, 0, b, 0, size);
                sample(samples, "limit/memcpy/" + size, System.nanoTime() - t0);
            }
            progress.step("memcpy " + Sizes.human(size));
        }
    }

    /**
     * Each system's warm-up before its timed calls: untimed puts and gets of the smallest size, at least two and for
     * at least {@code nanos}. A client's first puts, and a fresh server's, run cold code: four puts of 91 MB over ucx
     * took 190-300 ms each before they settled at 80-90, and the three timed ones were those (ucx, the first system,
     * came out at half tcp's rate at 91 MB in every run).
     */
    static void warmUp(long nanos, long deadline, E2Latency.Call call) throws Exception {
        long end = System.nanoTime() + nanos;
        for (int i = 0; i < 2 || System.nanoTime() - end < 0; i++) {
            check(deadline);
            call.run();
        }
    }

    private static void check(long deadline) {
        if (System.nanoTime() - deadline > 0) {
            throw new IllegalStateException("E5 ran past its time limit");
        }
    }

    static void sample(Map<String, List<Double>> samples, String key, long nanos) {
        samples.computeIfAbsent(key, k -> new ArrayList<>()).add(nanos / 1e9);
    }

    /** Generated, incompressible-looking data (xorshift), so no layer can shortcut zero pages. */
    static void fill(MemorySegment s, long n) {
        long x = 0x9E3779B97F4A7C15L;
        for (long off = 0; off + 8 <= n; off += 8) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, off, x);
        }
    }

    // ---- Redis over one blocking socket, values straight from and into off-heap memory ----

    private static void redisSet(SocketChannel ch, long size, MemorySegment value) throws IOException {
        writeAll(ch, ByteBuffer.wrap(("*3\r\n$3\r\nSET\r\n$5\r\ne5key\r\n$" + size + "\r\n")
            .getBytes(StandardCharsets.US_ASCII)));
        writeAll(ch, value.asSlice(0, size).asByteBuffer());
        writeAll(ch, ByteBuffer.wrap("\r\n".getBytes(StandardCharsets.US_ASCII)));
        String line = readLine(ch);
        if (!line.equals("+OK")) {
            throw new IOException("redis SET of " + size + " bytes: " + line);
        }
    }

    private static void redisGet(SocketChannel ch, long size, MemorySegment dst) throws IOException {
        writeAll(ch, ByteBuffer.wrap("*2\r\n$3\r\nGET\r\n$5\r\ne5key\r\n".getBytes(StandardCharsets.US_ASCII)));
        String line = readLine(ch);
        if (!line.equals("$" + size)) {
            throw new IOException("redis GET: expected $" + size + ", got " + line);
        }
        ByteBuffer body = dst.asSlice(0, size).asByteBuffer();
        while (body.hasRemaining()) {
            if (ch.read(body) < 0) {
                throw new EOFException("redis closed the connection");
            }
        }
        readLine(ch);
    }

    private static void writeAll(SocketChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    private static String readLine(SocketChannel ch) throws IOException {
        StringBuilder sb = new StringBuilder();
        ByteBuffer one = ByteBuffer.allocate(1);
        while (true) {
            one.clear();
            if (ch.read(one) < 0) {
                throw new EOFException("redis closed the connection");
            }
            char c = (char) one.get(0);
            if (c == '\n') {
                int len = sb.length();
                return len > 0 && sb.charAt(len - 1) == '\r' ? sb.substring(0, len - 1) : sb.toString();
            }
            sb.append(c);
        }
    }

    // ---- report ----

    private static double median(List<Double> s) {
        if (s == null || s.isEmpty()) {
            return Double.NaN;
        }
        double[] v = s.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return v[v.length / 2];
    }

    private static void report(long[] sizes, Map<String, List<Double>> samples, double warmSeconds, Report report)
        throws IOException {
        List<Row> mbps = new ArrayList<>();
        List<Row> times = new ArrayList<>();
        List<String> header = List.of("system", "op", "size", "MB/s", "ms per blob", "vs memcpy", "vs tcp");
        List<List<String>> body = new ArrayList<>();
        String[][] order = {{"limit", "memcpy"}, {"rdmastore-ucx", "get"}, {"rdmastore-tcp", "get"}, {"redis", "get"},
            {"rdmastore-ucx", "put"}, {"rdmastore-tcp", "put"}, {"redis", "put"}};
        for (long size : sizes) {
            double memcpy = size / median(samples.get("limit/memcpy/" + size)) / 1e6;
            for (String[] sv : order) {
                List<Double> s = samples.get(sv[0] + "/" + sv[1] + "/" + size);
                if (s == null) {
                    continue;
                }
                double sec = median(s);
                double rate = size / sec / 1e6;
                mbps.add(new Row("E5", sv[0], sv[1], size, 1, "mb_per_s", rate));
                times.add(new Row("E5", sv[0], sv[1], size, 1, "ms_per_blob", sec * 1e3));
                double tcp = size / median(samples.get("rdmastore-tcp/" + sv[1] + "/" + size)) / 1e6;
                body.add(List.of(sv[0], sv[1], Sizes.human(size), fmt(rate), fmt(sec * 1e3),
                    String.format(Locale.ROOT, "%.0f %%", 100 * rate / memcpy),
                    sv[0].equals("limit") ? "" : String.format(Locale.ROOT, "%.1fx", rate / tcp)));
            }
        }
        List<Row> rows = new ArrayList<>(mbps);
        rows.addAll(times);
        long big = sizes[sizes.length - 1];
        double ucxGet = size(big) / median(samples.get("rdmastore-ucx/get/" + big)) / 1e6;
        double tcpGet = size(big) / median(samples.get("rdmastore-tcp/get/" + big)) / 1e6;
        double memcpy = size(big) / median(samples.get("limit/memcpy/" + big)) / 1e6;
        String notes = String.format(Locale.ROOT, "Largest size (%s): ucx Get %.0f MB/s = %.0f %% of memcpy (%.0f MB/s),"
                + " %.1fx tcp Get (%.0f MB/s). Targets: ucx Get >= 8000 MB/s, >= 35 %% of memcpy, >= 10x tcp."
                + " Median of the samples, each system after %.1f s of untimed puts and gets of the smallest size;"
                + " server with --ucx-idle backoff, Get excludes the first (page-cache warming) read; Put includes the"
                + " durable commit (fsync, rename), and Redis runs appendonly yes + appendfsync always to match it"
                + " (each SET in its log and fsynced before the reply).",
            Sizes.human(big), ucxGet, 100 * ucxGet / memcpy, memcpy, ucxGet / tcpGet, tcpGet, warmSeconds);
        System.out.println();
        System.out.println("E5: blob Get and Put, one client");
        System.out.print(Report.plain(header, body));
        System.out.println(notes);
        report.add("E5", "blob Get and Put (MB/s)", Report.table(header, body), notes, rows);
    }

    private static double size(long s) {
        return s;
    }

    private static String fmt(double v) {
        return Double.isFinite(v) ? String.format(Locale.ROOT, "%.0f", v) : "n/a";
    }
}
