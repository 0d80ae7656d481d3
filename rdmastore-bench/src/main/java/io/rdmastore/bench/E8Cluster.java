package io.rdmastore.bench;

import io.rdmastore.client.ClientConfig;
import io.rdmastore.client.PeerChannel;
import io.rdmastore.client.RdmaStoreClusterClient;
import io.rdmastore.client.SetOptions;
import io.rdmastore.client.cluster.SlotMap;
import io.rdmastore.client.protocol.ProtocolDescriptor;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisCluster;

/**
 * E8 (paper 001): the E3 workload (scrambled Zipf keys, 95 % GET / 5 % SET, 32 B values) through cluster clients:
 * rdmastore's native {@link RdmaStoreClusterClient} (it routes by slot itself) against a cluster of 1 and of 3 shards
 * (one server process each) over ucx and over tcp, and Jedis's {@code JedisCluster} against a 3-shard redis-server
 * cluster ({@code --cluster-enabled yes}, made with {@code redis-cli --cluster create}) as the anchor. One client per
 * connection and thread, 1 and 3 clients; throughput, p50, p99, the servers' CPU, and the redirects the native clients
 * met in the measured window. Rows carry {@code shards}.
 */
public final class E8Cluster implements Experiment {
    private static final int SIZE = 32;
    private static final int[] CLIENTS = {1, 3};

    @Override
    public String id() {
        return "E8";
    }

    @Override
    public String title() {
        return "E3 workload (Zipf 95/5, 32 B) through cluster clients: 1 and 3 shards, ucx and tcp, 3-shard Redis";
    }

    /** One system: how many shards, which transport, and its servers. */
    private record Config(String system, int shards) {
    }

    @Override
    public void run(boolean quick, Report report) throws Exception {
        int records = quick ? 500 : 10_000;
        long warmNanos = quick ? 50_000_000L : 300_000_000L;
        long windowNanos = quick ? 150_000_000L : 1_000_000_000L;
        List<Config> configs = List.of(new Config("rdmastore-ucx", 1), new Config("rdmastore-ucx", 3),
            new Config("rdmastore-tcp", 1), new Config("rdmastore-tcp", 3), new Config("redis", 3));
        Map<String, E3Zipf.Cell> cells = new LinkedHashMap<>();
        Map<String, double[]> cpu = new LinkedHashMap<>();
        Map<String, Long> redirects = new LinkedHashMap<>();
        byte[][] keys = E3Zipf.keys(SIZE, records);
        Progress progress = new Progress("E8", configs.size() * CLIENTS.length);
        for (Config cfg : configs) {
            List<AutoCloseable> servers = new ArrayList<>();
            List<E3Zipf.Kv> conns = new ArrayList<>();
            List<RdmaStoreClusterClient> natives = new ArrayList<>();
            try {
                List<Integer> ports = cfg.system().equals("redis") ? redisCluster(cfg.shards(), servers)
                    : rdmastoreCluster(cfg, servers);
                for (int i = 0; i < CLIENTS[CLIENTS.length - 1]; i++) {
                    conns.add(open(cfg, ports, natives));
                }
                load(conns.getFirst(), keys);
                double cpu0 = serverCpu(servers);
                for (int n : CLIENTS) {
                    long redirects0 = natives.stream().mapToLong(RdmaStoreClusterClient::redirects).sum();
                    E3Zipf.Cell c = E3Zipf.cell(conns.subList(0, n), keys, SIZE, warmNanos, windowNanos);
                    String k = cfg.system() + "/" + cfg.shards() + "/" + n;
                    cells.put(k, c);
                    redirects.put(k, natives.stream().mapToLong(RdmaStoreClusterClient::redirects).sum() - redirects0);
                    progress.step(cfg.system() + " " + cfg.shards() + " shard(s) x" + n);
                }
                long ops = 0;
                for (int n : CLIENTS) {
                    ops += cells.get(cfg.system() + "/" + cfg.shards() + "/" + n).ops();
                }
                cpu.put(cfg.system() + "/" + cfg.shards(), new double[] {serverCpu(servers) - cpu0, ops});
            } finally {
                for (E3Zipf.Kv k : conns) {
                    k.close();
                }
                for (AutoCloseable s : servers) {
                    s.close();
                }
            }
        }
        progress.done();
        report(quick, records, windowNanos, configs, cells, cpu, redirects, report);
    }

    private static double serverCpu(List<AutoCloseable> servers) {
        double s = 0;
        for (AutoCloseable a : servers) {
            s += a instanceof ServerProcess p ? p.cpuSeconds() : ((RedisServer) a).cpuSeconds();
        }
        return s;
    }

    /** Starts the shards (one server each, --cluster) and gives them the slots evenly; returns their ports. */
    private static List<Integer> rdmastoreCluster(Config cfg, List<AutoCloseable> servers) throws IOException {
        String transport = cfg.system().equals("rdmastore-ucx") ? "auto" : "tcp";
        List<Integer> ports = new ArrayList<>();
        for (int i = 0; i < cfg.shards(); i++) {
            // several servers on two cores: none may spin a core
            ServerProcess p = ServerProcess.start("--cluster", "--transport", transport, "--ucx-idle", "adaptive",
                "--fsync", "everysec");
            servers.add(p);
            ports.add(p.port());
        }
        List<SlotMap.Range> ranges = SlotMap.evenRanges(cfg.shards());
        List<SlotMap.Shard> shards = new ArrayList<>();
        for (int i = 0; i < cfg.shards(); i++) {
            String address = "127.0.0.1:" + ports.get(i);
            shards.add(new SlotMap.Shard("shard-" + (i + 1), List.of(ranges.get(i)),
                List.of(new SlotMap.Node(address, "127.0.0.1", ports.get(i)))));
        }
        SlotMap map = new SlotMap(1, shards);
        for (int i = 0; i < cfg.shards(); i++) {
            String address = "127.0.0.1:" + ports.get(i);
            try (PeerChannel c = PeerChannel.open(new ClientConfig("127.0.0.1", ports.get(i), "tcp", null,
                    Duration.ofSeconds(10)))) {
                c.await(c.call(ProtocolDescriptor.CLUSTER_MAP, w -> w.u8(1).string(address).string(map.encode()),
                    (st, r) -> null, Duration.ofSeconds(10)), Duration.ofSeconds(10));
            }
        }
        return ports;
    }

    /** Starts {@code n} redis-server nodes with cluster mode and makes them a cluster; returns their ports. */
    private static List<Integer> redisCluster(int n, List<AutoCloseable> servers) throws Exception {
        if (!RedisServer.ensureInstalled()) {
            throw new IllegalStateException("E8: redis-server is not installed (apt-get install redis-server)");
        }
        List<Integer> ports = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            RedisServer r = RedisServer.start("--cluster-enabled", "yes", "--cluster-config-file",
                "nodes.conf", "--cluster-node-timeout", "5000");
            servers.add(r);
            ports.add(r.port());
        }
        List<String> cmd = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
        ports.forEach(p -> cmd.add("127.0.0.1:" + p));
        cmd.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("E8: redis-cli --cluster create failed: " + out);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        for (int port : ports) {
            try (Jedis j = new Jedis("127.0.0.1", port, 5000)) {
                while (!j.clusterInfo().contains("cluster_state:ok")) {
                    if (System.nanoTime() - deadline > 0) {
                        throw new IllegalStateException("E8: the redis cluster did not reach cluster_state:ok");
                    }
                    Thread.sleep(50);
                }
            }
        }
        return ports;
    }

    private static E3Zipf.Kv open(Config cfg, List<Integer> ports, List<RdmaStoreClusterClient> natives) {
        if (cfg.system().equals("redis")) {
            Set<HostAndPort> seeds = new HashSet<>();
            ports.forEach(p -> seeds.add(new HostAndPort("127.0.0.1", p)));
            JedisCluster jc = new JedisCluster(seeds, 30_000, 5);
            return new E3Zipf.Kv() {
                @Override
                public byte[] get(byte[] key) {
                    return jc.get(key);
                }

                @Override
                public void set(byte[] key, byte[] value) {
                    jc.set(key, value);
                }

                @Override
                public void load(List<byte[]> kv) {
                    for (int i = 0; i < kv.size(); i += 2) {
                        jc.set(kv.get(i), kv.get(i + 1));
                    }
                }

                @Override
                public void close() {
                    jc.close();
                }
            };
        }
        String transport = cfg.system().equals("rdmastore-ucx") ? "ucx" : "tcp";
        RdmaStoreClusterClient c = RdmaStoreClusterClient.connect(new ClientConfig("127.0.0.1", ports.getFirst(),
            transport, null, Duration.ofSeconds(30)));
        natives.add(c);
        return new E3Zipf.Kv() {
            @Override
            public byte[] get(byte[] key) {
                return c.get(key);
            }

            @Override
            public void set(byte[] key, byte[] value) {
                c.set(key, value, SetOptions.NONE);
            }

            @Override
            public void load(List<byte[]> kv) {
                for (int i = 0; i < kv.size(); i += 2) {
                    c.set(kv.get(i), kv.get(i + 1), SetOptions.NONE);
                }
            }

            @Override
            public void close() {
                c.close();
            }
        };
    }

    private static void load(E3Zipf.Kv kv, byte[][] keys) {
        byte[] value = new byte[SIZE];
        java.util.Arrays.fill(value, (byte) 'v');
        List<byte[]> batch = new ArrayList<>();
        for (byte[] k : keys) {
            batch.add(k);
            batch.add(value);
        }
        kv.load(batch);
    }

    private static void report(boolean quick, int records, long windowNanos, List<Config> configs,
                               Map<String, E3Zipf.Cell> cells, Map<String, double[]> cpu,
                               Map<String, Long> redirects, Report report) throws IOException {
        List<String> header = List.of("system", "shards", "clients", "ops/s", "p50 us", "p99 us", "ops/s per shard",
            "vs redis 3 shards", "redirects", "server CPU s / M ops");
        List<List<String>> body = new ArrayList<>();
        List<Row> rows = new ArrayList<>();
        for (Config cfg : configs) {
            double[] c = cpu.get(cfg.system() + "/" + cfg.shards());
            for (int n : CLIENTS) {
                String k = cfg.system() + "/" + cfg.shards() + "/" + n;
                E3Zipf.Cell cell = cells.get(k);
                if (cell == null) {
                    continue;
                }
                E3Zipf.Cell redis = cells.get("redis/3/" + n);
                rows.add(new Row("E8", cfg.system(), "zipf-95-5", SIZE, n, "ops_per_s", cell.opsPerS(), cfg.shards()));
                rows.add(new Row("E8", cfg.system(), "zipf-95-5", SIZE, n, "p50_us", cell.p50Us(), cfg.shards()));
                rows.add(new Row("E8", cfg.system(), "zipf-95-5", SIZE, n, "p99_us", cell.p99Us(), cfg.shards()));
                Long red = redirects.get(k);
                body.add(List.of(cfg.system(), String.valueOf(cfg.shards()), String.valueOf(n),
                    String.format(Locale.ROOT, "%.0f", cell.opsPerS()), String.format(Locale.ROOT, "%.1f", cell.p50Us()),
                    String.format(Locale.ROOT, "%.1f", cell.p99Us()),
                    String.format(Locale.ROOT, "%.0f", cell.opsPerS() / cfg.shards()),
                    redis == null ? "" : String.format(Locale.ROOT, "%.2fx", cell.opsPerS() / redis.opsPerS()),
                    cfg.system().equals("redis") ? "-" : String.format(Locale.ROOT, "%d (%.3f %%)", red,
                        100.0 * red / Math.max(1, cell.ops())),
                    c == null ? "" : String.format(Locale.ROOT, "%.1f", c[0] / (c[1] / 1e6))));
            }
        }
        E3Zipf.Cell ucx3 = cells.get("rdmastore-ucx/3/3");
        E3Zipf.Cell redis3 = cells.get("redis/3/3");
        String notes = String.format(Locale.ROOT, "%d keys of %d B, scrambled Zipf, 95 %% GET / 5 %% SET; %.1f s per cell"
            + " after a warm-up, one client per connection and thread. rdmastore: one server process per shard"
            + " (--cluster, --ucx-idle adaptive: several servers on two cores cannot each spin one), the slots split"
            + " evenly, clients RdmaStoreClusterClient (routes by its cached slot map; redirects counted in the"
            + " window). Redis: redis-server 7 with --cluster-enabled yes, no persistence, created with redis-cli"
            + " --cluster create, clients JedisCluster. Target (issue 16): 3 shards over ucx at least 5x the 3-shard"
            + " Redis cluster at 1 client per shard: measured %s; redirects under 1 %% of operations. On this 2-core"
            + " machine 3 shards share the 2 cores with the clients: per-shard throughput is the host's, not the"
            + " design's, limit.", records, SIZE, windowNanos / 1e9,
            ucx3 == null || redis3 == null ? "n/a" : String.format(Locale.ROOT, "%.2fx", ucx3.opsPerS()
                / redis3.opsPerS()));
        System.out.println();
        System.out.println("E8: the E3 workload through cluster clients");
        System.out.print(Report.plain(header, body));
        System.out.println(notes);
        try {
            Charts.bar(report.directory().resolve("E8.png"), "E8: ops/s through cluster clients (32 B, Zipf 95/5)",
                rows);
        } catch (IOException e) {
            System.err.println("E8: chart not written: " + e);
        }
        report.add("E8", "E3 workload through cluster clients", Report.table(header, body),
            notes + "\n\n![E8](E8.png)\n", rows);
    }
}
