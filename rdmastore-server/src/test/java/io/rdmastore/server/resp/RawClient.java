package io.rdmastore.server.resp;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;

/**
 * A raw socket to the RESP port for protocol tests: sends exact bytes and collects what comes back.
 *
 * <p>Threads: one test thread.
 */
final class RawClient implements AutoCloseable {
    private final Socket socket;
    private final InputStream in;
    private boolean closedByServer;

    RawClient(InetSocketAddress address) {
        try {
            socket = new Socket();
            socket.connect(address, 2000);
            socket.setTcpNoDelay(true);
            in = socket.getInputStream();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    RawClient send(String s) {
        return send(s.getBytes(StandardCharsets.ISO_8859_1));
    }

    RawClient send(byte[] b) {
        try {
            socket.getOutputStream().write(b);
            socket.getOutputStream().flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    /** Reads until {@code expected} bytes arrived, the server closed, or {@code quietMillis} passed without data. */
    String read(int expected, int quietMillis) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[65536];
        try {
            socket.setSoTimeout(quietMillis);
            while (expected <= 0 || out.size() < expected) {
                int n;
                try {
                    n = in.read(buf);
                } catch (SocketTimeoutException e) {
                    break;
                } catch (IOException e) {
                    closedByServer = true;
                    break;
                }
                if (n < 0) {
                    closedByServer = true;
                    break;
                }
                out.write(buf, 0, n);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString(StandardCharsets.ISO_8859_1);
    }

    /** Reads everything until the server closes the connection or 2 s pass quietly. */
    String readUntilClose() {
        return read(-1, 2000);
    }

    /** Whether the server has closed the connection (checked with a short read). */
    boolean closedByServer() {
        if (!closedByServer) {
            read(-1, 300);
        }
        return closedByServer;
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
