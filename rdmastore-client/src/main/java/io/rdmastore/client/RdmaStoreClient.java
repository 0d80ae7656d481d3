package io.rdmastore.client;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.WireWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * The rdmastore client: key/value, hash and document operations over the native protocol, on TCP or UCX.
 *
 * <pre>{@code
 * try (RdmaStoreClient client = RdmaStoreClient.connect("rdmastore://127.0.0.1:7379?transport=auto&timeout=5s")) {
 *     client.set("greeting", "hello");
 *     String v = client.get("greeting");
 *     CompletableFuture<byte[]> f = client.getAsync("greeting".getBytes(UTF_8));   // pipelined
 *     client.collection("users").insertOne(BsonDocument.parse("{name: 'ada', age: 36}"));
 * }
 * }</pre>
 *
 * <p>Every operation has a synchronous method, which waits for the reply and throws {@link RdmaStoreException}, and an
 * asynchronous {@code ...Async} method, whose future completes on the transport thread (do not block inside its
 * callbacks; use {@code thenApplyAsync} for heavy work). Asynchronous calls pipeline: many may be in flight on the one
 * connection, and the server answers them in order.
 *
 * <p>Failures: {@link RdmaStoreServerException} (the server's error reply, e.g. {@code WRONGTYPE}; the connection stays
 * usable), {@link RdmaStoreTimeoutException} (no reply within the call's time-out: {@code timeout} of the URI, or of
 * {@link #withTimeout}), {@link RdmaStoreConnectionException} (cannot connect, refused, or connection lost while the
 * call was in flight), {@link RdmaStoreWriteConcernException} (a write applied on the primary whose write concern was
 * not confirmed). After a disconnect, the next call reconnects. A write that was sent and whose reply was lost fails
 * with {@link RdmaStoreException#outcomeUnknown()} true and is never retried by the client.
 *
 * <p>Replica sets ({@code rdmastore://h1:7379,h2:7380,h3:7381?replicaSet=rs0&w=majority}): connecting asks the seeds
 * for their ROLE and connects to the primary ({@link #topology()}); writes go to the primary, reads as the
 * {@code readPreference} says. On {@code NOTPRIMARY} (the write was not applied) or a lost connection, the client
 * rediscovers the primary (within twice the time-out) and sends again what is safe: reads, and writes that were
 * refused or never sent. {@code w=majority} pipelines a WAIT after each write, {@code readConcern=linearizable} a
 * READ_FENCE after each read (docs/protocol.md, "Client behaviour"). A single host without {@code replicaSet} sends
 * nothing beyond the calls.
 *
 * <p>Threads: thread-safe; share one client between threads. Memory: the client copies arguments before a method
 * returns and returns fresh arrays that the caller owns.
 */
public final class RdmaStoreClient implements AutoCloseable {
    private final ClientCore core;
    private final Duration timeout;
    private final WriteConcern writeConcern;
    /** Writes go straight to {@link ClientCore#call}: a single host with write concern 1. */
    private final boolean plainWrites;

    private RdmaStoreClient(ClientCore core, Duration timeout, WriteConcern writeConcern) {
        this.core = core;
        this.timeout = timeout;
        this.writeConcern = writeConcern;
        this.plainWrites = !core.replicated && !writeConcern.majority();
    }

    /**
     * Connects to {@code rdmastore://host[:port][?transport=auto|tcp|ucx][&password=...][&timeout=5s]}.
     *
     * @throws IllegalArgumentException when the URI is malformed
     * @throws RdmaStoreConnectionException when the server cannot be reached or refuses the connection
     */
    public static RdmaStoreClient connect(String uri) {
        return connect(ClientConfig.parse(uri));
    }

    /** Connects with {@code config}; see {@link #connect(String)}. */
    public static RdmaStoreClient connect(ClientConfig config) {
        ClientCore core = new ClientCore(config);
        try {
            core.transport();
        } catch (RuntimeException e) {
            core.close();
            throw e;
        }
        return new RdmaStoreClient(core, config.timeout(), config.writeConcern());
    }

    /**
     * A builder; {@code builder().host("10.0.0.1").port(7379).transport("ucx").password("pw").connect()}, or for a
     * replica set {@code builder().seeds("h1:7379", "h2:7379").replicaSet("rs0").writeConcern(WriteConcern.MAJORITY)}.
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds a {@link ClientConfig} and connects. Not thread-safe; use from one thread. */
    public static final class Builder {
        private String host = "127.0.0.1";
        private int port = ClientConfig.DEFAULT_PORT;
        private String transport = "auto";
        private String password;
        private Duration timeout = ClientConfig.DEFAULT_TIMEOUT;
        private List<java.net.InetSocketAddress> seeds;
        private String replicaSet;
        private WriteConcern writeConcern;
        private ReadPreference readPreference;
        private ReadConcern readConcern;
        private boolean tls;
        private String tlsTrust;

        /** Starts from a URI's settings. */
        public Builder uri(String uri) {
            ClientConfig c = ClientConfig.parse(uri);
            host = c.host();
            port = c.port();
            transport = c.transport();
            password = c.password();
            timeout = c.timeout();
            seeds = c.seeds();
            replicaSet = c.replicaSet();
            writeConcern = c.writeConcern();
            readPreference = c.readPreference();
            readConcern = c.readConcern();
            tls = c.tls();
            tlsTrust = c.tlsTrust();
            return this;
        }

        /**
         * Connects with TLS, trusting the certificates in the PEM file {@code trustedCertificates} (null: the JVM's
         * trust store). The server must serve TLS. Default off.
         */
        public Builder tls(java.nio.file.Path trustedCertificates) {
            tls = true;
            tlsTrust = trustedCertificates == null ? null : trustedCertificates.toString();
            return this;
        }

        /** A single host (replacing any seeds). */
        public Builder host(String value) {
            host = value;
            seeds = null;
            return this;
        }

        public Builder port(int value) {
            port = value;
            seeds = null;
            return this;
        }

        /** The replica set's seeds, {@code host[:port]} each (port 7379 when left out); the first becomes the host. */
        public Builder seeds(String... addresses) {
            if (addresses.length == 0) {
                throw new IllegalArgumentException("seeds needs at least one host");
            }
            List<java.net.InetSocketAddress> list = new ArrayList<>(addresses.length);
            for (String a : addresses) {
                list.add(ClientConfig.parseAddress(Objects.requireNonNull(a, "seed"), "seeds"));
            }
            seeds = List.copyOf(list);
            host = list.get(0).getHostString();
            port = list.get(0).getPort();
            return this;
        }

        /** The replica set's name: the client discovers the primary and checks every member's set name. */
        public Builder replicaSet(String value) {
            replicaSet = value;
            return this;
        }

        /** The default write concern; {@link WriteConcern#W1} by default. */
        public Builder writeConcern(WriteConcern value) {
            writeConcern = value;
            return this;
        }

        /** Which member serves reads; {@link ReadPreference#PRIMARY} by default. */
        public Builder readPreference(ReadPreference value) {
            readPreference = value;
            return this;
        }

        /** {@link ReadConcern#LOCAL} by default. */
        public Builder readConcern(ReadConcern value) {
            readConcern = value;
            return this;
        }

        /** {@code auto} (default), {@code tcp} or {@code ucx}. */
        public Builder transport(String value) {
            transport = value;
            return this;
        }

        public Builder password(String value) {
            password = value;
            return this;
        }

        /** Default time-out of each call and of connecting; 5 s by default. */
        public Builder timeout(Duration value) {
            timeout = value;
            return this;
        }

        public ClientConfig build() {
            return new ClientConfig(host, port, transport, password, timeout, seeds, replicaSet, writeConcern,
                readPreference, readConcern, tls, tlsTrust);
        }

        public RdmaStoreClient connect() {
            return RdmaStoreClient.connect(build());
        }
    }

    /**
     * A view of this client whose calls use {@code callTimeout}; it shares the connection, and closing either closes
     * both.
     */
    public RdmaStoreClient withTimeout(Duration callTimeout) {
        Objects.requireNonNull(callTimeout, "callTimeout");
        if (callTimeout.isNegative() || callTimeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive: " + callTimeout);
        }
        return new RdmaStoreClient(core, callTimeout, writeConcern);
    }

    /**
     * A view of this client whose writes use {@code concern} (e.g. {@link WriteConcern#MAJORITY} for the writes that
     * must survive a failover); it shares the connection, and closing either closes both.
     */
    public RdmaStoreClient withWriteConcern(WriteConcern concern) {
        return new RdmaStoreClient(core, timeout, Objects.requireNonNull(concern, "concern"));
    }

    /** This view's write concern. */
    public WriteConcern writeConcern() {
        return writeConcern;
    }

    /** {@code host:port} of the member writes go to: the primary of a replica set, or the single host. */
    public String primary() {
        return core.topology().primaryAddress();
    }

    /** What the client found when it last discovered its replica set; for a single host, that host. */
    public Topology topology() {
        return core.topology();
    }

    /** The connection's transport: {@code "tcp"} or {@code "ucx"}. Reconnects if disconnected. */
    public String transport() {
        return core.transport();
    }

    /** Why that transport was chosen, in a sentence. */
    public String transportReason() {
        return core.transportReason();
    }

    /** The settings this client connects with. */
    public ClientConfig config() {
        return core.config;
    }

    /** This view's call time-out. */
    public Duration timeout() {
        return timeout;
    }

    @Override
    public void close() {
        core.close();
    }

    // ---- plumbing ----

    private <T> CompletableFuture<T> call(byte opcode, ClientCore.Encoder body, ClientCore.Decoder<T> decoder) {
        byte kind = ClientCore.kind(opcode);
        // a single host sends just the request, as before replica sets; anything else may add a WAIT or READ_FENCE
        // and retries after a failover
        if (kind == ClientCore.WRITE ? plainWrites : kind == ClientCore.READ ? core.plainReads : !core.replicated) {
            return core.call(opcode, body, decoder, timeout);
        }
        return core.operation(opcode, body, decoder, timeout, writeConcern);
    }

    /** CLUSTER_MAP (get): the slot map text this server holds, "" before a map or outside cluster mode. */
    String clusterMapText() {
        return core.await(core.call(ProtocolDescriptor.CLUSTER_MAP, w -> w.u8(0), (st, r) -> {
            r.u8("cluster");
            r.string("selfId", 4096);
            r.string("setName", 4096);
            r.i64("epoch");
            return r.string("map", 16 << 20);
        }, timeout), timeout);
    }

    private <T> T sync(CompletableFuture<T> f) {
        if (f instanceof ClientCore.Call<T> c) {
            return core.await(c, timeout);
        }
        return core.await((ClientCore.Operation<T>) f);
    }

    private static byte[] utf8(String s) {
        return Objects.requireNonNull(s, "argument must not be null").getBytes(StandardCharsets.UTF_8);
    }

    private static String string(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    private static byte[] key(byte[] k) {
        return Objects.requireNonNull(k, "key must not be null");
    }

    private static final ClientCore.Decoder<Long> LONG_REPLY = (st, r) -> r.i64("integer reply");
    private static final ClientCore.Decoder<Boolean> BOOL_REPLY = (st, r) -> r.i64("integer reply") != 0;
    private static final ClientCore.Decoder<byte[]> VALUE_REPLY =
        (st, r) -> st == ProtocolDescriptor.STATUS_NULL ? null : r.rest();

    private static void keys(WireWriter w, byte[][] keys) {
        w.i32(keys.length);
        for (byte[] k : keys) {
            w.bytes(key(k));
        }
    }

    private static byte[][] utf8(String[] s) {
        byte[][] out = new byte[s.length][];
        for (int i = 0; i < s.length; i++) {
            out[i] = utf8(s[i]);
        }
        return out;
    }

    // ---- server ----

    /** PING: the server's answer, "PONG". */
    public CompletableFuture<String> pingAsync() {
        return call(ProtocolDescriptor.PING, w -> { }, (st, r) -> r.restString());
    }

    public String ping() {
        return sync(pingAsync());
    }

    /** INFO: server, store and latency statistics, and this connection's transport and why, as text. */
    public CompletableFuture<String> infoAsync() {
        return call(ProtocolDescriptor.INFO, w -> { }, (st, r) -> r.restString());
    }

    public String info() {
        return sync(infoAsync());
    }

    /** SNAPSHOT: writes a snapshot now (like SAVE); returns its time in epoch milliseconds. */
    public CompletableFuture<Long> snapshotAsync() {
        return call(ProtocolDescriptor.SNAPSHOT, w -> { }, LONG_REPLY);
    }

    public long snapshot() {
        return sync(snapshotAsync());
    }

    // ---- strings ----

    /** GET: the value, or null when the key does not exist. */
    public CompletableFuture<byte[]> getAsync(byte[] key) {
        byte[] k = key(key);
        return call(ProtocolDescriptor.GET, w -> w.bytes(k), VALUE_REPLY);
    }

    /** Blob operations (large values as server-side files, moved one-sided), with this client's time-out. */
    public BlobClient blobs() {
        return new BlobClient(core, timeout, writeConcern);
    }

    public byte[] get(byte[] key) {
        return sync(getAsync(key));
    }

    public String get(String key) {
        return string(get(utf8(key)));
    }

    /** SET: true when the value was written, false when an NX/XX condition was not met. */
    public CompletableFuture<Boolean> setAsync(byte[] key, byte[] value, SetOptions options) {
        byte[] k = key(key);
        byte[] v = Objects.requireNonNull(value, "value must not be null");
        int flags = (options.ifAbsent() ? ProtocolDescriptor.SET_NX : 0)
            | (options.ifPresent() ? ProtocolDescriptor.SET_XX : 0);
        return call(ProtocolDescriptor.SET, w -> w.u8(flags).i64(options.ttlMillis()).bytes(k).bytes(v),
            (st, r) -> st == ProtocolDescriptor.STATUS_OK);
    }

    public CompletableFuture<Boolean> setAsync(byte[] key, byte[] value) {
        return setAsync(key, value, SetOptions.NONE);
    }

    public boolean set(byte[] key, byte[] value, SetOptions options) {
        return sync(setAsync(key, value, options));
    }

    public boolean set(byte[] key, byte[] value) {
        return set(key, value, SetOptions.NONE);
    }

    public boolean set(String key, String value, SetOptions options) {
        return set(utf8(key), utf8(value), options);
    }

    public boolean set(String key, String value) {
        return set(utf8(key), utf8(value), SetOptions.NONE);
    }

    /** DEL: how many of the keys existed and were deleted. */
    public CompletableFuture<Long> delAsync(byte[]... keys) {
        byte[][] ks = keys.clone();
        return call(ProtocolDescriptor.DEL, w -> keys(w, ks), LONG_REPLY);
    }

    public long del(byte[]... keys) {
        return sync(delAsync(keys));
    }

    public long del(String... keys) {
        return del(utf8(keys));
    }

    /** EXISTS: how many of the keys exist (a key named twice counts twice). */
    public CompletableFuture<Long> existsAsync(byte[]... keys) {
        byte[][] ks = keys.clone();
        return call(ProtocolDescriptor.EXISTS, w -> keys(w, ks), LONG_REPLY);
    }

    public long exists(byte[]... keys) {
        return sync(existsAsync(keys));
    }

    public long exists(String... keys) {
        return exists(utf8(keys));
    }

    /** EXPIRE (in milliseconds): true when the key exists and now has the TTL; a TTL of 0 or less deletes it. */
    public CompletableFuture<Boolean> expireAsync(byte[] key, Duration ttl) {
        byte[] k = key(key);
        long ms = ttl.toMillis();
        return call(ProtocolDescriptor.PEXPIRE, w -> w.bytes(k).i64(ms), BOOL_REPLY);
    }

    public boolean expire(byte[] key, Duration ttl) {
        return sync(expireAsync(key, ttl));
    }

    public boolean expire(String key, Duration ttl) {
        return expire(utf8(key), ttl);
    }

    /** PTTL: milliseconds to live, -1 when the key has no TTL, -2 when it does not exist. */
    public CompletableFuture<Long> pttlAsync(byte[] key) {
        byte[] k = key(key);
        return call(ProtocolDescriptor.PTTL, w -> w.bytes(k), LONG_REPLY);
    }

    public long pttl(byte[] key) {
        return sync(pttlAsync(key));
    }

    public long pttl(String key) {
        return pttl(utf8(key));
    }

    /** INCRBY: the value after adding {@code delta}; a missing key counts as 0. */
    public CompletableFuture<Long> incrByAsync(byte[] key, long delta) {
        byte[] k = key(key);
        return call(ProtocolDescriptor.INCRBY, w -> w.bytes(k).i64(delta), LONG_REPLY);
    }

    public long incrBy(byte[] key, long delta) {
        return sync(incrByAsync(key, delta));
    }

    public long incrBy(String key, long delta) {
        return incrBy(utf8(key), delta);
    }

    public long incr(String key) {
        return incrBy(utf8(key), 1);
    }

    /** MGET: one value per key, null where a key does not exist or is not a string. */
    public CompletableFuture<List<byte[]>> mgetAsync(byte[]... keys) {
        byte[][] ks = keys.clone();
        return call(ProtocolDescriptor.MGET, w -> keys(w, ks), (st, r) -> {
            int n = r.i32("count");
            List<byte[]> out = new ArrayList<>(Math.min(n, 1 << 16));
            for (int i = 0; i < n; i++) {
                out.add(r.nullableBytes("value", Integer.MAX_VALUE));
            }
            return out;
        });
    }

    public List<byte[]> mget(byte[]... keys) {
        return sync(mgetAsync(keys));
    }

    public List<String> mget(String... keys) {
        List<byte[]> raw = mget(utf8(keys));
        List<String> out = new ArrayList<>(raw.size());
        for (byte[] b : raw) {
            out.add(string(b));
        }
        return out;
    }

    /** MSET: sets every key to its value atomically; {@code keysAndValues} alternates key, value. */
    public CompletableFuture<Void> msetAsync(List<byte[]> keysAndValues) {
        if (keysAndValues.size() % 2 != 0) {
            throw new IllegalArgumentException("MSET needs pairs of key and value, got " + keysAndValues.size()
                + " items");
        }
        List<byte[]> kv = List.copyOf(keysAndValues);
        return call(ProtocolDescriptor.MSET, w -> {
            w.i32(kv.size() / 2);
            for (byte[] b : kv) {
                w.bytes(b);
            }
        }, (st, r) -> null);
    }

    public void mset(List<byte[]> keysAndValues) {
        sync(msetAsync(keysAndValues));
    }

    public void mset(Map<String, String> values) {
        List<byte[]> kv = new ArrayList<>(values.size() * 2);
        for (Map.Entry<String, String> e : values.entrySet()) {
            kv.add(utf8(e.getKey()));
            kv.add(utf8(e.getValue()));
        }
        mset(kv);
    }

    // ---- hashes ----

    /** HSET: sets fields ({@code fieldsAndValues} alternates field, value); returns how many fields were new. */
    public CompletableFuture<Long> hsetAsync(byte[] key, List<byte[]> fieldsAndValues) {
        byte[] k = key(key);
        if (fieldsAndValues.isEmpty() || fieldsAndValues.size() % 2 != 0) {
            throw new IllegalArgumentException("HSET needs one or more pairs of field and value, got "
                + fieldsAndValues.size() + " items");
        }
        List<byte[]> fv = List.copyOf(fieldsAndValues);
        return call(ProtocolDescriptor.HSET, w -> {
            w.bytes(k).i32(fv.size() / 2);
            for (byte[] b : fv) {
                w.bytes(b);
            }
        }, LONG_REPLY);
    }

    public long hset(byte[] key, List<byte[]> fieldsAndValues) {
        return sync(hsetAsync(key, fieldsAndValues));
    }

    public long hset(String key, String field, String value) {
        return hset(utf8(key), List.of(utf8(field), utf8(value)));
    }

    public long hset(String key, Map<String, String> fields) {
        List<byte[]> fv = new ArrayList<>(fields.size() * 2);
        for (Map.Entry<String, String> e : fields.entrySet()) {
            fv.add(utf8(e.getKey()));
            fv.add(utf8(e.getValue()));
        }
        return hset(utf8(key), fv);
    }

    /** HGET: the field's value, or null. */
    public CompletableFuture<byte[]> hgetAsync(byte[] key, byte[] field) {
        byte[] k = key(key);
        byte[] f = Objects.requireNonNull(field, "field");
        return call(ProtocolDescriptor.HGET, w -> w.bytes(k).bytes(f), VALUE_REPLY);
    }

    public byte[] hget(byte[] key, byte[] field) {
        return sync(hgetAsync(key, field));
    }

    public String hget(String key, String field) {
        return string(hget(utf8(key), utf8(field)));
    }

    /** HGETALL: fields and values alternating, in the hash's order; empty when the key does not exist. */
    public CompletableFuture<List<byte[]>> hgetAllAsync(byte[] key) {
        byte[] k = key(key);
        return call(ProtocolDescriptor.HGETALL, w -> w.bytes(k), (st, r) -> {
            if (st == ProtocolDescriptor.STATUS_NULL) {
                return List.of();
            }
            int n = r.i32("count");
            List<byte[]> out = new ArrayList<>(Math.min(n, 1 << 15) * 2);
            for (int i = 0; i < n; i++) {
                out.add(r.bytes("field", Integer.MAX_VALUE));
                out.add(r.bytes("value", Integer.MAX_VALUE));
            }
            return out;
        });
    }

    public List<byte[]> hgetAll(byte[] key) {
        return sync(hgetAllAsync(key));
    }

    /** HGETALL with UTF-8 fields and values, in the hash's order. */
    public Map<String, String> hgetAll(String key) {
        List<byte[]> fv = hgetAll(utf8(key));
        Map<String, String> out = new LinkedHashMap<>();
        for (int i = 0; i < fv.size(); i += 2) {
            out.put(string(fv.get(i)), string(fv.get(i + 1)));
        }
        return Collections.unmodifiableMap(out);
    }

    /** HDEL: how many of the fields existed; deleting the last field deletes the key. */
    public CompletableFuture<Long> hdelAsync(byte[] key, byte[]... fields) {
        byte[] k = key(key);
        byte[][] fs = fields.clone();
        return call(ProtocolDescriptor.HDEL, w -> {
            w.bytes(k);
            keys(w, fs);
        }, LONG_REPLY);
    }

    public long hdel(byte[] key, byte[]... fields) {
        return sync(hdelAsync(key, fields));
    }

    public long hdel(String key, String... fields) {
        return hdel(utf8(key), utf8(fields));
    }

    // ---- documents ----

    /** The collection {@code name}; created by its first insert. */
    public DocumentCollection collection(String name) {
        Objects.requireNonNull(name, "collection name");
        if (name.isEmpty()) {
            throw new IllegalArgumentException("collection name is empty");
        }
        return new DocumentCollection(this, name);
    }

    <T> CompletableFuture<T> docCall(byte opcode, ClientCore.Encoder body, ClientCore.Decoder<T> decoder) {
        return call(opcode, body, decoder);
    }

    <T> T docSync(CompletableFuture<T> f) {
        return sync(f);
    }
}
