package io.rdmastore.bench;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

/**
 * E2's Redis client for the caller's-buffer cells: SET from and GET into the caller's direct buffer over one blocking
 * {@link SocketChannel}, unpipelined, so the value crosses between the kernel and the caller's memory with one copy
 * each way (a heap array through a socket takes one more, through the JDK's own direct buffer): the best a Java client
 * does with a buffer it reuses, as rdmastore's {@code get(key, dst)} and {@code set(key, src)} do over ucx.
 *
 * <p>Threads: one thread at a time.
 */
final class E2RespBuffers implements AutoCloseable {
    private static final byte[] OK = "+OK\r\n".getBytes(StandardCharsets.US_ASCII);
    private final SocketChannel channel;
    /** Request heads and reply heads; never holds a value's bytes beyond the few read with a reply's head. */
    private final ByteBuffer head = ByteBuffer.allocateDirect(4096);
    private final ByteBuffer crlf = ByteBuffer.allocateDirect(2).put((byte) '\r').put((byte) '\n').flip();

    E2RespBuffers(int port) throws IOException {
        channel = SocketChannel.open();
        channel.socket().setTcpNoDelay(true);
        channel.socket().connect(new InetSocketAddress("127.0.0.1", port), 5_000);
    }

    /** SET key to {@code value}'s remaining bytes, written with the command's head in one gathering write. */
    void set(byte[] key, ByteBuffer value) throws IOException {
        head.clear();
        head.put("*3\r\n$3\r\nSET\r\n".getBytes(StandardCharsets.US_ASCII));
        bulkHead(key.length).put(key).put((byte) '\r').put((byte) '\n');
        bulkHead(value.remaining()).flip();
        ByteBuffer[] out = {head, value.duplicate(), crlf.clear()};
        while (out[2].hasRemaining()) {
            channel.write(out);
        }
        head.clear().limit(OK.length);
        fill(head);
        for (int i = 0; i < OK.length; i++) {
            if (head.get(i) != OK[i]) {
                throw new IOException("redis SET: unexpected reply starting '" + (char) head.get(0) + "'");
            }
        }
    }

    /**
     * GET key into {@code dst} at its position: the value's length (the position moves past it), -1 when absent.
     *
     * @throws IOException when the value does not fit {@code dst} (the connection is then unusable)
     */
    int get(byte[] key, ByteBuffer dst) throws IOException {
        head.clear();
        head.put("*2\r\n$3\r\nGET\r\n".getBytes(StandardCharsets.US_ASCII));
        bulkHead(key.length).put(key).put((byte) '\r').put((byte) '\n').flip();
        while (head.hasRemaining()) {
            channel.write(head);
        }
        // the reply's head ("$<len>\r\n") is read a few bytes at a time so that little of the value lands in it
        head.clear().limit(16);
        int len = -2;
        int at = 0;
        while (len == -2) {
            if (channel.read(head) < 0) {
                throw new IOException("redis closed the connection in a GET reply");
            }
            for (; at + 1 < head.position(); at++) {
                if (head.get(at) == '\r' && head.get(at + 1) == '\n') {
                    len = parseHead(at);
                    break;
                }
            }
            if (len == -2 && !head.hasRemaining()) {
                throw new IOException("redis GET: reply head longer than 16 bytes");
            }
        }
        if (len < 0) {
            return -1;
        }
        if (len > dst.remaining()) {
            throw new IOException("redis GET: a value of " + len + " bytes does not fit the " + dst.remaining()
                + " bytes remaining");
        }
        int start = dst.position();
        // the value's first bytes (and maybe its CRLF) came with the head
        int extra = head.position() - (at + 2);
        int early = Math.min(extra, len);
        dst.put(dst.position(), head, at + 2, early).position(start + early);
        ByteBuffer v = dst.duplicate().limit(start + len);
        fill(v);
        int tail = 2 - (extra - early);
        head.clear().limit(tail);
        fill(head);
        dst.position(start + len);
        return len;
    }

    /** The value's length from the reply head ending at {@code end}; -1 for a missing key. */
    private int parseHead(int end) throws IOException {
        byte c = head.get(0);
        if (c != '$') {
            byte[] b = new byte[end];
            head.get(0, b);
            throw new IOException("redis GET: unexpected reply '" + new String(b, StandardCharsets.US_ASCII) + "'");
        }
        if (end == 3 && head.get(1) == '-' && head.get(2) == '1') {
            return -1;
        }
        int n = 0;
        for (int i = 1; i < end; i++) {
            n = n * 10 + (head.get(i) - '0');
        }
        return n;
    }

    private ByteBuffer bulkHead(int length) {
        return head.put((byte) '$').put(Integer.toString(length).getBytes(StandardCharsets.US_ASCII))
            .put((byte) '\r').put((byte) '\n');
    }

    /** Reads until {@code b} is full. */
    private void fill(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (channel.read(b) < 0) {
                throw new IOException("redis closed the connection");
            }
        }
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
