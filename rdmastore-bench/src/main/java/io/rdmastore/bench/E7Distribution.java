package io.rdmastore.bench;

import io.rdmastore.client.BlobBuffer;
import io.rdmastore.client.BlobClient;
import io.rdmastore.client.BlobInfo;
import io.rdmastore.client.RdmaStoreClient;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * E7 (paper 004): a blob written to a three-member replica set, timed until every member holds it verified and durable
 * (the put's write concern waits for all secondaries), for 256 MiB and 1 GiB (2 GiB as well with
 * {@code -Drdmastore.bench.e7.sizes=256,1024,2048}, in MiB; left out of the default to keep {@code bench all} under 30
 * minutes: its cells took about half of E7's 7.4 minutes). Strategies on the same code:
 * parallel pull (every member pulls the client's lent buffer at once) and pipeline (client to primary to the next
 * member to the next, each lending onwards what it has received), over ucx and over tcp; the primary-forward path
 * (the secondaries pull the primary's file after its commit) as a third; and, as anchors, the same put to one server
 * alone (no replication) and memcpy of the same size. Data directories live on tmpfs ({@code /dev/shm}), so the disk
 * is memory here: the figures are transfer and checksum cost, with fsync nearly free.
 */
public final class E7Distribution implements Experiment {
    private static final long MIB = 1L << 20;
    private static final String SHM = "/dev/shm";
    /** Cores of this host: the "CPU floor" is the CPU time of all processes over them, the least wall time possible. */
    private static final int CORES = Runtime.getRuntime().availableProcessors();

    @Override
    public String id() {
        return "E7";
    }

    @Override
    public String title() {
        return "Blob to 3 members, " + sizesLabel(sizes(false))
            + ": parallel pull vs pipeline vs primary forward, ucx and tcp";
    }

    /** The blob sizes of a run: 32 MiB when quick, else {@code rdmastore.bench.e7.sizes} (MiB) or 256 MiB and 1 GiB. */
    static long[] sizes(boolean quick) {
        if (quick) {
            return new long[] {32 * MIB};
        }
        String p = System.getProperty("rdmastore.bench.e7.sizes", "256,1024");
        try {
            String[] parts = p.split(",");
            long[] s = new long[parts.length];
            for (int i = 0; i < parts.length; i++) {
                s[i] = Long.parseLong(parts[i].trim()) * MIB;
                if (s[i] <= 0 || i > 0 && s[i] <= s[i - 1]) {
                    throw new NumberFormatException("sizes must be positive and ascending");
                }
            }
            return s;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("rdmastore.bench.e7.sizes takes ascending sizes in MiB such as "
                + "256,1024,2048, not '" + p + "'", e);
        }
    }

    private static String sizesLabel(long[] sizes) {
        return Sizes.human(sizes[0]) + "-" + Sizes.human(sizes[sizes.length - 1]);
    }

    /** One measured configuration: transport and strategy (null strategy: one server alone). */
    private record Config(String transport, String variant, BlobClient.Distribution strategy) {
        String system() {
            return "rdmastore-" + transport;
        }
    }

    @Override
    public void run(boolean quick, Report report) throws Exception {
        long[] sizes = sizes(quick);
        int repeats = quick ? 1 : 3;
        long max = sizes[sizes.length - 1];
        Path parent = Files.isDirectory(Path.of(SHM)) && Files.isWritable(Path.of(SHM)) ? Path.of(SHM) : null;
        long deadline = System.nanoTime() + (quick ? 120L : 900L) * 1_000_000_000L;
        List<Config> configs = List.of(
            new Config("ucx", "parallel-pull", BlobClient.Distribution.PARALLEL),
            new Config("ucx", "pipeline", BlobClient.Distribution.PIPELINE),
            new Config("ucx", "primary-forward", BlobClient.Distribution.PRIMARY),
            new Config("tcp", "parallel-pull", BlobClient.Distribution.PARALLEL),
            new Config("tcp", "pipeline", BlobClient.Distribution.PIPELINE),
            new Config("tcp", "primary-forward", BlobClient.Distribution.PRIMARY),
            new Config("ucx", "single", null),
            new Config("tcp", "single", null));
        Map<String, List<Double>> samples = new LinkedHashMap<>();
        Map<String, List<long[]>> splits = new LinkedHashMap<>();
        Map<String, List<Double>> cpu = new LinkedHashMap<>();
        Progress progress = new Progress("E7", sizes.length * (configs.size() + 1));
        try (Arena arena = Arena.ofShared()) {
            MemorySegment a = arena.allocate(max, 4096);
            E5Blobs.fill(a, max);
            E5Blobs.memcpy(a, arena.allocate(max, 4096), sizes, repeats, samples, progress);
        }
        try (Arena arena = Arena.ofShared()) {
            MemorySegment src = arena.allocate(max, 4096);
            E5Blobs.fill(src, max);
            for (String transport : List.of("ucx", "tcp")) {
                String serverTransport = transport.equals("tcp") ? "tcp" : "auto";
                // a 1 s election timeout: four processes copying gigabytes on two cores starve a member's heartbeats
                // for longer than the default 150 ms, and an election mid-put costs a NOTPRIMARY and a resend
                try (ReplicaSetServers set = ReplicaSetServers.startIn(parent, "e7" + transport, 3, "--transport",
                        serverTransport, "--fsync", "everysec", "--ucx-idle", "backoff", "--election-timeout", "1000");
                     RdmaStoreClient client = RdmaStoreClient.connect(set.uri("transport=" + transport
                         + "&w=majority&timeout=30s"))) {
                    client.topology();
                    for (Config cfg : configs) {
                        if (!cfg.transport().equals(transport) || cfg.strategy() == null) {
                            continue;
                        }
                        BlobClient blobs = client.blobs().distribution(cfg.strategy()).waitForAllMembers(true);
                        measure(blobs, src, sizes, repeats, cfg, samples, splits, cpu, set::cpuSeconds, deadline,
                            progress);
                    }
                }
                try (ServerProcess single = ServerProcess.startIn(parent, "--transport", serverTransport, "--fsync",
                        "everysec", "--ucx-idle", "backoff", "--no-resp");
                     RdmaStoreClient client = RdmaStoreClient.connect(single.uri(transport))) {
                    if (!client.transport().equals(transport)) {
                        throw new IllegalStateException("asked for " + transport + " but the client runs on "
                            + client.transport() + ": " + client.transportReason());
                    }
                    measure(client.blobs(), src, sizes, repeats, new Config(transport, "single", null), samples,
                        splits, cpu, single::cpuSeconds, deadline, progress);
                }
            }
        }
        progress.done();
        report(sizes, configs, samples, splits, cpu, parent != null, report);
    }

    private static void measure(BlobClient blobs, MemorySegment src, long[] sizes, int repeats, Config cfg,
                                Map<String, List<Double>> samples, Map<String, List<long[]>> splits,
                                Map<String, List<Double>> cpu, java.util.function.DoubleSupplier serverCpu,
                                long deadline, Progress progress) {
        try (BlobBuffer buf = blobs.wrap(src)) {
            for (long size : sizes) {
                byte[] key = ("e7-" + cfg.variant() + "-" + size).getBytes(StandardCharsets.UTF_8);
                // one unmeasured put first: registrations, mappings and the JIT warm up
                blobs.put(key, buf, Math.min(size, 64 * MIB));
                blobs.delete(key);
                for (int r = 0; r < repeats; r++) {
                    if (System.nanoTime() - deadline > 0) {
                        throw new IllegalStateException("E7 ran past its time limit");
                    }
                    double cpu0 = serverCpu.getAsDouble() + Cpu.selfSeconds();
                    long t0 = System.nanoTime();
                    BlobInfo info = blobs.put(key, buf, size);
                    long t = System.nanoTime() - t0;
                    double cpuUsed = serverCpu.getAsDouble() + Cpu.selfSeconds() - cpu0;
                    if (info.length() != size) {
                        throw new IllegalStateException("put stored " + info.length() + " bytes, not " + size);
                    }
                    for (BlobInfo.Member m : info.members()) {
                        if (!m.ok()) {
                            throw new IllegalStateException(cfg + ": member " + m.member() + " failed: " + m.detail());
                        }
                    }
                    String k = cfg.system() + "/" + cfg.variant() + "/" + size;
                    E5Blobs.sample(samples, k, t);
                    cpu.computeIfAbsent(k, x -> new ArrayList<>()).add(cpuUsed);
                    // the slowest member's transfer, checksum and fsync (the primary's when only it reports)
                    long[] split = new long[3];
                    splits.computeIfAbsent(k, x -> new ArrayList<>()).add(split);
                    for (BlobInfo.Member m : info.members()) {
                        split[0] = Math.max(split[0], m.transferNanos());
                        split[1] = Math.max(split[1], m.crcNanos());
                        split[2] = Math.max(split[2], m.syncNanos());
                    }
                    // deleting frees the tmpfs pages before the next, larger put
                    blobs.delete(key);
                }
                progress.step(cfg.system() + " " + cfg.variant() + " " + Sizes.human(size));
            }
        }
    }

    private static double median(List<Double> s) {
        if (s == null || s.isEmpty()) {
            return Double.NaN;
        }
        double[] v = s.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return v[v.length / 2];
    }

    private static double spread(List<Double> s) {
        if (s == null || s.size() < 2) {
            return 0;
        }
        double[] v = s.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return v[v.length - 1] - v[0];
    }

    /** The time split of the repeat whose latency is the median one. */
    private static long[] splitOfMedian(List<Double> s, List<long[]> splits) {
        if (splits == null || splits.size() != s.size()) {
            return new long[3];
        }
        double m = median(s);
        return splits.get(s.indexOf(m));
    }

    private static void report(long[] sizes, List<Config> configs, Map<String, List<Double>> samples,
                               Map<String, List<long[]>> splits, Map<String, List<Double>> cpu, boolean tmpfs,
                               Report report) throws IOException {
        List<Row> ms = new ArrayList<>();
        List<Row> mbps = new ArrayList<>();
        List<String> header = List.of("system", "variant", "size", "ms (median)", "spread ms", "MB/s",
            "vs tcp pipeline", "vs single", "transfer ms", "crc ms", "fsync ms", "CPU s", "CPU floor ms");
        List<List<String>> body = new ArrayList<>();
        List<String> tHeader = List.of("size", "target", "measured", "met");
        List<List<String>> tBody = new ArrayList<>();
        for (long size : sizes) {
            double memcpy = median(samples.get("limit/memcpy/" + size));
            body.add(List.of("limit", "memcpy", Sizes.human(size), fmt(memcpy * 1e3), "",
                fmt(size / memcpy / 1e6), "", "", "", "", "", "", ""));
            mbps.add(new Row("E7", "limit", "memcpy", size, 1, "mb_per_s", size / memcpy / 1e6));
            double tcpPipe = median(samples.get("rdmastore-tcp/pipeline/" + size));
            for (Config cfg : configs) {
                String k = cfg.system() + "/" + cfg.variant() + "/" + size;
                List<Double> s = samples.get(k);
                if (s == null) {
                    continue;
                }
                double sec = median(s);
                double single = median(samples.get(cfg.system() + "/single/" + size));
                long[] split = splitOfMedian(s, splits.get(k));
                ms.add(new Row("E7", cfg.system(), cfg.variant(), size, 1, "ms", sec * 1e3));
                mbps.add(new Row("E7", cfg.system(), cfg.variant(), size, 1, "mb_per_s", size / sec / 1e6));
                body.add(List.of(cfg.system(), cfg.variant(), Sizes.human(size), fmt(sec * 1e3),
                    fmt(spread(s) * 1e3), fmt(size / sec / 1e6),
                    cfg.variant().equals("single") ? "" : String.format(Locale.ROOT, "%.2fx", sec / tcpPipe),
                    String.format(Locale.ROOT, "%.0f %%", 100 * single / sec),
                    fmt(split[0] / 1e6), fmt(split[1] / 1e6), fmt(split[2] / 1e6), fmt(median(cpu.get(k))),
                    fmt(median(cpu.get(k)) / CORES * 1e3)));
                mbps.add(new Row("E7", cfg.system(), cfg.variant(), size, 1, "cpu_s", median(cpu.get(k))));
            }
            double ucxPar = median(samples.get("rdmastore-ucx/parallel-pull/" + size));
            double ucxSingle = median(samples.get("rdmastore-ucx/single/" + size));
            double lower = 1 - ucxPar / tcpPipe;
            tBody.add(List.of(Sizes.human(size), "ucx parallel pull >= 25 % lower latency than tcp pipeline",
                String.format(Locale.ROOT, "%.0f %% lower (%s vs %s ms)", 100 * lower, fmt(ucxPar * 1e3),
                    fmt(tcpPipe * 1e3)), lower >= 0.25 ? "yes" : "no"));
            double share = ucxSingle / ucxPar;
            tBody.add(List.of(Sizes.human(size), "ucx parallel pull >= 60 % of one member's write bandwidth",
                String.format(Locale.ROOT, "%.0f %% (%s vs %s MB/s)", 100 * share, fmt(size / ucxPar / 1e6),
                    fmt(size / ucxSingle / 1e6)), share >= 0.60 ? "yes" : "no"));
        }
        List<Row> rows = new ArrayList<>(ms);
        rows.addAll(mbps);
        String notes = String.format(Locale.ROOT, "A put with write concern majority that returns once all three "
            + "members hold the blob verified and durable (a WAIT for both secondaries after the put), median of "
            + "the repeats after one warm-up put; one client, one put at a time. Members: three processes on this "
            + "host (--fsync everysec, --ucx-idle backoff, --election-timeout 1000), data directories on %s. Over ucx on one host a member's "
            + "one-sided read is one process_vm_readv of the lender's memory. transfer / crc / fsync: the slowest "
            + "member's time pulling the bytes, computing their CRC32C and making them durable (a secondary's fsync "
            + "of a staged copy; the primary's commit). single: the same put to one server alone. CPU s: the CPU time "
            + "of the client and every member process during the put; CPU floor: that over this host's cores, the "
            + "shortest the put could take here if it kept every core busy.",
            tmpfs ? "tmpfs (/dev/shm): fsync costs next to nothing, the disk is memory" : "the temp directory's disk");
        System.out.println();
        System.out.println("E7: blob to 3 members");
        System.out.print(Report.plain(header, body));
        System.out.println();
        System.out.print(Report.plain(tHeader, tBody));
        System.out.println(notes);
        try {
            Charts.bar(report.directory().resolve("E7-ms.png"), "E7: blob to 3 members, ms (lower is better)", ms);
        } catch (IOException e) {
            System.err.println("E7: chart not written: " + e);
        }
        report.add("E7", "blob distribution to a replica set", Report.table(header, body) + "\nTargets (issue: blob "
            + "distribution):\n\n" + Report.table(tHeader, tBody), notes + "\n\n![E7 ms](E7-ms.png)\n", rows);
    }

    private static String fmt(double v) {
        return Double.isFinite(v) ? String.format(Locale.ROOT, v < 10 ? "%.1f" : "%.0f", v) : "n/a";
    }
}
