package io.rdmastore.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.LineBasedFrameDecoder;
import io.rdmastore.transport.CarrierTransport;
import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.Listener;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.RemoteMemory;
import io.rdmastore.transport.TransportException;
import io.rdmastore.transport.TransportStatus;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Provider-specific behaviour of {@link TcpTransport} that the TCK cannot see through the SPI. */
class TcpTransportTest {
    static {
        NettyLeaks.install();
    }

    @AfterAll
    static void noBufferLeaked() throws InterruptedException {
        assertEquals(List.of(), NettyLeaks.collect(), "Netty buffers leaked");
    }

    private static final InetSocketAddress ANY = new InetSocketAddress("127.0.0.1", 0);

    private final Deque<AutoCloseable> cleanup = new ArrayDeque<>();

    @AfterEach
    void closeEverything() throws Exception {
        while (!cleanup.isEmpty()) {
            cleanup.pop().close();
        }
    }

    private <T extends AutoCloseable> T track(T resource) {
        cleanup.push(resource);
        return resource;
    }

    /** Echoes each message from the event loop (small messages only: a full queue would drop the echo). */
    private static final MessageHandler ECHO = (c, m) -> c.offer(m);

    @Test
    @Timeout(30)
    void foreignProtocolSharesThePortWithNativeClients() throws Exception {
        AtomicInteger activations = new AtomicInteger();
        TcpTransport server = track(new TcpTransport(new TcpTransport.Context().foreignProtocol(p -> p.addLast(
            new LineBasedFrameDecoder(1024),
            new SimpleChannelInboundHandler<ByteBuf>() {
                @Override
                public void channelActive(ChannelHandlerContext ctx) {
                    activations.incrementAndGet();
                }

                @Override
                protected void channelRead0(ChannelHandlerContext ctx, ByteBuf line) {
                    String reply = "+" + line.toString(StandardCharsets.US_ASCII) + "\r\n";
                    ctx.writeAndFlush(Unpooled.copiedBuffer(reply, StandardCharsets.US_ASCII));
                }
            }))));
        Network serverNet = track(new Network(new Network.Context().carrier(server)
            .handshakeTimeout(Duration.ofSeconds(2))));
        InetSocketAddress addr = track(serverNet.listen(ANY, c -> ECHO)).localAddress();

        try (Socket a = new Socket(); Socket b = new Socket(); Socket r = new Socket()) {
            for (Socket s : new Socket[] {a, b, r}) {
                s.connect(addr, 5000);
                s.setSoTimeout(5000);
            }
            // Fewer than 4 bytes first: 'P' cannot start the preface, so the decision is made at once.
            write(a, "PI");
            Thread.sleep(50);
            write(a, "NG\r\n");
            assertEquals("+PING\r\n", readLine(a.getInputStream()));
            // Starts like the preface, then departs from it: every byte already read still reaches the foreign side.
            write(r, "RDM");
            Thread.sleep(50);
            write(r, "X tail\n");
            assertEquals("+RDMX tail\r\n", readLine(r.getInputStream()));
            // A native client on the same port meanwhile.
            Network clientNet = track(new Network(new Network.Context().carrier(track(new TcpTransport()))));
            BlockingQueue<byte[]> got = new LinkedBlockingQueue<>();
            Connection c = track(clientNet.connect(addr, (conn, m) -> got.add(m.toArray(ValueLayout.JAVA_BYTE)),
                ConnectOptions.DEFAULT));
            assertEquals("tcp", c.transportName());
            c.send(MemorySegment.ofArray("native".getBytes(StandardCharsets.UTF_8)), Duration.ofSeconds(5));
            assertArrayEquals("native".getBytes(StandardCharsets.UTF_8), got.poll(5, TimeUnit.SECONDS));
            write(b, "*1\r\n");
            assertEquals("+*1\r\n", readLine(b.getInputStream()));
            write(a, "again\n");
            assertEquals("+again\r\n", readLine(a.getInputStream()));
        }
        assertEquals(3, activations.get(), "each foreign connection sees channelActive once");
    }

    @Test
    @Timeout(30)
    void badPrefaceWithoutForeignProtocolGetsOneErrorLine() throws Exception {
        TcpTransport server = track(new TcpTransport());
        InetSocketAddress addr = track(server.listen(ANY, c -> ECHO)).localAddress();
        try (Socket s = new Socket()) {
            s.connect(addr, 5000);
            s.setSoTimeout(5000);
            write(s, "PING\r\n");
            assertEquals("-ERR not an rdmastore native connection: bad preface\r\n",
                new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII));
        }
    }

    @Test
    @Timeout(30)
    void silentConnectionIsClosedAfterThePrefaceTimeOut() throws Exception {
        TcpTransport server = track(new TcpTransport(new TcpTransport.Context()
            .prefaceTimeout(Duration.ofMillis(200))));
        InetSocketAddress addr = track(server.listen(ANY, c -> ECHO)).localAddress();
        try (Socket s = new Socket()) {
            s.connect(addr, 5000);
            s.setSoTimeout(5000);
            write(s, "RD");
            long start = System.nanoTime();
            assertEquals(-1, s.getInputStream().read(), "expected the server to close the connection");
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(4));
        }
    }

    @Test
    @Timeout(30)
    void describeNamesFlavourAndBothEnds() throws Exception {
        for (boolean nativeTransport : new boolean[] {true, false}) {
            TcpTransport server = track(new TcpTransport(new TcpTransport.Context().nativeTransport(nativeTransport)));
            TcpTransport client = track(new TcpTransport(new TcpTransport.Context().nativeTransport(nativeTransport)));
            CompletableFuture<Connection> accepted = new CompletableFuture<>();
            InetSocketAddress addr = track(server.listen(ANY, c -> {
                accepted.complete(c);
                return ECHO;
            })).localAddress();
            BlockingQueue<byte[]> got = new LinkedBlockingQueue<>();
            Connection c = track(client.connect(addr, (conn, m) -> got.add(m.toArray(ValueLayout.JAVA_BYTE)),
                Duration.ofSeconds(5)));
            c.send(MemorySegment.ofArray(new byte[] {42}), Duration.ofSeconds(5));
            assertArrayEquals(new byte[] {42}, got.poll(5, TimeUnit.SECONDS));
            String flavour = client.flavor();
            assertTrue(nativeTransport || flavour.equals("nio"), flavour);
            Connection s = accepted.get(5, TimeUnit.SECONDS);
            int clientPort = ((InetSocketAddress) s.remoteAddress()).getPort();
            assertEquals("tcp (" + flavour + ") 127.0.0.1:" + clientPort + " -> 127.0.0.1:" + addr.getPort(),
                c.describe());
            assertEquals("tcp (" + server.flavor() + ") 127.0.0.1:" + addr.getPort() + " -> 127.0.0.1:"
                + clientPort, s.describe());
            assertEquals("tcp", c.transportName());
            assertEquals("carrier", c.selectionReason());
            assertTrue(server.isAvailable());
            assertNull(server.unavailabilityCause());
        }
    }

    @Test
    @Timeout(30)
    void tooLargeIsRefusedLocallyAndOversizeFromPeerClosesWithReason() throws Exception {
        TcpTransport server = track(new TcpTransport(new TcpTransport.Context().maxMessageLength(1024)));
        TcpTransport client = track(new TcpTransport());
        CountDownLatch serverClosed = new CountDownLatch(1);
        AtomicInteger delivered = new AtomicInteger();
        InetSocketAddress addr = track(server.listen(ANY, c -> new MessageHandler() {
            @Override
            public void onMessage(Connection connection, MemorySegment message) {
                delivered.incrementAndGet();
                assertEquals(TransportStatus.TOO_LARGE, connection.offer(MemorySegment.ofArray(new byte[1025])));
                connection.offer(message);
            }

            @Override
            public void onClose(Connection connection, Throwable cause) {
                serverClosed.countDown();
            }
        })).localAddress();
        AtomicReference<Throwable> clientCause = new AtomicReference<>();
        CountDownLatch clientClosed = new CountDownLatch(1);
        BlockingQueue<byte[]> got = new LinkedBlockingQueue<>();
        Connection c = track(client.connect(addr, new MessageHandler() {
            @Override
            public void onMessage(Connection connection, MemorySegment message) {
                got.add(message.toArray(ValueLayout.JAVA_BYTE));
            }

            @Override
            public void onClose(Connection connection, Throwable cause) {
                clientCause.set(cause);
                clientClosed.countDown();
            }
        }, Duration.ofSeconds(5)));
        c.send(MemorySegment.ofArray(new byte[1024]), Duration.ofSeconds(5));
        assertEquals(1024, got.poll(5, TimeUnit.SECONDS).length);
        c.send(MemorySegment.ofArray(new byte[2048]), Duration.ofSeconds(5));
        assertTrue(clientClosed.await(5, TimeUnit.SECONDS), "client not closed after an oversize message");
        assertTrue(serverClosed.await(5, TimeUnit.SECONDS));
        assertEquals(1, delivered.get(), "the oversize message must not be delivered");
        assertInstanceOf(TransportException.class, clientCause.get());
        assertTrue(clientCause.get().getMessage().contains("exceeds the maximum of 1024"),
            clientCause.get().getMessage());
        assertEquals(TransportStatus.CLOSED, c.offer(MemorySegment.ofArray(new byte[1])));
    }

    /**
     * An oversize message refused at its header leaves most of its bytes unread in the server's socket. Closing then
     * would make the kernel answer with a reset, which can throw away the ERROR frame still queued to the peer; the
     * server shuts its write side and drains instead: a peer that goes on sending reads the frame, then a clean end of
     * the stream (closing at once, its writes or reads fail with a reset).
     */
    @Test
    @Timeout(60)
    void aPeerStillSendingWhenRefusedReadsTheReasonAndACleanEnd() throws Exception {
        TcpTransport server = track(new TcpTransport(new TcpTransport.Context().maxMessageLength(1024)));
        InetSocketAddress addr = track(server.listen(ANY, c -> ECHO)).localAddress();
        for (int round = 0; round < 3; round++) {
            try (Socket s = new Socket()) {
                s.connect(addr, 5000);
                s.setSoTimeout(5000);
                int length = 1 << 20;
                ByteBuffer head = ByteBuffer.allocate(4 + FrameDescriptor.HEADER_LENGTH)
                    .putInt(CarrierTransport.PREFACE).putInt(length).put(FrameDescriptor.MESSAGE);
                OutputStream out = s.getOutputStream();
                out.write(head.array());
                byte[] chunk = new byte[64 << 10];
                for (int sent = 0; sent < length; sent += chunk.length) {
                    out.write(chunk);
                }
                out.flush();
                java.io.DataInputStream in = new java.io.DataInputStream(s.getInputStream());
                int textLength = in.readInt();
                assertEquals(FrameDescriptor.ERROR, in.readByte(), "round " + round);
                byte[] text = in.readNBytes(textLength);
                assertTrue(new String(text, StandardCharsets.UTF_8).contains("exceeds the maximum of 1024"),
                    new String(text, StandardCharsets.UTF_8));
                assertEquals(-1, in.read(), "round " + round + ": the server's end of the stream");
            }
        }
    }

    @Test
    @Timeout(60)
    void ownerChecksRegionsAndBoundsItself() throws Exception {
        TcpTransport server = track(new TcpTransport(new TcpTransport.Context().oneSidedChunkLength(64 * 1024)));
        TcpTransport client = track(new TcpTransport());
        Arena arena = track(Arena.ofShared());
        MemorySegment owned = arena.allocate(1 << 20);
        for (int i = 0; i < owned.byteSize(); i++) {
            owned.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31));
        }
        CompletableFuture<RegisteredMemory> region = new CompletableFuture<>();
        InetSocketAddress addr = track(server.listen(ANY, conn -> {
            RegisteredMemory r = conn.register(owned);
            region.complete(r);
            conn.offer(MemorySegment.ofArray(r.descriptor()));
            return ECHO;
        })).localAddress();
        BlockingQueue<byte[]> got = new LinkedBlockingQueue<>();
        Connection c = track(client.connect(addr, (conn, m) -> got.add(m.toArray(ValueLayout.JAVA_BYTE)),
            Duration.ofSeconds(5)));
        byte[] descriptor = got.poll(5, TimeUnit.SECONDS);
        assertNotNull(descriptor);
        MemorySegment localSegment = arena.allocate(4 << 20);
        RegisteredMemory local = c.register(localSegment);

        // Many chunks, window-limited: the server's chunk limit is 64 KiB, the client's 1 MiB.
        TcpTransport small = track(new TcpTransport(new TcpTransport.Context().oneSidedChunkLength(16 * 1024)
            .oneSidedWindow(2)));
        BlockingQueue<byte[]> got2 = new LinkedBlockingQueue<>();
        Connection c2 = track(small.connect(addr, (conn, m) -> got2.add(m.toArray(ValueLayout.JAVA_BYTE)),
            Duration.ofSeconds(5)));
        RemoteMemory remote2 = c2.remoteMemory(got2.poll(5, TimeUnit.SECONDS));
        RegisteredMemory local2 = c2.register(localSegment);
        c2.read(remote2, 3, local2, 5, owned.byteSize() - 3).get(30, TimeUnit.SECONDS);
        assertEquals(-1, MemorySegment.mismatch(owned, 3, owned.byteSize(), localSegment, 5,
            5 + owned.byteSize() - 3));

        // A descriptor that claims more than the owner registered: the owner refuses, the connection lives on.
        ByteBuffer forged = ByteBuffer.wrap(descriptor.clone());
        forged.putLong(5, 2L << 20);
        RemoteMemory tooLong = c.remoteMemory(forged.array());
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> c.read(tooLong, (1 << 20) - 10, local, 0, 100).get(5, TimeUnit.SECONDS));
        assertTrue(e.getCause().getMessage().contains("outside region"), e.getCause().getMessage());
        // A chunk larger than the owner's limit.
        e = assertThrows(ExecutionException.class,
            () -> c.read(tooLong, 0, local, 0, 1 << 20).get(5, TimeUnit.SECONDS));
        assertTrue(e.getCause().getMessage().contains("exceeds the limit"), e.getCause().getMessage());
        // An unknown region id.
        ByteBuffer unknown = ByteBuffer.wrap(descriptor.clone());
        unknown.putInt(1, 999);
        e = assertThrows(ExecutionException.class,
            () -> c.write(local, 0, c.remoteMemory(unknown.array()), 0, 10).get(5, TimeUnit.SECONDS));
        assertTrue(e.getCause().getMessage().contains("unknown or closed region 999"), e.getCause().getMessage());
        // A deregistered region.
        RemoteMemory remote = c.remoteMemory(descriptor);
        c.read(remote, 0, local, 0, 1000).get(5, TimeUnit.SECONDS);
        region.get().close();
        e = assertThrows(ExecutionException.class, () -> c.read(remote, 0, local, 0, 10).get(5, TimeUnit.SECONDS));
        assertTrue(e.getCause().getMessage().contains("unknown or closed region"), e.getCause().getMessage());
        // Bad descriptors are refused with a clear error.
        TransportException bad = assertThrows(TransportException.class, () -> c.remoteMemory(new byte[3]));
        assertTrue(bad.getMessage().contains("not a tcp memory descriptor"), bad.getMessage());
        // Still usable.
        assertTrue(c.isOpen());
        c.send(MemorySegment.ofArray(new byte[] {7}), Duration.ofSeconds(5));
        assertArrayEquals(new byte[] {7}, got.poll(5, TimeUnit.SECONDS));
        c2.close();
        c.close();
    }

    @Test
    @Timeout(30)
    void pendingOneSidedOperationsFailWhenTheConnectionCloses() throws Exception {
        TcpTransport server = track(new TcpTransport());
        TcpTransport client = track(new TcpTransport());
        Arena arena = track(Arena.ofShared());
        MemorySegment owned = arena.allocate(32 << 20);
        CountDownLatch stall = new CountDownLatch(1);
        InetSocketAddress addr = track(server.listen(ANY, conn -> {
            conn.offer(MemorySegment.ofArray(conn.register(owned).descriptor()));
            return (cc, m) -> {
                try {
                    // Holds the owner's event loop so the read cannot be served before the close.
                    stall.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            };
        })).localAddress();
        BlockingQueue<byte[]> got = new LinkedBlockingQueue<>();
        Connection c = track(client.connect(addr, (conn, m) -> got.add(m.toArray(ValueLayout.JAVA_BYTE)),
            Duration.ofSeconds(5)));
        RemoteMemory remote = c.remoteMemory(got.poll(5, TimeUnit.SECONDS));
        RegisteredMemory local = c.register(arena.allocate(32 << 20));
        c.send(MemorySegment.ofArray(new byte[1]), Duration.ofSeconds(5));
        CompletableFuture<Void> read = c.read(remote, 0, local, 0, 32 << 20);
        Thread.sleep(100);
        assertFalse(read.isDone());
        c.close();
        stall.countDown();
        ExecutionException e = assertThrows(ExecutionException.class, () -> read.get(5, TimeUnit.SECONDS));
        assertTrue(e.getCause().getMessage().contains("connection closed"), e.getCause().getMessage());
        ExecutionException after = assertThrows(ExecutionException.class,
            () -> c.read(remote, 0, local, 0, 10).get(5, TimeUnit.SECONDS));
        assertTrue(after.getCause().getMessage().contains("closed"), after.getCause().getMessage());
    }

    @Test
    @Timeout(30)
    void contextRejectsBadValuesAndClosedTransportRefusesWork() {
        assertThrows(IllegalArgumentException.class, () -> new TcpTransport(new TcpTransport.Context().ioThreads(0)));
        assertThrows(IllegalArgumentException.class,
            () -> new TcpTransport(new TcpTransport.Context().maxMessageLength(0)));
        assertThrows(IllegalArgumentException.class,
            () -> new TcpTransport(new TcpTransport.Context().writeBufferWaterMarks(10, 5)));
        assertThrows(IllegalArgumentException.class,
            () -> new TcpTransport(new TcpTransport.Context().prefaceTimeout(Duration.ZERO)));
        assertThrows(IllegalArgumentException.class,
            () -> new TcpTransport(new TcpTransport.Context().oneSidedChunkLength(0)));
        TcpTransport t = new TcpTransport();
        Listener l = t.listen(ANY, c -> ECHO);
        t.close();
        t.close();
        TransportException e = assertThrows(TransportException.class, () -> t.listen(ANY, c -> ECHO));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        l.close();
        TcpTransport other = track(new TcpTransport());
        TransportException refused = assertThrows(TransportException.class,
            () -> other.connect(l.localAddress(), ECHO, Duration.ofSeconds(2)));
        assertTrue(refused.getMessage().startsWith("cannot connect to"), refused.getMessage());
    }

    @Test
    @Timeout(60)
    void directWritesAndLoopWritesNeverInterleave() throws Exception {
        // Four client threads send messages of 1 B to 1 MiB (large ones fill the socket buffer, so part of them goes
        // to the event loop), written on their own threads, while the client's event loop answers the server's
        // one-sided reads of the client's memory with 1 MiB frames: every message must arrive whole and in order.
        TcpTransport server = track(new TcpTransport());
        TcpTransport client = track(new TcpTransport(new TcpTransport.Context().directWrites(true)));
        Arena arena = track(Arena.ofShared());
        MemorySegment lent = arena.allocate(8 << 20);
        for (int i = 0; i < lent.byteSize(); i++) {
            lent.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
        }
        int threads = 4;
        int perThread = 400;
        int[] next = new int[threads];
        List<String> errors = new java.util.concurrent.CopyOnWriteArrayList<>();
        AtomicInteger received = new AtomicInteger();
        CompletableFuture<Connection> serverSide = new CompletableFuture<>();
        CompletableFuture<byte[]> descriptor = new CompletableFuture<>();
        InetSocketAddress addr = track(server.listen(ANY, conn -> {
            serverSide.complete(conn);
            return (cc, m) -> {
                if (!descriptor.isDone()) {
                    descriptor.complete(m.toArray(ValueLayout.JAVA_BYTE));
                    return;
                }
                String bad = checkSequenced(m, next);
                if (bad != null) {
                    errors.add(bad);
                }
                received.incrementAndGet();
            };
        })).localAddress();
        TcpConnection c = (TcpConnection) track(client.connect(addr, (conn, m) -> { }, Duration.ofSeconds(5)));
        RegisteredMemory region = c.register(lent);
        c.send(MemorySegment.ofArray(region.descriptor()), Duration.ofSeconds(5));
        Connection s = serverSide.get(5, TimeUnit.SECONDS);
        RemoteMemory remote = s.remoteMemory(descriptor.get(5, TimeUnit.SECONDS));
        MemorySegment into = arena.allocate(lent.byteSize());
        RegisteredMemory local = s.register(into);
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads + 1);
        try {
            List<java.util.concurrent.Future<?>> all = new java.util.ArrayList<>();
            all.add(pool.submit(() -> {
                java.util.Random rnd = new java.util.Random(11);
                for (int i = 0; i < 24; i++) {
                    long at = rnd.nextInt(1 << 20);
                    long n = 1 + rnd.nextInt(6 << 20);
                    s.read(remote, at, local, at, n).get(30, TimeUnit.SECONDS);
                    assertEquals(-1, MemorySegment.mismatch(lent, at, at + n, into, at, at + n), "read " + i);
                }
                return null;
            }));
            for (int t = 0; t < threads; t++) {
                int thread = t;
                all.add(pool.submit(() -> {
                    java.util.Random rnd = new java.util.Random(thread);
                    for (int seq = 0; seq < perThread; seq++) {
                        int size = 12 + (rnd.nextInt(8) == 0 ? rnd.nextInt(1 << 20) : rnd.nextInt(2048));
                        c.send(sequenced(thread, seq, size), Duration.ofSeconds(30));
                    }
                    return null;
                }));
            }
            for (java.util.concurrent.Future<?> f : all) {
                f.get(50, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (received.get() < threads * perThread && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(List.of(), errors);
        assertEquals(threads * perThread, received.get(), "messages received");
        assertTrue(c.directFrames() > 0, "no message was written on its caller's thread");
    }

    @Test
    @Timeout(90)
    void callersReadTheirOwnRepliesWhileOthersWaitAndNobodyWaits() throws Exception {
        // Four client threads make round trips of 12 B to 1 MiB, each waiting with awaitReading on its own reply; the
        // server answers some requests only after a one-sided read of the client's memory (served by whichever thread
        // reads the client's socket) and pushes an extra message after every 10th reply (delivered whether or not a
        // caller waits). Every reply must reach its caller whole, in each thread's order, and every push must arrive.
        TcpTransport server = track(new TcpTransport());
        TcpTransport client = track(new TcpTransport(new TcpTransport.Context().callerReads(true)));
        Arena arena = track(Arena.ofShared());
        MemorySegment lent = arena.allocate(1 << 20);
        for (int i = 0; i < lent.byteSize(); i++) {
            lent.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13 + 1));
        }
        MemorySegment into = arena.allocate(lent.byteSize());
        CompletableFuture<RemoteMemory> remote = new CompletableFuture<>();
        List<String> errors = new java.util.concurrent.CopyOnWriteArrayList<>();
        AtomicInteger pushesSent = new AtomicInteger();
        java.util.concurrent.ExecutorService serverWork = java.util.concurrent.Executors.newSingleThreadExecutor();
        InetSocketAddress addr = track(server.listen(ANY, conn -> {
            RegisteredMemory local = conn.register(into);
            AtomicInteger replies = new AtomicInteger();
            return (cc, m) -> {
                if (!remote.isDone()) {
                    remote.complete(cc.remoteMemory(m.toArray(ValueLayout.JAVA_BYTE)));
                    return;
                }
                byte[] request = m.toArray(ValueLayout.JAVA_BYTE);
                int seq = ByteBuffer.wrap(request).getInt(4);
                Runnable reply = () -> {
                    cc.send(MemorySegment.ofArray(request), Duration.ofSeconds(30));
                    if (replies.incrementAndGet() % 10 == 0) {
                        pushesSent.incrementAndGet();
                        cc.send(MemorySegment.ofArray(new byte[] {'P'}), Duration.ofSeconds(30));
                    }
                };
                if (seq % 7 == 3) {
                    long at = (seq * 4099L) % (lent.byteSize() - 65536);
                    cc.read(remote.join(), at, local, at, 65536).whenComplete((v, e) -> {
                        if (e != null || MemorySegment.mismatch(lent, at, at + 65536, into, at, at + 65536) != -1) {
                            errors.add("one-sided read at " + at + ": " + (e != null ? e : "bytes differ"));
                        }
                        serverWork.execute(reply);
                    });
                } else {
                    serverWork.execute(reply);
                }
            };
        })).localAddress();
        int threads = 4;
        int perThread = 250;
        @SuppressWarnings("unchecked")
        CompletableFuture<byte[]>[] waiting = new CompletableFuture[threads];
        int[] next = new int[threads];
        AtomicInteger pushes = new AtomicInteger();
        AtomicInteger byCallers = new AtomicInteger();
        TcpConnection c = (TcpConnection) track(client.connect(addr, (conn, m) -> {
            if (m.byteSize() == 1) {
                pushes.incrementAndGet();
                return;
            }
            String bad = checkSequenced(m, next);
            if (bad != null) {
                errors.add(bad);
                return;
            }
            if (!Thread.currentThread().getName().startsWith("rdmastore-tcp")) {
                byCallers.incrementAndGet();
            }
            waiting[m.get(ValueLayout.JAVA_INT_UNALIGNED, 0)].complete(m.toArray(ValueLayout.JAVA_BYTE));
        }, Duration.ofSeconds(5)));
        awaitCallerReads(c);
        c.send(MemorySegment.ofArray(c.register(lent).descriptor()), Duration.ofSeconds(5));
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
        try {
            List<java.util.concurrent.Future<?>> all = new java.util.ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                all.add(pool.submit(() -> {
                    java.util.Random rnd = new java.util.Random(thread + 100);
                    for (int seq = 0; seq < perThread; seq++) {
                        int size = 12 + (rnd.nextInt(16) == 0 ? rnd.nextInt(1 << 20) : rnd.nextInt(2048));
                        CompletableFuture<byte[]> reply = new CompletableFuture<>();
                        waiting[thread] = reply;
                        MemorySegment request = sequenced(thread, seq, size);
                        c.send(request, Duration.ofSeconds(30));
                        assertTrue(c.awaitReading(reply, System.nanoTime() + TimeUnit.SECONDS.toNanos(30)));
                        assertTrue(reply.isDone(), "thread " + thread + ": no reply to " + seq);
                        assertArrayEquals(request.toArray(ValueLayout.JAVA_BYTE), reply.get());
                    }
                    return null;
                }));
            }
            for (java.util.concurrent.Future<?> f : all) {
                f.get(80, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
            serverWork.shutdown();
        }
        // The last reply reaches its caller before the server's thread counts the push that follows it.
        assertTrue(serverWork.awaitTermination(10, TimeUnit.SECONDS), "the server's replies did not finish");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (pushes.get() < pushesSent.get() && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(List.of(), errors);
        assertEquals(threads * perThread / 10, pushesSent.get());
        assertEquals(pushesSent.get(), pushes.get(), "pushes delivered while no caller waited");
        assertTrue(byCallers.get() > 0, "no reply was delivered on a caller's thread");
    }

    @Test
    @Timeout(60)
    void aCallerReadsForItselfAgainOnceTheBackgroundThreadHasTakenOverTheSocket() throws Exception {
        // A leads (its request held by the server), B follows; A's reply comes, A leaves with B still waiting, and a
        // push that follows is read by the background thread (nobody leads). While B's reply is still held, A makes
        // another call: its reply must be read by a caller (A, or B once it has taken the lead), not handed over by
        // the background thread. That thread once kept the read lock while anyone waited, so every call of a thread
        // that came back while one waited was a hand-off (a wake-up more per call).
        TcpTransport server = track(new TcpTransport());
        TcpTransport client = track(new TcpTransport(new TcpTransport.Context().callerReads(true)));
        CountDownLatch releaseA = new CountDownLatch(1);
        CountDownLatch releaseB = new CountDownLatch(1);
        java.util.concurrent.ExecutorService serverWork = java.util.concurrent.Executors.newCachedThreadPool();
        InetSocketAddress addr = track(server.listen(ANY, conn -> (cc, m) -> {
            byte[] request = m.toArray(ValueLayout.JAVA_BYTE);
            CountDownLatch gate = request[0] == 'A' ? releaseA : request[0] == 'B' ? releaseB : null;
            serverWork.execute(() -> {
                try {
                    if (gate != null && !gate.await(30, TimeUnit.SECONDS)) {
                        return;
                    }
                } catch (InterruptedException e) {
                    return;
                }
                cc.send(MemorySegment.ofArray(request), Duration.ofSeconds(5));
                if (request[0] == 'A') {
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
                    cc.send(MemorySegment.ofArray(new byte[] {'X'}), Duration.ofSeconds(5));
                }
            });
        })).localAddress();
        java.util.Map<Byte, CompletableFuture<String>> deliveredOn = new java.util.concurrent.ConcurrentHashMap<>();
        for (byte b : new byte[] {'A', 'B', 'X', 'Z'}) {
            deliveredOn.put(b, new CompletableFuture<>());
        }
        TcpConnection c = (TcpConnection) track(client.connect(addr,
            (conn, m) -> deliveredOn.get(m.get(ValueLayout.JAVA_BYTE, 0)).complete(Thread.currentThread().getName()),
            Duration.ofSeconds(5)));
        awaitCallerReads(c);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        java.util.concurrent.ExecutorService callers = java.util.concurrent.Executors.newFixedThreadPool(2,
            r -> new Thread(r, "caller"));
        try {
            java.util.concurrent.Future<String> a = callers.submit(() -> {
                c.send(MemorySegment.ofArray(new byte[] {'A'}), Duration.ofSeconds(5));
                assertTrue(c.awaitReading(deliveredOn.get((byte) 'A'), deadline));
                // the push: read by the background thread (or by B, should its next look come first)
                deliveredOn.get((byte) 'X').get(10, TimeUnit.SECONDS);
                Thread.sleep(200);
                c.send(MemorySegment.ofArray(new byte[] {'Z'}), Duration.ofSeconds(5));
                assertTrue(c.awaitReading(deliveredOn.get((byte) 'Z'), deadline));
                return deliveredOn.get((byte) 'Z').get();
            });
            awaitWaiters(c, 1);
            java.util.concurrent.Future<String> b = callers.submit(() -> {
                c.send(MemorySegment.ofArray(new byte[] {'B'}), Duration.ofSeconds(5));
                assertTrue(c.awaitReading(deliveredOn.get((byte) 'B'), deadline));
                return deliveredOn.get((byte) 'B').get();
            });
            awaitWaiters(c, 2);
            releaseA.countDown();
            assertEquals("caller", deliveredOn.get((byte) 'A').get(10, TimeUnit.SECONDS), "A's reply, A leading");
            String z = a.get(20, TimeUnit.SECONDS);
            assertEquals("caller", z, "A's second reply was handed over by the background thread");
            releaseB.countDown();
            assertNotNull(b.get(20, TimeUnit.SECONDS), "B's reply");
        } finally {
            releaseA.countDown();
            releaseB.countDown();
            callers.shutdownNow();
            serverWork.shutdownNow();
        }
    }

    @Test
    @Timeout(60)
    void theBackgroundThreadStaysOffTheSocketWhileACallerKeepsReading() throws Exception {
        // One thread calls back to back for 600 ms and reads its own replies. The background thread is woken by the
        // first reply it sees, finds the caller reading and must then stay off the socket while callers keep taking
        // the lead; it once went back to the socket after every backoff (1-8 ms), and each reply that came while it
        // waited there woke it too: a hundred and more waits on the socket in such a stretch.
        TcpTransport server = track(new TcpTransport());
        TcpTransport client = track(new TcpTransport(new TcpTransport.Context().callerReads(true)));
        InetSocketAddress addr = track(server.listen(ANY, conn -> (cc, m) ->
            cc.send(MemorySegment.ofArray(m.toArray(ValueLayout.JAVA_BYTE)), Duration.ofSeconds(5)))).localAddress();
        AtomicReference<CompletableFuture<Thread>> reply = new AtomicReference<>();
        TcpConnection c = (TcpConnection) track(client.connect(addr,
            (conn, m) -> reply.get().complete(Thread.currentThread()), Duration.ofSeconds(5)));
        awaitCallerReads(c);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        long calls = 0;
        long byCaller = 0;
        long polls = -1;
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(800);
        long window = end - TimeUnit.MILLISECONDS.toNanos(600);
        while (System.nanoTime() < end) {
            if (polls < 0 && System.nanoTime() >= window) {
                // the first 200 ms: the background thread meets the caller and backs off to its longest look
                polls = c.backgroundPolls();
            }
            CompletableFuture<Thread> f = new CompletableFuture<>();
            reply.set(f);
            c.send(MemorySegment.ofArray(new byte[] {1, 2, 3}), Duration.ofSeconds(5));
            assertTrue(c.awaitReading(f, deadline));
            if (f.get(5, TimeUnit.SECONDS) == Thread.currentThread()) {
                byCaller++;
            }
            calls++;
        }
        long during = c.backgroundPolls() - polls;
        assertTrue(calls > 100, "calls made: " + calls);
        assertTrue(byCaller > calls / 2, byCaller + " of " + calls + " replies read by the caller");
        // a stall of the caller longer than a look (8 ms) sends the thread back to the socket once: a few are allowed
        assertTrue(during <= 15, "the background thread waited on the socket " + during + " times in 600 ms of "
            + calls + " calls");
    }

    private static void awaitWaiters(TcpConnection c, int n) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (c.readWaiters() < n && System.nanoTime() < until) {
            Thread.sleep(1);
        }
        assertEquals(n, c.readWaiters(), "threads waiting for replies");
    }

    @Test
    @Timeout(30)
    void aCallerReadingLearnsOfTheCloseAtOnce() throws Exception {
        TcpTransport server = track(new TcpTransport());
        TcpTransport client = track(new TcpTransport(new TcpTransport.Context().callerReads(true)));
        CompletableFuture<Connection> serverSide = new CompletableFuture<>();
        InetSocketAddress addr = track(server.listen(ANY, conn -> {
            serverSide.complete(conn);
            return (cc, m) -> { };
        })).localAddress();
        CountDownLatch closed = new CountDownLatch(1);
        Connection c = track(client.connect(addr, new MessageHandler() {
            @Override
            public void onMessage(Connection connection, MemorySegment message) {
            }

            @Override
            public void onClose(Connection connection, Throwable cause) {
                closed.countDown();
            }
        }, Duration.ofSeconds(5)));
        awaitCallerReads((TcpConnection) c);
        c.send(MemorySegment.ofArray(new byte[] {1}), Duration.ofSeconds(5));
        Connection s = serverSide.get(5, TimeUnit.SECONDS);
        CompletableFuture<Void> never = new CompletableFuture<>();
        long start = System.nanoTime();
        CompletableFuture.delayedExecutor(200, TimeUnit.MILLISECONDS).execute(s::close);
        assertTrue(c.awaitReading(never, start + TimeUnit.SECONDS.toNanos(20)));
        long waited = System.nanoTime() - start;
        assertFalse(never.isDone());
        assertTrue(waited < TimeUnit.SECONDS.toNanos(10), "waited " + waited / 1_000_000 + " ms past the close");
        assertTrue(closed.await(5, TimeUnit.SECONDS), "the client's handler did not learn of the close");
        assertFalse(c.isOpen());
        // once closed, nothing reads: the caller is told to wait on its own
        assertFalse(c.awaitReading(never, System.nanoTime() + TimeUnit.SECONDS.toNanos(1)));
    }

    /** Waits until the connection's callers read (its reader starts once the channel is active, maybe after connect). */
    private static void awaitCallerReads(TcpConnection c) throws InterruptedException {
        long active = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!c.readsOnCallers() && System.nanoTime() < active) {
            Thread.sleep(1);
        }
        assertTrue(c.readsOnCallers(), "the connection's callers do not read");
    }

    /** A message of {@code size} bytes: thread, sequence number, then bytes derived from both. */
    private static MemorySegment sequenced(int thread, int seq, int size) {
        MemorySegment m = MemorySegment.ofArray(new byte[size]);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 0, thread);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 4, seq);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 8, size);
        for (int i = 12; i < size; i++) {
            m.set(ValueLayout.JAVA_BYTE, i, (byte) (thread * 31 + seq * 7 + i));
        }
        return m;
    }

    /** Null when {@code m} is the next message of its thread and intact, else what is wrong. */
    private static String checkSequenced(MemorySegment m, int[] next) {
        if (m.byteSize() < 12) {
            return "message of " + m.byteSize() + " bytes";
        }
        int thread = m.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
        int seq = m.get(ValueLayout.JAVA_INT_UNALIGNED, 4);
        int size = m.get(ValueLayout.JAVA_INT_UNALIGNED, 8);
        if (thread < 0 || thread >= next.length || size != m.byteSize()) {
            return "garbled header: thread " + thread + ", size " + size + " of " + m.byteSize();
        }
        if (seq != next[thread]) {
            return "thread " + thread + ": message " + seq + " when " + next[thread] + " was due";
        }
        next[thread]++;
        for (int i = 12; i < size; i++) {
            if (m.get(ValueLayout.JAVA_BYTE, i) != (byte) (thread * 31 + seq * 7 + i)) {
                return "thread " + thread + ", message " + seq + ": byte " + i + " differs";
            }
        }
        return null;
    }

    private static void write(Socket s, String text) throws IOException {
        OutputStream out = s.getOutputStream();
        out.write(text.getBytes(StandardCharsets.US_ASCII));
        out.flush();
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int ch;
        while ((ch = in.read()) >= 0) {
            b.write(ch);
            if (ch == '\n') {
                break;
            }
        }
        return b.toString(StandardCharsets.US_ASCII);
    }
}
