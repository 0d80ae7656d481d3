package io.rdmastore.transport.ucx;

import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.Listener;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.TransportStatus;
import io.rdmastore.transport.tcp.TcpTransport;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Request/response with a spinning receiver over many laps of a small ring, with message sizes that vary, so the
 * receiver often reads stale bytes of an earlier lap at its head while the next frame is landing; the payloads are small
 * integers, so such stale bytes look like a plausible header. Every echo must come
 * back with the same length and bytes (a header read before the frame landed once let a stale length or PAD flag
 * through).
 *
 * <p>Both ways a frame proves itself in a mapped ring: the CRC, and ordered frames, published by their header. For
 * the latter the payloads also carry whole fake ordered frames at the places a later lap's headers will be, with checks
 * made for sequence numbers near those the receiver will expect when it reads them, but not with its key: a receiver
 * that trusted an ordered header without its check would take a fake for the frame still landing.
 */
class UcxRingLapTest {
    private static final int RING = 64 << 10;

    private static UcxTransport ucx(boolean invoker, boolean ordered) {
        UcxTransport t = new UcxTransport(new UcxTransport.Context().tls(UcxTckNetworks.SHM_TLS).invoker(invoker)
            .idleStrategy("spin").ringCapacity(RING).maxConnections(2).memoryBudget(4L * (2 * RING + 4096))
            .orderedFrames(ordered));
        assertTrue(t.isAvailable(), () -> "UCX required: " + t.unavailabilityCause());
        return t;
    }

    /** Keeps the last message, copied. */
    private static final class Last implements MessageHandler {
        byte[] bytes;
        long count;

        @Override
        public void onMessage(Connection connection, MemorySegment message) {
            bytes = message.toArray(ValueLayout.JAVA_BYTE);
            count++;
        }
    }

    /** Ordered frames where both sides allow them; where one does not (as a peer that predates them), CRC frames. */
    @ParameterizedTest(name = "ordered frames allowed by server {0}, client {1}")
    @CsvSource({"false,false", "true,true", "true,false", "false,true"})
    @Timeout(60)
    void mixedSizesSurviveManyLaps(boolean serverOrdered, boolean clientOrdered) {
        boolean ordered = serverOrdered && clientOrdered;
        try (TcpTransport stcp = new TcpTransport(); TcpTransport ctcp = new TcpTransport();
             UcxTransport server = ucx(false, serverOrdered); UcxTransport client = ucx(true, clientOrdered);
             Network sn = new Network(new Network.Context().carrier(stcp).upgrade(server));
             Network cn = new Network(new Network.Context().carrier(ctcp).upgrade(client));
             Arena arena = Arena.ofConfined()) {
            Listener l = sn.listen(new InetSocketAddress("127.0.0.1", 0), c -> (conn, m) -> {
                while (conn.offer(m) == TransportStatus.BACK_PRESSURED) {
                    Thread.onSpinWait();
                }
            });
            Last last = new Last();
            Connection c = cn.connect(l.localAddress(), last, ConnectOptions.DEFAULT.withTransport("ucx"));
            assertTrue(c.describe().contains(ordered ? "mapped ordered" : "mapped"), c.describe());
            assertEquals(ordered, c.describe().contains("ordered"), c.describe());
            SplittableRandom rnd = new SplittableRandom(42);
            MemorySegment msg = arena.allocate(6000);
            long bytes = 0;
            long deadline = System.nanoTime() + 20_000_000_000L;
            int n = 0;
            for (; n < 200_000 && System.nanoTime() < deadline; n++) {
                int size = rnd.nextInt(10) == 0 ? 1 + rnd.nextInt(5000) : 1 + rnd.nextInt(120);
                // small little-endian integers, like the lengths and ids of real requests: stale bytes of them at
                // the head look like a plausible frame header
                for (int i = 0; i < size; i++) {
                    msg.set(ValueLayout.JAVA_BYTE, i, (i & 3) == 0 ? (byte) rnd.nextInt(64) : 0);
                }
                if (ordered) {
                    plantNearMisses(msg, size, n, rnd);
                }
                MemorySegment m = msg.asSlice(0, size);
                while (c.offer(m) == TransportStatus.BACK_PRESSURED) {
                    client.doWork();
                }
                long expect = last.count + 1;
                long wait = System.nanoTime() + 5_000_000_000L;
                while (last.count != expect) {
                    client.doWork();
                    if (System.nanoTime() > wait) {
                        fail("no echo for message " + n + " of " + size + " bytes after " + bytes + " bytes ("
                            + (bytes / RING) + " laps): " + c.describe());
                    }
                }
                assertEquals(size, last.bytes.length, "length of echo " + n);
                for (int i = 0; i < size; i++) {
                    if (last.bytes[i] != msg.get(ValueLayout.JAVA_BYTE, i)) {
                        fail("echo " + n + " differs at byte " + i + " of " + size);
                    }
                }
                bytes += size;
            }
            assertTrue(bytes > 20L * RING, "too few laps to mean something: " + bytes + " bytes in " + n + " echoes");
            c.close();
            l.close();
        }
    }

    /**
     * Writes fake ordered frames of 8 bytes (one cache line each) into the payload where a later lap's frame headers
     * may fall (payload offset 48 + 64k is a line of the ring: the payload begins 16 bytes into a line-aligned frame).
     * A later lap reads them some hundreds of frames on, after some wraps (PAD frames), so the sequence numbers cover
     * a window past the messages sent.
     */
    private static void plantNearMisses(MemorySegment msg, int size, int sent, SplittableRandom rnd) {
        for (int at = 48; at + 64 <= size; at += 64) {
            int seq = sent + 1 + rnd.nextInt(100 + sent / 20);
            long header = RingDescriptor.orderedHeader(8, RingDescriptor.WHOLE);
            msg.set(ValueLayout.JAVA_LONG_UNALIGNED, at, header);
            msg.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 8, RingDescriptor.orderedCheck(header, seq, 0L));
            msg.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 16, -1L);
            msg.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 56, 0L);
        }
    }
}
