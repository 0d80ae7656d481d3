package io.rdmastore.transport.ucx;

import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.Listener;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.TransportStatus;
import io.rdmastore.transport.tcp.TcpTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicIntegerArray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Messages larger than a frame (a quarter of the ring) over a 1 MiB ring: a 256 KiB message (one full frame and a
 * small one) and a 3 MiB message (three times the ring, so the sender must wait for credit in the middle of it).
 * Offered by a thread that can drive, they go out from the caller's memory: no byte is copied on the send side of
 * either peer, and the receiver gathers each message once into an assembly buffer it keeps. With two threads offering
 * at once every message still arrives whole, and each thread's messages in its order. Credit to a peer whose ring is
 * mapped here is stored, not put.
 */
class UcxFragmentCopyTest {
    private static final int RING = 1 << 20;
    private static final int SMALL = 256 << 10;
    private static final int LARGE = 3 << 20;
    private static final String WAIT = "rdmastore.ucx.fragmentWaitNanos";

    private String savedWait;

    @BeforeEach
    void longWait() {
        // The bound only protects the driver from a stuck peer; this test asks whether a peer that consumes (here a
        // spinning agent on a 2-core machine shared with builds, which a scheduler tick can hold for ms) lets the
        // whole message out without a copy.
        savedWait = System.getProperty(WAIT);
        System.setProperty(WAIT, Long.toString(10_000_000_000L));
    }

    @AfterEach
    void restoreWait() {
        if (savedWait == null) {
            System.clearProperty(WAIT);
        } else {
            System.setProperty(WAIT, savedWait);
        }
    }

    private static UcxTransport ucx(boolean invoker) {
        return ucx(invoker, UcxTckNetworks.SHM_TLS, "crc");
    }

    private static UcxTransport ucx(boolean invoker, String tls, String footer) {
        UcxTransport t = new UcxTransport(new UcxTransport.Context().tls(tls).footer(footer).invoker(invoker)
            .idleStrategy("spin").ringCapacity(RING).maxConnections(2).memoryBudget(4L * (2 * RING + 4096)));
        assertTrue(t.isAvailable(), () -> "UCX required: " + t.unavailabilityCause());
        return t;
    }

    private static void fill(MemorySegment m, int thread, int seq) {
        long n = m.byteSize();
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 0, thread);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 4, seq);
        for (long i = 8; i < n; i += 8) {
            long v = (i * 0x9E3779B97F4A7C15L) ^ ((long) seq << 32) ^ thread;
            if (i + 8 <= n) {
                m.set(ValueLayout.JAVA_LONG_UNALIGNED, i, v);
            } else {
                for (long j = i; j < n; j++) {
                    m.set(ValueLayout.JAVA_BYTE, j, (byte) (v >>> (8 * (j - i))));
                }
            }
        }
    }

    /** Where an arrived message differs from what thread {@code thread} sent as number {@code seq}, or -1. */
    private static long mismatch(MemorySegment got, long expectedLength, int thread, int seq, Arena arena) {
        if (got.byteSize() != expectedLength) {
            return -2;
        }
        MemorySegment expect = arena.allocate(expectedLength);
        fill(expect, thread, seq);
        return expect.mismatch(got);
    }

    private static Listener echo(Network sn) {
        return sn.listen(new InetSocketAddress("127.0.0.1", 0), c -> (conn, m) -> {
            while (conn.offer(m) == TransportStatus.BACK_PRESSURED) {
                Thread.onSpinWait();
            }
        });
    }

    /** Keeps the last message, copied. */
    private static final class Last implements MessageHandler {
        final MemorySegment bytes = Arena.ofAuto().allocate(LARGE);
        volatile long length;
        volatile long count;

        @Override
        public void onMessage(Connection connection, MemorySegment message) {
            MemorySegment.copy(message, 0, bytes, 0, message.byteSize());
            length = message.byteSize();
            count++;
        }
    }

    /** Over shared memory with either footer, and over UCX's tcp wire, whose puts need the worker's progress. */
    @ParameterizedTest(name = "tls={0} footer={1}")
    @CsvSource(delimiter = '|', value = {"posix,cma,self|crc", "posix,cma,self|flush", "tcp,self|crc"})
    @Timeout(120)
    void largeMessagesFromADrivingThreadAreNotCopiedOnSend(String tls, String footer) {
        try (TcpTransport stcp = new TcpTransport(); TcpTransport ctcp = new TcpTransport();
             UcxTransport server = ucx(false, tls, footer); UcxTransport client = ucx(true, tls, footer);
             Network sn = new Network(new Network.Context().carrier(stcp).upgrade(server));
             Network cn = new Network(new Network.Context().carrier(ctcp).upgrade(client));
             Arena arena = Arena.ofConfined()) {
            Listener l = echo(sn);
            Last last = new Last();
            Connection c = cn.connect(l.localAddress(), last, ConnectOptions.DEFAULT.withTransport("ucx"));
            assertTrue(c.describe().contains("ring 1024 KiB"), c.describe());
            // shared memory with the crc footer composes in the peer's mapped ring; the flush footer and UCX's tcp
            // wire put from the mirror
            assertEquals(tls.startsWith("posix") && footer.equals("crc"), c.describe().contains("ring 1024 KiB mapped"),
                c.describe());
            MemorySegment msg = arena.allocate(LARGE);
            long bytes = 0;
            int seq = 0;
            // The carrier's thread completes the upgrade while it holds the driver, so the first offer may find the
            // driver taken and queue a copy, as any offer from a thread that cannot drive does: count from after it.
            roundTrip(c, client, last, msg.asSlice(0, SMALL), seq++, arena);
            long clientSent = client.copies.sentBytes();
            long serverSent = server.copies.sentBytes();
            for (int size : new int[] {SMALL, LARGE}) {
                // one message of each size first: the receivers' assembly buffers grow to it, once
                roundTrip(c, client, last, msg.asSlice(0, size), seq++, arena);
                long clientReceived = client.copies.receivedBytes();
                long serverReceived = server.copies.receivedBytes();
                int rounds = size == SMALL ? 48 : 12;
                for (int i = 0; i < rounds; i++) {
                    // every other message in two parts, split at a point that moves across the fragments
                    long split = i % 2 == 0 ? -1 : (long) i * 7919 % size;
                    roundTrip(c, client, last, msg.asSlice(0, size), seq++, split, arena);
                    bytes += size;
                }
                assertEquals(clientSent, client.copies.sentBytes(), "client copied on send: " + c.describe());
                assertEquals(serverSent, server.copies.sentBytes(), "server copied on send (the echoes)");
                // each fragmented message is gathered once into the assembly buffer, which is reused
                assertEquals((long) rounds * size, client.copies.receivedBytes() - clientReceived,
                    "client receive copies for " + rounds + " messages of " + size + " B");
                assertEquals((long) rounds * size, server.copies.receivedBytes() - serverReceived,
                    "server receive copies for " + rounds + " messages of " + size + " B");
            }
            assertTrue(bytes > 40L * RING, "too few laps: " + bytes);
            // credit to a peer whose slot is mapped here is a store into its credit word; otherwise a put
            boolean mapped = c.describe().contains("mapped");
            for (UcxTransport t : new UcxTransport[] {client, server}) {
                long stores = t.creditStores.sum();
                long puts = t.creditPuts.sum();
                assertTrue(mapped ? stores > 0 && puts == 0 : puts > 0 && stores == 0,
                    "credit stores " + stores + ", puts " + puts + " on " + c.describe());
            }
            c.close();
            l.close();
        }
    }

    @Test
    @Timeout(120)
    void withoutWaitingOnlyTheUnsentRestIsCopied() {
        // no wait for credit: whatever does not fit the peer's ring at once is spilled, and sent from the spill
        System.setProperty(WAIT, "0");
        try (TcpTransport stcp = new TcpTransport(); TcpTransport ctcp = new TcpTransport();
             UcxTransport server = ucx(false); UcxTransport client = ucx(true);
             Network sn = new Network(new Network.Context().carrier(stcp).upgrade(server));
             Network cn = new Network(new Network.Context().carrier(ctcp).upgrade(client));
             Arena arena = Arena.ofConfined()) {
            Listener l = echo(sn);
            Last last = new Last();
            Connection c = cn.connect(l.localAddress(), last, ConnectOptions.DEFAULT.withTransport("ucx"));
            MemorySegment msg = arena.allocate(LARGE);
            int rounds = 12;
            for (int seq = 0; seq < rounds; seq++) {
                // every other message in two parts: the spilled rest may begin in either
                long split = seq % 2 == 0 ? -1 : (long) seq * (LARGE / 11);
                roundTrip(c, client, last, msg.asSlice(0, LARGE), seq, split, arena);
            }
            long copied = client.copies.sentBytes();
            // the peer's ring holds 1 MiB of the 3 MiB (a little more as the peer consumes while the first frames go
            // out): the rest is kept, but never the whole message, since the ring is empty between round trips and
            // at least the first fragment goes out from the caller's memory
            assertTrue(copied > 0, "nothing was spilled");
            assertTrue(copied <= (long) rounds * (LARGE - (RING / 4 - RingDescriptor.MIN_FRAME)), "copied " + copied);
            c.close();
            l.close();
        }
    }

    private static void roundTrip(Connection c, UcxTransport client, Last last, MemorySegment m, int seq,
                                  Arena arena) {
        roundTrip(c, client, last, m, seq, -1, arena);
    }

    /** As above; with {@code split} at least 0 the message is offered in two parts, split there. */
    private static void roundTrip(Connection c, UcxTransport client, Last last, MemorySegment m, int seq, long split,
                                  Arena arena) {
        fill(m, 0, seq);
        long expect = last.count + 1;
        int status;
        while ((status = split < 0 ? c.offer(m) : c.offer(m.asSlice(0, split), m.asSlice(split)))
            == TransportStatus.BACK_PRESSURED) {
            client.doWork();
        }
        assertEquals(TransportStatus.OK, status, TransportStatus.describe(status));
        long wait = System.nanoTime() + 20_000_000_000L;
        while (last.count != expect) {
            client.doWork();
            if (System.nanoTime() > wait) {
                fail("no echo for message " + seq + " of " + m.byteSize() + " B: " + c.describe());
            }
        }
        long at = mismatch(last.bytes.asSlice(0, last.length), m.byteSize(), 0, seq, arena);
        assertEquals(-1, at, "echo " + seq + " of " + m.byteSize() + " B differs (at " + at + ", length "
            + last.length + ")");
    }

    @Test
    @Timeout(120)
    void twoThreadsOfferingLargeMessagesKeepTheirOrder() throws Exception {
        int threads = 2;
        int perThread = 24;
        try (TcpTransport stcp = new TcpTransport(); TcpTransport ctcp = new TcpTransport();
             UcxTransport server = ucx(false); UcxTransport client = ucx(true);
             Network sn = new Network(new Network.Context().carrier(stcp).upgrade(server));
             Network cn = new Network(new Network.Context().carrier(ctcp).upgrade(client))) {
            Listener l = echo(sn);
            AtomicIntegerArray received = new AtomicIntegerArray(threads);
            List<String> errors = new CopyOnWriteArrayList<>();
            MessageHandler h = new MessageHandler() {
                @Override
                public void onMessage(Connection connection, MemorySegment message) {
                    int t = message.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
                    int seq = message.get(ValueLayout.JAVA_INT_UNALIGNED, 4);
                    if (t < 0 || t >= threads) {
                        errors.add("message from no thread: " + t);
                        return;
                    }
                    int expected = received.get(t);
                    if (seq != expected) {
                        errors.add("thread " + t + ": got message " + seq + " after " + (expected - 1));
                    }
                    long size = sizeOf(seq);
                    try (Arena a = Arena.ofConfined()) {
                        long at = mismatch(message, size, t, seq, a);
                        if (at != -1) {
                            errors.add("thread " + t + " message " + seq + " (" + message.byteSize() + " of " + size
                                + " B) differs at " + at);
                        }
                    }
                    received.incrementAndGet(t);
                }
            };
            Connection c = cn.connect(l.localAddress(), h, ConnectOptions.DEFAULT.withTransport("ucx"));
            Thread[] workers = new Thread[threads];
            for (int t = 0; t < threads; t++) {
                int id = t;
                workers[t] = new Thread(() -> {
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment msg = arena.allocate(LARGE);
                        long deadline = System.nanoTime() + 60_000_000_000L;
                        for (int seq = 0; seq < perThread && errors.isEmpty(); seq++) {
                            MemorySegment m = msg.asSlice(0, sizeOf(seq));
                            fill(m, id, seq);
                            int status;
                            while ((status = c.offer(m)) == TransportStatus.BACK_PRESSURED) {
                                client.doWork();
                            }
                            if (status != TransportStatus.OK) {
                                errors.add("thread " + id + " offer " + seq + ": " + TransportStatus.describe(status));
                                return;
                            }
                            // at most two of this thread's messages on the way
                            while (received.get(id) < seq - 1 && errors.isEmpty()) {
                                client.doWork();
                                if (System.nanoTime() > deadline) {
                                    errors.add("thread " + id + " waits for echo " + (seq - 1) + ": " + c.describe());
                                    return;
                                }
                            }
                        }
                        while (received.get(id) < perThread && errors.isEmpty()) {
                            client.doWork();
                            if (System.nanoTime() > deadline) {
                                errors.add("thread " + id + " has " + received.get(id) + " of " + perThread
                                    + " echoes: " + c.describe());
                                return;
                            }
                        }
                    }
                }, "offer-" + t);
                workers[t].start();
            }
            for (Thread w : workers) {
                w.join(90_000);
                assertTrue(!w.isAlive(), w.getName() + " still running: " + c.describe());
            }
            assertTrue(errors.isEmpty(), () -> String.join("\n", errors));
            for (int t = 0; t < threads; t++) {
                assertEquals(perThread, received.get(t), "echoes of thread " + t);
            }
            c.close();
            l.close();
        }
    }

    /** Sizes by number: mostly 256 KiB, every third 3 MiB, and a small one now and then between them. */
    private static int sizeOf(int seq) {
        return seq % 3 == 2 ? LARGE : seq % 5 == 4 ? 100 : SMALL + seq;
    }
}
