package io.rdmastore.transport.ucx;

import io.rdmastore.transport.Connection;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.TransportException;
import io.rdmastore.transport.UpgradeTransport;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.ManyToOneConcurrentLinkedQueue;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/**
 * The UCX provider: one UCP context, one worker, one registration per connection (its receive ring, send mirror and
 * credit words, with its own remote key, so a peer's key reaches its own connection's memory and nothing else), and
 * exactly one thread driving the worker.
 *
 * <p>Driving: the worker is touched only by the thread holding the driver lock. In agent mode (default) a daemon thread
 * takes the lock for each duty cycle under an idle strategy; any other thread may also call {@link #doWork()}, which
 * takes the lock when it is free (a client thread waiting for its reply drives the worker itself instead of waiting for
 * the agent to wake up). In invoker mode no thread is started and callers drive it. Threads that do not hold the lock
 * hand the driver work through a lock-free queue.
 *
 * <p>Threads: all public methods are thread-safe.
 */
public final class UcxTransport implements UpgradeTransport {
    private static final Logger LOG = LoggerFactory.getLogger(UcxTransport.class);
    static final byte OFFER = 1;

    /** Configuration; fluent setters, validated once. Defaults come from system properties {@code rdmastore.ucx.*}. */
    public static final class Context {
        private String tls = System.getProperty("rdmastore.ucx.tls");
        private long memoryBudget = Long.getLong("rdmastore.ucx.memoryBudget", 256L << 20);
        private int maxConnections = Integer.getInteger("rdmastore.ucx.maxConnections", 128);
        private int ringCapacity = Integer.getInteger("rdmastore.ucx.ringCapacity", 0);
        private String idleStrategy = System.getProperty("rdmastore.ucx.idle", "adaptive");
        private boolean invoker = Boolean.getBoolean("rdmastore.ucx.invoker");
        private String messaging = System.getProperty("rdmastore.ucx.messaging", "ring");
        private String footer = System.getProperty("rdmastore.ucx.footer", "crc");
        private boolean orderedFrames = Boolean.parseBoolean(System.getProperty("rdmastore.ucx.orderedFrames", "true"));
        private int maxMessageLength = Integer.getInteger("rdmastore.ucx.maxMessageLength", (512 << 20) + (64 << 10));
        private String name = "ucx";
        private boolean allowTcpWire = Boolean.getBoolean("rdmastore.ucx.allowTcp");
        /** The pid the capability declares; 0 = this process's. Tests set another to play a lying peer. */
        long declaredPid;
        private boolean crossMemoryReads = Boolean.parseBoolean(
            System.getProperty("rdmastore.ucx.crossMemoryReads", "true"));

        /**
         * UCX transports to allow (as UCX_TLS, e.g. {@code posix,cma,self} or {@code tcp}); null = UCX's default
         * without its tcp wire (unless {@link #allowTcpWire(boolean)}), or the environment's UCX_TLS where set.
         */
        public Context tls(String value) {
            tls = value;
            return this;
        }

        /**
         * Whether UCX's own tcp wire may be used when {@link #tls(String)} and UCX_TLS leave the choice to UCX. Default
         * false ({@code rdmastore.ucx.allowTcp}): over that wire UCX emulates one-sided puts and gets in software and
         * does not check remote keys, so anyone who can reach the worker's tcp port could read and write any address
         * of this process. Peers on other hosts without RDMA devices then use the TCP carrier instead.
         */
        public Context allowTcpWire(boolean value) {
            allowTcpWire = value;
            return this;
        }

        /** The UCX_TLS to run with: the setting, else the environment's, else all but tcp (unless allowed). */
        String effectiveTls() {
            if (tls != null) {
                return tls;
            }
            String env = System.getenv("UCX_TLS");
            if (env != null && !env.isBlank()) {
                return env;
            }
            return allowTcpWire ? null : "^tcp";
        }

        /** Bytes of registered memory for rings (default 256 MiB, allocated lazily by the OS). */
        public Context memoryBudget(long value) {
            memoryBudget = value;
            return this;
        }

        /** Expected connections; with the budget it sizes the rings (default 128). */
        public Context maxConnections(int value) {
            maxConnections = value;
            return this;
        }

        /** Ring capacity in bytes, a power of two; 0 derives it from the budget and connection count. */
        public Context ringCapacity(int value) {
            ringCapacity = value;
            return this;
        }

        /**
         * {@code adaptive} (default: spin while messages keep coming, for a window that follows the measured gaps
         * between them, then sleep on a doorbell peers ring when they send), {@code light} (the same with a
         * short window, for clients), {@code backoff} (spin, yield, then park up to 1 ms), {@code spin}, {@code yield}.
         */
        public Context idleStrategy(String value) {
            idleStrategy = value;
            return this;
        }

        /** True: start no thread; callers drive the worker with {@link UcxTransport#doWork()}. */
        public Context invoker(boolean value) {
            invoker = value;
            return this;
        }

        /** {@code ring} (default: one-sided puts into the receiver's ring) or {@code am} (UCX active messages). */
        public Context messaging(String value) {
            messaging = value;
            return this;
        }

        /**
         * How a ring frame proves it landed whole: {@code crc} (default; sequence + CRC32C footer in the same put) or
         * {@code flush} (put the frame, flush the endpoint, then put the footer; JUCX 1.12 has no fence).
         */
        public Context footer(String value) {
            footer = value;
            return this;
        }

        /**
         * True (default): with the {@code crc} footer, frames composed straight in a peer's ring mapped into this
         * process (one host) are published by their header, written last, instead of proved by a CRC
         * ({@link RingDescriptor}, "Ordered frames"), where the peer accepts them too; false: every frame carries the
         * CRC, as from a peer that predates them.
         */
        public Context orderedFrames(boolean value) {
            orderedFrames = value;
            return this;
        }

        /** Largest message (default 512 MiB + 64 KiB). */
        public Context maxMessageLength(int value) {
            maxMessageLength = value;
            return this;
        }

        /** Name in HELLO (default {@code ucx}); variants used side by side need distinct names. */
        public Context name(String value) {
            name = value;
            return this;
        }

        /**
         * True (default): a one-sided read from a peer on this host, issued by a thread that is not driving the
         * worker, is one {@code process_vm_readv} by the reader ({@link CrossMemoryAttach}) instead of UCX 1.13's
         * get, which over shared memory is emulated with active messages (two copies, the peer's thread busy). Off
         * when the transports in effect exclude cma or the peer cannot be read.
         */
        public Context crossMemoryReads(boolean value) {
            crossMemoryReads = value;
            return this;
        }

        /** A context from {@link UcxTransport#UcxTransport(java.util.Properties)} keys. */
        public static Context from(java.util.Properties p) {
            Context c = new Context();
            try {
                if (p.containsKey("tls")) {
                    c.tls(p.getProperty("tls"));
                }
                if (p.containsKey("memoryBudget")) {
                    c.memoryBudget(Long.parseLong(p.getProperty("memoryBudget").trim()));
                }
                if (p.containsKey("maxConnections")) {
                    c.maxConnections(Integer.parseInt(p.getProperty("maxConnections").trim()));
                }
                if (p.containsKey("ringCapacity")) {
                    c.ringCapacity(Integer.parseInt(p.getProperty("ringCapacity").trim()));
                }
                if (p.containsKey("maxMessageLength")) {
                    c.maxMessageLength(Integer.parseInt(p.getProperty("maxMessageLength").trim()));
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("bad ucx setting: " + e.getMessage(), e);
            }
            c.idleStrategy(p.getProperty("idleStrategy", c.idleStrategy));
            c.invoker(Boolean.parseBoolean(p.getProperty("invoker", Boolean.toString(c.invoker))));
            c.messaging(p.getProperty("messaging", c.messaging));
            c.footer(p.getProperty("footer", c.footer));
            c.name(p.getProperty("name", c.name));
            c.allowTcpWire(Boolean.parseBoolean(p.getProperty("allowTcpWire", Boolean.toString(c.allowTcpWire))));
            c.orderedFrames(Boolean.parseBoolean(p.getProperty("orderedFrames", Boolean.toString(c.orderedFrames))));
            c.crossMemoryReads(Boolean.parseBoolean(p.getProperty("crossMemoryReads",
                Boolean.toString(c.crossMemoryReads))));
            return c;
        }

        int maxMessageLengthValue() {
            return maxMessageLength;
        }

        boolean orderedFramesValue() {
            return orderedFrames;
        }

        boolean flushFooter() {
            return footer.equals("flush");
        }

        int ringCapacity() {
            if (ringCapacity > 0) {
                return ringCapacity;
            }
            long perConnection = memoryBudget / Math.max(1, maxConnections) / 2;
            long cap = Long.highestOneBit(Math.max(perConnection, 1));
            return (int) Math.max(64 << 10, Math.min(cap, 16 << 20));
        }

        Context conclude() {
            int cap = ringCapacity();
            if (Integer.bitCount(cap) != 1 || cap < 4096) {
                throw new IllegalArgumentException("ring capacity must be a power of two >= 4096: " + cap);
            }
            if (maxConnections < 1) {
                throw new IllegalArgumentException("maxConnections must be >= 1");
            }
            if (!messaging.equals("ring") && !messaging.equals("am")) {
                throw new IllegalArgumentException("messaging must be ring or am: " + messaging);
            }
            if (!footer.equals("crc") && !footer.equals("flush")) {
                throw new IllegalArgumentException("footer must be crc or flush: " + footer);
            }
            if (!IdleStrategies.isAdaptive(idleStrategy)) {
                IdleStrategies.of(idleStrategy);
            }
            return this;
        }

        @Override
        public String toString() {
            return "tls=" + (effectiveTls() == null ? "default" : effectiveTls()) + " ring=" + (ringCapacity() >> 10) + "KiB messaging="
                + messaging + " footer=" + footer + " idle=" + idleStrategy + (invoker ? " invoker" : "");
        }
    }

    private final Context ctx;
    private final Throwable cause;
    private UcpContext context;
    private UcpWorker worker;
    private int slotSize;
    private int slotCount;
    /** Each connection slot's own registration while in use or in quarantine, else null. Driver only. */
    private UcpMemory[] slotMemory;
    private final ArrayDeque<Integer> freeSlots = new ArrayDeque<>();
    private final ArrayDeque<long[]> quarantine = new ArrayDeque<>();
    /** Nanoseconds spent registering and deregistering connection memory, and how many times (for docs and doctor). */
    private long registrationNanos;
    private long slotRegistrations;
    private byte[] capability;
    private final String hostId = hostId();
    private final ManyToOneConcurrentLinkedQueue<Runnable> commands = new ManyToOneConcurrentLinkedQueue<>();
    private final List<UcxConnectionBase> connections = new ArrayList<>();
    /** Registrations lent out, deregistered at close before the context goes (UCX asserts otherwise). */
    private final java.util.Set<UcpMemory> registrations = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /**
     * Remote keys unpacked for one-sided operations and not yet destroyed: each is destroyed when the last operation
     * using it completes ({@link #untrack}), and whatever is left when the worker closes. Driver only.
     */
    private final java.util.Set<org.openucx.jucx.ucp.UcpRemoteKey> remoteKeys =
        java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    /** Endpoint close requests still in flight; driver only. */
    private final List<org.openucx.jucx.ucp.UcpRequest> closing = new ArrayList<>();
    private final DriverLock invokerLock = new DriverLock();
    private volatile Thread agent;
    private volatile boolean parked;
    private volatile boolean running = true;
    private final IdleStrategy idle;
    /** The spin window of the adaptive strategies, else null. */
    private final AdaptiveIdle adaptive;
    /**
     * How peers on this host wake the sleeping agent (adaptive strategies sleep on it; the others only use it to ring
     * peers), and how this side rings theirs; null: unavailable, or an invoker transport.
     */
    private Doorbell doorbell;
    /** Threads polling the worker while they wait for a reply ({@link #polling(boolean)}). */
    private final java.util.concurrent.atomic.AtomicInteger pollers = new java.util.concurrent.atomic.AtomicInteger();
    /** Listed connections whose peer cannot ring this agent (a peer on another host). */
    private final java.util.concurrent.atomic.AtomicInteger bellless = new java.util.concurrent.atomic.AtomicInteger();
    /** Listed connections that this side accepted or whose peer cannot ring this agent ({@link #everyPeerRings()}). */
    private final java.util.concurrent.atomic.AtomicInteger unringing = new java.util.concurrent.atomic.AtomicInteger();
    /** Threads waiting for a reply, polling or blocked ({@link #waiting(boolean)}). */
    private final java.util.concurrent.atomic.AtomicInteger waiters = new java.util.concurrent.atomic.AtomicInteger();
    /** When a wait last ended ({@link System#nanoTime()}). */
    private volatile long lastWaitEnd = System.nanoTime() - 1_000_000_000L;
    /** When an asynchronous call was last sent ({@link #sentUnawaited()}). */
    private volatile long lastUnawaited = System.nanoTime() - 1_000_000_000L;
    /** The agent sleeps unrung, or is about to ({@link #sleep()}). */
    private volatile boolean quietSleep;
    /** The agent sleeps (or is about to), whether or not its flag asks peers to ring. */
    private volatile boolean sleeping;
    /** The agent's sleeps, and how many a ring ended rather than the time-out (for tests). */
    private final java.util.concurrent.atomic.AtomicLong sleeps = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong eventWakes = new java.util.concurrent.atomic.AtomicLong();
    private AmDispatcher am;
    /** Bytes copied beyond the one copy into the ring, over all connections (package-private for tests). */
    final CopyCounters copies = new CopyCounters();
    /** Credit sent to peers: stored into a mapped credit word, or put (package-private for tests). */
    final java.util.concurrent.atomic.LongAdder creditStores = new java.util.concurrent.atomic.LongAdder();
    final java.util.concurrent.atomic.LongAdder creditPuts = new java.util.concurrent.atomic.LongAdder();

    /** A transport with defaults (and system properties {@code rdmastore.ucx.*}). */
    public UcxTransport() {
        this(new Context());
    }

    /**
     * A transport configured by keys named like the {@link Context} setters ({@code tls, memoryBudget, maxConnections,
     * ringCapacity, idleStrategy, invoker, messaging, footer, maxMessageLength, name}); missing keys keep defaults.
     */
    public UcxTransport(java.util.Properties settings) {
        this(Context.from(settings));
    }

    public UcxTransport(Context ctx) {
        this.ctx = ctx.conclude();
        this.adaptive = IdleStrategies.adaptive(ctx.idleStrategy);
        this.idle = adaptive != null ? null : IdleStrategies.of(ctx.idleStrategy);
        Throwable failure = null;
        try {
            open();
        } catch (Throwable t) {
            failure = t;
            closeNative();
            LOG.info("ucx unavailable: {}", t.toString());
        }
        this.cause = failure;
        if (failure == null && !ctx.invoker) {
            Thread t = new Thread(this::runAgent, "rdmastore-ucx-agent");
            t.setDaemon(true);
            agent = t;
            t.start();
        }
    }

    private void open() {
        UcpParams params = new UcpParams().requestRmaFeature().requestAmFeature().requestWakeupFeature()
            .setMtWorkersShared(true);
        String tls = ctx.effectiveTls();
        if (tls != null) {
            params.setConfig("TLS", tls);
        }
        if (tls == null || tls.contains("tcp") && !tls.startsWith("^")) {
            LOG.warn("ucx: UCX's tcp wire is allowed ({}); it does not check remote keys, so any peer that reaches the"
                + " worker's tcp port can read and write this process's memory. Use it on trusted networks only.",
                tls == null ? "UCX's default transports" : "UCX_TLS=" + tls);
        }
        context = new UcpContext(params);
        worker = context.newWorker(new UcpWorkerParams());
        int cap = ctx.ringCapacity();
        slotSize = 2 * cap + 4096;
        slotCount = (int) Math.max(1, Math.min(ctx.maxConnections, ctx.memoryBudget / slotSize));
        slotMemory = new UcpMemory[slotCount];
        for (int i = 0; i < slotCount; i++) {
            freeSlots.add(i);
        }
        byte[] host = hostId.getBytes(StandardCharsets.UTF_8);
        byte[] address = bytes(worker.getAddress());
        // the trailer (pid namespace, pid) lets a peer on this host read lent memory with process_vm_readv; peers
        // that predate it ignore trailing bytes
        // Every agent gets one, not only an adaptive one that sleeps on it: ringing a sleeping peer (a client past its
        // spin) takes this side's doorbell too, and a spinning server without one left such a client waiting for its
        // 1 ms time-out on every slow reply. A non-adaptive agent never raises its flag, so no peer rings it.
        if (!ctx.invoker) {
            doorbell = Doorbell.open();
            if (doorbell == null) {
                LOG.info("ucx: no doorbell (memfd or Unix datagram sockets unavailable); an idle agent parks up to 1 ms");
            }
        }
        byte[] bell = doorbell == null ? new byte[0] : doorbell.address();
        // after the pid: the doorbell (Doorbell#address), empty when this transport has none
        capability = ByteBuffer.allocate(1 + host.length + 4 + address.length + 16 + 2 + bell.length)
            .put((byte) host.length).put(host)
            .putInt(address.length).put(address).putLong(CrossMemoryAttach.PID_NAMESPACE)
            .putLong(ctx.declaredPid != 0 ? ctx.declaredPid : CrossMemoryAttach.PID)
            .putShort((short) bell.length).put(bell)
            .array();
        if (ctx.messaging.equals("am")) {
            am = new AmDispatcher(this, worker);
        }
        LOG.info("ucx ready: {} slots x {} KiB ring, {}", slotCount, cap >> 10, ctx);
    }

    static byte[] bytes(ByteBuffer b) {
        ByteBuffer d = b.duplicate();
        byte[] a = new byte[d.remaining()];
        d.get(a);
        return a;
    }

    private static String hostId() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            host = "unknown";
        }
        try {
            return host + "/" + Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
        } catch (java.io.IOException | RuntimeException e) {
            return host;
        }
    }

    @Override
    public String name() {
        return ctx.name;
    }

    @Override
    public boolean isAvailable() {
        return cause == null && running;
    }

    @Override
    public Throwable unavailabilityCause() {
        return cause;
    }

    Context context() {
        return ctx;
    }

    int ringCapacity() {
        return ctx.ringCapacity();
    }

    @Override
    public byte[] capability() {
        return isAvailable() ? capability.clone() : null;
    }

    /**
     * Parsed peer capability; {@code pidNamespace} and {@code pid} are -1 when the peer did not send them, {@code
     * doorbell} is empty when it has none.
     */
    record Peer(String hostId, byte[] workerAddress, long pidNamespace, long pid, byte[] doorbell) {
        static Peer parse(byte[] cap) {
            ByteBuffer b = ByteBuffer.wrap(cap);
            byte[] host = new byte[b.get() & 0xFF];
            b.get(host);
            int len = b.getInt();
            if (len <= 0 || len > b.remaining()) {
                throw new IllegalArgumentException("bad worker address length " + len);
            }
            byte[] address = new byte[len];
            b.get(address);
            long pidNamespace = -1;
            long pid = -1;
            byte[] bell = new byte[0];
            if (b.remaining() >= 16) {
                pidNamespace = b.getLong();
                pid = b.getLong();
                if (b.remaining() >= 2) {
                    int n = b.getShort() & 0xFFFF;
                    if (n <= b.remaining()) {
                        bell = new byte[n];
                        b.get(bell);
                    }
                }
            }
            return new Peer(new String(host, StandardCharsets.UTF_8), address, pidNamespace, pid, bell);
        }
    }

    @Override
    public Assessment assess(byte[] peerCapability) {
        Peer peer = Peer.parse(peerCapability);
        String tls = tlsInEffect();
        String setting = tls == null ? "UCX's default transports" : "UCX_TLS=" + tls;
        if (sameHost(peer)) {
            if (!allowsSharedMemory()) {
                return new Assessment(true, "peers share host " + hostId.split("/")[0] + " but " + setting
                    + " excludes shared memory, so UCX uses " + tls);
            }
            return new Assessment(true, "peers share host " + hostId.split("/")[0]
                + ", so UCX moves data through shared memory (" + setting + ")");
        }
        return new Assessment(true, "peers on different hosts; UCX uses RDMA verbs where both have a device ("
            + setting + "), else its own tcp");
    }

    /** The UCX_TLS this context runs with: its own setting, else the environment's; null means UCX's default. */
    String tlsInEffect() {
        return ctx.effectiveTls();
    }

    /** Whether the transports in effect include a shared-memory one. */
    boolean allowsSharedMemory() {
        String tls = tlsInEffect();
        if (tls == null || tls.isBlank() || tls.contains("all")) {
            return true;
        }
        for (String t : tls.split(",")) {
            String n = t.trim().replace("^", "");
            if (n.equals("sm") || n.equals("shm") || n.equals("posix") || n.equals("sysv") || n.equals("cma")
                || n.equals("knem") || n.equals("xpmem")) {
                return !tls.startsWith("^");
            }
        }
        return tls.startsWith("^");
    }

    /** Whether one-sided reads from {@code peer} may be made with process_vm_readv ({@link CrossMemoryAttach}). */
    boolean crossMemoryReads(Peer peer) {
        return ctx.crossMemoryReads && CrossMemoryAttach.available() && sameHost(peer) && allowsCma()
            && peer.pid() > 0 && peer.pidNamespace() == CrossMemoryAttach.PID_NAMESPACE;
    }

    /** Whether the transports in effect include cma (UCX's default, {@code sm}/{@code shm}, or named). */
    private boolean allowsCma() {
        String tls = tlsInEffect();
        if (tls == null || tls.isBlank() || tls.contains("all")) {
            return true;
        }
        boolean named = false;
        for (String t : tls.split(",")) {
            String n = t.trim().replace("^", "");
            named |= n.equals("sm") || n.equals("shm") || n.equals("cma");
        }
        return tls.startsWith("^") != named;
    }

    /** Whether the calling thread is driving the worker now (the agent, or an invoker inside doWork). */
    boolean isDriverThread() {
        return invokerLock.isHeldByCurrentThread();
    }

    /**
     * Bytes this transport copied on the send side beyond the one copy of each message into the ring (a rest kept
     * because the peer's ring was full, a message offered by a thread that could not drive); since start. Any thread.
     */
    public long copiedBytesSent() {
        return copies.sentBytes();
    }

    /**
     * Bytes this transport copied on the receive side beyond handing a frame to the handler where it landed (fragments
     * gathered into the assembly buffer, its growth); since start. Any thread.
     */
    public long copiedBytesReceived() {
        return copies.receivedBytes();
    }

    boolean sameHost(Peer peer) {
        return peer.hostId().equals(hostId);
    }

    /** The kind of wire a connection to {@code peer} uses, in words. */
    String wireKind(Peer peer) {
        if (!sameHost(peer)) {
            return "remote host";
        }
        return allowsSharedMemory() ? "same host: shared memory" : "same host: " + tlsInEffect();
    }

    @Override
    public Upgrade begin(Connection control, boolean initiator, byte[] peerCapability, MessageHandler handler,
                         byte prefix, String reason) {
        Peer peer = Peer.parse(peerCapability);
        UcxConnectionBase c = ctx.messaging.equals("am")
            ? new UcxAmConnection(this, control, handler, reason, peer)
            : new UcxConnection(this, control, handler, reason, peer);
        c.initiated = initiator;
        UpgradeImpl up = new UpgradeImpl(c, control, prefix);
        execute(() -> up.setUp());
        return up;
    }

    /** The upgrade state machine: local set-up, OFFER to the peer, the peer's OFFER. */
    private final class UpgradeImpl implements Upgrade {
        private final UcxConnectionBase c;
        private final Connection control;
        private final byte prefix;
        private final CompletableFuture<Connection> result = new CompletableFuture<>();
        private boolean local;
        private boolean remote;

        UpgradeImpl(UcxConnectionBase c, Connection control, byte prefix) {
            this.c = c;
            this.control = control;
            this.prefix = prefix;
        }

        void setUp() {
            try {
                if (result.isDone()) {
                    return;
                }
                Integer slot = allocateSlot();
                if (slot == null) {
                    throw new TransportException("ucx memory budget exhausted: all " + slotCount
                        + " connection slots in use (raise rdmastore.ucx.memoryBudget / maxConnections)");
                }
                UcpEndpoint ep = worker.newEndpoint(new UcpEndpointParams()
                    .setUcpAddress(ByteBuffer.allocateDirect(c.peer.workerAddress().length)
                        .put(c.peer.workerAddress()).flip()));
                c.attachLocal(slot, slotAddress(slot), ep);
                connections.add(c);
                if (c.peerBell == null || !c.initiated) {
                    unringing.incrementAndGet();
                }
                if (c.peerBell == null) {
                    bellless.incrementAndGet();
                }
                byte[] offer = c.offer(slotKey(slot));
                byte[] msg = new byte[offer.length + 1];
                msg[0] = prefix;
                System.arraycopy(offer, 0, msg, 1, offer.length);
                int status = control.offer(MemorySegment.ofArray(msg));
                if (status < 0) {
                    throw new TransportException("cannot send the ucx offer on the control connection: "
                        + io.rdmastore.transport.TransportStatus.describe(status));
                }
                local = true;
                tryComplete();
            } catch (Throwable t) {
                fail(t);
            }
        }

        @Override
        public void onControlMessage(MemorySegment message) {
            byte[] copy = message.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
            execute(() -> {
                try {
                    if (result.isDone()) {
                        return;
                    }
                    if (!local) {
                        throw new TransportException("peer's ucx offer arrived before local set-up");
                    }
                    c.attachRemote(copy);
                    remote = true;
                    tryComplete();
                } catch (Throwable t) {
                    fail(t);
                }
            });
        }

        private void tryComplete() {
            if (local && remote) {
                c.markReady();
                result.complete(c);
            }
        }

        private void fail(Throwable t) {
            if (result.completeExceptionally(t)) {
                c.close(t);
            }
        }

        @Override
        public CompletableFuture<Connection> result() {
            return result;
        }

        @Override
        public void abort(Throwable t) {
            execute(() -> fail(t));
        }
    }

    // ---- memory slots ----

    /**
     * Driver: a free slot with fresh memory registered for it alone (zeroed by the OS), or null when every slot is in
     * use. Slots whose quarantine has passed are deregistered first; their memory is never handed to another peer.
     */
    private Integer allocateSlot() {
        long now = System.nanoTime();
        while (!quarantine.isEmpty() && now - quarantine.peekFirst()[1] > 0) {
            int slot = (int) quarantine.pollFirst()[0];
            deregisterSlot(slot);
            freeSlots.add(slot);
        }
        Integer slot = freeSlots.pollFirst();
        if (slot != null) {
            long t0 = System.nanoTime();
            try {
                slotMemory[slot] = context.memoryMap(new UcpMemMapParams().allocate().setLength(slotSize));
            } catch (RuntimeException e) {
                freeSlots.addFirst(slot);
                throw new TransportException("cannot register memory for a ucx connection: " + e.getMessage(), e);
            }
            registrationNanos += System.nanoTime() - t0;
            slotRegistrations++;
        }
        return slot;
    }

    private void deregisterSlot(int slot) {
        UcpMemory m = slotMemory[slot];
        slotMemory[slot] = null;
        if (m != null) {
            long t0 = System.nanoTime();
            try {
                m.deregister();
            } catch (RuntimeException e) {
                LOG.warn("ucx: deregistering a connection's memory failed: {}", e.toString());
            }
            registrationNanos += System.nanoTime() - t0;
        }
    }

    /**
     * Driver: ends a connection's use of its slot. Its registration stays for a grace period, so puts a closing peer
     * still had in flight land in memory no one reads, then it is deregistered; a new connection never gets it.
     */
    void releaseSlot(int slot) {
        quarantine.addLast(new long[] {slot, System.nanoTime() + 500_000_000L});
    }

    long slotAddress(int slot) {
        return slotMemory[slot].getAddress();
    }

    /** The remote key of the slot's own registration: it covers that connection's memory and nothing else. */
    byte[] slotKey(int slot) {
        return bytes(slotMemory[slot].getRemoteKeyBuffer());
    }

    /** How many connection slots hold a registration now (in use or in quarantine). */
    int registeredSlots() {
        return call(() -> {
            int n = 0;
            for (UcpMemory m : slotMemory) {
                n += m != null ? 1 : 0;
            }
            return n;
        });
    }

    /** Mean microseconds to register (at connect) plus deregister (after the close) one connection's memory. */
    double registrationMicros() {
        return call(() -> slotRegistrations == 0 ? 0.0 : registrationNanos / 1e3 / slotRegistrations);
    }

    UcpContext ucpContext() {
        return context;
    }

    UcpWorker worker() {
        return worker;
    }

    AmDispatcher am() {
        return am;
    }

    void removeConnection(UcxConnectionBase c) {
        if (connections.remove(c)) {
            if (c.peerBell == null || !c.initiated) {
                unringing.decrementAndGet();
            }
            if (c.peerBell == null) {
                bellless.decrementAndGet();
            }
        }
    }

    // ---- driving ----

    /** Whether the calling thread may use the worker now; must be paired with {@link #exitDriver()} when true. */
    boolean tryEnterDriver() {
        return invokerLock.tryLock();
    }

    void exitDriver() {
        invokerLock.unlock();
    }

    /** Runs {@code task} on the driver: now when the caller is the driver, else queued. */
    void execute(Runnable task) {
        if (tryEnterDriver()) {
            try {
                // tasks queued earlier (possibly by this thread, while another held the lock) run first: FIFO
                runCommands();
                task.run();
            } finally {
                exitDriver();
            }
            return;
        }
        commands.offer(task);
        wake();
    }

    /** Driver: runs the queued commands; returns how many ran. */
    private int runCommands() {
        int n = 0;
        Runnable r;
        while ((r = commands.poll()) != null) {
            try {
                r.run();
            } catch (Throwable t) {
                LOG.warn("ucx command failed", t);
            }
            n++;
        }
        return n;
    }

    /** Runs {@code task} on the driver and waits for its result (driving the worker in invoker mode). */
    <T> T call(Supplier<T> task) {
        CompletableFuture<T> f = new CompletableFuture<>();
        execute(() -> {
            try {
                f.complete(task.get());
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (!f.isDone()) {
            if (doWork() == 0) {
                LockSupport.parkNanos(10_000);
            }
            if (System.nanoTime() - deadline > 0) {
                throw new TransportException("ucx driver did not answer within 30 s");
            }
        }
        try {
            return f.join();
        } catch (java.util.concurrent.CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw e;
        }
    }

    void wake() {
        Thread t = agent;
        if (t != null && parked) {
            Doorbell bell = doorbell;
            if (bell != null && adaptive != null) {
                bell.ringSelf();
            } else {
                LockSupport.unpark(t);
            }
        }
    }

    /**
     * The doorbell of {@code peer} for a connection's sends, or null: only for a peer on this host whose memory this
     * transport may read anyway (the flag is mapped from its process), when both sides have one.
     */
    Doorbell.Remote doorbellOf(Peer peer) {
        Doorbell bell = doorbell;
        if (bell == null || peer.doorbell().length == 0 || !sameHost(peer) || peer.pid() <= 0
            || peer.pidNamespace() != CrossMemoryAttach.PID_NAMESPACE) {
            return null;
        }
        return bell.connect(peer.pid(), peer.doorbell());
    }

    @Override
    public int doWork() {
        if (cause != null || !running) {
            return 0;
        }
        if (!invokerLock.tryLock()) {
            return 0;
        }
        try {
            return dutyCycle();
        } finally {
            invokerLock.unlock();
        }
    }

    /**
     * Ring polls per progress call of the worker while no connection needs one every cycle
     * ({@link UcxConnectionBase#needsProgress}): a progress call costs several times a poll of every ring, and a poll
     * loop that progresses each time notices a frame that lands during the call only after it.
     */
    private static final int POLLS_PER_PROGRESS = Integer.getInteger("rdmastore.ucx.pollsPerProgress", 16);
    /** Ring polls since the worker's last progress call; driver only. */
    private int sinceProgress;

    /**
     * One duty cycle: commands, every ring, and the worker's progress. When no connection needs progress every cycle,
     * the rings are polled up to {@link #POLLS_PER_PROGRESS} times per progress call; a cycle that finds nothing polls
     * again until it has progressed the worker, so 0 still means that nothing was found after a progress call.
     */
    private int dutyCycle() {
        int work = runCommands();
        List<UcxConnectionBase> list = connections;
        while (true) {
            // rings before progress: a request that just landed is answered without waiting for a progress call
            boolean needsProgress = false;
            for (int i = 0; i < list.size(); i++) {
                UcxConnectionBase c = list.get(i);
                work += c.poll();
                needsProgress |= c.needsProgress();
            }
            if (needsProgress || ++sinceProgress >= POLLS_PER_PROGRESS) {
                sinceProgress = 0;
                try {
                    work += worker.progress();
                } catch (Exception e) {
                    LOG.warn("ucx progress failed", e);
                }
                return work;
            }
            if (work > 0) {
                return work;
            }
        }
    }

    private void runAgent() {
        if (adaptive != null) {
            runAdaptive();
            return;
        }
        while (running) {
            int work = doWork();
            if (work > 0) {
                idle.idle(work);
            } else {
                parked = true;
                if (commands.isEmpty()) {
                    idle.idle(0);
                }
                parked = false;
            }
        }
    }

    /** A yield of the adaptive agent that returns later than this ends its spell: the core is contended. */
    private static final long CONTENDED_YIELD_NANOS = 50_000;

    /** The part of an adaptive idle spell spent spinning before yielding. */
    private static final long SPIN_NANOS = Long.getLong("rdmastore.ucx.spinNanos", 5_000);

    /**
     * The adaptive agent: duty cycles while there is work; when there is none, spins (then yields) for the window
     * {@link AdaptiveIdle} keeps, and when that passes without work (or a yield returns late: the core is contended),
     * sleeps on its {@link Doorbell} (or parks, without one): 1 ms while a peer on another host cannot ring it (such
     * peers are polled at least every millisecond, as under {@code backoff}), else 10 ms. A peer on this host that puts
     * a frame, or a thread of this process that queues a command, rings it. While callers drive the worker themselves
     * it sleeps unrung ({@link #waiting}).
     */
    private void runAdaptive() {
        while (running) {
            if (doorbell != null && callersDrive()) {
                // callers drive the worker: nothing for this agent to do but stay off the cores
                sleep();
                continue;
            }
            if (doWork() > 0) {
                continue;
            }
            long start = System.nanoTime();
            long window = adaptive.window();
            boolean found = false;
            while (running) {
                long idleNanos = System.nanoTime() - start;
                if (idleNanos >= window) {
                    break;
                }
                // a few microseconds of spinning catch a reply's next request; past them the agent yields, so on a
                // core shared with more runnable threads (other agents, the clients) each gets its turn within a few
                // microseconds, and on an idle core a yield returns at once
                boolean contended = false;
                if (idleNanos < SPIN_NANOS) {
                    Thread.onSpinWait();
                } else {
                    long before = System.nanoTime();
                    Thread.yield();
                    // a yield that returns late means another thread had this core: on a contended core yielding
                    // only hands it over for scheduler slices, while a sleeper rung awake preempts
                    contended = System.nanoTime() - before > CONTENDED_YIELD_NANOS;
                }
                if (doWork() > 0) {
                    adaptive.workAfter(System.nanoTime() - start);
                    found = true;
                    break;
                }
                if (contended) {
                    break;
                }
            }
            if (!found && running) {
                adaptive.slept();
                sleep();
            }
        }
    }

    /**
     * A thread starts ({@code true}) or stops polling the worker while it waits for a reply. While one polls, the
     * sleeping agent does not ask peers to ring (each ring would cost the peer a system call and wake a thread for a
     * message the poller finds anyway); when the last stops, the flag is raised again if the agent sleeps, and the
     * caller should poll once more before it blocks (a frame may have landed before the flag).
     */
    @Override
    public void polling(boolean active) {
        Doorbell bell = doorbell;
        if (bell == null) {
            return;
        }
        if (active) {
            pollers.incrementAndGet();
            bell.asleep(false);
        } else if (pollers.decrementAndGet() == 0 && sleeping && (waiters.get() > 0 || !QUIET)) {
            // a thread blocks for its reply: the agent must deliver it, so peers ring again
            bell.asleep(true);
        }
    }

    /**
     * A thread starts ({@code true}) or ends a wait for a reply, polling or blocked. When the last poller stops because
     * its wait is over (no thread waits), the sleeping agent's flag stays down: the thread is most likely about to send
     * its next request and poll again, and a ring for that reply would wake the agent for nothing, taking a core from
     * the caller or the server. The agent raises the flag itself once no thread has waited for a while (see
     * {@link #sleep()}); until then a frame nobody waits for (a push, an asynchronous reply) is found by the next poller
     * or by the agent within {@link #POLLER_SLEEP_MILLIS}.
     */
    @Override
    public void waiting(boolean active) {
        if (doorbell == null) {
            return;
        }
        if (active) {
            waiters.incrementAndGet();
        } else {
            lastWaitEnd = System.nanoTime();
            waiters.decrementAndGet();
        }
    }

    /**
     * An asynchronous call was sent: its reply is this agent's to deliver. Ends an unrung sleep (the flag goes up when
     * the agent sleeps again), and keeps the agent from sleeping unrung for the next 100 ms.
     */
    @Override
    public void sentUnawaited() {
        Doorbell bell = doorbell;
        if (bell == null) {
            return;
        }
        lastUnawaited = System.nanoTime();
        if (quietSleep) {
            bell.ringSelf();
        }
    }

    /**
     * Whether callers drive the worker themselves, so the agent may sleep unrung: a thread polls, or none waits but one
     * ended a wait within the last millisecond (it is most likely sending its next request); no asynchronous call was
     * sent in the last 100 ms; and every peer is on this host, so that once the flag is up it rings.
     */
    private boolean callersDrive() {
        if (!QUIET) {
            return false;
        }
        long now = System.nanoTime();
        return (pollers.get() > 0 || waiters.get() == 0 && now - lastWaitEnd < 1_000_000)
            && now - lastUnawaited > 100_000_000 && everyPeerRings();
    }

    /**
     * The agent's sleep: unrung for up to 10 ms while callers drive the worker ({@link #callersDrive()}); else mark it
     * asleep (peers that put a frame now ring the doorbell, unless a waiting thread polls the worker), look at the
     * rings and commands once more, then wait for a ring (or park, without a doorbell) for at most 1 ms, or 10 ms when
     * every peer can ring.
     */
    private void sleep() {
        Doorbell quietBell = doorbell;
        if (quietBell != null) {
            parked = true;
            sleeping = true;
            quietSleep = true;
            if (commands.isEmpty() && callersDrive()) {
                // the flag stays down: peers do not ring; a thread that stops polling to block raises it (polling),
                // an asynchronous call rings this agent (sentUnawaited)
                sleeps.incrementAndGet();
                if (quietBell.sleep(POLLER_SLEEP_MILLIS)) {
                    eventWakes.incrementAndGet();
                }
                quietSleep = false;
                sleeping = false;
                quietBell.asleep(false);
                parked = false;
                return;
            }
            // not quiet: the ordinary sleep below marks the agent again once it holds the lock
            quietSleep = false;
            sleeping = false;
            parked = false;
        }
        if (!invokerLock.tryLock()) {
            // another thread drives the worker now; let it
            Thread.yield();
            return;
        }
        Doorbell bell = doorbell;
        boolean idle;
        try {
            parked = true;
            sleeping = true;
            if (bell != null && pollers.get() == 0) {
                bell.asleep(true);
            }
            idle = commands.isEmpty() && dutyCycle() == 0;
        } finally {
            invokerLock.unlock();
        }
        if (idle && running) {
            sleeps.incrementAndGet();
            if (bell != null) {
                // peers that cannot ring (on other hosts) are polled every millisecond; when every peer can, the
                // time-out only bounds a wake-up lost anyway (a put still queued when the agent took its last look)
                if (bell.sleep(bellless.get() == 0 ? IDLE_SLEEP_MILLIS : 1)) {
                    eventWakes.incrementAndGet();
                }
            } else {
                LockSupport.parkNanos(1_000_000);
            }
        }
        sleeping = false;
        if (bell != null) {
            bell.asleep(false);
        }
        parked = false;
    }

    /** How long an idle agent sleeps (its flag up) when every peer can ring it. */
    private static final int IDLE_SLEEP_MILLIS = Integer.getInteger("rdmastore.ucx.idleSleepMillis", 10);
    /** Whether the agent may sleep unrung while callers drive the worker ({@code -Drdmastore.ucx.quiet=false}: never). */
    static final boolean QUIET = !"false".equals(System.getProperty("rdmastore.ucx.quiet"));
    /**
     * How long the agent sleeps, unrung, while callers drive the worker themselves (a thread polls, or one just got its
     * reply and is about to send its next request) and every peer is on this host and can ring it once its flag is up.
     */
    private static final int POLLER_SLEEP_MILLIS = Integer.getInteger("rdmastore.ucx.pollerSleepMillis", 10);

    /**
     * Whether this side made every connection (a client's: no peer sends requests that only the agent would serve) and
     * every peer is on this host and rings this agent's doorbell once it sleeps.
     */
    private boolean everyPeerRings() {
        return unringing.get() == 0;
    }

    /** Whether the agent's doorbell flag says asleep now (it may still take one last look at its rings). */
    boolean agentAsleep() {
        Doorbell bell = doorbell;
        return bell != null && bell.isAsleep();
    }

    /** Rings of peers' doorbells this transport sent. */
    long ringsSent() {
        Doorbell bell = doorbell;
        return bell == null ? 0 : bell.ringsSent.get();
    }

    /** Whether this transport's agent has a doorbell peers can ring. */
    boolean hasDoorbell() {
        return doorbell != null;
    }

    /** Sleeps of the adaptive agent, and how many of them a ring of the doorbell ended: {sleeps, rung}. */
    long[] sleepCounts() {
        return new long[] {sleeps.get(), eventWakes.get()};
    }

    /** Registers {@code segment} (native memory) for one-sided access; returns address, length and rkey. */
    UcpMemory register(MemorySegment segment) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException("ucx can only register native memory (MemorySegment from an Arena)");
        }
        UcpMemory m = call(() -> context.memoryMap(new UcpMemMapParams().setAddress(segment.address())
            .setLength(segment.byteSize())));
        registrations.add(m);
        return m;
    }

    /** Deregisters {@code memory} unless the transport already did at close. */
    void deregister(UcpMemory memory) {
        if (registrations.remove(memory) && running) {
            call(() -> {
                memory.deregister();
                return null;
            });
        }
    }

    /** Driver: remembers a remote key so it is released before the worker closes. */
    void track(org.openucx.jucx.ucp.UcpRemoteKey key) {
        remoteKeys.add(key);
    }

    /** Driver: destroys a remote key from {@link #track} now, unless the worker's close already destroyed it. */
    void untrack(org.openucx.jucx.ucp.UcpRemoteKey key) {
        if (remoteKeys.remove(key)) {
            key.close();
        }
    }

    /** Remote keys unpacked for one-sided operations and not destroyed yet (tests). Any thread. */
    int remoteKeysHeld() {
        return call(remoteKeys::size);
    }

    @Override
    public void close() {
        if (!running) {
            return;
        }
        running = false;
        Thread t = agent;
        if (t != null) {
            LockSupport.unpark(t);
            try {
                t.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (cause == null) {
            invokerLock.lock();
            try {
                finish();
            } finally {
                invokerLock.unlock();
            }
        }
    }

    private void finish() {
        if (context == null) {
            return;
        }
        Runnable r;
        while ((r = commands.poll()) != null) {
            try {
                r.run();
            } catch (Throwable ignored) {
                // closing: the connection is going away anyway
            }
        }
        for (UcxConnectionBase c : new ArrayList<>(connections)) {
            c.close(new TransportException("ucx transport closed"));
        }
        long deadline = System.nanoTime() + 2_000_000_000L;
        do {
            try {
                worker.progress();
            } catch (Exception e) {
                break;
            }
            closing.removeIf(org.openucx.jucx.ucp.UcpRequest::isCompleted);
        } while (!closing.isEmpty() && System.nanoTime() - deadline < 0);
        if (!closing.isEmpty()) {
            // destroying a worker with endpoint closes in flight aborts the process (UCX assertion); a peer that
            // vanished never completes them, so leave this worker to the OS
            LOG.warn("{} ucx endpoint close(s) did not complete (peer gone); leaving the worker to process exit",
                closing.size());
            return;
        }
        closeNative();
    }

    /** Driver: closes an endpoint without waiting; the request is tracked until the worker closes. */
    void closeEndpoint(UcpEndpoint ep) {
        org.openucx.jucx.ucp.UcpRequest r = ep.closeNonBlockingFlush();
        closing.removeIf(org.openucx.jucx.ucp.UcpRequest::isCompleted);
        if (r != null && !r.isCompleted()) {
            closing.add(r);
        }
    }

    private void closeNative() {
        for (org.openucx.jucx.ucp.UcpRemoteKey k : remoteKeys) {
            try {
                k.close();
            } catch (Throwable ignored) {
                // best effort on close
            }
        }
        remoteKeys.clear();
        for (UcpMemory m : registrations) {
            try {
                m.deregister();
            } catch (Throwable ignored) {
                // best effort on close
            }
        }
        registrations.clear();
        if (slotMemory != null) {
            for (int i = 0; i < slotMemory.length; i++) {
                try {
                    if (slotMemory[i] != null) {
                        slotMemory[i].deregister();
                    }
                } catch (Throwable ignored) {
                    // best effort on close
                }
                slotMemory[i] = null;
            }
        }
        try {
            if (worker != null) {
                worker.close();
            }
        } catch (Throwable ignored) {
            // best effort on close
        }
        try {
            if (context != null) {
                context.close();
            }
        } catch (Throwable ignored) {
            // best effort on close
        }
        worker = null;
        context = null;
        if (doorbell != null) {
            doorbell.close();
        }
    }

    /** The probe of UCX in this process, for {@code doctor}: UCX version and a default transport's availability. */
    public static String probe() {
        try (UcxTransport t = new UcxTransport(new Context().invoker(true).memoryBudget(1 << 20)
            .maxConnections(1).ringCapacity(64 << 10))) {
            return t.isAvailable() ? "available" : "unavailable: " + t.unavailabilityCause();
        }
    }

    @Override
    public String toString() {
        return "UcxTransport[" + ctx + ", " + (cause == null ? "available" : "unavailable: " + cause) + "]";
    }

}
