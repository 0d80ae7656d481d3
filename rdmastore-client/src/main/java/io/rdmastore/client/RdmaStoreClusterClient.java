package io.rdmastore.client;

import io.rdmastore.client.cluster.HashSlot;
import io.rdmastore.client.cluster.SlotMap;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;

/**
 * A client of a sharded cluster (docs/cluster.md) that routes each command to the node serving its key's slot by
 * itself: it keeps the cluster's slot map (read from a seed at connect), one {@link RdmaStoreClient} per node it
 * talks to, and on a {@code MOVED} reply refreshes the map from the node that sent it and retries there. In steady
 * state no command pays a redirect. While a slot migrates, nodes answer its commands {@code TRYAGAIN} (nothing
 * applied) and this client asks again with a short back-off, up to the call time-out.
 *
 * <p>{@code RdmaStoreClusterClient.connect(RdmaStoreClient.builder().seeds("h1:7000", "h2:7001").build())}
 *
 * <p>Threads: thread-safe; the sync calls may come from any thread at once. Multi-key calls need keys of one slot
 * (hash tags: {@code {user1}.a}, {@code {user1}.b}), else the server answers {@code CROSSSLOT}.
 */
public final class RdmaStoreClusterClient implements AutoCloseable {
    /** Redirects followed for one command before giving up, as Redis cluster clients do. */
    static final int MAX_REDIRECTS = 5;

    private final ClientConfig seed;
    private final Map<String, RdmaStoreClient> nodes = new ConcurrentHashMap<>();
    private final LongAdder redirects = new LongAdder();
    private volatile SlotMap map = SlotMap.EMPTY;
    private volatile boolean closed;

    private RdmaStoreClusterClient(ClientConfig seed) {
        this.seed = seed;
    }

    /**
     * Connects to the first seed that answers and reads its slot map.
     *
     * @throws RdmaStoreConnectionException when no seed can be reached
     * @throws RdmaStoreException when the seeds hold no map (not a cluster, or not created yet)
     */
    public static RdmaStoreClusterClient connect(ClientConfig seed) {
        RdmaStoreClusterClient c = new RdmaStoreClusterClient(Objects.requireNonNull(seed, "seed"));
        RuntimeException last = null;
        for (InetSocketAddress s : seed.seeds()) {
            try {
                c.refresh(s.getHostString() + ":" + s.getPort());
                if (!c.map.shards().isEmpty()) {
                    return c;
                }
            } catch (RdmaStoreException e) {
                last = e;
            }
        }
        c.close();
        if (last != null) {
            throw last;
        }
        throw new RdmaStoreException("no seed holds a slot map: is the cluster created ('rdmastore cluster create')?");
    }

    /** The slot map in use. */
    public SlotMap slotMap() {
        return map;
    }

    /** MOVED replies followed since connect: a measure of how often the cached map was stale. */
    public long redirects() {
        return redirects.sum();
    }

    /** The node serving {@code key}'s slot by the cached map, as {@code host:port}. */
    public String nodeFor(byte[] key) {
        SlotMap.Shard s = map.owner(HashSlot.of(key));
        if (s == null) {
            throw new RdmaStoreServerException("CLUSTERDOWN Hash slot not served");
        }
        return s.first().address();
    }

    /**
     * Runs {@code op} on the node serving {@code key}'s slot, following MOVED (refreshing the map) up to
     * {@value #MAX_REDIRECTS} times.
     */
    public <T> T onKey(byte[] key, Function<RdmaStoreClient, T> op) {
        String address = nodeFor(key);
        long deadline = System.nanoTime() + seed.timeout().toNanos();
        long pauseMillis = 1;
        for (int attempt = 0; ; attempt++) {
            try {
                return op.apply(node(address));
            } catch (RdmaStoreServerException e) {
                if (e.code().equals("TRYAGAIN") && System.nanoTime() < deadline) {
                    // the slot is being moved: nothing was applied; ask again shortly
                    attempt--;
                    sleep(pauseMillis);
                    pauseMillis = Math.min(pauseMillis * 2, 50);
                    continue;
                }
                if (!e.code().equals("MOVED") || attempt >= MAX_REDIRECTS) {
                    throw e;
                }
                redirects.increment();
                // "MOVED <slot> <host:port>": go where it says, and learn the newer map there
                String m = e.getMessage();
                address = m.substring(m.lastIndexOf(' ') + 1);
                try {
                    refresh(address);
                } catch (RdmaStoreException ignored) {
                    // the retry below reports the node's state
                }
            }
        }
    }

    /** The client of one node, connected on first use with the seed's transport, password and time-out. */
    public RdmaStoreClient node(String address) {
        if (closed) {
            throw new IllegalStateException("client closed");
        }
        return nodes.computeIfAbsent(address, a -> {
            int colon = a.lastIndexOf(':');
            return RdmaStoreClient.connect(new ClientConfig(a.substring(0, colon), Integer.parseInt(
                a.substring(colon + 1)), seed.transport(), seed.password(), seed.timeout(), null, null,
                seed.writeConcern(), null, null, seed.tls(), seed.tlsTrust()));
        });
    }

    /** Reads the map {@code address} holds and keeps it when its epoch is newer than the cached one. */
    private void refresh(String address) {
        String text = node(address).clusterMapText();
        if (text.isEmpty()) {
            return;
        }
        SlotMap fresh = SlotMap.parse(text);
        synchronized (this) {
            if (fresh.epoch() > map.epoch()) {
                map = fresh;
            }
        }
    }

    // ---- commands ----

    public byte[] get(byte[] key) {
        return onKey(key, c -> c.get(key));
    }

    public String get(String key) {
        byte[] v = get(utf8(key));
        return v == null ? null : new String(v, StandardCharsets.UTF_8);
    }

    public boolean set(byte[] key, byte[] value, SetOptions options) {
        return onKey(key, c -> c.set(key, value, options));
    }

    public boolean set(String key, String value) {
        return set(utf8(key), utf8(value), SetOptions.NONE);
    }

    public long del(String key) {
        byte[] k = utf8(key);
        return onKey(k, c -> c.del(k));
    }

    public long incrBy(String key, long delta) {
        byte[] k = utf8(key);
        return onKey(k, c -> c.incrBy(k, delta));
    }

    public boolean expire(String key, Duration ttl) {
        byte[] k = utf8(key);
        return onKey(k, c -> c.expire(k, ttl));
    }

    public long pttl(String key) {
        byte[] k = utf8(key);
        return onKey(k, c -> c.pttl(k));
    }

    public long hset(String key, String field, String value) {
        byte[] k = utf8(key);
        return onKey(k, c -> c.hset(key, field, value));
    }

    public String hget(String key, String field) {
        return onKey(utf8(key), c -> c.hget(key, field));
    }

    public Map<String, String> hgetAll(String key) {
        return onKey(utf8(key), c -> c.hgetAll(key));
    }

    /** MGET of keys of one slot (else CROSSSLOT). */
    public List<String> mget(String... keys) {
        return onKey(utf8(keys[0]), c -> c.mget(keys));
    }

    /** MSET of keys of one slot (else CROSSSLOT). */
    public void mset(Map<String, String> values) {
        List<String> keys = new ArrayList<>(values.keySet());
        onKey(utf8(keys.get(0)), c -> {
            c.mset(values);
            return null;
        });
    }

    // ---- data types (the rest through onKey(key, c -> c.zcount(...)) or command) ----

    /** Any data-type command, sent to the node serving {@code key}'s slot (the command's keys must share it). */
    public Object command(String key, Object... args) {
        return onKey(utf8(key), c -> c.command(args));
    }

    public long lpush(String key, String... values) {
        return onKey(utf8(key), c -> c.lpush(key, values));
    }

    public long rpush(String key, String... values) {
        return onKey(utf8(key), c -> c.rpush(key, values));
    }

    public String lpop(String key) {
        return onKey(utf8(key), c -> c.lpop(key));
    }

    public List<String> lrange(String key, long start, long stop) {
        return onKey(utf8(key), c -> c.lrange(key, start, stop));
    }

    public long sadd(String key, String... members) {
        return onKey(utf8(key), c -> c.sadd(key, members));
    }

    public java.util.Set<String> smembers(String key) {
        return onKey(utf8(key), c -> c.smembers(key));
    }

    public long zadd(String key, double score, String member) {
        return onKey(utf8(key), c -> c.zadd(key, score, member));
    }

    public Double zscore(String key, String member) {
        return onKey(utf8(key), c -> c.zscore(key, member));
    }

    public List<String> zrange(String key, long start, long stop) {
        return onKey(utf8(key), c -> c.zrange(key, start, stop));
    }

    /** A transaction on the node serving {@code key}'s slot; every key it names must be in that slot. */
    public List<Object> transaction(String key, java.util.function.Consumer<Transaction> body) {
        return onKey(utf8(key), c -> c.transaction(body));
    }

    @Override
    public void close() {
        closed = true;
        for (RdmaStoreClient c : nodes.values()) {
            c.close();
        }
        nodes.clear();
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaStoreException("interrupted while a slot migrates");
        }
    }

    private static byte[] utf8(String s) {
        return Objects.requireNonNull(s, "key must not be null").getBytes(StandardCharsets.UTF_8);
    }
}
