package io.rdmastore.bench;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * E2's and E6's Redis client: SET, GET, and SET followed by WAIT, over one blocking socket, unpipelined, the way a single Jedis connection talks to
 * redis-server (write the command, read the reply). The bench module carries no Redis driver, and this keeps the client
 * side cheap and the same for every size: the request is built in one reused array. {@link #getValue} reads each value
 * into a new array of its exact length, as rdmastore's {@code RdmaStoreClient.get(byte[])} does, so E2 compares
 * clients that read values the same way; {@link #get} reads into a reused array.
 *
 * <p>Threads: one thread at a time. Memory: {@link #get} leaves the value in an internal array valid until the next
 * call; {@link #getValue} returns an array of its own.
 */
final class E2Resp implements AutoCloseable {
    private final Socket socket;
    private final OutputStream out;
    private final InputStream in;
    private byte[] request = new byte[1024];
    private byte[] value = new byte[1024];
    private int valueLength;

    E2Resp(int port) throws IOException {
        socket = new Socket();
        socket.setTcpNoDelay(true);
        socket.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
        socket.setSoTimeout(30_000);
        out = socket.getOutputStream();
        in = new BufferedInputStream(socket.getInputStream(), 1 << 16);
    }

    /** SET key value; throws unless redis answers +OK. */
    void set(byte[] key, byte[] val) throws IOException {
        int n = 0;
        n = put(n, "*3\r\n$3\r\nSET\r\n");
        n = bulk(n, key);
        n = bulk(n, val);
        out.write(request, 0, n);
        int c = in.read();
        if (c != '+') {
            throw new IOException("redis SET: unexpected reply '" + (char) c + line() + "'");
        }
        line();
    }

    /**
     * SET key value and {@code WAIT numReplicas 0} sent together in one write (pipelined, as a client that needs the
     * write on replicas would), then both replies read; returns WAIT's count of replicas. Throws unless SET answers +OK.
     */
    long setWait(byte[] key, byte[] val, int numReplicas) throws IOException {
        int n = put(0, "*3\r\n$3\r\nSET\r\n");
        n = bulk(n, key);
        n = bulk(n, val);
        String replicas = Integer.toString(numReplicas);
        n = put(n, "*3\r\n$4\r\nWAIT\r\n$" + replicas.length() + "\r\n" + replicas + "\r\n$1\r\n0\r\n");
        out.write(request, 0, n);
        int c = in.read();
        if (c != '+') {
            throw new IOException("redis SET: unexpected reply '" + (char) c + line() + "'");
        }
        line();
        c = in.read();
        if (c != ':') {
            throw new IOException("redis WAIT: unexpected reply '" + (char) c + line() + "'");
        }
        return Long.parseLong(line());
    }

    /** GET key into a new array of the value's length, as rdmastore's client does; null when absent. */
    byte[] getValue(byte[] key) throws IOException {
        int len = getHeader(key);
        if (len < 0) {
            return null;
        }
        byte[] v = new byte[len];
        readValue(v, len);
        return v;
    }

    /** GET key; returns the value's length (-1 when absent); the bytes are in {@link #value()}. */
    int get(byte[] key) throws IOException {
        int len = getHeader(key);
        if (len < 0) {
            return -1;
        }
        if (value.length < len) {
            value = new byte[len];
        }
        readValue(value, len);
        return len;
    }

    /** Sends GET and reads the bulk header; returns the length (-1 when absent). */
    private int getHeader(byte[] key) throws IOException {
        int n = put(0, "*2\r\n$3\r\nGET\r\n");
        n = bulk(n, key);
        out.write(request, 0, n);
        int c = in.read();
        if (c != '$') {
            throw new IOException("redis GET: unexpected reply '" + (char) c + line() + "'");
        }
        int len = Integer.parseInt(line());
        valueLength = len < 0 ? -1 : len;
        return len;
    }

    private void readValue(byte[] into, int len) throws IOException {
        int read = 0;
        while (read < len) {
            int r = in.read(into, read, len - read);
            if (r < 0) {
                throw new IOException("redis closed the connection in a GET reply");
            }
            read += r;
        }
        if (in.read() != '\r' || in.read() != '\n') {
            throw new IOException("redis GET: reply not terminated by CRLF");
        }
    }

    byte[] value() {
        return value;
    }

    int valueLength() {
        return valueLength;
    }

    private int put(int at, String ascii) {
        byte[] b = ascii.getBytes(StandardCharsets.US_ASCII);
        return put(at, b, b.length);
    }

    private int put(int at, byte[] b, int len) {
        if (request.length < at + len) {
            byte[] bigger = new byte[Math.max(request.length * 2, at + len + 64)];
            System.arraycopy(request, 0, bigger, 0, at);
            request = bigger;
        }
        System.arraycopy(b, 0, request, at, len);
        return at + len;
    }

    private int bulk(int at, byte[] b) {
        at = put(at, "$" + b.length + "\r\n");
        at = put(at, b, b.length);
        return put(at, "\r\n");
    }

    /** The rest of a reply line, without CRLF. */
    private String line() throws IOException {
        StringBuilder sb = new StringBuilder();
        int c;
        while ((c = in.read()) >= 0 && c != '\r') {
            sb.append((char) c);
        }
        if (c < 0 || in.read() != '\n') {
            throw new IOException("redis closed the connection mid-reply");
        }
        return sb.toString();
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
