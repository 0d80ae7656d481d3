package io.rdmastore.cli;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A minimal blocking RESP2 client for the cluster commands the CLI sends (CLUSTER SETSLOT, GETKEYSINSLOT, MIGRATE):
 * one request at a time, replies as String (simple), byte[] (bulk), Long, List or null.
 *
 * <p>Threads: one thread at a time.
 */
final class RespLink implements AutoCloseable {
    /** An error reply, with Redis's text. */
    static final class ErrorReply extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ErrorReply(String text) {
            super(text);
        }
    }

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    RespLink(String address, String password, Duration timeout) {
        int colon = address.lastIndexOf(':');
        try {
            socket = new Socket();
            socket.connect(new InetSocketAddress(address.substring(0, colon),
                Integer.parseInt(address.substring(colon + 1))), (int) timeout.toMillis());
            socket.setSoTimeout((int) timeout.toMillis());
            socket.setTcpNoDelay(true);
            in = new BufferedInputStream(socket.getInputStream());
            out = socket.getOutputStream();
        } catch (IOException e) {
            throw new UserException(address + ": " + e.getMessage(), e);
        }
        if (password != null) {
            call("AUTH", password);
        }
    }

    /** Sends one command and returns its reply; throws {@link ErrorReply} for an error reply. */
    Object call(Object... args) {
        ByteArrayOutputStream req = new ByteArrayOutputStream();
        req.writeBytes(("*" + args.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
        for (Object a : args) {
            byte[] b = a instanceof byte[] bytes ? bytes : String.valueOf(a).getBytes(StandardCharsets.UTF_8);
            req.writeBytes(("$" + b.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
            req.writeBytes(b);
            req.writeBytes("\r\n".getBytes(StandardCharsets.US_ASCII));
        }
        try {
            out.write(req.toByteArray());
            out.flush();
            Object reply = read();
            if (reply instanceof ErrorReply e) {
                throw new ErrorReply(e.getMessage());
            }
            return reply;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private Object read() throws IOException {
        String line = line();
        char type = line.charAt(0);
        String rest = line.substring(1);
        return switch (type) {
            case '+' -> rest;
            case '-' -> new ErrorReply(rest);
            case ':' -> Long.parseLong(rest);
            case '$' -> {
                int n = Integer.parseInt(rest);
                if (n < 0) {
                    yield null;
                }
                byte[] b = in.readNBytes(n + 2);
                yield java.util.Arrays.copyOf(b, n);
            }
            case '*' -> {
                int n = Integer.parseInt(rest);
                List<Object> items = new ArrayList<>(Math.max(n, 0));
                for (int i = 0; i < n; i++) {
                    items.add(read());
                }
                yield n < 0 ? null : items;
            }
            default -> throw new IOException("unexpected RESP reply '" + line + "'");
        };
    }

    private String line() throws IOException {
        StringBuilder sb = new StringBuilder();
        int b;
        while ((b = in.read()) != '\n') {
            if (b < 0) {
                throw new EOFException("connection closed");
            }
            if (b != '\r') {
                sb.append((char) b);
            }
        }
        return sb.toString();
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException e) {
            // nothing to do
        }
    }
}
