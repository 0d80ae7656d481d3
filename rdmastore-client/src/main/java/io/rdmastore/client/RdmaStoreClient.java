package io.rdmastore.client;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.WireWriter;
import java.lang.foreign.MemorySegment;
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
 * The rdmastore client: key/value, hash, list, set, sorted set and document operations, transactions and pub/sub over
 * the native protocol, on TCP or UCX.
 *
 * <pre>{@code
 * try (RdmaStoreClient client = RdmaStoreClient.connect("rdmastore://127.0.0.1:7379?transport=auto&timeout=5s")) {
 *     client.set("greeting", "hello");
 *     String v = client.get("greeting");
 *     CompletableFuture<byte[]> f = client.getAsync("greeting".getBytes(UTF_8));   // pipelined
 *     client.collection("users").insertOne(BsonDocument.parse("{name: 'ada', age: 36}"));
 *     client.rpush("queue", "job1");
 *     List<Object> r = client.transaction(tx -> tx.lpush("log", "a").incr("n"));
 *     Subscription s = client.subscribe(m -> System.out.println(m.messageString()), "news");
 * }
 * }</pre>
 *
 * <p>Every operation has a synchronous method, which waits for the reply and throws {@link RdmaStoreException}, and an
 * asynchronous {@code ...Async} method, whose future completes on the thread that reads the reply: the transport's,
 * or, over tcp, a thread of this client waiting for a reply of its own, which reads for every call in flight (do not
 * block inside its callbacks; use {@code thenApplyAsync} for heavy work). Asynchronous calls pipeline: many may be in
 * flight on the one connection, and the server answers them in order (a blocking pop answers when it completes).
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
        return core.await(core.awaitedCall(ProtocolDescriptor.CLUSTER_MAP, w -> w.u8(0), (st, r) -> {
            r.u8("cluster");
            r.string("selfId", 4096);
            r.string("setName", 4096);
            r.i64("epoch");
            return r.string("map", 16 << 20);
        }, timeout), timeout);
    }

    /**
     * Makes the call {@code request} sends and waits for its result on this thread. The call is sent marked as one its
     * caller waits for ({@link ClientCore#sending}): over ucx the client's agent may then sleep through its reply.
     */
    private <T> T sync(java.util.function.Supplier<CompletableFuture<T>> request) {
        CompletableFuture<T> f = core.sending(request);
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
        return sync(() -> pingAsync());
    }

    /** INFO: server, store and latency statistics, and this connection's transport and why, as text. */
    public CompletableFuture<String> infoAsync() {
        return call(ProtocolDescriptor.INFO, w -> { }, (st, r) -> r.restString());
    }

    public String info() {
        return sync(() -> infoAsync());
    }

    /** SNAPSHOT: writes a snapshot now (like SAVE); returns its time in epoch milliseconds. */
    public CompletableFuture<Long> snapshotAsync() {
        return call(ProtocolDescriptor.SNAPSHOT, w -> { }, LONG_REPLY);
    }

    public long snapshot() {
        return sync(() -> snapshotAsync());
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

    /**
     * GET: the value, or null when the key does not exist. Over ucx a large value is lent by the server and read
     * one-sided (docs/protocol.md, "Large values"); on one host or over a replica set's reads it is sent as by
     * {@link #getAsync}.
     */
    public byte[] get(byte[] key) {
        byte[] k = key(key);
        if (!core.plainReads) {
            return sync(() -> getAsync(k));
        }
        return core.largeValues.get(k, timeout, () -> sync(() -> getAsync(k)));
    }

    /**
     * GET into {@code dst} at its position: returns the value's length and moves the position past it, or returns -1
     * when the key does not exist. Over ucx a large value is read one-sided straight into a direct {@code dst} (its
     * memory is registered while it is the last buffer passed, so passing the same buffer again costs nothing extra).
     *
     * @throws IllegalArgumentException when the value is larger than {@code dst.remaining()}; nothing is written
     */
    public int get(byte[] key, java.nio.ByteBuffer dst) {
        byte[] k = key(key);
        Objects.requireNonNull(dst, "dst");
        if (dst.isReadOnly()) {
            throw new IllegalArgumentException("dst is read-only");
        }
        if (!core.plainReads) {
            byte[] v = sync(() -> getAsync(k));
            if (v == null) {
                return -1;
            }
            if (v.length > dst.remaining()) {
                throw new IllegalArgumentException("the value is " + v.length + " bytes; the destination has "
                    + dst.remaining() + " bytes remaining");
            }
            dst.put(v);
            return v.length;
        }
        return core.largeValues.get(k, dst, timeout, () -> sync(() -> getAsync(k)));
    }

    public String get(String key) {
        return string(get(utf8(key)));
    }

    /** SET: true when the value was written, false when an NX/XX condition was not met. */
    public CompletableFuture<Boolean> setAsync(byte[] key, byte[] value, SetOptions options) {
        byte[] k = key(key);
        byte[] v = Objects.requireNonNull(value, "value must not be null");
        int flags = setFlags(options);
        return call(ProtocolDescriptor.SET, w -> w.u8(flags).i64(options.ttlMillis()).bytes(k).bytes(v),
            (st, r) -> st == ProtocolDescriptor.STATUS_OK);
    }

    /** SET's flags byte for {@code options}. */
    private static int setFlags(SetOptions options) {
        return (options.ifAbsent() ? ProtocolDescriptor.SET_NX : 0)
            | (options.ifPresent() ? ProtocolDescriptor.SET_XX : 0);
    }

    public CompletableFuture<Boolean> setAsync(byte[] key, byte[] value) {
        return setAsync(key, value, SetOptions.NONE);
    }

    /**
     * SET: true when the value was written, false when an NX/XX condition was not met. Over ucx, to one server, a
     * value from {@code rdmastore.client.setLargeFrom} bytes on (default 256 KiB) is lent instead of sent: the server
     * reads it one-sided (docs/protocol.md, "Large values").
     */
    public boolean set(byte[] key, byte[] value, SetOptions options) {
        if (core.plainReads && value != null && value.length >= LargeValues.SET_LARGE_FROM) {
            byte[] k = key(key);
            int flags = setFlags(options);
            Boolean written = core.largeValues.set(k, value, flags, options.ttlMillis(), timeout);
            if (written != null) {
                return written;
            }
        }
        return sync(() -> setAsync(key, value, options));
    }

    public boolean set(byte[] key, byte[] value) {
        return set(key, value, SetOptions.NONE);
    }

    /**
     * A direct buffer of {@code capacity} bytes, in huge pages where the kernel gives them, that
     * {@link #set(byte[], java.nio.ByteBuffer, SetOptions)} lends to the server as it is, with no copy on this side.
     * Any client may use it; its memory is freed when it and every view of it are no longer reachable.
     */
    public static java.nio.ByteBuffer allocateLendable(int capacity) {
        return LargeValues.allocateLendable(capacity);
    }

    /**
     * SET of {@code value}'s remaining bytes: true when written (the position then moves to the limit), false when an
     * NX/XX condition was not met. Over ucx, to one server, a direct buffer from {@code rdmastore.client.setLargeFrom}
     * bytes on is read by the server one-sided (docs/protocol.md, "Large values"): a buffer from
     * {@link #allocateLendable} is lent as it is, with no copy on this side, its registration cached while it is the
     * last buffer lent; any other is first copied into the client's registered buffer, which is in huge pages, since
     * the server reads those several times faster than memory in 4 KiB pages. Otherwise the bytes are sent, encoded
     * straight from the buffer (a heap buffer from that size goes as a {@code byte[]} through the client's registered
     * buffer, as {@link #set(byte[], byte[], SetOptions)}).
     *
     * <p>The buffer must not change until the call returns; after a call that got no answer (a time-out, a closed
     * connection) the server may still read it, so it must not change until this client is closed.
     */
    public boolean set(byte[] key, java.nio.ByteBuffer value, SetOptions options) {
        Objects.requireNonNull(value, "value must not be null");
        byte[] k = key(key);
        int flags = setFlags(options);
        boolean large = core.plainReads && value.remaining() >= LargeValues.SET_LARGE_FROM;
        Boolean written = null;
        if (large && value.isDirect()) {
            written = core.largeValues.set(k, value, flags, options.ttlMillis(), timeout);
        } else if (large) {
            // a heap buffer cannot be lent: as a byte[], through the client's registered buffer
            byte[] v = new byte[value.remaining()];
            value.get(value.position(), v);
            written = set(k, v, options);
        }
        if (written == null) {
            // sent: the bytes are encoded straight from the buffer, on this thread, before the call returns
            MemorySegment v = MemorySegment.ofBuffer(value);
            written = sync(() -> call(ProtocolDescriptor.SET, w -> w.u8(flags).i64(options.ttlMillis()).bytes(k)
                .bytes(v), (st, r) -> st == ProtocolDescriptor.STATUS_OK));
        }
        if (written) {
            value.position(value.limit());
        }
        return written;
    }

    public boolean set(byte[] key, java.nio.ByteBuffer value) {
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
        return sync(() -> delAsync(keys));
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
        return sync(() -> existsAsync(keys));
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
        return sync(() -> expireAsync(key, ttl));
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
        return sync(() -> pttlAsync(key));
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
        return sync(() -> incrByAsync(key, delta));
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
        return sync(() -> mgetAsync(keys));
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
        sync(() -> msetAsync(keysAndValues));
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
        return sync(() -> hsetAsync(key, fieldsAndValues));
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
        return sync(() -> hgetAsync(key, field));
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
        return sync(() -> hgetAllAsync(key));
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
        return sync(() -> hdelAsync(key, fields));
    }

    public long hdel(String key, String... fields) {
        return hdel(utf8(key), utf8(fields));
    }

    // ---- data-type commands (lists, sets, sorted sets), transactions and pub/sub: opcodes 41-49 ----

    /**
     * Any data-type command the server's RESP face knows (strings, hashes, lists, sets, sorted sets, keys, PUBLISH),
     * e.g. {@code commandAsync("LPOS", "k", "x")}; arguments are {@code byte[]}, text (UTF-8) or numbers. The value:
     * null, {@link Long}, {@link Double}, {@code byte[]}, {@link String} (a status such as "OK") or a {@link List} of
     * these. Sent as a write (COMMAND); admin, connection and transaction commands are refused by the server.
     */
    public CompletableFuture<Object> commandAsync(Object... args) {
        return command(false, v -> v, args);
    }

    public Object command(Object... args) {
        return sync(() -> commandAsync(args));
    }

    /** As {@link #commandAsync}, for a read-only command: a replica set may serve it from a secondary (COMMAND_READ). */
    public CompletableFuture<Object> readCommandAsync(Object... args) {
        return command(true, v -> v, args);
    }

    public Object readCommand(Object... args) {
        return sync(() -> readCommandAsync(args));
    }

    private <T> CompletableFuture<T> command(boolean read, java.util.function.Function<Object, T> as, Object... args) {
        byte[][] argv = argv(args);
        return call(read ? ProtocolDescriptor.COMMAND_READ : ProtocolDescriptor.COMMAND, w -> keys(w, argv),
            (st, r) -> as.apply(Values.read(r)));
    }

    private static byte[][] argv(Object... args) {
        byte[][] argv = new byte[args.length][];
        for (int i = 0; i < args.length; i++) {
            argv[i] = Transaction.arg(args[i]);
        }
        return argv;
    }

    private static Object[] args(String name, Object key, Object[] rest) {
        return Transaction.prepend(name, key, rest);
    }

    private static Object[] texts(String[] s) {
        return s;
    }

    // ---- lists ----

    /** LPUSH: prepends the values (the last ends up first); returns the list's new length. */
    public CompletableFuture<Long> lpushAsync(byte[] key, byte[]... values) {
        return command(false, Values::asLong, args("LPUSH", key(key), values));
    }

    public long lpush(byte[] key, byte[]... values) {
        return sync(() -> lpushAsync(key, values));
    }

    public long lpush(String key, String... values) {
        return sync(() -> command(false, Values::asLong, args("LPUSH", key, texts(values))));
    }

    /** RPUSH: appends the values; returns the list's new length. */
    public CompletableFuture<Long> rpushAsync(byte[] key, byte[]... values) {
        return command(false, Values::asLong, args("RPUSH", key(key), values));
    }

    public long rpush(byte[] key, byte[]... values) {
        return sync(() -> rpushAsync(key, values));
    }

    public long rpush(String key, String... values) {
        return sync(() -> command(false, Values::asLong, args("RPUSH", key, texts(values))));
    }

    /** LPOP: removes and returns the first element, or null when the list is empty or missing. */
    public CompletableFuture<byte[]> lpopAsync(byte[] key) {
        return command(false, Values::asBytes, "LPOP", key(key));
    }

    public byte[] lpop(byte[] key) {
        return sync(() -> lpopAsync(key));
    }

    public String lpop(String key) {
        return string(lpop(utf8(key)));
    }

    /** LPOP with a count: up to {@code count} elements from the head; empty when the list is missing. */
    public CompletableFuture<List<byte[]>> lpopAsync(byte[] key, long count) {
        return command(false, Values::asBytesList, "LPOP", key(key), count);
    }

    public List<String> lpop(String key, long count) {
        return Values.strings(sync(() -> lpopAsync(utf8(key), count)));
    }

    /** RPOP: removes and returns the last element, or null. */
    public CompletableFuture<byte[]> rpopAsync(byte[] key) {
        return command(false, Values::asBytes, "RPOP", key(key));
    }

    public byte[] rpop(byte[] key) {
        return sync(() -> rpopAsync(key));
    }

    public String rpop(String key) {
        return string(rpop(utf8(key)));
    }

    /** RPOP with a count: up to {@code count} elements from the tail, the last first. */
    public CompletableFuture<List<byte[]>> rpopAsync(byte[] key, long count) {
        return command(false, Values::asBytesList, "RPOP", key(key), count);
    }

    public List<String> rpop(String key, long count) {
        return Values.strings(sync(() -> rpopAsync(utf8(key), count)));
    }

    /** LRANGE: the elements from {@code start} to {@code stop} inclusive; negative indexes count from the tail. */
    public CompletableFuture<List<byte[]>> lrangeAsync(byte[] key, long start, long stop) {
        return command(true, Values::asBytesList, "LRANGE", key(key), start, stop);
    }

    public List<byte[]> lrange(byte[] key, long start, long stop) {
        return sync(() -> lrangeAsync(key, start, stop));
    }

    public List<String> lrange(String key, long start, long stop) {
        return Values.strings(lrange(utf8(key), start, stop));
    }

    /** LLEN: the list's length, 0 when missing. */
    public CompletableFuture<Long> llenAsync(byte[] key) {
        return command(true, Values::asLong, "LLEN", key(key));
    }

    public long llen(byte[] key) {
        return sync(() -> llenAsync(key));
    }

    public long llen(String key) {
        return llen(utf8(key));
    }

    /** LINDEX: the element at {@code index} (negative: from the tail), or null when out of range. */
    public CompletableFuture<byte[]> lindexAsync(byte[] key, long index) {
        return command(true, Values::asBytes, "LINDEX", key(key), index);
    }

    public byte[] lindex(byte[] key, long index) {
        return sync(() -> lindexAsync(key, index));
    }

    public String lindex(String key, long index) {
        return string(lindex(utf8(key), index));
    }

    /** LSET: replaces the element at {@code index}; an index out of range is an error. */
    public CompletableFuture<Void> lsetAsync(byte[] key, long index, byte[] value) {
        return command(false, v -> null, "LSET", key(key), index, value);
    }

    public void lset(byte[] key, long index, byte[] value) {
        sync(() -> lsetAsync(key, index, value));
    }

    public void lset(String key, long index, String value) {
        lset(utf8(key), index, utf8(value));
    }

    /** LREM: removes {@code count} occurrences of {@code value} (from the head; negative: from the tail; 0: all). */
    public CompletableFuture<Long> lremAsync(byte[] key, long count, byte[] value) {
        return command(false, Values::asLong, "LREM", key(key), count, value);
    }

    public long lrem(byte[] key, long count, byte[] value) {
        return sync(() -> lremAsync(key, count, value));
    }

    public long lrem(String key, long count, String value) {
        return lrem(utf8(key), count, utf8(value));
    }

    /** LTRIM: keeps only the elements from {@code start} to {@code stop} inclusive. */
    public CompletableFuture<Void> ltrimAsync(byte[] key, long start, long stop) {
        return command(false, v -> null, "LTRIM", key(key), start, stop);
    }

    public void ltrim(byte[] key, long start, long stop) {
        sync(() -> ltrimAsync(key, start, stop));
    }

    public void ltrim(String key, long start, long stop) {
        ltrim(utf8(key), start, stop);
    }

    /** LINSERT: inserts {@code value} before (or after) the first {@code pivot}; the new length, -1 without pivot. */
    public CompletableFuture<Long> linsertAsync(byte[] key, boolean before, byte[] pivot, byte[] value) {
        return command(false, Values::asLong, "LINSERT", key(key), before ? "BEFORE" : "AFTER", pivot, value);
    }

    public long linsert(byte[] key, boolean before, byte[] pivot, byte[] value) {
        return sync(() -> linsertAsync(key, before, pivot, value));
    }

    public long linsert(String key, boolean before, String pivot, String value) {
        return linsert(utf8(key), before, utf8(pivot), utf8(value));
    }

    /** LMOVE: pops from {@code from}'s end of {@code source} and pushes to {@code to}'s end of {@code destination}. */
    public CompletableFuture<byte[]> lmoveAsync(byte[] source, byte[] destination, ListEnd from, ListEnd to) {
        return command(false, Values::asBytes, "LMOVE", key(source), key(destination), from, to);
    }

    public byte[] lmove(byte[] source, byte[] destination, ListEnd from, ListEnd to) {
        return sync(() -> lmoveAsync(source, destination, from, to));
    }

    public String lmove(String source, String destination, ListEnd from, ListEnd to) {
        return string(lmove(utf8(source), utf8(destination), from, to));
    }

    /**
     * BLPOP: pops the head of the first non-empty list among {@code keys}, waiting up to {@code wait} (> 0) for one
     * to get an element; the key and the element, or null when the wait ended. The server does not hold its threads
     * (nor later requests on the connection) while it waits; the call's time-out is {@code wait} plus the client's.
     */
    public CompletableFuture<Map.Entry<byte[], byte[]>> blpopAsync(Duration wait, byte[]... keys) {
        return waiting(wait).blocking("BLPOP", wait, keys);
    }

    public Map.Entry<byte[], byte[]> blpop(Duration wait, byte[]... keys) {
        RdmaStoreClient view = waiting(wait);
        return view.sync(() -> view.blocking("BLPOP", wait, keys));
    }

    public Map.Entry<String, String> blpop(Duration wait, String... keys) {
        return text(blpop(wait, utf8(keys)));
    }

    /** BRPOP: as {@link #blpopAsync}, from the tail. */
    public CompletableFuture<Map.Entry<byte[], byte[]>> brpopAsync(Duration wait, byte[]... keys) {
        return waiting(wait).blocking("BRPOP", wait, keys);
    }

    public Map.Entry<byte[], byte[]> brpop(Duration wait, byte[]... keys) {
        RdmaStoreClient view = waiting(wait);
        return view.sync(() -> view.blocking("BRPOP", wait, keys));
    }

    /** A view whose call time-out covers a blocking command's {@code wait} on top of this view's time-out. */
    private RdmaStoreClient waiting(Duration wait) {
        if (wait.isNegative() || wait.isZero()) {
            throw new IllegalArgumentException("a blocking pop needs a positive wait, got " + wait);
        }
        return withTimeout(timeout.plus(wait));
    }

    public Map.Entry<String, String> brpop(Duration wait, String... keys) {
        return text(brpop(wait, utf8(keys)));
    }

    private CompletableFuture<Map.Entry<byte[], byte[]>> blocking(String name, Duration wait, byte[][] keys) {
        if (keys.length == 0) {
            throw new IllegalArgumentException(name + " needs at least one key");
        }
        Object[] args = new Object[keys.length + 2];
        args[0] = name;
        System.arraycopy(keys, 0, args, 1, keys.length);
        args[keys.length + 1] = String.format(java.util.Locale.ROOT, "%.3f", wait.toNanos() / 1e9);
        return command(false, Values::asKeyValue, args);
    }

    private static Map.Entry<String, String> text(Map.Entry<byte[], byte[]> e) {
        return e == null ? null : Map.entry(string(e.getKey()), string(e.getValue()));
    }

    // ---- sets ----

    /** SADD: adds the members; returns how many were new. */
    public CompletableFuture<Long> saddAsync(byte[] key, byte[]... members) {
        return command(false, Values::asLong, args("SADD", key(key), members));
    }

    public long sadd(byte[] key, byte[]... members) {
        return sync(() -> saddAsync(key, members));
    }

    public long sadd(String key, String... members) {
        return sync(() -> command(false, Values::asLong, args("SADD", key, texts(members))));
    }

    /** SREM: removes the members; returns how many were there. */
    public CompletableFuture<Long> sremAsync(byte[] key, byte[]... members) {
        return command(false, Values::asLong, args("SREM", key(key), members));
    }

    public long srem(byte[] key, byte[]... members) {
        return sync(() -> sremAsync(key, members));
    }

    public long srem(String key, String... members) {
        return sync(() -> command(false, Values::asLong, args("SREM", key, texts(members))));
    }

    /** SMEMBERS: every member, in no particular order; empty when missing. */
    public CompletableFuture<List<byte[]>> smembersAsync(byte[] key) {
        return command(true, Values::asBytesList, "SMEMBERS", key(key));
    }

    public List<byte[]> smembers(byte[] key) {
        return sync(() -> smembersAsync(key));
    }

    public java.util.Set<String> smembers(String key) {
        return Values.stringSet(smembers(utf8(key)));
    }

    /** SISMEMBER: whether {@code member} is in the set. */
    public CompletableFuture<Boolean> sismemberAsync(byte[] key, byte[] member) {
        return command(true, Values::asBoolean, "SISMEMBER", key(key), member);
    }

    public boolean sismember(byte[] key, byte[] member) {
        return sync(() -> sismemberAsync(key, member));
    }

    public boolean sismember(String key, String member) {
        return sismember(utf8(key), utf8(member));
    }

    /** SCARD: the number of members, 0 when missing. */
    public CompletableFuture<Long> scardAsync(byte[] key) {
        return command(true, Values::asLong, "SCARD", key(key));
    }

    public long scard(byte[] key) {
        return sync(() -> scardAsync(key));
    }

    public long scard(String key) {
        return scard(utf8(key));
    }

    /** SPOP: removes and returns a random member, or null when the set is empty. */
    public CompletableFuture<byte[]> spopAsync(byte[] key) {
        return command(false, Values::asBytes, "SPOP", key(key));
    }

    public byte[] spop(byte[] key) {
        return sync(() -> spopAsync(key));
    }

    public String spop(String key) {
        return string(spop(utf8(key)));
    }

    /** SPOP with a count: up to {@code count} random members, removed. */
    public CompletableFuture<List<byte[]>> spopAsync(byte[] key, long count) {
        return command(false, Values::asBytesList, "SPOP", key(key), count);
    }

    public List<String> spop(String key, long count) {
        return Values.strings(sync(() -> spopAsync(utf8(key), count)));
    }

    /** SRANDMEMBER: a random member (not removed), or null. */
    public CompletableFuture<byte[]> srandmemberAsync(byte[] key) {
        return command(true, Values::asBytes, "SRANDMEMBER", key(key));
    }

    public byte[] srandmember(byte[] key) {
        return sync(() -> srandmemberAsync(key));
    }

    public String srandmember(String key) {
        return string(srandmember(utf8(key)));
    }

    /** SRANDMEMBER with a count: distinct members when positive, possibly repeated when negative. */
    public CompletableFuture<List<byte[]>> srandmemberAsync(byte[] key, long count) {
        return command(true, Values::asBytesList, "SRANDMEMBER", key(key), count);
    }

    public List<String> srandmember(String key, long count) {
        return Values.strings(sync(() -> srandmemberAsync(utf8(key), count)));
    }

    /** SINTER: the members in every one of the sets. */
    public CompletableFuture<List<byte[]>> sinterAsync(byte[]... keys) {
        return setOp("SINTER", keys);
    }

    public java.util.Set<String> sinter(String... keys) {
        return Values.stringSet(sync(() -> sinterAsync(utf8(keys))));
    }

    /** SUNION: the members in any of the sets. */
    public CompletableFuture<List<byte[]>> sunionAsync(byte[]... keys) {
        return setOp("SUNION", keys);
    }

    public java.util.Set<String> sunion(String... keys) {
        return Values.stringSet(sync(() -> sunionAsync(utf8(keys))));
    }

    /** SDIFF: the members of the first set that are in none of the others. */
    public CompletableFuture<List<byte[]>> sdiffAsync(byte[]... keys) {
        return setOp("SDIFF", keys);
    }

    public java.util.Set<String> sdiff(String... keys) {
        return Values.stringSet(sync(() -> sdiffAsync(utf8(keys))));
    }

    private CompletableFuture<List<byte[]>> setOp(String name, byte[][] keys) {
        Object[] args = new Object[keys.length + 1];
        args[0] = name;
        System.arraycopy(keys, 0, args, 1, keys.length);
        return command(true, Values::asBytesList, args);
    }

    // ---- sorted sets ----

    /**
     * ZADD: sets the members' scores ({@code scores}: member to score, in the map's order) under {@code options};
     * returns how many members were added (with CH: added or changed).
     */
    public CompletableFuture<Long> zaddAsync(byte[] key, ZAddOptions options, Map<byte[], Double> scores) {
        List<Object> a = new ArrayList<>(scores.size() * 2 + 7);
        a.add("ZADD");
        a.add(key(key));
        if (options.onlyNew()) {
            a.add("NX");
        }
        if (options.onlyExisting()) {
            a.add("XX");
        }
        if (options.onlyGreater()) {
            a.add("GT");
        }
        if (options.onlyLess()) {
            a.add("LT");
        }
        if (options.countChanged()) {
            a.add("CH");
        }
        for (Map.Entry<byte[], Double> e : scores.entrySet()) {
            a.add(Objects.requireNonNull(e.getValue(), "score"));
            a.add(e.getKey());
        }
        return command(false, Values::asLong, a.toArray());
    }

    public long zadd(byte[] key, ZAddOptions options, Map<byte[], Double> scores) {
        return sync(() -> zaddAsync(key, options, scores));
    }

    /** ZADD of text members; {@code scores} is member to score. */
    public long zadd(String key, ZAddOptions options, Map<String, Double> scores) {
        Map<byte[], Double> raw = new LinkedHashMap<>();
        for (Map.Entry<String, Double> e : scores.entrySet()) {
            raw.put(utf8(e.getKey()), e.getValue());
        }
        return zadd(utf8(key), options, raw);
    }

    public long zadd(String key, double score, String member) {
        return zadd(key, ZAddOptions.NONE, Map.of(member, score));
    }

    /** ZINCRBY: adds {@code delta} to the member's score (a missing member starts at 0); the new score. */
    public CompletableFuture<Double> zincrbyAsync(byte[] key, double delta, byte[] member) {
        return command(false, Values::asDouble, "ZINCRBY", key(key), delta, member);
    }

    public double zincrby(byte[] key, double delta, byte[] member) {
        return sync(() -> zincrbyAsync(key, delta, member));
    }

    public double zincrby(String key, double delta, String member) {
        return zincrby(utf8(key), delta, utf8(member));
    }

    /** ZSCORE: the member's score, or null. */
    public CompletableFuture<Double> zscoreAsync(byte[] key, byte[] member) {
        return command(true, Values::asDouble, "ZSCORE", key(key), member);
    }

    public Double zscore(byte[] key, byte[] member) {
        return sync(() -> zscoreAsync(key, member));
    }

    public Double zscore(String key, String member) {
        return zscore(utf8(key), utf8(member));
    }

    /** ZRANK: the member's index by ascending score, or null. */
    public CompletableFuture<Long> zrankAsync(byte[] key, byte[] member) {
        return command(true, Values::asLongOrNull, "ZRANK", key(key), member);
    }

    public Long zrank(String key, String member) {
        return sync(() -> zrankAsync(utf8(key), utf8(member)));
    }

    /** ZREVRANK: the member's index by descending score, or null. */
    public CompletableFuture<Long> zrevrankAsync(byte[] key, byte[] member) {
        return command(true, Values::asLongOrNull, "ZREVRANK", key(key), member);
    }

    public Long zrevrank(String key, String member) {
        return sync(() -> zrevrankAsync(utf8(key), utf8(member)));
    }

    /** ZCARD: the number of members, 0 when missing. */
    public CompletableFuture<Long> zcardAsync(byte[] key) {
        return command(true, Values::asLong, "ZCARD", key(key));
    }

    public long zcard(byte[] key) {
        return sync(() -> zcardAsync(key));
    }

    public long zcard(String key) {
        return zcard(utf8(key));
    }

    /** ZREM: removes the members; returns how many were there. */
    public CompletableFuture<Long> zremAsync(byte[] key, byte[]... members) {
        return command(false, Values::asLong, args("ZREM", key(key), members));
    }

    public long zrem(byte[] key, byte[]... members) {
        return sync(() -> zremAsync(key, members));
    }

    public long zrem(String key, String... members) {
        return sync(() -> command(false, Values::asLong, args("ZREM", key, texts(members))));
    }

    /** ZRANGE by rank: the members from {@code start} to {@code stop} inclusive, by ascending score. */
    public CompletableFuture<List<byte[]>> zrangeAsync(byte[] key, long start, long stop) {
        return command(true, Values::asBytesList, "ZRANGE", key(key), start, stop);
    }

    public List<String> zrange(String key, long start, long stop) {
        return Values.strings(sync(() -> zrangeAsync(utf8(key), start, stop)));
    }

    /** ZRANGE by rank WITHSCORES. */
    public CompletableFuture<List<ScoredMember>> zrangeWithScoresAsync(byte[] key, long start, long stop) {
        return command(true, Values::asScored, "ZRANGE", key(key), start, stop, "WITHSCORES");
    }

    public List<ScoredMember> zrangeWithScores(String key, long start, long stop) {
        return sync(() -> zrangeWithScoresAsync(utf8(key), start, stop));
    }

    /** ZRANGEBYSCORE: members with {@code min <= score <= max} (infinities allowed), by ascending score. */
    public CompletableFuture<List<byte[]>> zrangeByScoreAsync(byte[] key, double min, double max) {
        return command(true, Values::asBytesList, "ZRANGEBYSCORE", key(key), min, max);
    }

    public List<String> zrangeByScore(String key, double min, double max) {
        return Values.strings(sync(() -> zrangeByScoreAsync(utf8(key), min, max)));
    }

    /** ZRANGEBYSCORE WITHSCORES. */
    public CompletableFuture<List<ScoredMember>> zrangeByScoreWithScoresAsync(byte[] key, double min, double max) {
        return command(true, Values::asScored, "ZRANGEBYSCORE", key(key), min, max, "WITHSCORES");
    }

    public List<ScoredMember> zrangeByScoreWithScores(String key, double min, double max) {
        return sync(() -> zrangeByScoreWithScoresAsync(utf8(key), min, max));
    }

    /** ZPOPMIN: removes and returns up to {@code count} members with the lowest scores. */
    public CompletableFuture<List<ScoredMember>> zpopminAsync(byte[] key, long count) {
        return command(false, Values::asScored, "ZPOPMIN", key(key), count);
    }

    public List<ScoredMember> zpopmin(String key, long count) {
        return sync(() -> zpopminAsync(utf8(key), count));
    }

    /** ZPOPMAX: removes and returns up to {@code count} members with the highest scores, highest first. */
    public CompletableFuture<List<ScoredMember>> zpopmaxAsync(byte[] key, long count) {
        return command(false, Values::asScored, "ZPOPMAX", key(key), count);
    }

    public List<ScoredMember> zpopmax(String key, long count) {
        return sync(() -> zpopmaxAsync(utf8(key), count));
    }

    /** ZCOUNT: how many members have {@code min <= score <= max}. */
    public CompletableFuture<Long> zcountAsync(byte[] key, double min, double max) {
        return command(true, Values::asLong, "ZCOUNT", key(key), min, max);
    }

    public long zcount(String key, double min, double max) {
        return sync(() -> zcountAsync(utf8(key), min, max));
    }

    // ---- transactions ----

    /**
     * Runs the commands {@code body} queues as one transaction (MULTI/EXEC): atomically, with no other client's command
     * between them, logged as one record. Returns one value per command, in order: null, {@link Long},
     * {@link Double}, {@code byte[]}, {@link String} (a status such as "OK"), a {@link List} of these, or an
     * {@link RdmaStoreServerException} for a command that failed when it ran (the others still ran, as in Redis). A
     * command the server refuses before running any (unknown, wrong arguments) fails the whole call with
     * {@code EXECABORT}.
     */
    public CompletableFuture<List<Object>> transactionAsync(java.util.function.Consumer<Transaction> body) {
        return transactionAsync(0, body);
    }

    public List<Object> transaction(java.util.function.Consumer<Transaction> body) {
        return sync(() -> transactionAsync(body));
    }

    /** Run by {@link Watch}: {@code watch} 0 is none; null when a watched key changed. */
    List<Object> transaction(long watch, java.util.function.Consumer<Transaction> body) {
        return sync(() -> transactionAsync(watch, body));
    }

    private CompletableFuture<List<Object>> transactionAsync(long watch, java.util.function.Consumer<Transaction> body) {
        Transaction tx = new Transaction();
        body.accept(tx);
        List<byte[][]> commands = List.copyOf(tx.commands());
        if (commands.isEmpty()) {
            return CompletableFuture.completedFuture(List.of());
        }
        return call(ProtocolDescriptor.TRANSACTION, w -> {
            w.i64(watch).i32(commands.size());
            for (byte[][] argv : commands) {
                keys(w, argv);
            }
        }, (st, r) -> {
            Object v = Values.read(r);
            return v == null ? null : Values.asList(v);
        });
    }

    /**
     * WATCH: watches the keys for one optimistic transaction ({@link Watch#transaction}), which runs only if none of
     * them changed in between. Close the watch when no transaction follows.
     */
    public Watch watch(byte[]... keys) {
        byte[][] ks = keys.clone();
        long id = core.await(core.awaitedCall(ProtocolDescriptor.WATCH, w -> keys(w, ks), LONG_REPLY, timeout), timeout);
        return new Watch(this, id);
    }

    public Watch watch(String... keys) {
        return watch(utf8(keys));
    }

    void unwatch(long id) {
        core.await(core.awaitedCall(ProtocolDescriptor.UNWATCH, w -> w.i64(id), (st, r) -> null, timeout), timeout);
    }

    // ---- pub/sub ----

    /**
     * SUBSCRIBE: {@code listener} receives the messages published to the channels (by any client, native or RESP) from
     * when this returns until the subscription is closed, in the order the server sent them, on the client's pub/sub
     * thread. Messages a listener does not consume fast enough queue in the server up to its pub/sub output limit,
     * past which it disconnects this client.
     */
    public Subscription subscribe(MessageListener listener, byte[]... channels) {
        return subscribe(listener, List.of(channels.clone()), false);
    }

    public Subscription subscribe(MessageListener listener, String... channels) {
        return subscribe(listener, List.of(utf8(channels)), false);
    }

    /** PSUBSCRIBE: as {@link #subscribe} for every channel matching one of the glob patterns. */
    public Subscription psubscribe(MessageListener listener, String... patterns) {
        return subscribe(listener, List.of(utf8(patterns)), true);
    }

    private Subscription subscribe(MessageListener listener, List<byte[]> names, boolean pattern) {
        Objects.requireNonNull(listener, "listener");
        if (names.isEmpty()) {
            throw new IllegalArgumentException("subscribe needs at least one channel or pattern");
        }
        return core.pubsub(this::subscription).subscribe(listener, names, pattern);
    }

    /** Sends one of the (P)(UN)SUBSCRIBE opcodes and waits: the subscriptions the connection holds after it. */
    private long subscription(byte opcode, List<byte[]> names) {
        return core.await(core.awaitedCall(opcode, w -> {
            w.i32(names.size());
            for (byte[] n : names) {
                w.bytes(n);
            }
        }, LONG_REPLY, timeout), timeout);
    }

    /** PUBLISH: sends {@code message} to the channel's subscribers (native and RESP); how many received it. */
    public CompletableFuture<Long> publishAsync(byte[] channel, byte[] message) {
        return command(false, Values::asLong, "PUBLISH", channel, message);
    }

    public long publish(byte[] channel, byte[] message) {
        return sync(() -> publishAsync(channel, message));
    }

    public long publish(String channel, String message) {
        return publish(utf8(channel), utf8(message));
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

    <T> T docSync(java.util.function.Supplier<CompletableFuture<T>> request) {
        return sync(request);
    }
}
