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
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connection and call machinery shared by a client and its {@link RdmaStoreClient#withTimeout} views: one
 * {@link Network}, one live session at a time (replaced after a disconnect), request ids, the calls in flight and their
 * time-outs.
 *
 * <p>Threads: thread-safe. Calls are sent from the caller's thread; replies are decoded on the transport thread, which
 * completes the call's future. Memory: each sending thread encodes into its own reusable {@link WireWriter}; the
 * transport copies it before {@code offer} returns.
 */
final class ClientCore implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ClientCore.class);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    /** One timer thread for every client's call time-outs; a daemon so it never keeps a JVM alive. */
    private static final ScheduledThreadPoolExecutor TIMER;

    static {
        TIMER = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "rdmastore-client-timer");
            t.setDaemon(true);
            return t;
        });
        TIMER.setRemoveOnCancelPolicy(true);
    }

    private static final ThreadLocal<WireWriter> WRITERS = ThreadLocal.withInitial(() -> new WireWriter(4096));

    final ClientConfig config;
    private final Network network;
    private final List<Transport> transports;
    private final String ucxUnavailable;
    private final AtomicLong ids = new AtomicLong();
    private final Object connectLock = new Object();
    private volatile Session session;
    private volatile boolean closed;

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
        CarrierTransport carrier = config.tls() ? tlsCarrier(config) : SharedCarrier.acquire();
        Network.Context ctx = new Network.Context().carrier(carrier);
        String why = null;
        if (!config.transport().equals("tcp")) {
            try {
                // a client needs one ring per connection, not a server's budget; its waiting threads drive the worker
                java.util.Properties ucx = new java.util.Properties();
                ucx.setProperty("maxConnections", "2");
                ucx.setProperty("memoryBudget", Long.toString(8L << 20));
                // the thread waiting for a reply drives the worker; the agent only serves async callers, so it parks
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
        final Map<Long, Call<?>> pending = new ConcurrentHashMap<>();
        final WireReader reader = new WireReader();
        volatile Connection connection;
        volatile boolean open = true;
        volatile String serverReason;
        /** Whether a waiting thread must drive the transports (an upgraded, possibly invoker-mode connection). */
        volatile boolean driven;

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
                serverReason = r.restString();
                r.clear();
                return;
            }
            Call<?> call = pending.remove(id);
            if (call != null) {
                call.complete(status, r);
            }
            r.clear();
        }

        @Override
        public void onClose(Connection c, Throwable cause) {
            open = false;
            String reason = serverReason != null ? "server closed the connection: " + serverReason
                : "connection to " + config.host() + ":" + config.port() + " lost"
                    + (cause != null ? ": " + cause.getMessage() : "");
            failAll(reason, cause);
        }

        void failAll(String reason, Throwable cause) {
            for (Long id : pending.keySet()) {
                Call<?> call = pending.remove(id);
                if (call != null) {
                    call.completeExceptionally(new RdmaStoreConnectionException(reason + " while "
                        + ProtocolDescriptor.opcodeName(call.opcode) + " was in flight", cause));
                }
            }
        }
    }

    private Session session() {
        Session s = session;
        if (s != null && s.open) {
            return s;
        }
        synchronized (connectLock) {
            s = session;
            if (s != null && s.open) {
                return s;
            }
            if (closed) {
                throw new RdmaStoreException("client is closed");
            }
            s = connect();
            session = s;
            return s;
        }
    }

    private Session connect() {
        Session s = new Session();
        InetSocketAddress address = new InetSocketAddress(config.host(), config.port());
        ConnectOptions options = new ConnectOptions(config.transport(), config.credentials(), config.timeout());
        Connection c;
        try {
            c = network.connect(address, s, options);
        } catch (TransportException e) {
            throw new RdmaStoreConnectionException("cannot connect to " + config.host() + ":" + config.port()
                + " (transport=" + config.transport() + "): " + e.getMessage(), e);
        }
        s.connection = c;
        s.driven = !c.transportName().equals("tcp");
        if (!c.isOpen()) {
            s.open = false;
        }
        // A PING proves the session works end to end and surfaces a refusal the server sends after the handshake.
        Call<String> ping = send(s, ProtocolDescriptor.PING, w -> { }, (st, r) -> r.restString(), config.timeout());
        try {
            await(s, ping, config.timeout());
        } catch (RdmaStoreException e) {
            c.close();
            throw new RdmaStoreConnectionException("cannot connect to " + config.host() + ":" + config.port() + ": "
                + e.getMessage(), e);
        }
        LOG.debug("connected to {}:{} over {}: {}", config.host(), config.port(), c.transportName(),
            c.selectionReason());
        return s;
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
    static final class Call<T> extends CompletableFuture<T> {
        final byte opcode;
        final Decoder<T> decoder;
        volatile ScheduledFuture<?> timer;

        Call(byte opcode, Decoder<T> decoder) {
            this.opcode = opcode;
            this.decoder = decoder;
        }

        void complete(byte status, WireReader r) {
            ScheduledFuture<?> t = timer;
            if (t != null) {
                t.cancel(false);
            }
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

    private <T> Call<T> send(Session s, byte opcode, Encoder body, Decoder<T> decoder, Duration timeout) {
        Call<T> call = new Call<>(opcode, decoder);
        long id = ids.incrementAndGet();
        WireWriter w = WRITERS.get().header(opcode, id);
        try {
            body.encode(w);
        } catch (RuntimeException e) {
            call.completeExceptionally(e);
            return call;
        }
        s.pending.put(id, call);
        long timeoutNanos = timeout.toNanos();
        long deadline = System.nanoTime() + timeoutNanos;
        int idle = 0;
        while (true) {
            int status = s.connection.offer(w.message());
            if (status >= 0) {
                break;
            }
            if (status == TransportStatus.TOO_LARGE) {
                s.pending.remove(id);
                call.completeExceptionally(new RdmaStoreException(ProtocolDescriptor.opcodeName(opcode)
                    + " request of " + w.position() + " bytes exceeds the transport's maximum message of "
                    + s.connection.maxMessageLength() + " bytes"));
                return call;
            }
            if (status == TransportStatus.CLOSED) {
                s.open = false;
                s.pending.remove(id);
                call.completeExceptionally(new RdmaStoreConnectionException("connection to " + config.host() + ":"
                    + config.port() + " is closed; " + ProtocolDescriptor.opcodeName(opcode) + " was not sent"));
                return call;
            }
            if (System.nanoTime() - deadline > 0) {
                s.pending.remove(id);
                call.completeExceptionally(new RdmaStoreTimeoutException(ProtocolDescriptor.opcodeName(opcode)
                    + " could not be sent within " + timeout.toMillis() + " ms: the connection stayed "
                    + TransportStatus.describe(status)));
                return call;
            }
            idle = idle(idle, s.driven ? driveTransports() : 0);
        }
        call.timer = TIMER.schedule(() -> {
            if (s.pending.remove(id, call)) {
                call.completeExceptionally(new RdmaStoreTimeoutException(ProtocolDescriptor.opcodeName(opcode)
                    + " timed out after " + timeout.toMillis() + " ms waiting for the reply from " + config.host()
                    + ":" + config.port()));
            }
        }, timeoutNanos, TimeUnit.NANOSECONDS);
        if (call.isDone()) {
            call.timer.cancel(false);
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
    private static final int YIELD_ROUNDS = 100;

    /**
     * Spin, then yield, then park: replies that take tens of microseconds are caught while spinning (a park costs
     * 50-100 us on a small VM), and a thread waiting longer stops burning a core.
     */
    private static int idle(int idle, int work) {
        if (work > 0) {
            return 0;
        }
        if (idle < SPIN_ROUNDS) {
            Thread.onSpinWait();
        } else if (idle < SPIN_ROUNDS + YIELD_ROUNDS) {
            Thread.yield();
        } else {
            LockSupport.parkNanos(50_000);
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
            // Over ucx the waiting thread drives the worker itself (lowest latency); over tcp it spins briefly and then
            // blocks on the future, leaving the core to the carrier's I/O thread.
            long deadline = System.nanoTime() + timeout.toNanos() + TimeUnit.SECONDS.toNanos(1);
            int idle = 0;
            while (!call.isDone() && System.nanoTime() - deadline < 0 && (s.driven || idle < TCP_SPIN_ROUNDS)) {
                idle = idle(idle, s.driven ? driveTransports() : 0);
            }
        }
        try {
            // The call's own timer fails it on time; the extra second only guards against a lost timer.
            return call.get(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RdmaStoreException r) {
                throw r;
            }
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            throw new RdmaStoreException(ProtocolDescriptor.opcodeName(call.opcode) + " failed: " + cause, cause);
        } catch (TimeoutException e) {
            throw new RdmaStoreTimeoutException(ProtocolDescriptor.opcodeName(call.opcode) + " timed out after "
                + timeout.toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaStoreException("interrupted while waiting for " + ProtocolDescriptor.opcodeName(call.opcode),
                e);
        }
    }

    @Override
    public void close() {
        synchronized (connectLock) {
            if (closed) {
                return;
            }
            closed = true;
            Session s = session;
            if (s != null) {
                s.open = false;
                s.connection.close();
                s.failAll("client closed", null);
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
