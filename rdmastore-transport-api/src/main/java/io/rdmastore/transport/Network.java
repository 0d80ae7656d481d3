package io.rdmastore.transport;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

/**
 * Connection set-up and context detection (DESIGN.md 2.2): a carrier (TCP) connection on one port, a HELLO carrying
 * credentials and the capabilities of every upgrade transport the client can use, the server's choice of the best
 * transport both ends share, and fallback to the carrier on any failure or time-out. The carrier connection stays open
 * as the liveness channel of an upgraded connection.
 *
 * <p>Threads: thread-safe. {@link #connect} blocks the caller; when an upgrade transport runs in invoker mode, the
 * caller drives it while it waits.
 */
public final class Network implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Network.class.getName());

    static final byte HELLO = 1;
    static final byte WELCOME = 2;
    static final byte REJECT = 3;
    static final byte UPGRADE = 4;
    static final int VERSION = 1;
    static final int MAX_HANDSHAKE_BYTES = 64 * 1024;

    private final Context ctx;
    private final ScheduledExecutorService timer;

    /** Configuration; validated once by {@link #conclude()}. */
    public static final class Context {
        private CarrierTransport carrier;
        private final List<UpgradeTransport> upgrades = new ArrayList<>();
        private Authenticator authenticator = Authenticator.NONE;
        private Duration handshakeTimeout = Duration.ofSeconds(5);
        private Duration upgradeTimeout = Duration.ofSeconds(5);
        private boolean upgradesEnabled = true;

        /** The transport that owns the port. Required. */
        public Context carrier(CarrierTransport value) {
            carrier = value;
            return this;
        }

        /** Upgrade transports in order of preference (best first). */
        public Context upgrade(UpgradeTransport value) {
            upgrades.add(Objects.requireNonNull(value));
            return this;
        }

        /** Server side: checks HELLO credentials. Default accepts all. */
        public Context authenticator(Authenticator value) {
            authenticator = Objects.requireNonNull(value);
            return this;
        }

        /** Server side: how long a new connection may take to send a valid HELLO. Default 5 s. */
        public Context handshakeTimeout(Duration value) {
            handshakeTimeout = value;
            return this;
        }

        /** How long an upgrade may take before both sides give up on it. Default 5 s. */
        public Context upgradeTimeout(Duration value) {
            upgradeTimeout = value;
            return this;
        }

        /** Server side: false keeps every connection on the carrier. Default true. */
        public Context upgradesEnabled(boolean value) {
            upgradesEnabled = value;
            return this;
        }

        public CarrierTransport carrier() {
            return carrier;
        }

        public List<UpgradeTransport> upgrades() {
            return List.copyOf(upgrades);
        }

        Context conclude() {
            if (carrier == null) {
                throw new IllegalStateException("a carrier transport is required");
            }
            if (handshakeTimeout.isNegative() || handshakeTimeout.isZero()
                || upgradeTimeout.isNegative() || upgradeTimeout.isZero()) {
                throw new IllegalArgumentException("time-outs must be positive");
            }
            return this;
        }
    }

    public Network(Context ctx) {
        this.ctx = ctx.conclude();
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "rdmastore-network-timer");
            t.setDaemon(true);
            return t;
        });
    }

    /** Every transport of this network: the carrier first, then the upgrades. */
    public List<Transport> transports() {
        List<Transport> all = new ArrayList<>();
        all.add(ctx.carrier);
        all.addAll(ctx.upgrades);
        return all;
    }

    /** Listens on {@code bind}; each connection reaches {@code handler} once its transport is settled. */
    public Listener listen(InetSocketAddress bind, ConnectionHandler handler) {
        return ctx.carrier.listen(bind, control -> new ServerSession(control, handler));
    }

    /**
     * Connects to {@code address}. With transport {@code auto}, a failed or timed-out upgrade falls back to the carrier
     * and says so in {@link Connection#selectionReason()}.
     *
     * @throws TransportException when no connection can be made, credentials are refused, or a required transport
     *     cannot be used
     */
    public Connection connect(InetSocketAddress address, MessageHandler handler, ConnectOptions options) {
        String wanted = options.transport();
        List<UpgradeTransport> offers = new ArrayList<>();
        if (!wanted.equals(ctx.carrier.name())) {
            for (UpgradeTransport u : ctx.upgrades) {
                if (!wanted.equals("auto") && !wanted.equals(u.name())) {
                    continue;
                }
                if (u.isAvailable() && u.capability() != null) {
                    offers.add(u);
                } else if (!wanted.equals("auto")) {
                    throw new TransportException(u.name() + " was requested but cannot be used here: "
                        + u.unavailabilityCause(), u.unavailabilityCause());
                }
            }
            if (!wanted.equals("auto") && offers.isEmpty()) {
                throw new TransportException("unknown transport '" + wanted + "' (known: auto, " + names() + ")");
            }
        }
        try {
            return attempt(address, handler, options, offers, null);
        } catch (UpgradeFailedException e) {
            if (!wanted.equals("auto")) {
                throw new TransportException(e.getMessage(), e.getCause());
            }
            String reason = e.getMessage() + "; fell back to " + ctx.carrier.name();
            LOG.log(System.Logger.Level.WARNING, reason);
            return attempt(address, handler, options, List.of(), reason);
        }
    }

    private String names() {
        StringBuilder sb = new StringBuilder(ctx.carrier.name());
        for (UpgradeTransport u : ctx.upgrades) {
            sb.append(", ").append(u.name());
        }
        return sb.toString();
    }

    private Connection attempt(InetSocketAddress address, MessageHandler handler, ConnectOptions options,
                               List<UpgradeTransport> offers, String fallbackReason) {
        long deadline = System.nanoTime() + options.timeout().toNanos();
        ClientSession session = new ClientSession(handler, options.transport(), fallbackReason);
        Connection control = ctx.carrier.connect(address, session, options.timeout());
        session.control = control;
        Map<String, byte[]> caps = new LinkedHashMap<>();
        for (UpgradeTransport u : offers) {
            caps.put(u.name(), u.capability());
        }
        int status = control.offer(MemorySegment.ofArray(encodeHello(options.credentials(), caps)));
        if (status < 0) {
            control.close();
            throw new TransportException("cannot send HELLO: " + TransportStatus.describe(status));
        }
        int idle = 0;
        while (!session.future.isDone()) {
            int work = 0;
            for (UpgradeTransport u : ctx.upgrades) {
                work += u.doWork();
            }
            if (System.nanoTime() - deadline > 0) {
                session.fail(new UpgradeFailedException("connection set-up to " + address + " timed out after "
                    + options.timeout().toMillis() + " ms" + (session.upgrade != null ? " during the "
                    + session.upgradeName + " upgrade" : ""), new TimeoutException()));
                break;
            }
            if (work > 0) {
                idle = 0;
            } else if (++idle > 1000) {
                LockSupport.parkNanos(20_000);
            } else {
                Thread.onSpinWait();
            }
        }
        try {
            return session.future.get();
        } catch (ExecutionException e) {
            control.close();
            Throwable cause = e.getCause();
            if (cause instanceof UpgradeFailedException u) {
                if (session.upgrade == null && u.getCause() instanceof TimeoutException) {
                    throw new TransportException(u.getMessage(), u);
                }
                throw u;
            }
            if (cause instanceof TransportException t) {
                throw t;
            }
            throw new TransportException("connection set-up failed: " + cause, cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            control.close();
            throw new TransportException("interrupted while connecting", e);
        }
    }

    /** Stops the handshake timer. The transports belong to whoever built the context and are closed by them. */
    @Override
    public void close() {
        timer.shutdownNow();
    }

    // ---- wire format of the handshake ----

    static byte[] encodeHello(byte[] credentials, Map<String, byte[]> caps) {
        int size = 1 + 2 + 2 + credentials.length + 1;
        for (Map.Entry<String, byte[]> e : caps.entrySet()) {
            size += 1 + e.getKey().getBytes(StandardCharsets.UTF_8).length + 4 + e.getValue().length;
        }
        ByteBuffer b = ByteBuffer.allocate(size);
        b.put(HELLO).putShort((short) VERSION).putShort((short) credentials.length).put(credentials);
        b.put((byte) caps.size());
        for (Map.Entry<String, byte[]> e : caps.entrySet()) {
            byte[] name = e.getKey().getBytes(StandardCharsets.UTF_8);
            b.put((byte) name.length).put(name).putInt(e.getValue().length).put(e.getValue());
        }
        return b.array();
    }

    static byte[] encodeWelcome(String name, byte[] cap, String reason) {
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        byte[] r = truncate(reason);
        ByteBuffer b = ByteBuffer.allocate(1 + 1 + n.length + 4 + cap.length + 2 + r.length);
        b.put(WELCOME).put((byte) n.length).put(n).putInt(cap.length).put(cap).putShort((short) r.length).put(r);
        return b.array();
    }

    static byte[] encodeReject(String reason) {
        byte[] r = truncate(reason);
        return ByteBuffer.allocate(3 + r.length).put(REJECT).putShort((short) r.length).put(r).array();
    }

    private static byte[] truncate(String s) {
        byte[] r = s.getBytes(StandardCharsets.UTF_8);
        return r.length > 4000 ? java.util.Arrays.copyOf(r, 4000) : r;
    }

    private static String string(ByteBuffer b, int len) {
        byte[] a = new byte[len];
        b.get(a);
        return new String(a, StandardCharsets.UTF_8);
    }

    private static byte[] bytes(ByteBuffer b, int len) {
        if (len < 0 || len > b.remaining()) {
            throw new IllegalArgumentException("length " + len + " past the end of the message");
        }
        byte[] a = new byte[len];
        b.get(a);
        return a;
    }

    /** A parsed HELLO. */
    record Hello(int version, byte[] credentials, Map<String, byte[]> capabilities) {
        static Hello parse(ByteBuffer b) {
            if (b.get() != HELLO) {
                throw new IllegalArgumentException("expected HELLO");
            }
            int version = b.getShort() & 0xFFFF;
            byte[] cred = bytes(b, b.getShort() & 0xFFFF);
            int n = b.get() & 0xFF;
            Map<String, byte[]> caps = new LinkedHashMap<>();
            for (int i = 0; i < n; i++) {
                String name = new String(bytes(b, b.get() & 0xFF), StandardCharsets.UTF_8);
                caps.put(name, bytes(b, b.getInt()));
            }
            if (b.hasRemaining()) {
                throw new IllegalArgumentException(b.remaining() + " trailing bytes");
            }
            return new Hello(version, cred, caps);
        }
    }

    /** An upgrade that failed or timed out; the client falls back to the carrier. */
    static final class UpgradeFailedException extends TransportException {
        @java.io.Serial
        private static final long serialVersionUID = 1L;

        UpgradeFailedException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private static Throwable unwrap(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    // ---- server side ----

    private final class ServerSession implements MessageHandler {
        private final Connection control;
        private final ConnectionHandler acceptor;
        private final ScheduledFuture<?> handshakeTimer;
        private volatile int state; // 0 handshake, 1 carrier data, 2 upgrading, 3 upgraded, 4 closed
        private NegotiatedConnection carrierConnection;
        private MessageHandler app;
        private UpgradeTransport.Upgrade upgrade;
        private volatile Connection upgraded;

        ServerSession(Connection control, ConnectionHandler acceptor) {
            this.control = control;
            this.acceptor = acceptor;
            // Until HELLO has authenticated the peer, nothing larger than a handshake message is buffered for it.
            control.inboundLimit(MAX_HANDSHAKE_BYTES);
            this.handshakeTimer = timer.schedule(() -> {
                if (state == 0) {
                    reject("no valid HELLO within " + ctx.handshakeTimeout.toMillis() + " ms");
                }
            }, ctx.handshakeTimeout.toMillis(), TimeUnit.MILLISECONDS);
        }

        private void reject(String reason) {
            LOG.log(System.Logger.Level.INFO, "refusing " + control.remoteAddress() + ": " + reason);
            state = 4;
            control.offer(MemorySegment.ofArray(encodeReject(reason)));
            control.close();
        }

        @Override
        public void onMessage(Connection connection, MemorySegment message) {
            switch (state) {
                case 1 -> app.onMessage(carrierConnection, message);
                case 0 -> onHello(message);
                case 2, 3 -> {
                    if (message.byteSize() > 0 && message.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0) == UPGRADE
                        && upgrade != null) {
                        upgrade.onControlMessage(message.asSlice(1));
                    }
                }
                default -> {
                }
            }
        }

        private void onHello(MemorySegment message) {
            handshakeTimer.cancel(false);
            Hello hello;
            try {
                if (message.byteSize() > MAX_HANDSHAKE_BYTES) {
                    throw new IllegalArgumentException("HELLO of " + message.byteSize() + " bytes exceeds "
                        + MAX_HANDSHAKE_BYTES);
                }
                hello = Hello.parse(message.asByteBuffer());
            } catch (RuntimeException e) {
                reject("malformed HELLO: " + e.getMessage());
                return;
            }
            if (hello.version() != VERSION) {
                reject("unsupported protocol version " + hello.version() + " (server speaks " + VERSION + ")");
                return;
            }
            String refusal = ctx.authenticator.authenticate(hello.credentials());
            if (refusal != null) {
                reject(refusal);
                return;
            }
            UpgradeTransport chosen = null;
            String reason;
            StringBuilder why = new StringBuilder();
            if (hello.capabilities().isEmpty()) {
                reason = "client offered only " + ctx.carrier.name();
            } else if (!ctx.upgradesEnabled) {
                reason = "server is configured for " + ctx.carrier.name() + " only";
            } else {
                for (UpgradeTransport u : ctx.upgrades) {
                    byte[] cap = hello.capabilities().get(u.name());
                    if (cap == null) {
                        continue;
                    }
                    if (!u.isAvailable()) {
                        why.append(u.name()).append(" offered but unavailable on the server: ")
                            .append(u.unavailabilityCause()).append("; ");
                        continue;
                    }
                    UpgradeTransport.Assessment a;
                    try {
                        a = u.assess(cap);
                    } catch (RuntimeException e) {
                        a = new UpgradeTransport.Assessment(false, "bad capability: " + e.getMessage());
                    }
                    if (a.usable()) {
                        chosen = u;
                        why.append("both ends offered ").append(u.name()).append("; ").append(a.reason());
                        break;
                    }
                    why.append(u.name()).append(" not usable: ").append(a.reason()).append("; ");
                }
                if (chosen == null && why.isEmpty()) {
                    why.append("no transport the client offered is known to the server; ");
                }
                reason = chosen != null ? why.toString() : why + "using " + ctx.carrier.name();
            }
            if (chosen == null) {
                carrierConnection = new NegotiatedConnection(control, ctx.carrier.name(), reason);
                // WELCOME first: the application may offer messages from onConnection; this runs on the carrier's
                // thread, so no later message is handled before state is set.
                control.offer(MemorySegment.ofArray(encodeWelcome(ctx.carrier.name(), new byte[0], reason)));
                control.inboundLimit(Integer.MAX_VALUE);
                app = acceptor.onConnection(carrierConnection);
                state = 1;
                LOG.log(System.Logger.Level.INFO, control.remoteAddress() + " on " + ctx.carrier.name() + ": "
                    + reason);
                return;
            }
            state = 2;
            byte[] cap = chosen.capability();
            control.offer(MemorySegment.ofArray(encodeWelcome(chosen.name(), cap, reason)));
            DeferredHandler deferred = new DeferredHandler(acceptor);
            UpgradeTransport.Upgrade up = chosen.begin(control, false, hello.capabilities().get(chosen.name()),
                deferred, UPGRADE, reason);
            upgrade = up;
            String name = chosen.name();
            up.result().orTimeout(ctx.upgradeTimeout.toMillis(), TimeUnit.MILLISECONDS).whenComplete((c, err) -> {
                if (err != null) {
                    up.abort(err);
                    LOG.log(System.Logger.Level.WARNING, control.remoteAddress() + ": " + name
                        + " upgrade failed: " + unwrap(err) + "; closing so the client falls back");
                    control.close();
                    return;
                }
                deferred.bind(c);
                upgraded = c;
                state = 3;
                LOG.log(System.Logger.Level.INFO, control.remoteAddress() + " on " + name + ": " + reason);
                c.closeFuture().whenComplete((v, e) -> control.close());
                if (!control.isOpen()) {
                    c.close();
                }
            });
        }

        @Override
        public void onClose(Connection connection, Throwable cause) {
            handshakeTimer.cancel(false);
            int was = state;
            state = 4;
            if (was == 1 && app != null) {
                app.onClose(carrierConnection, cause);
            } else if (was == 2 && upgrade != null) {
                upgrade.abort(cause != null ? cause : new TransportException("control connection closed"));
            }
            Connection c = upgraded;
            if (c != null) {
                c.close();
            }
        }
    }

    /** Obtains the application's handler once the upgraded connection exists (or at its first message). */
    private static final class DeferredHandler implements MessageHandler {
        private final ConnectionHandler acceptor;
        private volatile MessageHandler target;

        DeferredHandler(ConnectionHandler acceptor) {
            this.acceptor = acceptor;
        }

        synchronized MessageHandler bind(Connection c) {
            MessageHandler t = target;
            if (t == null) {
                t = acceptor.onConnection(c);
                target = t;
            }
            return t;
        }

        @Override
        public void onMessage(Connection connection, MemorySegment message) {
            MessageHandler t = target;
            (t != null ? t : bind(connection)).onMessage(connection, message);
        }

        @Override
        public void onClose(Connection connection, Throwable cause) {
            MessageHandler t = target;
            if (t != null) {
                t.onClose(connection, cause);
            }
        }
    }

    // ---- client side ----

    private final class ClientSession implements MessageHandler {
        private final MessageHandler app;
        private final String wanted;
        private final String fallbackReason;
        final CompletableFuture<Connection> future = new CompletableFuture<>();
        volatile Connection control;
        private volatile int state; // 0 handshake, 1 carrier data, 2 upgrading, 3 upgraded
        private NegotiatedConnection carrierConnection;
        volatile UpgradeTransport.Upgrade upgrade;
        volatile String upgradeName;

        ClientSession(MessageHandler app, String wanted, String fallbackReason) {
            this.app = app;
            this.wanted = wanted;
            this.fallbackReason = fallbackReason;
        }

        void fail(Throwable t) {
            UpgradeTransport.Upgrade u = upgrade;
            if (u != null) {
                u.abort(t);
            }
            future.completeExceptionally(t);
        }

        @Override
        public void onMessage(Connection connection, MemorySegment message) {
            switch (state) {
                case 1 -> app.onMessage(carrierConnection, message);
                case 0 -> onWelcome(connection, message);
                default -> {
                    if (message.byteSize() > 0 && message.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0) == UPGRADE
                        && upgrade != null) {
                        upgrade.onControlMessage(message.asSlice(1));
                    }
                }
            }
        }

        private void onWelcome(Connection connection, MemorySegment message) {
            ByteBuffer b = message.asByteBuffer();
            try {
                byte type = b.get();
                if (type == REJECT) {
                    future.completeExceptionally(new TransportException("server refused the connection: "
                        + string(b, b.getShort() & 0xFFFF)));
                    return;
                }
                if (type != WELCOME) {
                    throw new IllegalArgumentException("unexpected handshake message type " + type);
                }
                String name = new String(bytes(b, b.get() & 0xFF), StandardCharsets.UTF_8);
                byte[] cap = bytes(b, b.getInt());
                String reason = string(b, b.getShort() & 0xFFFF);
                if (name.equals(ctx.carrier.name())) {
                    if (!wanted.equals("auto") && !wanted.equals(name)) {
                        future.completeExceptionally(new TransportException(wanted + " was required but the server"
                            + " chose " + name + ": " + reason));
                        return;
                    }
                    carrierConnection = new NegotiatedConnection(connection, name,
                        fallbackReason != null ? fallbackReason : reason);
                    state = 1;
                    future.complete(carrierConnection);
                    return;
                }
                UpgradeTransport u = null;
                for (UpgradeTransport x : ctx.upgrades) {
                    if (x.name().equals(name)) {
                        u = x;
                    }
                }
                if (u == null) {
                    throw new IllegalArgumentException("server chose unknown transport " + name);
                }
                state = 2;
                upgradeName = name;
                UpgradeTransport.Upgrade up = u.begin(connection, true, cap, app, UPGRADE, reason);
                upgrade = up;
                up.result().orTimeout(ctx.upgradeTimeout.toMillis(), TimeUnit.MILLISECONDS).whenComplete((c, e) -> {
                    if (e != null) {
                        fail(new UpgradeFailedException(name + " upgrade failed: " + unwrap(e), unwrap(e)));
                        return;
                    }
                    state = 3;
                    LOG.log(System.Logger.Level.INFO, "connected to " + connection.remoteAddress() + " on " + name
                        + ": " + reason);
                    c.closeFuture().whenComplete((v, x) -> connection.close());
                    if (!connection.isOpen()) {
                        c.close();
                    }
                    if (!future.complete(c)) {
                        c.close();
                    }
                });
            } catch (RuntimeException e) {
                future.completeExceptionally(new TransportException("bad handshake reply from server: " + e, e));
            }
        }

        @Override
        public void onClose(Connection connection, Throwable cause) {
            int was = state;
            if (was == 1) {
                app.onClose(carrierConnection, cause);
            } else if (!future.isDone()) {
                TransportException e = new TransportException("server closed the connection during set-up"
                    + (cause != null ? ": " + cause : ""), cause);
                fail(was == 2 ? new UpgradeFailedException(e.getMessage(), e) : e);
            } else if (future.isDone() && !future.isCompletedExceptionally()) {
                future.join().close();
            }
        }
    }
}
