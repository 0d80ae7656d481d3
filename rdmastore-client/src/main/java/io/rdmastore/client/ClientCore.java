package io.rdmastore.client;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.ProtocolException;
import io.rdmastore.client.protocol.WireReader;
import io.rdmastore.client.protocol.WireWriter;
import io.rdmastore.transport.CarrierTransport;
import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.Transport;
import io.rdmastore.transport.TransportException;
import io.rdmastore.transport.TransportStatus;
import io.rdmastore.transport.Transports;
import io.rdmastore.transport.UpgradeTransport;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connection and call machinery shared by a client and its {@link RdmaStoreClient#withTimeout} views: one
 * {@link Network}, one live session at a time (replaced after a disconnect), request ids, the calls in flight and their
 * time-outs.
 *
 * <p>Threads: thread-safe. Calls are sent from the caller's thread; replies are decoded on the thread that reads them,
 * which completes the call's future: the transport's, or over tcp a waiting caller reading the socket itself
 * ({@link Connection#awaitReading}), or a ucx caller driving the worker. Memory: each sending thread encodes into its
 * own reusable {@link WireWriter}; the transport copies it before {@code offer} returns.
 */
final class ClientCore implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ClientCore.class);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    /**
     * One timer thread for every client: it sweeps the live sessions' pending calls for expired deadlines and retires
     * replaced sessions. A daemon, so it never keeps a JVM alive. No task is scheduled per call. The sweeps come every
     * twentieth of the shortest time-out any call of this JVM has had, between {@link #SWEEP_MIN_NANOS} and
     * {@link #SWEEP_MAX_NANOS} (a call's time-out fires up to that late: 250 ms for the default 5 s): each sweep takes
     * a core from a spinning caller or server for 50-150 us on a small VM, which at a 10 ms period was a share of
     * the 1 KiB GET's p99.99 (decisions.md, "E2's 1 KiB GET p99.9 ...").
     */
    private static final ScheduledThreadPoolExecutor TIMER;
    private static final long SWEEP_MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private static final long SWEEP_MAX_NANOS = TimeUnit.MILLISECONDS.toNanos(250);
    /** The sweeps' period now; it only shrinks. Written under {@link #SWEEP_LOCK}. */
    private static volatile long sweepNanos = SWEEP_MAX_NANOS;
    private static final Object SWEEP_LOCK = new Object();
    /** The next sweep, and its chain's number (a replaced chain stops at its next run). Guarded by SWEEP_LOCK. */
    private static ScheduledFuture<?> nextSweep;
    private static long sweepChain;
    /** Sweeps run so far (for tests). */
    private static final AtomicLong SWEEPS = new AtomicLong();
    /** Sessions whose pending calls the sweeper checks. */
    private static final Set<Session> LIVE = ConcurrentHashMap.newKeySet();

    static {
        TIMER = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "rdmastore-client-timer");
            t.setDaemon(true);
            return t;
        });
        TIMER.setRemoveOnCancelPolicy(true);
        synchronized (SWEEP_LOCK) {
            armSweepLocked(sweepNanos);
        }
    }

    private static void armSweepLocked(long delayNanos) {
        long chain = sweepChain;
        nextSweep = TIMER.schedule(() -> sweepAndRearm(chain), delayNanos, TimeUnit.NANOSECONDS);
    }

    /**
     * A call with this time-out is about to wait: if a twentieth of it is shorter than the sweeps' period, the period
     * shrinks to it and the next sweep comes that soon. One volatile read per call otherwise.
     */
    static void sweepWithin(long timeoutNanos) {
        long want = Math.max(SWEEP_MIN_NANOS, timeoutNanos / 20);
        if (want >= sweepNanos) {
            return;
        }
        synchronized (SWEEP_LOCK) {
            if (want < sweepNanos) {
                sweepNanos = want;
                nextSweep.cancel(false);
                sweepChain++;
                armSweepLocked(want);
            }
        }
    }

    /** The sweeps' period now. */
    static long sweepPeriodNanos() {
        return sweepNanos;
    }

    /** Sweeps run so far. */
    static long sweeps() {
        return SWEEPS.get();
    }

    /** One sweep, then the next one a period later unless a shorter period started a new chain. Timer thread. */
    private static void sweepAndRearm(long chain) {
        try {
            sweep();
        } finally {
            synchronized (SWEEP_LOCK) {
                if (chain == sweepChain) {
                    armSweepLocked(sweepNanos);
                }
            }
        }
    }

    /** Fails every pending call whose deadline passed. Timer thread. */
    private static void sweep() {
        SWEEPS.incrementAndGet();
        long now = System.nanoTime();
        for (Session s : LIVE) {
            try {
                s.pending.expire(now, e -> {
                    Call<?> call = (Call<?>) e;
                    boolean write = isWrite(call.opcode);
                    call.completeExceptionally(new RdmaStoreTimeoutException(ProtocolDescriptor.opcodeName(
                        call.opcode) + " timed out after " + call.timeoutMillis + " ms waiting for the reply from "
                        + s.address + (write ? " (outcome unknown: the write may have been applied)" : ""), write));
                });
            } catch (RuntimeException ex) {
                LOG.warn("sweeping the calls of {} failed", s.address, ex);
            }
        }
    }

    /**
     * Threads that retry a call after a failover: rediscovery connects and waits, which must never happen on a
     * transport thread that delivered the NOTPRIMARY. Daemons, created on demand, gone after 10 s idle.
     */
    private static final Executor FAILOVER;

    static {
        ThreadPoolExecutor pool = new ThreadPoolExecutor(4, 4, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "rdmastore-client-failover");
            t.setDaemon(true);
            return t;
        });
        pool.allowCoreThreadTimeOut(true);
        FAILOVER = pool;
    }

    /** What each opcode does to stored data, for routing and retries: {@link #READ}, {@link #WRITE} or 0. */
    private static final byte[] KIND = new byte[256];
    static final byte READ = 1;
    static final byte WRITE = 2;

    static {
        for (byte op : new byte[] {ProtocolDescriptor.GET, ProtocolDescriptor.EXISTS, ProtocolDescriptor.PTTL,
            ProtocolDescriptor.HGET, ProtocolDescriptor.HGETALL, ProtocolDescriptor.MGET, ProtocolDescriptor.DOC_FIND,
            ProtocolDescriptor.DOC_COUNT, ProtocolDescriptor.BLOB_GET, ProtocolDescriptor.COMMAND_READ,
            ProtocolDescriptor.GET_LARGE, ProtocolDescriptor.DOC_INDEXES}) {
            KIND[op] = READ;
        }
        for (byte op : new byte[] {ProtocolDescriptor.SET, ProtocolDescriptor.DEL, ProtocolDescriptor.PEXPIRE,
            ProtocolDescriptor.INCRBY, ProtocolDescriptor.HSET, ProtocolDescriptor.HDEL, ProtocolDescriptor.MSET,
            ProtocolDescriptor.DOC_INSERT, ProtocolDescriptor.DOC_UPDATE, ProtocolDescriptor.DOC_DELETE,
            ProtocolDescriptor.BLOB_PUT, ProtocolDescriptor.BLOB_DEL, ProtocolDescriptor.COMMAND,
            ProtocolDescriptor.TRANSACTION, ProtocolDescriptor.MIGRATE_PULL, ProtocolDescriptor.SET_LARGE,
            ProtocolDescriptor.DOC_INDEX}) {
            KIND[op] = WRITE;
        }
    }

    /** Whether {@code opcode} changes stored data (so its outcome is unknown when its reply is lost). */
    static boolean isWrite(byte opcode) {
        return KIND[opcode & 0xFF] == WRITE;
    }

    static byte kind(byte opcode) {
        return KIND[opcode & 0xFF];
    }

    private static final ThreadLocal<WireWriter> WRITERS = ThreadLocal.withInitial(() -> new WireWriter(4096));

    final ClientConfig config;
    private final Network network;
    private final List<Transport> transports;
    private final String ucxUnavailable;
    private final AtomicLong ids = new AtomicLong();
    private final Object connectLock = new Object();
    /** The session writes go to: the single host, or the replica set's primary. */
    private volatile Session session;
    private volatile boolean closed;
    /** Whether this client discovers a replica set (several seeds or a set name). */
    final boolean replicated;
    /** Reads go through {@link Operation} (replica set, or linearizable reads); else straight to {@link #call}. */
    final boolean plainReads;
    /** Replica set with a read preference other than primary: the secondary serving reads, or null. */
    private volatile Session secondary;
    private volatile Topology topology;
    /** Subscriptions, made on the first subscribe; guarded by connectLock when set. */
    private volatile PubSub pubsub;
    /** Channels to other members for blob puts' parallel pulls, by address. */
    private final Map<String, PeerChannel> memberChannels = new java.util.concurrent.ConcurrentHashMap<>();
    /** GET_LARGE's buffers and leases done with (docs/protocol.md, "Large values"). */
    final LargeValues largeValues = new LargeValues(this);
    /** Members to ask for their ROLE: the seeds, then every member a ROLE reply named. Guarded by connectLock. */
    private final List<InetSocketAddress> known = new ArrayList<>();
    /** When a discovery last ran (System.nanoTime); guarded by connectLock. */
    private long lastDiscovery;

    /** Decodes a reply's body on the transport thread; {@code status} is OK or NULL. */
    @FunctionalInterface
    interface Decoder<T> {
        T decode(byte status, WireReader body);
    }

    /** Writes a request's body after the header. */
    @FunctionalInterface
    interface Encoder {
        void encode(WireWriter w);
    }

    ClientCore(ClientConfig config) {
        this.config = config;
        this.replicated = config.isReplicaSet();
        this.plainReads = !replicated && config.readConcern() == ReadConcern.LOCAL;
        this.known.addAll(config.seeds());
        InetSocketAddress seed = config.seeds().get(0);
        this.topology = new Topology("", 0, "", ClientConfig.address(seed),
            List.of(new Topology.Member("", ClientConfig.address(seed))), "");
        CarrierTransport carrier = config.tls() ? tlsCarrier(config) : SharedCarrier.acquire();
        Network.Context ctx = new Network.Context().carrier(carrier);
        String why = null;
        if (!config.transport().equals("tcp")) {
            try {
                // a client needs one ring per connection, not a server's budget; its waiting threads drive the worker
                java.util.Properties ucx = new java.util.Properties();
                // a replica-set client holds a connection to the primary, one to a secondary and probes the rest
                int slots = replicated ? 2 * config.seeds().size() + 2 : 2;
                ucx.setProperty("maxConnections", Integer.toString(slots));
                ucx.setProperty("memoryBudget", Long.toString((8L << 20) * slots / 2));
                // the thread waiting for a reply drives the worker; the agent only serves async callers, so it sleeps soon
                ucx.setProperty("idleStrategy", "light");
                Transport t = Transports.load(Transports.UCX, ucx);
                if (t instanceof UpgradeTransport u) {
                    if (u.isAvailable()) {
                        ctx.upgrade(u);
                    } else {
                        why = "ucx unavailable in this client: " + u.unavailabilityCause();
                        u.close();
                    }
                } else {
                    t.close();
                    why = Transports.UCX + " is not an upgrade transport";
                }
            } catch (TransportException | LinkageError e) {
                why = "ucx provider cannot be loaded in this client: " + e.getMessage();
            }
            if (why != null) {
                if (config.transport().equals("ucx")) {
                    carrier.close();
                    throw new RdmaStoreConnectionException("transport=ucx was requested but " + why);
                }
                LOG.info("{}; connecting over tcp", why);
            }
        }
        this.ucxUnavailable = why;
        this.network = new Network(ctx);
        this.transports = network.transports();
    }

    /** A carrier of this client's own (the shared one speaks plain TCP) that connects with TLS. */
    private static CarrierTransport tlsCarrier(ClientConfig config) {
        java.util.Properties p = new java.util.Properties();
        p.setProperty("tls", "true");
        if (config.tlsTrust() != null) {
            p.setProperty("tlsTrust", config.tlsTrust());
        }
        Transport t;
        try {
            t = Transports.load(Transports.TCP, p);
        } catch (TransportException e) {
            throw new RdmaStoreConnectionException("cannot set up TLS: " + e.getMessage(), e);
        }
        if (!(t instanceof CarrierTransport c)) {
            t.close();
            throw new RdmaStoreException(Transports.TCP + " is not a carrier transport");
        }
        return c;
    }

    // ---- sessions ----

    /** One connection and the calls in flight on it. */
    private final class Session implements MessageHandler {
        final PendingCalls pending = new PendingCalls();
        /** The member this session is connected to, {@code host:port}. */
        final String address;
        final WireReader reader = new WireReader();
        volatile Connection connection;
        volatile boolean open = true;
        volatile String serverReason;
        /** Whether a waiting thread must drive the transports (an upgraded, possibly invoker-mode connection). */
        volatile boolean driven;
        /** Set when the member answered NOTPRIMARY: writes must go elsewhere, so the next call rediscovers. */
        volatile boolean notPrimary;
        /** {@link Operation}s sent on this session and not yet settled (a failover waits for them: see retryLater). */
        final AtomicInteger operations = new AtomicInteger();

        Session(String address) {
            this.address = address;
        }

        @Override
        public void onMessage(Connection c, MemorySegment message) {
            if (message.byteSize() < ProtocolDescriptor.HEADER_LENGTH) {
                LOG.warn("closing {}: reply of {} bytes is shorter than the header", c.describe(), message.byteSize());
                c.close();
                return;
            }
            byte status = message.get(ValueLayout.JAVA_BYTE, ProtocolDescriptor.TYPE_OFFSET);
            long id = message.get(LONG, ProtocolDescriptor.REQUEST_ID_OFFSET);
            WireReader r = reader.wrap(message, ProtocolDescriptor.HEADER_LENGTH);
            if (id == ProtocolDescriptor.UNSOLICITED_REQUEST_ID) {
                if (status == ProtocolDescriptor.STATUS_PUSH) {
                    push(r);
                    r.clear();
                    return;
                }
                serverReason = r.restString();
                r.clear();
                return;
            }
            Call<?> call = (Call<?>) pending.remove(id);
            if (call != null) {
                call.complete(status, r);
            }
            r.clear();
        }

        @Override
        public void onClose(Connection c, Throwable cause) {
            open = false;
            LIVE.remove(this);
            String reason = serverReason != null ? "server closed the connection: " + serverReason
                : "connection to " + address + " lost"
                    + (cause != null ? ": " + cause.getMessage() : "");
            failAll(reason, cause);
        }

        void failAll(String reason, Throwable cause) {
            // in the order sent (ids increase), so that calls retried after a failover keep their order
            for (PendingCalls.Entry e : pending.drain()) {
                Call<?> call = (Call<?>) e;
                {
                    boolean write = isWrite(call.opcode);
                    call.completeExceptionally(new RdmaStoreConnectionException(reason + " while "
                        + ProtocolDescriptor.opcodeName(call.opcode) + " was in flight"
                        + (write ? " (outcome unknown: the write may have been applied)" : ""), cause, write));
                }
            }
        }
    }

    /** A pub/sub message pushed by the server: decoded here, delivered on the pub/sub thread. Transport thread. */
    private void push(WireReader r) {
        PubSub p = pubsub;
        if (p == null) {
            return;
        }
        try {
            p.onPush(Values.read(r));
        } catch (ProtocolException e) {
            LOG.warn("ignoring a malformed push: {}", e.getMessage());
        }
    }

    /** The session writes go to: the single host, or the primary (discovered first when needed). */
    private Session session() {
        Session s = session;
        if (s != null && s.open && !s.notPrimary) {
            return s;
        }
        return replicated ? primarySession(System.nanoTime() + failoverNanos()) : connectSingle();
    }

    private Session connectSingle() {
        synchronized (connectLock) {
            Session s = session;
            if (s != null && s.open) {
                return s;
            }
            if (closed) {
                throw new RdmaStoreException("client is closed");
            }
            s = open(config.seeds().get(0));
            // A PING proves the session works end to end and surfaces a refusal the server sends after the handshake.
            prove(s, ProtocolDescriptor.PING, (st, r) -> r.restString());
            LOG.debug("connected to {} over {}: {}", s.address, s.connection.transportName(),
                s.connection.selectionReason());
            session = s;
            return s;
        }
    }

    /** Connects (transport handshake only) to {@code target}. */
    private Session open(InetSocketAddress target) {
        Session s = new Session(ClientConfig.address(target));
        ConnectOptions options = new ConnectOptions(config.transport(), config.credentials(), config.timeout());
        Connection c;
        try {
            c = network.connect(new InetSocketAddress(target.getHostString(), target.getPort()), s, options);
        } catch (TransportException | IllegalArgumentException | SecurityException e) {
            throw new RdmaStoreConnectionException("cannot connect to " + s.address + " (transport="
                + config.transport() + "): " + e.getMessage(), e);
        }
        s.connection = c;
        s.driven = !c.transportName().equals("tcp");
        LIVE.add(s);
        if (!c.isOpen()) {
            s.open = false;
            LIVE.remove(s);
        }
        return s;
    }

    /** Sends the first request of a new session and waits for it; closes the session when it fails. */
    private <T> T prove(Session s, byte opcode, Decoder<T> decoder) {
        Call<T> call = send(s, opcode, w -> { }, decoder, config.timeout());
        try {
            return await(s, call, config.timeout());
        } catch (RdmaStoreException e) {
            s.open = false;
            s.connection.close();
            throw new RdmaStoreConnectionException("cannot connect to " + s.address + ": " + e.getMessage(), e);
        }
    }

    String transport() {
        return session().connection.transportName();
    }

    String transportReason() {
        String reason = session().connection.selectionReason();
        return ucxUnavailable != null && config.transport().equals("auto") ? reason + " (" + ucxUnavailable + ")"
            : reason;
    }

    // ---- calls ----

    /** A call in flight: its future, opcode, decoder and time-out. */
    static final class Call<T> extends CompletableFuture<T> implements PendingCalls.Entry {
        final byte opcode;
        final Decoder<T> decoder;
        /** Set before the call is added to its session's pending calls, never after. */
        long id;
        long deadlineNanos;
        long timeoutMillis;
        /**
         * Rounds a thread waiting for this call yields beyond {@link #YIELD_ROUNDS} before it blocks: a reply known to
         * take a while (a lent value's read and log write) is then caught by polling, where a blocked waiter costs the
         * server a doorbell and this side two wake-ups (docs/decisions.md, "A large SET's waiter keeps polling").
         */
        int patience;

        Call(byte opcode, Decoder<T> decoder) {
            this.opcode = opcode;
            this.decoder = decoder;
        }

        @Override
        public long id() {
            return id;
        }

        @Override
        public long deadlineNanos() {
            return deadlineNanos;
        }

        void complete(byte status, WireReader r) {
            try {
                switch (status) {
                    case ProtocolDescriptor.STATUS_OK, ProtocolDescriptor.STATUS_NULL -> complete(decoder.decode(status, r));
                    case ProtocolDescriptor.STATUS_ERROR -> completeExceptionally(
                        new RdmaStoreServerException(r.restString()));
                    default -> completeExceptionally(new RdmaStoreException("malformed reply to "
                        + ProtocolDescriptor.opcodeName(opcode) + ": unknown status " + status));
                }
            } catch (ProtocolException | org.bson.BSONException e) {
                completeExceptionally(new RdmaStoreException("malformed reply to "
                    + ProtocolDescriptor.opcodeName(opcode) + ": " + e.getMessage(), e));
            }
        }
    }

    <T> Call<T> call(byte opcode, Encoder body, Decoder<T> decoder, Duration timeout) {
        Session s;
        try {
            s = session();
        } catch (RdmaStoreException e) {
            Call<T> failed = new Call<>(opcode, decoder);
            failed.completeExceptionally(e);
            return failed;
        }
        return send(s, opcode, body, decoder, timeout);
    }

    /** Set while this thread sends a call it will wait for itself ({@link #sending}). */
    private static final ThreadLocal<boolean[]> AWAITED = ThreadLocal.withInitial(() -> new boolean[1]);

    /**
     * Runs {@code request}, whose calls this thread will wait for itself right after (a synchronous API call). Every
     * other call counts as asynchronous: the transports are told ({@link Transport#sentUnawaited()}), so its reply is
     * delivered without a waiting thread.
     */
    <T> CompletableFuture<T> sending(java.util.function.Supplier<CompletableFuture<T>> request) {
        boolean[] awaited = AWAITED.get();
        boolean outer = awaited[0];
        awaited[0] = true;
        try {
            return request.get();
        } finally {
            awaited[0] = outer;
        }
    }

    /** As {@link #call}, for a call this thread waits for itself right after ({@link #sending}). */
    <T> Call<T> awaitedCall(byte opcode, Encoder body, Decoder<T> decoder, Duration timeout) {
        boolean[] awaited = AWAITED.get();
        boolean outer = awaited[0];
        awaited[0] = true;
        try {
            return call(opcode, body, decoder, timeout);
        } finally {
            awaited[0] = outer;
        }
    }

    private <T> Call<T> send(Session s, byte opcode, Encoder body, Decoder<T> decoder, Duration timeout) {
        if (s.driven && !AWAITED.get()[0]) {
            for (Transport t : transports) {
                t.sentUnawaited();
            }
        }
        Call<T> call = new Call<>(opcode, decoder);
        long id = ids.incrementAndGet();
        WireWriter w = WRITERS.get().header(opcode, id);
        try {
            body.encode(w);
        } catch (RuntimeException e) {
            call.completeExceptionally(e);
            return call;
        }
        long timeoutNanos = timeout.toNanos();
        long deadline = System.nanoTime() + timeoutNanos;
        call.id = id;
        call.deadlineNanos = deadline;
        call.timeoutMillis = timeout.toMillis();
        sweepWithin(timeoutNanos);
        s.pending.add(call);
        int idle = 0;
        while (true) {
            int status = s.connection.offer(w.message());
            if (status >= 0) {
                break;
            }
            if (status == TransportStatus.TOO_LARGE) {
                s.pending.remove(call);
                call.completeExceptionally(new RdmaStoreException(ProtocolDescriptor.opcodeName(opcode)
                    + " request of " + w.position() + " bytes exceeds the transport's maximum message of "
                    + s.connection.maxMessageLength() + " bytes"));
                return call;
            }
            if (status == TransportStatus.CLOSED) {
                s.open = false;
                s.pending.remove(call);
                call.completeExceptionally(new RdmaStoreConnectionException("connection to " + s.address
                    + " is closed; " + ProtocolDescriptor.opcodeName(opcode) + " was not sent"));
                return call;
            }
            if (System.nanoTime() - deadline > 0) {
                s.pending.remove(call);
                call.completeExceptionally(new RdmaStoreTimeoutException(ProtocolDescriptor.opcodeName(opcode)
                    + " could not be sent within " + timeout.toMillis() + " ms: the connection stayed "
                    + TransportStatus.describe(status)));
                return call;
            }
            idle = idle(idle, s.driven ? driveTransports() : 0);
        }
        return call;
    }

    private int driveTransports() {
        int work = 0;
        for (Transport t : transports) {
            work += t.doWork();
        }
        return work;
    }

    /**
     * Rounds a waiting thread spins (driving the transports) before it yields: about 10 us, enough for a reply over
     * shared memory; longer spins starve the server when client threads outnumber cores (E4 with 4 threads: 5x slower).
     */
    private static final int SPIN_ROUNDS = 200;
    /**
     * Over tcp the reply is completed by the carrier's I/O thread, which needs a core: spin only briefly, then block on
     * the future (many client threads spinning on a small machine would starve the I/O thread).
     */
    private static final int TCP_SPIN_ROUNDS = 100;
    /** Rounds it yields before it parks. */
    static final int YIELD_ROUNDS = 100;
    /**
     * A yield that returns later than this means the core is contended (another runnable thread ran in between): the
     * waiting thread stops yielding and blocks. 0: never ({@code -Drdmastore.client.contendedYieldMicros}).
     */
    private static final long CONTENDED_YIELD_NANOS = Long.getLong("rdmastore.client.contendedYieldMicros", 50) * 1000;

    /**
     * Spin, then yield, then park: replies that take tens of microseconds are caught while spinning (a park costs
     * 50-100 us on a small VM), and a thread waiting longer stops burning a core.
     */
    private static int idle(int idle, int work) {
        return idle(idle, work, YIELD_ROUNDS);
    }

    /** {@link #phase}: the waiting thread spins. */
    static final int SPIN = 0;
    /** {@link #phase}: the waiting thread yields its core (still polling). */
    static final int YIELD = 1;
    /** {@link #phase}: the waiting thread parks (or blocks on its call), to be woken. */
    static final int PARK = 2;

    /** What a waiting thread does in round {@code idle} when it yields {@code yieldRounds} rounds before it parks. */
    static int phase(int idle, int yieldRounds) {
        return idle < SPIN_ROUNDS ? SPIN : idle < SPIN_ROUNDS + yieldRounds ? YIELD : PARK;
    }

    /** As {@link #idle(int, int)}, yielding {@code yieldRounds} rounds (a patient call's more) before it parks. */
    static int idle(int idle, int work, int yieldRounds) {
        if (work > 0) {
            return 0;
        }
        int phase = phase(idle, yieldRounds);
        if (phase == SPIN) {
            Thread.onSpinWait();
        } else if (phase == YIELD) {
            long start = System.nanoTime();
            Thread.yield();
            if (CONTENDED_YIELD_NANOS > 0 && System.nanoTime() - start > CONTENDED_YIELD_NANOS) {
                // Another thread had this core for a while: it is contended. Yielding again only hands it over for
                // scheduler slices; blocking lets this thread be woken (and preempt) when the reply lands.
                return SPIN_ROUNDS + yieldRounds;
            }
        } else {
            // A reply that takes this long is not a fast one: park longer as the wait grows (50 us for ~5 ms, then
            // 200 us, then 1 ms), so a long wait (a replica's long poll) costs a few hundred wake-ups a second, not
            // twenty thousand.
            int parked = idle - SPIN_ROUNDS - yieldRounds;
            LockSupport.parkNanos(parked < 100 ? 50_000 : parked < 200 ? 200_000 : 1_000_000);
        }
        return idle + 1;
    }

    /** The live session's connection (connecting first when needed); for one-sided blob transfers. */
    Connection connection() {
        return session().connection;
    }

    /** One round of driving the transports when the live session needs its waiting threads to; the work done. */
    int driveIfNeeded() {
        Session s = session;
        return s != null && s.driven ? driveTransports() : 0;
    }

    /** One step of the spin, yield, park back-off used by waiting threads; returns the new idle count. */
    static int idleStep(int idle, int work) {
        return idle(idle, work);
    }

    /** Waits for a call of this client's current session. */
    <T> T await(Call<T> call, Duration timeout) {
        return await(session, call, timeout);
    }

    private <T> T await(Session s, Call<T> call, Duration timeout) {
        if (s != null && !call.isDone()) {
            // Over ucx the waiting thread drives the worker itself (lowest latency); over tcp it reads the socket itself
            // where the connection lets it, or else spins briefly and then blocks on the future, leaving the core to
            // the carrier's I/O thread.
            long deadline = System.nanoTime() + timeout.toNanos() + TimeUnit.SECONDS.toNanos(1);
            int idle = !s.driven && s.connection.awaitReading(call, deadline) ? TCP_SPIN_ROUNDS : 0;
            boolean polling = s.driven;
            if (s.driven) {
                waiting(true);
                polling(true);
            }
            int yieldRounds = YIELD_ROUNDS + call.patience;
            try {
                while (!call.isDone() && System.nanoTime() - deadline < 0 && (s.driven || idle < TCP_SPIN_ROUNDS)) {
                    if (s.driven && phase(idle, yieldRounds) == PARK) {
                        // A slow reply: block on the call itself instead of parking a fixed time. The transport's
                        // agent completes it when the reply lands (over ucx on one host the server rings the agent's
                        // doorbell once no thread polls), which wakes this thread at once; it polls again at least
                        // every millisecond.
                        if (polling) {
                            polling = false;
                            polling(false);
                            driveTransports();
                        }
                        if (call.isDone() || !awaitBriefly(call)) {
                            break;
                        }
                        idle = driveTransports() > 0 ? 0 : idle;
                        continue;
                    }
                    if (s.driven && !polling) {
                        polling = true;
                        polling(true);
                    }
                    idle = idle(idle, s.driven ? driveTransports() : 0, yieldRounds);
                }
            } finally {
                // the wait ends first: a poller that stops with its reply in hand needs no ring for the next one
                if (s.driven) {
                    waiting(false);
                }
                if (polling) {
                    polling(false);
                }
            }
        }
        try {
            // The sweeper fails the call on time; the extra second only guards against a lost sweep.
            return call.get(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw unwrap(e, call.opcode);
        } catch (TimeoutException e) {
            throw new RdmaStoreTimeoutException(ProtocolDescriptor.opcodeName(call.opcode) + " timed out after "
                + timeout.toMillis() + " ms", isWrite(call.opcode));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaStoreException("interrupted while waiting for " + ProtocolDescriptor.opcodeName(call.opcode),
                e);
        }
    }

    /** Tells the transports this thread starts or stops polling them while it waits ({@link Transport#polling}). */
    private void polling(boolean active) {
        for (Transport t : transports) {
            t.polling(active);
        }
    }

    /** Tells the transports this thread starts or ends a wait for a reply ({@link Transport#waiting}). */
    private void waiting(boolean active) {
        for (Transport t : transports) {
            t.waiting(active);
        }
    }

    /** Waits up to a millisecond for {@code call}; false when interrupted (the flag is set again). */
    private static boolean awaitBriefly(Call<?> call) {
        try {
            call.get(1, TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            // not yet, or done with an error the caller reports
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
        return true;
    }

    // ---- replica set ----

    /** The time a failover may take: rediscovery with back-off, reconnecting and the retry, bounded together. */
    private long failoverNanos() {
        return 2 * config.timeout().toNanos();
    }

    /** One member's answer to ROLE. */
    record RoleReply(int role, long term, String setName, String selfId, String primaryId, String primaryAddress,
                     List<Topology.Member> members) {
        static RoleReply decode(WireReader r) {
            int role = r.u8("role");
            long term = r.i64("term");
            String setName = r.string("setName", 1024);
            String selfId = r.string("selfId", 1024);
            String primaryId = r.string("primaryId", 1024);
            String primaryAddress = r.string("primaryAddress", 1024);
            int n = r.i32("member count");
            if (n < 0 || n > 1024) {
                throw new ProtocolException("member count " + n + " out of range");
            }
            List<Topology.Member> members = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                members.add(new Topology.Member(r.string("member id", 1024), r.string("member address", 1024)));
            }
            return new RoleReply(role, term, setName, selfId, primaryId, primaryAddress, members);
        }
    }

    /** The primary's session, rediscovering the set (until {@code deadline}) when it is lost or stepped down. */
    private Session primarySession(long deadline) {
        Session s = session;
        if (s != null && s.open && !s.notPrimary) {
            return s;
        }
        synchronized (connectLock) {
            s = session;
            if (s != null && s.open && !s.notPrimary) {
                return s;
            }
            discover(deadline, true);
            return session;
        }
    }

    /** The session a read goes to under the configured read preference. */
    private Session readSession(long deadline) {
        if (config.readPreference() == ReadPreference.PRIMARY) {
            return primarySession(deadline);
        }
        Session s = secondary;
        if (s != null && s.open) {
            return s;
        }
        boolean preferred = config.readPreference() == ReadPreference.SECONDARY_PREFERRED;
        synchronized (connectLock) {
            s = secondary;
            if (s != null && s.open) {
                return s;
            }
            // secondaryPreferred looks for a secondary again at most once per time-out, reading from the primary
            // meanwhile; secondary keeps looking until the deadline.
            if (!preferred || System.nanoTime() - lastDiscovery > config.timeout().toNanos()) {
                try {
                    discover(preferred ? System.nanoTime() : deadline, false);
                } catch (RdmaStoreConnectionException e) {
                    if (!preferred) {
                        throw e;
                    }
                }
            }
            s = secondary;
            if (s != null && s.open) {
                return s;
            }
        }
        return primarySession(deadline);
    }

    /**
     * Asks the known members for their ROLE, with back-off, until a primary (or, when {@code needPrimary} is false, a
     * secondary) is found or {@code deadline} passes; then installs the sessions and the topology. Under connectLock.
     */
    private void discover(long deadline, boolean needPrimary) {
        long backoffMillis = 20;
        while (true) {
            if (closed) {
                throw new RdmaStoreException("client is closed");
            }
            StringBuilder why = new StringBuilder();
            lastDiscovery = System.nanoTime();
            if (discoverOnce(why, needPrimary)) {
                return;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new RdmaStoreConnectionException("no " + (needPrimary ? "primary" : "secondary")
                    + " of replica set " + (config.replicaSet() != null ? "'" + config.replicaSet() + "'" : "")
                    + " found among " + known.size() + " members: " + why);
            }
            LockSupport.parkNanos(Math.min(TimeUnit.MILLISECONDS.toNanos(backoffMillis), left));
            backoffMillis = Math.min(backoffMillis * 2, 500);
        }
    }

    private boolean discoverOnce(StringBuilder why, boolean needPrimary) {
        boolean wantSecondary = config.readPreference() != ReadPreference.PRIMARY;
        Deque<InetSocketAddress> queue = new ArrayDeque<>(known);
        Set<String> tried = new HashSet<>();
        Session primary = null;
        RoleReply primaryRole = null;
        Session second = null;
        long maxTerm = Long.MIN_VALUE;
        while (!queue.isEmpty()) {
            InetSocketAddress target = queue.poll();
            if (!tried.add(ClientConfig.address(target))) {
                continue;
            }
            Session s;
            RoleReply role;
            try {
                s = open(target);
                role = prove(s, ProtocolDescriptor.ROLE, (st, r) -> RoleReply.decode(r));
            } catch (RdmaStoreException e) {
                why.append("; ").append(e.getMessage());
                continue;
            }
            String refusal = null;
            if (role.role() == ProtocolDescriptor.ROLE_STANDALONE) {
                refusal = "is a standalone server, not a replica set member";
            } else if (config.replicaSet() != null && !config.replicaSet().equals(role.setName())) {
                refusal = "belongs to replica set '" + role.setName() + "', not '" + config.replicaSet() + "'";
            } else if (role.role() == ProtocolDescriptor.ROLE_NO_PRIMARY) {
                refusal = "has no primary yet (election or catch-up in progress, term " + role.term() + ")";
            } else if (role.role() != ProtocolDescriptor.ROLE_PRIMARY
                && role.role() != ProtocolDescriptor.ROLE_SECONDARY) {
                refusal = "answered ROLE with unknown role " + role.role();
            }
            if (role.role() != ProtocolDescriptor.ROLE_STANDALONE
                && (config.replicaSet() == null || config.replicaSet().equals(role.setName()))) {
                learn(role, queue);
                maxTerm = Math.max(maxTerm, role.term());
            }
            if (refusal != null) {
                why.append("; ").append(s.address).append(' ').append(refusal);
                retire(s);
                continue;
            }
            if (role.role() == ProtocolDescriptor.ROLE_PRIMARY) {
                // two members claiming primacy: the higher term is the newer election
                if (primary == null || role.term() > primaryRole.term()) {
                    if (primary != null) {
                        retire(primary);
                    }
                    primary = s;
                    primaryRole = role;
                } else {
                    retire(s);
                }
            } else if (wantSecondary && second == null) {
                second = s;
            } else {
                retire(s);
            }
            if (role.role() == ProtocolDescriptor.ROLE_SECONDARY && primary == null
                && !role.primaryAddress().isEmpty()) {
                try {
                    queue.addFirst(ClientConfig.parseAddress(role.primaryAddress(), "ROLE reply of " + s.address));
                } catch (IllegalArgumentException e) {
                    why.append("; ").append(e.getMessage());
                }
            }
            if (primary != null && primaryRole.term() >= maxTerm && (!wantSecondary || second != null)) {
                break;
            }
        }
        if (needPrimary && primary == null || !needPrimary && second == null) {
            if (primary != null) {
                retire(primary);
            }
            if (second != null) {
                retire(second);
            }
            if (why.isEmpty()) {
                why.append("; no member answered");
            }
            why.delete(0, 2);
            return false;
        }
        if (primary != null) {
            Session old = session;
            if (old != null && old.open && !old.notPrimary && old.address.equals(primary.address)) {
                // still the primary: keep its connection, so writes in flight and new ones stay in one ordered stream
                retire(primary);
            } else {
                session = primary;
                if (old != null) {
                    retire(old);
                }
            }
        }
        Session oldSecondary = secondary;
        if (second != null || oldSecondary != null && !oldSecondary.open) {
            secondary = second;
            if (oldSecondary != null) {
                retire(oldSecondary);
            }
        }
        Session p = session;
        Session r = secondary;
        RoleReply t = primaryRole;
        Topology was = topology;
        topology = new Topology(t != null ? t.setName() : was.setName(), t != null ? t.term() : was.term(),
            t != null ? t.selfId() : was.primaryId(), p != null ? p.address : was.primaryAddress(),
            t != null ? t.members() : was.members(), r != null ? r.address : "");
        LOG.info("replica set {}: primary {} ({}, term {}){}", topology.setName(), topology.primaryAddress(),
            topology.primaryId(), topology.term(), r != null ? ", reads from secondary " + r.address : "");
        return true;
    }

    /** Adds the members a ROLE reply names to the known ones; a named primary is asked next. */
    private void learn(RoleReply role, Deque<InetSocketAddress> queue) {
        for (Topology.Member m : role.members()) {
            if (m.address().isEmpty()) {
                continue;
            }
            InetSocketAddress a;
            try {
                a = ClientConfig.parseAddress(m.address(), "ROLE reply");
            } catch (IllegalArgumentException e) {
                continue;
            }
            String key = ClientConfig.address(a);
            boolean seen = false;
            for (InetSocketAddress k : known) {
                if (ClientConfig.address(k).equals(key)) {
                    seen = true;
                    break;
                }
            }
            if (!seen) {
                known.add(a);
                queue.addLast(a);
            }
        }
    }

    /**
     * Closes a session that is no longer used once its calls in flight are answered or timed out (closing at once
     * would turn their replies, e.g. a NOTPRIMARY that makes a write safe to retry, into outcome-unknown failures).
     */
    private void retire(Session s) {
        if (!s.open || s.pending.isEmpty()) {
            s.open = false;
            s.connection.close();
            return;
        }
        TIMER.schedule(() -> retire(s), 100, TimeUnit.MILLISECONDS);
    }

    /** What discovery last found; a single host's is that host. Connects first when needed. */
    Topology topology() {
        session();
        return topology;
    }

    // ---- calls with write concern, read concern and failover ----

    /**
     * A call that may span several requests and members: the request itself, then pipelined on the same connection a
     * WAIT (write concern majority) or a READ_FENCE (linearizable read); on NOTPRIMARY, or a lost connection for a
     * read or an unsent write, it rediscovers the primary and sends again, bounded by the failover time and
     * {@link #MAX_ATTEMPTS}. A write whose request was sent and whose reply was lost is never sent again.
     *
     * <p>Threads: started on the caller's thread; continued on the thread that completes its last reply (a transport
     * or timer thread), and on a {@link #FAILOVER} thread for each retry.
     */
    final class Operation<T> extends CompletableFuture<T> {
        final byte opcode;
        final byte kind;
        final Encoder body;
        final Decoder<T> decoder;
        final Duration timeout;
        final WriteConcern writeConcern;
        final long deadline;
        int attempts;

        Operation(byte opcode, Encoder body, Decoder<T> decoder, Duration timeout, WriteConcern writeConcern) {
            this.opcode = opcode;
            this.kind = kind(opcode);
            this.body = body;
            this.decoder = decoder;
            this.timeout = timeout;
            this.writeConcern = writeConcern;
            this.deadline = System.nanoTime() + failoverNanos();
        }

        /** How long a synchronous caller may wait for the whole operation; it always ends sooner. */
        Duration guard() {
            Duration perAttempt = timeout.multipliedBy(3).plus(writeConcern.wtimeout(timeout));
            return perAttempt.multipliedBy(MAX_ATTEMPTS).plusNanos(failoverNanos()).plusSeconds(1);
        }

        void attempt() {
            attempt(null);
        }

        /**
         * One attempt. {@code first}, when given, is the primary's session as {@link #start} found it, not stale, under
         * the failover's lock, with this operation already counted in its {@code operations}: the operation goes there
         * even if a refusal marked it stale since, so that its own refusal comes back behind the earlier ones and the
         * failover's drain, which waits for that count, retries it after them.
         */
        private void attempt(Session first) {
            attempts++;
            Session s;
            try {
                s = counted(first);
            } catch (RuntimeException e) {
                completeExceptionally(e);
                return;
            }
            Call<T> main = send(s, opcode, body, decoder, timeout);
            Call<?> extra = null;
            if (!main.isCompletedExceptionally()) {
                if (kind == WRITE && writeConcern.majority()) {
                    Duration wt = writeConcern.wtimeout(timeout);
                    long ms = Math.max(1, wt.toMillis());
                    extra = send(s, ProtocolDescriptor.WAIT, w -> w.i32(ProtocolDescriptor.WAIT_MAJORITY).i64(ms),
                        (st, r) -> r.i64("acked"), wt.plus(timeout));
                } else if (kind == READ && config.readConcern() == ReadConcern.LINEARIZABLE) {
                    long ms = Math.max(1, timeout.toMillis());
                    extra = send(s, ProtocolDescriptor.READ_FENCE, w -> w.i64(ms), (st, r) -> null,
                        timeout.multipliedBy(2));
                }
            }
            if (extra == null) {
                main.whenComplete((v, e) -> settle(s, main, null));
            } else {
                Call<?> second = extra;
                AtomicInteger left = new AtomicInteger(2);
                java.util.function.BiConsumer<Object, Throwable> done = (v, e) -> {
                    if (left.decrementAndGet() == 0) {
                        settle(s, main, second);
                    }
                };
                main.whenComplete(done);
                second.whenComplete(done);
            }
        }

        /** The session this attempt goes to, counted in its {@code operations}: {@code first} while it is open. */
        private Session counted(Session first) {
            if (first != null && first.open && !closed) {
                return first;
            }
            if (first != null) {
                first.operations.decrementAndGet();
            }
            if (closed) {
                throw new RdmaStoreException("client is closed");
            }
            Session s;
            if (!replicated) {
                s = session();
            } else {
                s = kind == READ ? readSession(deadline) : primarySession(deadline);
            }
            s.operations.incrementAndGet();
            return s;
        }

        private void settle(Session s, Call<T> main, Call<?> extra) {
            try {
                settleOn(s, main, extra);
            } finally {
                s.operations.decrementAndGet();
            }
        }

        private void settleOn(Session s, Call<T> main, Call<?> extra) {
            String op = ProtocolDescriptor.opcodeName(opcode);
            if (main.isCompletedExceptionally()) {
                Throwable e = main.exceptionNow();
                if (isNotPrimary(e)) {
                    retry(e, s);
                } else if (e instanceof RdmaStoreConnectionException c && (kind != WRITE || !c.outcomeUnknown())) {
                    retry(e, null);
                } else {
                    completeExceptionally(e);
                }
                return;
            }
            if (extra == null || !extra.isCompletedExceptionally()) {
                complete(main.resultNow());
                return;
            }
            Throwable x = extra.exceptionNow();
            if (kind == WRITE) {
                if (isNotPrimary(x)) {
                    stale(s);
                }
                completeExceptionally(new RdmaStoreWriteConcernException(op + " was applied on " + s.address
                    + " but write concern majority was not confirmed: " + x.getMessage(), x));
            } else if (isNotPrimary(x)) {
                retry(x, s);
            } else if (x instanceof RdmaStoreConnectionException) {
                retry(x, null);
            } else if (x instanceof RdmaStoreServerException se && se.code().equals("TIMEOUT")) {
                completeExceptionally(new RdmaStoreTimeoutException("linearizable " + op + " was not confirmed by "
                    + s.address + ": " + x.getMessage()));
            } else {
                completeExceptionally(x);
            }
        }

        /** Sends again after a failover when allowed; {@code refused} is the session that answered NOTPRIMARY. */
        private void retry(Throwable cause, Session refused) {
            if (!replicated || closed || attempts >= MAX_ATTEMPTS || System.nanoTime() - deadline > 0) {
                if (refused != null) {
                    stale(refused);
                }
                completeExceptionally(cause);
                return;
            }
            LOG.debug("{} failed on attempt {} ({}); rediscovering the primary", ProtocolDescriptor.opcodeName(opcode),
                attempts, cause.getMessage());
            retryLater(this::attempt, refused);
        }

        /**
         * The first attempt: behind the retries of a failover in progress, so it cannot overtake them. The session is
         * read under the same lock: a refusal that marks it stale after this look is answered behind this operation's
         * own request on the same connection, whereas rediscovering outside the lock could send this operation to
         * the new primary ahead of the retries of operations sent before it.
         */
        void start() {
            Session first = null;
            if (replicated) {
                synchronized (retries) {
                    if (retrying) {
                        held.add(this::attempt);
                        return;
                    }
                    Session s = session;
                    if (s != null && s.open && !s.notPrimary
                        && (kind != READ || config.readPreference() == ReadPreference.PRIMARY)) {
                        s.operations.incrementAndGet();
                        first = s;
                    }
                }
            }
            attempt(first);
        }
    }

    /** Operations to send again after a failover, in the order their failures arrived; guarded by itself. */
    private final ArrayDeque<Runnable> retries = new ArrayDeque<>();
    /** Operations started while a failover runs, sent after every retry; guarded by {@link #retries}. */
    private final ArrayDeque<Runnable> held = new ArrayDeque<>();
    /** Whether a {@link #FAILOVER} thread is draining {@link #retries}; guarded by {@link #retries}. */
    private boolean retrying;
    /** The session that last answered NOTPRIMARY, whose operations still in flight the drain waits for. */
    private Session refusing;

    /** Marks a session that answered NOTPRIMARY: the next call rediscovers the primary. */
    private void stale(Session s) {
        synchronized (retries) {
            s.notPrimary = replicated;
        }
    }

    /**
     * Runs retries one at a time on a {@link #FAILOVER} thread, in order, so that pipelined operations reach the new
     * primary in the order they were first sent: first the operations refused by a deposed primary (their replies
     * arrive in order, and the drain waits until every operation in flight on that session has settled and queued
     * itself), then the operations started while the failover runs ({@link Operation#start}), which were sent after
     * them. Marking the session stale and queueing happen under one lock, so no caller sees the stale session without
     * also seeing the failover.
     */
    private void retryLater(Runnable retry, Session refused) {
        synchronized (retries) {
            if (refused != null) {
                refused.notPrimary = true;
                refusing = refused;
            }
            retries.add(retry);
            if (retrying) {
                return;
            }
            retrying = true;
        }
        FAILOVER.execute(this::drainRetries);
    }

    private void drainRetries() {
        while (true) {
            Session wait;
            synchronized (retries) {
                wait = refusing;
                refusing = null;
            }
            if (wait != null) {
                // every operation in flight there was refused too (the member executes in order): let them queue
                long limit = System.nanoTime() + failoverNanos();
                while (wait.operations.get() > 0 && wait.open && System.nanoTime() - limit < 0) {
                    LockSupport.parkNanos(200_000);
                }
            }
            Runnable r;
            synchronized (retries) {
                if (refusing != null) {
                    continue;
                }
                r = retries.poll();
                if (r == null) {
                    r = held.poll();
                }
                if (r == null) {
                    retrying = false;
                    return;
                }
            }
            try {
                r.run();
            } catch (RuntimeException e) {
                LOG.warn("retry after failover failed unexpectedly", e);
            }
        }
    }

    /**
     * For writes whose WAIT cannot be pipelined (a blob's commit completes after later requests ran): sends a WAIT for
     * a majority on {@code used}, the connection the write went over, once the write's reply arrived, and waits.
     *
     * @throws RdmaStoreWriteConcernException when the majority is not confirmed
     */
    void awaitMajority(Connection used, byte opcode, WriteConcern wc, Duration timeout) {
        awaitReplicas(used, opcode, ProtocolDescriptor.WAIT_MAJORITY, wc.wtimeout(timeout), timeout);
    }

    /** As {@link #awaitMajority}, for {@code replicas} secondaries. */
    void awaitReplicas(Connection used, byte opcode, int replicas, Duration timeout) {
        awaitReplicas(used, opcode, replicas, timeout, timeout);
    }

    private void awaitReplicas(Connection used, byte opcode, int replicas, Duration wt, Duration timeout) {
        String op = ProtocolDescriptor.opcodeName(opcode);
        String what = replicas == ProtocolDescriptor.WAIT_MAJORITY ? "majority" : replicas + " secondaries";
        Session s = session;
        if (s == null || s.connection != used || !s.open) {
            throw new RdmaStoreWriteConcernException(op + " was applied but its connection was lost before the "
                + "WAIT for write concern " + what + "", null);
        }
        long ms = Math.max(1, wt.toMillis());
        Call<Long> wait = send(s, ProtocolDescriptor.WAIT, w -> w.i32(replicas).i64(ms),
            (st, r) -> r.i64("acked"), wt.plus(timeout));
        long acked;
        try {
            acked = await(s, wait, wt.plus(timeout));
        } catch (RdmaStoreException e) {
            if (isNotPrimary(e) && replicated) {
                s.notPrimary = true;
            }
            throw new RdmaStoreWriteConcernException(op + " was applied on " + s.address
                + " but write concern " + what + " was not confirmed: " + e.getMessage(), e);
        }
        if (replicas > 0 && acked < replicas) {
            throw new RdmaStoreWriteConcernException(op + " was applied on " + s.address + " but only " + acked
                + " of " + replicas + " secondaries confirmed it within " + ms + " ms", null);
        }
    }

    /**
     * A channel to one member of the replica set (a blob put's parallel pull), made like this client's own
     * connections (transport, password, TLS) and kept until the client closes.
     */
    PeerChannel memberChannel(String address) {
        return memberChannels.computeIfAbsent(address, a -> {
            InetSocketAddress at = ClientConfig.parseAddress(a, "member address");
            return PeerChannel.open(new ClientConfig(at.getHostString(), at.getPort(), config.transport(),
                config.password(), config.timeout(), null, null, null, null, null, config.tls(), config.tlsTrust()));
        });
    }

    /** After a NOTPRIMARY reply to {@code used}: the next call rediscovers the primary. */
    void notPrimary(Connection used) {
        Session s = session;
        if (replicated && s != null && s.connection == used) {
            s.notPrimary = true;
        }
    }

    static boolean isNotPrimaryError(RuntimeException e) {
        return isNotPrimary(e);
    }

    /** Attempts of one operation, the first included. */
    static final int MAX_ATTEMPTS = 4;

    private static boolean isNotPrimary(Throwable e) {
        return e instanceof RdmaStoreServerException s && s.code().equals("NOTPRIMARY");
    }

    /** Starts an operation with write concern, read concern and failover. */
    <T> Operation<T> operation(byte opcode, Encoder body, Decoder<T> decoder, Duration timeout, WriteConcern wc) {
        Operation<T> op = new Operation<>(opcode, body, decoder, timeout, wc);
        op.start();
        return op;
    }

    /** Waits for an operation, driving the transports when the session needs its waiting threads to. */
    <T> T await(Operation<T> op) {
        Duration guard = op.guard();
        long end = System.nanoTime() + guard.toNanos();
        Session s = session;
        int idle = s != null && !s.driven && s.connection.awaitReading(op, end) ? TCP_SPIN_ROUNDS : 0;
        while (!op.isDone() && idle < TCP_SPIN_ROUNDS) {
            idle = idle(idle, driveIfNeeded());
        }
        while (!op.isDone() && driven() && System.nanoTime() - end < 0) {
            idle = idle(idle, driveIfNeeded());
        }
        try {
            return op.get(Math.max(1, end - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            throw unwrap(e, op.opcode);
        } catch (TimeoutException e) {
            throw new RdmaStoreTimeoutException(ProtocolDescriptor.opcodeName(op.opcode) + " timed out after "
                + guard.toMillis() + " ms", isWrite(op.opcode));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaStoreException("interrupted while waiting for " + ProtocolDescriptor.opcodeName(op.opcode),
                e);
        }
    }

    private boolean driven() {
        Session s = session;
        Session r = secondary;
        return s != null && s.driven || r != null && r.driven;
    }

    private static RuntimeException unwrap(ExecutionException e, byte opcode) {
        Throwable cause = e.getCause();
        if (cause instanceof RuntimeException r) {
            return r;
        }
        return new RdmaStoreException(ProtocolDescriptor.opcodeName(opcode) + " failed: " + cause, cause);
    }

    /** The client's subscriptions; {@code server} sends a (P)(UN)SUBSCRIBE and returns the subscription count. */
    PubSub pubsub(java.util.function.BiFunction<Byte, List<byte[]>, Long> server) {
        PubSub p = pubsub;
        if (p == null) {
            synchronized (connectLock) {
                if (closed) {
                    throw new RdmaStoreException("client is closed");
                }
                p = pubsub;
                if (p == null) {
                    p = new PubSub(server, () -> {
                        Session s = session;
                        if (s != null) {
                            s.connection.close();
                        }
                    });
                    pubsub = p;
                }
            }
        }
        return p;
    }

    @Override
    public void close() {
        synchronized (connectLock) {
            if (closed) {
                return;
            }
            closed = true;
            largeValues.close();
            if (pubsub != null) {
                pubsub.close();
            }
            memberChannels.values().forEach(PeerChannel::close);
            for (Session s : new Session[] {session, secondary}) {
                if (s != null) {
                    s.open = false;
                    s.connection.close();
                    s.failAll("client closed", null);
                }
            }
        }
        network.close();
        for (Transport t : transports) {
            try {
                t.close();
            } catch (RuntimeException e) {
                LOG.warn("closing transport {} failed: {}", t.name(), e.toString());
            }
        }
    }
}
