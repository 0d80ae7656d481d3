package io.rdmastore.transport.tck;

import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.ConnectionHandler;
import io.rdmastore.transport.Listener;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.RemoteMemory;
import io.rdmastore.transport.Transport;
import io.rdmastore.transport.TransportException;
import io.rdmastore.transport.TransportStatus;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32C;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The transport conformance suite. A provider's test subclasses it and supplies networks:
 * <pre>{@code
 * class TcpTransportTckTest extends TransportTck {
 *     protected Network newServerNetwork() { ... handshakeTimeout(Duration.ofSeconds(2)) ... }
 *     protected Network newClientNetwork() { ... }
 *     protected String expectedTransport() { return "tcp"; }
 *     protected String networkFactoryClass() { return MyNetworks.class.getName(); }
 * }
 * }</pre>
 * Every test goes through {@link Network} on 127.0.0.1 with ephemeral ports, asserts that its connections really use
 * {@link #expectedTransport()}, and is bounded by {@link Timeout}. The server network must use a short handshake
 * time-out (2 s: short for the truncated-HELLO test, long enough for a HELLO among many connections on a loaded
 * machine). Networks and their transports are closed after each test.
 *
 * <p>Threads: JUnit runs one test at a time per instance; the helpers are called from the test thread, the handlers
 * on transport threads. Handlers never block a transport thread except where a test stalls one on purpose.
 */
public abstract class TransportTck {
    private static final Logger LOG = LoggerFactory.getLogger(TransportTck.class);
    private static final Duration SEND_TIMEOUT = Duration.ofSeconds(30);
    /** Header of a checksummed message: {@code [stream:int32][seq:int32][crc32c of the rest:int32]}. */
    private static final int CHECKED_HEADER = 12;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private final Deque<AutoCloseable> cleanup = new ArrayDeque<>();

    /** A server network, new for each call; its handshake time-out must be short (about 2 s, well under 10 s). */
    protected abstract Network newServerNetwork();

    /** A client network, new for each call. */
    protected abstract Network newClientNetwork();

    /** The transport every connection must end up on: {@code "tcp"}, {@code "ucx"}. */
    protected abstract String expectedTransport();

    /** A public class with a public static {@code Network client()} method, used by a separate JVM. */
    protected abstract String networkFactoryClass();

    /** Options of every client connection. */
    protected ConnectOptions connectOptions() {
        return ConnectOptions.DEFAULT;
    }

    /** Largest message of the order-and-integrity test. */
    protected int maxMessageSize() {
        return 8 * 1024 * 1024;
    }

    /** Messages in the order-and-integrity test. */
    protected int orderedMessageCount() {
        return 400;
    }

    /** Size of the region read and written one-sided. */
    protected int regionSize() {
        return 8 * 1024 * 1024;
    }

    /** Connections of the concurrent-connections test. */
    protected int concurrentConnections() {
        return 64;
    }

    /** Sender threads per direction in the stress test. */
    protected int stressThreads() {
        return 4;
    }

    /** Messages per sender thread in the stress test. */
    protected int stressMessagesPerThread() {
        return 400;
    }

    // ---- tests ----

    @Test
    @Timeout(120)
    void messagesArriveInOrderAndIntact() throws Exception {
        Echo echo = new Echo();
        InetSocketAddress addr = listen(serverNetwork(), echo);
        Receiver rx = new Receiver();
        Connection c = connect(clientNetwork(), addr, rx);
        int max = Math.min(maxMessageSize(), c.maxMessageLength());
        Random rnd = new Random(42);
        int n = orderedMessageCount();
        long bytes = 0;
        for (int i = 0; i < n; i++) {
            int size = i == 0 ? 1 : i == 1 ? max : skewedSize(rnd, max);
            MemorySegment m = checkedMessage(rnd, size, 0, i);
            rx.expect(m);
            c.send(m, SEND_TIMEOUT);
            bytes += size;
        }
        rx.awaitCount(n, Duration.ofSeconds(90));
        assertNoErrors(echo.errors, "server");
        assertNoErrors(rx.errors, "client");
        assertEquals(n, rx.count.get(), "echoed messages");
        assertEquals(n, echo.count.get(), "messages seen by the server");
        LOG.info("{} messages ({} bytes) echoed intact and in order over {}", n, bytes, c.describe());
    }

    /**
     * A message offered in two parts arrives as one, head then body: from a caller's thread, and echoed from the
     * server's transport thread with the body in native memory that is freed as soon as the offer returns (the offer
     * must have copied it). Sizes run from empty parts to several frames.
     */
    @Test
    @Timeout(120)
    void twoPartMessagesArriveJoined() throws Exception {
        List<String> serverErrors = new CopyOnWriteArrayList<>();
        AtomicInteger echoed = new AtomicInteger();
        InetSocketAddress addr = listen(serverNetwork(), (connection, message) -> {
            String bad = verify(message);
            if (bad != null) {
                serverErrors.add(bad);
            }
            long size = message.byteSize();
            long split = size / 3;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment body = arena.allocate(Math.max(1, size - split)).asSlice(0, size - split);
                MemorySegment.copy(message, split, body, 0, size - split);
                MemorySegment head = MemorySegment.ofArray(message.asSlice(0, split).toArray(ValueLayout.JAVA_BYTE));
                int status = connection.offer(head, body);
                if (status != TransportStatus.OK) {
                    serverErrors.add("echo of " + size + " bytes refused: " + TransportStatus.describe(status));
                }
            }
            echoed.incrementAndGet();
        });
        Receiver rx = new Receiver();
        Connection c = connect(clientNetwork(), addr, rx);
        int max = Math.min(maxMessageSize(), c.maxMessageLength());
        int[] sizes = {0, 1, CHECKED_HEADER, 100, 4096, 16 * 1024 + 7, 64 * 1024, 256 * 1024 - 1, 256 * 1024 + 13,
            1 << 20, max};
        Random rnd = new Random(7);
        for (int i = 0; i < sizes.length; i++) {
            int size = Math.min(sizes[i], max);
            MemorySegment m = checkedMessage(rnd, size, 0, i);
            rx.expect(m);
            int split = size - size / 5;
            MemorySegment head = m.asSlice(0, split);
            MemorySegment body = m.asSlice(split);
            long deadline = System.nanoTime() + SEND_TIMEOUT.toNanos();
            int status;
            while ((status = c.offer(head, body)) == TransportStatus.BACK_PRESSURED
                && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertEquals(TransportStatus.OK, status, "two-part offer of " + size + " bytes");
            // one at a time: the echo offers from the transport thread, and must find room
            rx.awaitCount(i + 1, Duration.ofSeconds(30));
        }
        assertNoErrors(serverErrors, "server");
        assertNoErrors(rx.errors, "client");
        assertEquals(sizes.length, echoed.get(), "messages the server saw");
        assertEquals(sizes.length, rx.count.get(), "two-part echoes received joined and intact");
    }

    @Test
    @Timeout(90)
    void slowReaderBackPressuresWithoutLoss() throws Exception {
        CountDownLatch stalled = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<String> errors = new CopyOnWriteArrayList<>();
        AtomicInteger received = new AtomicInteger();
        AtomicInteger nextSeq = new AtomicInteger();
        MessageHandler slow = new MessageHandler() {
            @Override
            public void onMessage(Connection connection, MemorySegment message) {
                if (received.get() == 0) {
                    stalled.countDown();
                    try {
                        if (!release.await(60, TimeUnit.SECONDS)) {
                            errors.add("never released");
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                String bad = verify(message);
                if (bad != null) {
                    errors.add(bad);
                } else if (message.get(INT, 4) != nextSeq.getAndIncrement()) {
                    errors.add("message " + message.get(INT, 4) + " arrived when " + (nextSeq.get() - 1)
                        + " was due");
                }
                received.incrementAndGet();
            }
        };
        InetSocketAddress addr = listen(serverNetwork(), conn -> slow);
        Connection c = connect(clientNetwork(), addr, new Receiver());
        Random rnd = new Random(7);
        int seq = 0;
        try {
            c.send(checkedMessage(rnd, 64, 0, seq++), SEND_TIMEOUT);
            assertTrue(stalled.await(10, TimeUnit.SECONDS), "the stalled reader never got the first message");
            boolean backPressured = false;
            MemorySegment m = checkedMessage(rnd, 64 * 1024, 0, seq);
            for (int i = 0; i < 8192 && !backPressured; i++) {
                m.set(INT, 4, seq);
                reseal(m);
                int status = c.offer(m);
                if (status == TransportStatus.OK) {
                    seq++;
                } else {
                    assertEquals(TransportStatus.BACK_PRESSURED, status,
                        "offer to a stalled reader returned " + TransportStatus.describe(status));
                    backPressured = true;
                }
            }
            assertTrue(backPressured, "no BACK_PRESSURED after " + seq + " offers of 64 KiB to a stalled reader");
            assertTrue(c.isOpen(), "back-pressure must not close the connection");
            LOG.info("back-pressured after {} messages to a stalled reader", seq);
        } finally {
            release.countDown();
        }
        for (int i = 0; i < 50; i++) {
            c.send(checkedMessage(rnd, 1 + rnd.nextInt(100_000) + CHECKED_HEADER, 0, seq++), SEND_TIMEOUT);
        }
        int total = seq;
        awaitTrue(() -> received.get() >= total, Duration.ofSeconds(60),
            () -> "received " + received.get() + " of " + total);
        assertNoErrors(errors, "slow reader");
        assertEquals(total, received.get());
    }

    @Test
    @Timeout(90)
    void oneSidedReadAndWriteAtRandomOffsets() throws Exception {
        int size = regionSize();
        Arena arena = Arena.ofShared();
        cleanup.push(arena::close);
        MemorySegment serverSegment = arena.allocate(size, 64);
        Random rnd = new Random(11);
        fill(serverSegment, rnd);
        AtomicReference<RegisteredMemory> serverRegion = new AtomicReference<>();
        Handoff handoff = handoff();
        MessageHandler owner = (conn, msg) -> {
            RegisteredMemory r = serverRegion.get();
            if (r == null) {
                // Lives until the connection closes; the arena outlives it (closed last).
                r = conn.register(serverSegment);
                serverRegion.set(r);
            }
            handoff.send(conn, r.descriptor());
        };
        InetSocketAddress addr = listen(serverNetwork(), conn -> owner);
        Receiver rx = new Receiver();
        Connection c = connect(clientNetwork(), addr, rx);
        c.send(MemorySegment.ofArray(new byte[] {'D'}), SEND_TIMEOUT);
        byte[] descriptor = rx.nextRaw(Duration.ofSeconds(10));
        RemoteMemory remote = c.remoteMemory(descriptor);
        assertEquals(size, remote.length(), "remote region length");
        MemorySegment localSegment = arena.allocate(size, 64);
        RegisteredMemory local = c.register(localSegment);
        cleanup.push(local);

        for (int i = 0; i < 40; i++) {
            int len = i % 5 == 0 ? rnd.nextInt(Math.min(size, 3 * 1024 * 1024)) + 1 : rnd.nextInt(8192) + 1;
            long roff = rnd.nextInt(size - len + 1);
            long loff = rnd.nextInt(size - len + 1);
            c.read(remote, roff, local, loff, len).get(30, TimeUnit.SECONDS);
            assertEquals(-1, MemorySegment.mismatch(serverSegment, roff, roff + len, localSegment, loff, loff + len),
                "read of " + len + " bytes at remote " + roff + " into local " + loff + " differs");
        }
        for (int i = 0; i < 40; i++) {
            int len = i % 5 == 0 ? rnd.nextInt(Math.min(size, 3 * 1024 * 1024)) + 1 : rnd.nextInt(8192) + 1;
            long roff = rnd.nextInt(size - len + 1);
            long loff = rnd.nextInt(size - len + 1);
            fill(localSegment.asSlice(loff, len), rnd);
            c.write(local, loff, remote, roff, len).get(30, TimeUnit.SECONDS);
            assertEquals(-1, MemorySegment.mismatch(serverSegment, roff, roff + len, localSegment, loff, loff + len),
                "write of " + len + " bytes at remote " + roff + " from local " + loff + " differs");
        }
        // The whole region in one call: more than one chunk on providers that chunk.
        c.read(remote, 0, local, 0, size).get(60, TimeUnit.SECONDS);
        assertEquals(-1, MemorySegment.mismatch(serverSegment, 0, size, localSegment, 0, size), "whole-region read");

        assertClearFailure(c.read(remote, size - 10, local, 0, 100), "read past the end of the remote region");
        assertClearFailure(c.read(remote, -1, local, 0, 10), "read at a negative remote offset");
        assertClearFailure(c.write(local, 0, remote, size, 1), "write past the end of the remote region");
        assertClearFailure(c.read(remote, 0, local, size - 5, 10), "read past the end of the local region");

        // Still usable afterwards: a message round trip and a valid read.
        c.send(MemorySegment.ofArray(new byte[] {'D'}), SEND_TIMEOUT);
        assertEquals(size, c.remoteMemory(rx.nextRaw(Duration.ofSeconds(10))).length());
        c.read(remote, 100, local, 200, 300).get(10, TimeUnit.SECONDS);
        assertEquals(-1, MemorySegment.mismatch(serverSegment, 100, 400, localSegment, 200, 500));
        assertTrue(c.isOpen());
    }

    @Test
    @Timeout(120)
    void manyConcurrentConnections() throws Exception {
        Echo echo = new Echo();
        AtomicInteger accepted = new AtomicInteger();
        InetSocketAddress addr = listen(serverNetwork(), conn -> {
            accepted.incrementAndGet();
            assertTransport(conn);
            return echo;
        });
        Network client = clientNetwork();
        int n = concurrentConnections();
        List<Connection> conns = new ArrayList<>();
        List<Receiver> receivers = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Receiver rx = new Receiver();
            receivers.add(rx);
            conns.add(connect(client, addr, rx));
        }
        int perConnection = 20;
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> sends = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int id = i;
                sends.add(pool.submit(() -> {
                    Random rnd = new Random(id);
                    for (int k = 0; k < perConnection; k++) {
                        MemorySegment m = checkedMessage(rnd, CHECKED_HEADER + rnd.nextInt(16 * 1024), id, k);
                        receivers.get(id).expect(m);
                        conns.get(id).send(m, SEND_TIMEOUT);
                    }
                    return null;
                }));
            }
            for (Future<?> f : sends) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        for (Receiver rx : receivers) {
            rx.awaitCount(perConnection, Duration.ofSeconds(60));
            assertNoErrors(rx.errors, "client");
        }
        assertNoErrors(echo.errors, "server");
        assertEquals(n, accepted.get(), "connections accepted");
        assertEquals((long) n * perConnection, echo.count.get(), "messages echoed");
    }

    @Test
    @Timeout(30)
    void clientCloseIsSeenByServer() throws Exception {
        Closing server = new Closing();
        InetSocketAddress addr = listen(serverNetwork(), conn -> server);
        Closing clientSide = new Closing();
        Connection c = connect(clientNetwork(), addr, clientSide);
        c.send(MemorySegment.ofArray(new byte[] {1}), SEND_TIMEOUT);
        Connection s = server.connection.get(10, TimeUnit.SECONDS);
        assertTransport(s);
        c.close();
        assertEquals(TransportStatus.CLOSED, c.offer(MemorySegment.ofArray(new byte[] {2})),
            "offer after close");
        assertFalse(c.isOpen());
        assertTrue(server.closed.await(5, TimeUnit.SECONDS), "server-side onClose did not run");
        s.closeFuture().get(5, TimeUnit.SECONDS);
        c.closeFuture().get(5, TimeUnit.SECONDS);
        awaitTrue(() -> s.offer(MemorySegment.ofArray(new byte[] {3})) == TransportStatus.CLOSED,
            Duration.ofSeconds(2), () -> "server offer after the client closed did not return CLOSED");
        assertFalse(s.isOpen());
        assertTrue(clientSide.closed.await(5, TimeUnit.SECONDS), "client-side onClose did not run");
        assertEquals(1, server.closeCalls.get(), "server onClose calls");
        c.close();
        assertEquals(1, clientSide.closeCalls.get(), "client onClose calls after a second close()");
    }

    @Test
    @Timeout(30)
    void serverCloseIsSeenByClient() throws Exception {
        Closing server = new Closing();
        InetSocketAddress addr = listen(serverNetwork(), conn -> server);
        Closing clientSide = new Closing();
        Connection c = connect(clientNetwork(), addr, clientSide);
        c.send(MemorySegment.ofArray(new byte[] {1}), SEND_TIMEOUT);
        Connection s = server.connection.get(10, TimeUnit.SECONDS);
        assertTransport(s);
        s.close();
        assertEquals(TransportStatus.CLOSED, s.offer(MemorySegment.ofArray(new byte[] {2})), "offer after close");
        assertTrue(clientSide.closed.await(5, TimeUnit.SECONDS), "client-side onClose did not run");
        c.closeFuture().get(5, TimeUnit.SECONDS);
        awaitTrue(() -> c.offer(MemorySegment.ofArray(new byte[] {3})) == TransportStatus.CLOSED,
            Duration.ofSeconds(2), () -> "client offer after the server closed did not return CLOSED");
        assertFalse(c.isOpen());
        assertTrue(server.closed.await(5, TimeUnit.SECONDS), "server-side onClose did not run");
        s.closeFuture().get(5, TimeUnit.SECONDS);
        assertEquals(1, clientSide.closeCalls.get(), "client onClose calls");
    }

    @Test
    @Timeout(60)
    void killedPeerProcessIsDetected() throws Exception {
        Closing server = new Closing();
        InetSocketAddress addr = listen(serverNetwork(), conn -> server);
        String java = ProcessHandle.current().info().command().orElseThrow(
            () -> new IllegalStateException("cannot find this JVM's java binary"));
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
            "-cp", System.getProperty("java.class.path"), "-Xmx128m", PeerProcess.class.getName(),
            networkFactoryClass(), addr.getHostString(), Integer.toString(addr.getPort())));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            CompletableFuture<String> ready = new CompletableFuture<>();
            Thread reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
                    StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        LOG.info("peer {}: {}", p.pid(), line);
                        if (line.startsWith(PeerProcess.READY)) {
                            ready.complete(line);
                        }
                    }
                } catch (IOException e) {
                    // The peer was killed.
                }
                ready.completeExceptionally(new IllegalStateException("peer exited with "
                    + (p.isAlive() ? "its output closed" : "status " + p.exitValue()) + " before connecting"));
            }, "peer-output");
            reader.setDaemon(true);
            reader.start();
            ready.get(40, TimeUnit.SECONDS);
            Connection s = server.connection.get(10, TimeUnit.SECONDS);
            assertTransport(s);
            assertTrue(s.isOpen());
            p.destroyForcibly();
            long killed = System.nanoTime();
            assertTrue(server.closed.await(1, TimeUnit.SECONDS),
                "server onClose did not run within 1 s of killing the peer process");
            LOG.info("killed peer detected after {} us", (System.nanoTime() - killed) / 1000);
            s.closeFuture().get(1, TimeUnit.SECONDS);
            assertEquals(TransportStatus.CLOSED, s.offer(MemorySegment.ofArray(new byte[] {1})));
        } finally {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Test
    @Timeout(60)
    void randomBytesOnTheListenerAreRefused() throws Exception {
        InetSocketAddress addr = listen(serverNetwork(), new Echo());
        byte[] junk = new byte[256];
        new Random(3).nextBytes(junk);
        junk[0] = '~';
        String reply = rawExchange(addr, junk);
        LOG.info("reply to random bytes: {}", printable(reply));
        assertServesNormalClients(addr);
    }

    @Test
    @Timeout(60)
    void truncatedHelloIsClosedAfterTheHandshakeTimeOut() throws Exception {
        InetSocketAddress addr = listen(serverNetwork(), new Echo());
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(b);
        out.writeInt(0x52444D53);
        out.writeInt(100);
        out.write(new byte[10]);
        long start = System.nanoTime();
        String reply = rawExchange(addr, b.toByteArray());
        LOG.info("truncated HELLO closed after {} ms, reply: {}", (System.nanoTime() - start) / 1_000_000,
            printable(reply));
        assertServesNormalClients(addr);
    }

    @Test
    @Timeout(60)
    void oversizeAndNegativeLengthsAreRefused() throws Exception {
        InetSocketAddress addr = listen(serverNetwork(), new Echo());
        for (int length : new int[] {Integer.MAX_VALUE, -5}) {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(b);
            out.writeInt(0x52444D53);
            out.writeInt(length);
            out.write(new byte[64]);
            String reply = rawExchange(addr, b.toByteArray());
            LOG.info("reply to frame length {}: {}", length, printable(reply));
        }
        assertServesNormalClients(addr);
    }

    @Test
    @Timeout(120)
    void concurrentSendersInBothDirections() throws Exception {
        int threads = stressThreads();
        int perThread = stressMessagesPerThread();
        StreamChecker atServer = new StreamChecker();
        AtomicReference<Connection> serverConn = new AtomicReference<>();
        CountDownLatch serverReady = new CountDownLatch(1);
        MessageHandler serverHandler = (conn, msg) -> {
            if (serverConn.compareAndSet(null, conn)) {
                serverReady.countDown();
                return;
            }
            atServer.onMessage(conn, msg);
        };
        InetSocketAddress addr = listen(serverNetwork(), conn -> serverHandler);
        StreamChecker atClient = new StreamChecker();
        Connection c = connect(clientNetwork(), addr, atClient);
        c.send(MemorySegment.ofArray(new byte[] {0}), SEND_TIMEOUT);
        assertTrue(serverReady.await(10, TimeUnit.SECONDS), "server never saw the first message");
        Connection s = serverConn.get();
        assertTransport(s);
        ExecutorService pool = Executors.newFixedThreadPool(2 * threads);
        try {
            List<Future<?>> all = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                all.add(pool.submit(sender(c, t, perThread)));
                all.add(pool.submit(sender(s, 100 + t, perThread)));
            }
            for (Future<?> f : all) {
                f.get(90, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        long total = (long) threads * perThread;
        awaitTrue(() -> atServer.count.get() >= total && atClient.count.get() >= total, Duration.ofSeconds(60),
            () -> "server got " + atServer.count.get() + ", client got " + atClient.count.get() + " of " + total);
        assertNoErrors(atServer.errors, "server");
        assertNoErrors(atClient.errors, "client");
        assertEquals(total, atServer.count.get());
        assertEquals(total, atClient.count.get());
    }

    // ---- helpers for subclasses and tests ----

    /** A server network closed (with its transports) after the test. */
    protected final Network serverNetwork() {
        Network n = newServerNetwork();
        cleanup.push(() -> closeNetwork(n));
        return n;
    }

    /** A client network closed (with its transports) after the test. */
    protected final Network clientNetwork() {
        Network n = newClientNetwork();
        cleanup.push(() -> closeNetwork(n));
        return n;
    }

    private Handoff handoff() {
        Handoff h = new Handoff();
        cleanup.push(h);
        return h;
    }

    /** Listens on 127.0.0.1, an ephemeral port; the listener is closed after the test. */
    protected final InetSocketAddress listen(Network network, ConnectionHandler handler) {
        Listener l = network.listen(new InetSocketAddress("127.0.0.1", 0), handler);
        cleanup.push(l);
        return l.localAddress();
    }

    /** Same, with one handler for every connection. */
    protected final InetSocketAddress listen(Network network, MessageHandler handler) {
        return listen(network, conn -> handler);
    }

    /** Connects, checks the transport, and closes the connection after the test. */
    protected final Connection connect(Network network, InetSocketAddress address, MessageHandler handler) {
        Connection c = network.connect(address, handler, connectOptions());
        cleanup.push(c);
        assertTransport(c);
        return c;
    }

    private void assertTransport(Connection c) {
        assertEquals(expectedTransport(), c.transportName(), "transport of " + c.describe());
        assertNotNull(c.selectionReason(), "selection reason");
    }

    @AfterEach
    void closeEverything() {
        while (!cleanup.isEmpty()) {
            try {
                cleanup.pop().close();
            } catch (Exception e) {
                LOG.warn("clean-up failed", e);
            }
        }
    }

    private static void closeNetwork(Network n) {
        n.close();
        for (Transport t : n.transports()) {
            t.close();
        }
    }

    private void assertServesNormalClients(InetSocketAddress addr) throws Exception {
        Receiver rx = new Receiver();
        Connection c = connect(clientNetwork(), addr, rx);
        Random rnd = new Random(5);
        for (int i = 0; i < 5; i++) {
            MemorySegment m = checkedMessage(rnd, 100 + i, 0, i);
            rx.expect(m);
            c.send(m, SEND_TIMEOUT);
        }
        rx.awaitCount(5, Duration.ofSeconds(10));
        assertNoErrors(rx.errors, "client after bad input");
    }

    /** Sends {@code bytes} on a raw socket and reads until the server closes it (at most 10 s); returns the reply. */
    private static String rawExchange(InetSocketAddress addr, byte[] bytes) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(addr, 5000);
            s.setSoTimeout(10_000);
            s.getOutputStream().write(bytes);
            s.getOutputStream().flush();
            ByteArrayOutputStream reply = new ByteArrayOutputStream();
            InputStream in = s.getInputStream();
            byte[] buf = new byte[4096];
            try {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    reply.write(buf, 0, n);
                    assertTrue(reply.size() < 1 << 20, "server keeps sending to a bad peer");
                }
            } catch (SocketTimeoutException e) {
                fail("the server did not close a connection that sent bad input within 10 s; it sent: "
                    + printable(reply.toString(StandardCharsets.ISO_8859_1)));
            } catch (SocketException e) {
                // A reset is a close too.
                LOG.info("connection reset after bad input: {}", e.toString());
            }
            return reply.toString(StandardCharsets.ISO_8859_1);
        }
    }

    private static String printable(String s) {
        StringBuilder b = new StringBuilder();
        for (char ch : s.toCharArray()) {
            b.append(ch >= 32 && ch < 127 ? ch : '.');
        }
        return b.isEmpty() ? "(nothing)" : b.toString();
    }

    private static void assertClearFailure(CompletableFuture<Void> f, String what) throws Exception {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(10, TimeUnit.SECONDS),
            what + " must fail");
        Throwable cause = e.getCause();
        assertInstanceOf(TransportException.class, cause, what + ": " + cause);
        assertNotNull(cause.getMessage(), what + ": no message");
        assertFalse(cause.getMessage().isBlank(), what + ": blank message");
        LOG.info("{} failed as expected: {}", what, cause.getMessage());
    }

    private static void assertNoErrors(List<String> errors, String side) {
        if (!errors.isEmpty()) {
            fail(errors.size() + " error(s) at the " + side + ", first: " + errors.getFirst());
        }
    }

    private static void awaitTrue(java.util.function.BooleanSupplier condition, Duration timeout,
                                  java.util.function.Supplier<String> message) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                fail(message.get());
            }
            Thread.sleep(2);
        }
    }

    private static int skewedSize(Random rnd, int max) {
        double x = rnd.nextDouble();
        int small = Math.min(max, 4096);
        int medium = Math.min(max, 256 * 1024);
        if (x < 0.85 || max <= small) {
            return 1 + rnd.nextInt(small);
        }
        if (x < 0.97 || max <= medium) {
            return small + rnd.nextInt(medium - small + 1);
        }
        return medium + rnd.nextInt(max - medium + 1);
    }

    private static void fill(MemorySegment s, Random rnd) {
        byte[] chunk = new byte[64 * 1024];
        for (long at = 0; at < s.byteSize(); at += chunk.length) {
            rnd.nextBytes(chunk);
            int n = (int) Math.min(chunk.length, s.byteSize() - at);
            MemorySegment.copy(chunk, 0, s, ValueLayout.JAVA_BYTE, at, n);
        }
    }

    /**
     * A message of {@code size} bytes: random bytes, and when it has room for the header, {@code [stream][seq][crc32c
     * of the bytes after the header]} in front.
     */
    static MemorySegment checkedMessage(Random rnd, int size, int stream, int seq) {
        byte[] b = new byte[size];
        rnd.nextBytes(b);
        MemorySegment m = MemorySegment.ofArray(b);
        if (size >= CHECKED_HEADER) {
            m.set(INT, 0, stream);
            m.set(INT, 4, seq);
            reseal(m);
        }
        return m;
    }

    private static void reseal(MemorySegment m) {
        m.set(INT, 8, crc(m, CHECKED_HEADER, m.byteSize() - CHECKED_HEADER));
    }

    /** Null when {@code m} is intact (or too short to carry a checksum), else what is wrong. */
    static String verify(MemorySegment m) {
        if (m.byteSize() < CHECKED_HEADER) {
            return null;
        }
        int expected = m.get(INT, 8);
        int actual = crc(m, CHECKED_HEADER, m.byteSize() - CHECKED_HEADER);
        return expected == actual ? null : "checksum mismatch in message stream " + m.get(INT, 0) + " seq "
            + m.get(INT, 4) + " of " + m.byteSize() + " bytes";
    }

    static int crc(MemorySegment m, long offset, long length) {
        CRC32C c = new CRC32C();
        c.update(m.asSlice(offset, length).asByteBuffer());
        return (int) c.getValue();
    }

    private static java.util.concurrent.Callable<Void> sender(Connection c, int stream, int count) {
        return () -> {
            Random rnd = new Random(stream);
            for (int i = 0; i < count; i++) {
                c.send(checkedMessage(rnd, CHECKED_HEADER + rnd.nextInt(32 * 1024), stream, i), SEND_TIMEOUT);
            }
            return null;
        };
    }

    // ---- handlers ----

    /** Echoes every message back through a separate thread, so a full send queue never blocks a transport thread. */
    private final class Echo implements MessageHandler {
        final List<String> errors = new CopyOnWriteArrayList<>();
        final AtomicLong count = new AtomicLong();
        private final Handoff handoff = handoff();

        @Override
        public void onMessage(Connection connection, MemorySegment message) {
            String bad = verify(message);
            if (bad != null) {
                errors.add(bad);
            }
            count.incrementAndGet();
            handoff.send(connection, message.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    /** Sends copies on one daemon thread per instance, in order, waiting while back-pressured. */
    private static final class Handoff implements AutoCloseable {
        private final ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "tck-handoff");
            t.setDaemon(true);
            return t;
        });

        void send(Connection c, byte[] bytes) {
            executor.execute(() -> {
                try {
                    if (c.isOpen()) {
                        c.send(MemorySegment.ofArray(bytes), SEND_TIMEOUT);
                    }
                } catch (TransportException e) {
                    LOG.info("hand-off send failed: {}", e.getMessage());
                }
            });
        }

        @Override
        public void close() {
            executor.shutdownNow();
        }
    }

    /** Checks each message against the next expected one (length and CRC32C), in order; keeps raw copies on demand. */
    private static final class Receiver implements MessageHandler {
        final List<String> errors = new CopyOnWriteArrayList<>();
        final AtomicInteger count = new AtomicInteger();
        private final Queue<long[]> expected = new ConcurrentLinkedQueue<>();
        private final java.util.concurrent.BlockingQueue<byte[]> raw = new java.util.concurrent.LinkedBlockingQueue<>();

        void expect(MemorySegment m) {
            expected.add(new long[] {m.byteSize(), crc(m, 0, m.byteSize())});
        }

        @Override
        public void onMessage(Connection connection, MemorySegment message) {
            long[] e = expected.poll();
            if (e == null) {
                raw.add(message.toArray(ValueLayout.JAVA_BYTE));
            } else if (e[0] != message.byteSize() || (int) e[1] != crc(message, 0, message.byteSize())) {
                errors.add("message " + count.get() + ": expected " + e[0] + " bytes with crc " + (int) e[1]
                    + ", got " + message.byteSize() + " bytes with crc " + crc(message, 0, message.byteSize()));
            }
            count.incrementAndGet();
        }

        byte[] nextRaw(Duration timeout) throws InterruptedException {
            byte[] b = raw.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
            assertNotNull(b, "no reply within " + timeout.toMillis() + " ms");
            return b;
        }

        void awaitCount(int n, Duration timeout) throws InterruptedException {
            awaitTrue(() -> count.get() >= n, timeout, () -> "received " + count.get() + " of " + n + " messages");
        }
    }

    /** Records the connection at its first message and counts onClose calls. */
    private static final class Closing implements MessageHandler {
        final CompletableFuture<Connection> connection = new CompletableFuture<>();
        final CountDownLatch closed = new CountDownLatch(1);
        final AtomicInteger closeCalls = new AtomicInteger();

        @Override
        public void onMessage(Connection c, MemorySegment message) {
            connection.complete(c);
        }

        @Override
        public void onClose(Connection c, Throwable cause) {
            closeCalls.incrementAndGet();
            closed.countDown();
        }
    }

    /** Verifies every checksum and the order of each sender's stream; counts. */
    private static final class StreamChecker implements MessageHandler {
        final List<String> errors = new CopyOnWriteArrayList<>();
        final AtomicLong count = new AtomicLong();
        private final java.util.Map<Integer, Integer> next = new java.util.concurrent.ConcurrentHashMap<>();
        private final AtomicBoolean reported = new AtomicBoolean();

        @Override
        public void onMessage(Connection connection, MemorySegment message) {
            String bad = verify(message);
            if (bad == null && message.byteSize() >= CHECKED_HEADER) {
                int stream = message.get(INT, 0);
                int seq = message.get(INT, 4);
                int due = next.getOrDefault(stream, 0);
                if (seq != due) {
                    bad = "stream " + stream + ": message " + seq + " arrived when " + due + " was due";
                }
                next.put(stream, seq + 1);
            } else if (bad == null) {
                bad = "message of " + message.byteSize() + " bytes is too short";
            }
            if (bad != null && reported.compareAndSet(false, true)) {
                LOG.error(bad);
            }
            if (bad != null) {
                errors.add(bad);
            }
            count.incrementAndGet();
        }
    }
}
