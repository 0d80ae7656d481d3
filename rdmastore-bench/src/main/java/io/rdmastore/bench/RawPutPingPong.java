package io.rdmastore.bench;

import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucp.UcpRemoteKey;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;

/**
 * The limit of E1: raw JUCX one-sided put ping-pong between two processes, each polling the last 8 bytes of its own
 * buffer for the peer's sequence number (the measurement in DESIGN.md section 7). No framing, no checks, no queue.
 * {@link #main} is the responder (a child process); {@link #measure} is the initiator.
 */
public final class RawPutPingPong {
    private RawPutPingPong() {
    }

    /** One side's UCX state for one session. */
    private static final class Side implements AutoCloseable {
        final UcpContext context = new UcpContext(new UcpParams().requestRmaFeature());
        final UcpWorker worker = context.newWorker(new UcpWorkerParams());
        final UcpMemory recv;
        final UcpMemory send;
        final UnsafeBuffer recvView;
        final UnsafeBuffer sendView;
        final int size;
        UcpEndpoint ep;
        UcpRemoteKey key;
        long peerRecv;

        Side(int size) {
            this.size = size;
            recv = context.memoryMap(new UcpMemMapParams().allocate().setLength(size));
            send = context.memoryMap(new UcpMemMapParams().allocate().setLength(size));
            recvView = new UnsafeBuffer(recv.getAddress(), size);
            sendView = new UnsafeBuffer(send.getAddress(), size);
            recvView.setMemory(0, size, (byte) 0);
        }

        void exchange(Socket s) throws IOException {
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            DataInputStream in = new DataInputStream(s.getInputStream());
            byte[] address = bytes(worker.getAddress());
            byte[] rkey = bytes(recv.getRemoteKeyBuffer());
            out.writeInt(address.length);
            out.write(address);
            out.writeLong(recv.getAddress());
            out.writeInt(rkey.length);
            out.write(rkey);
            out.flush();
            byte[] peerAddress = new byte[in.readInt()];
            in.readFully(peerAddress);
            peerRecv = in.readLong();
            byte[] peerKey = new byte[in.readInt()];
            in.readFully(peerKey);
            ep = worker.newEndpoint(new UcpEndpointParams().setUcpAddress(direct(peerAddress)));
            key = ep.unpackRemoteKey(direct(peerKey));
        }

        void put(long seq) {
            sendView.putLong(size - 8, seq);
            ep.putNonBlockingImplicit(send.getAddress(), size, peerRecv, key);
        }

        void await(long seq) throws Exception {
            while (recvView.getLongVolatile(size - 8) != seq) {
                worker.progress();
            }
        }

        @Override
        public void close() {
            try {
                key.close();
            } catch (Throwable ignored) {
                // closing
            }
            ep.closeNonBlockingFlush();
            for (int i = 0; i < 100; i++) {
                try {
                    worker.progress();
                } catch (Exception e) {
                    break;
                }
            }
            recv.deregister();
            send.deregister();
            worker.close();
            context.close();
        }
    }

    static byte[] bytes(ByteBuffer b) {
        byte[] a = new byte[b.remaining()];
        b.duplicate().get(a);
        return a;
    }

    static ByteBuffer direct(byte[] a) {
        return ByteBuffer.allocateDirect(a.length).put(a).flip();
    }

    /** Responder: serves sessions one after another until killed. */
    public static void main(String[] args) throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 4, InetAddress.getLoopbackAddress())) {
            System.out.println("READY " + ss.getLocalPort());
            System.out.flush();
            while (true) {
                try (Socket s = ss.accept()) {
                    DataInputStream in = new DataInputStream(s.getInputStream());
                    int size = in.readInt();
                    long iterations = in.readLong();
                    try (Side side = new Side(size)) {
                        side.exchange(s);
                        for (long i = 1; i <= iterations; i++) {
                            side.await(i);
                            side.put(i);
                        }
                        in.readInt();
                    }
                }
            }
        }
    }

    /** Initiator: {@code iterations} round trips of {@code size} bytes; returns round trips per second. */
    static double measure(int port, int size, long warmup, long iterations) throws Exception {
        return measure(port, size, warmup, iterations, null);
    }

    /**
     * Initiator, timed per round trip: about {@code warmNanos} of untimed round trips, then about {@code windowNanos}
     * of round trips each recorded (nanoseconds) in the returned histogram. The responder needs the count up front, so
     * it comes from a short first session's rate.
     */
    static org.HdrHistogram.Histogram latency(int port, int size, long warmNanos, long windowNanos) throws Exception {
        double rate = measure(port, size, 1000, 5000, null);
        org.HdrHistogram.Histogram h = new org.HdrHistogram.Histogram(60_000_000_000L, 3);
        measure(port, size, Math.max(1000, (long) (rate * warmNanos / 1e9)),
            Math.max(5000, (long) (rate * windowNanos / 1e9)), h);
        return h;
    }

    private static double measure(int port, int size, long warmup, long iterations,
                                  org.HdrHistogram.Histogram perRoundTrip) throws Exception {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            out.writeInt(size);
            out.writeLong(warmup + iterations);
            out.flush();
            try (Side side = new Side(size)) {
                side.exchange(s);
                long start = 0;
                for (long i = 1; i <= warmup + iterations; i++) {
                    if (i == warmup + 1) {
                        start = System.nanoTime();
                    }
                    if (perRoundTrip != null && start != 0) {
                        long t0 = System.nanoTime();
                        side.put(i);
                        side.await(i);
                        perRoundTrip.recordValue(System.nanoTime() - t0);
                    } else {
                        side.put(i);
                        side.await(i);
                    }
                }
                double seconds = (System.nanoTime() - start) / 1e9;
                out.writeInt(0);
                out.flush();
                return iterations / seconds;
            }
        }
    }
}
