package io.rdmastore.client;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * How a client connects: host, port, transport ({@code auto|tcp|ucx}), password and the default time-out of each call
 * (also the connect time-out). Built by {@link RdmaStoreClient.Builder} or parsed from a URI
 * {@code rdmastore://host:7379?transport=auto&password=secret&timeout=5s&tlsTrust=/path/ca.pem}. Immutable; validated when built.
 *
 * @param host server host name or address
 * @param port server port
 * @param transport {@code auto} (the best both ends share, falling back to tcp), {@code tcp}, or {@code ucx} (required:
 *     connecting fails when it cannot be used)
 * @param password the server's password, or null
 * @param timeout default time-out of each call, and of connecting
 * @param tls connect with TLS (the server must serve it); the password then never crosses the network in clear
 * @param tlsTrust PEM file of the certificates to trust, or null for the JVM's trust store (only with {@code tls})
 */
public record ClientConfig(String host, int port, String transport, String password, Duration timeout, boolean tls,
                           String tlsTrust) {
    /** The server's default port. */
    public static final int DEFAULT_PORT = 7379;
    /** The default time-out of a call. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);

    /** Without TLS. */
    public ClientConfig(String host, int port, String transport, String password, Duration timeout) {
        this(host, port, transport, password, timeout, false, null);
    }

    public ClientConfig {
        Objects.requireNonNull(host, "host");
        if (host.isEmpty()) {
            throw new IllegalArgumentException("host is empty");
        }
        if (port <= 0 || port > 65535) {
            throw new IllegalArgumentException("port out of range: " + port);
        }
        transport = transport == null ? "auto" : transport.toLowerCase(Locale.ROOT);
        if (!transport.equals("auto") && !transport.equals("tcp") && !transport.equals("ucx")) {
            throw new IllegalArgumentException("unknown transport '" + transport + "' (expected auto, tcp or ucx)");
        }
        timeout = timeout == null ? DEFAULT_TIMEOUT : timeout;
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
    }

    /** The password as HELLO credentials (UTF-8), empty when none. */
    byte[] credentials() {
        return password == null ? new byte[0] : password.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Parses {@code rdmastore://host[:port][?transport=auto|tcp|ucx][&password=...][&timeout=5s|500ms|2m|1500]}.
     *
     * @throws IllegalArgumentException with what is wrong
     */
    public static ClientConfig parse(String uri) {
        URI u;
        try {
            u = new URI(uri);
        } catch (java.net.URISyntaxException e) {
            throw new IllegalArgumentException("malformed URI '" + uri + "': " + e.getMessage(), e);
        }
        if (!"rdmastore".equalsIgnoreCase(u.getScheme())) {
            throw new IllegalArgumentException("URI must start with rdmastore:// but was '" + uri + "'");
        }
        if (u.getHost() == null) {
            throw new IllegalArgumentException("URI has no host: '" + uri + "'");
        }
        String transport = "auto";
        String password = null;
        Duration timeout = DEFAULT_TIMEOUT;
        boolean tls = false;
        String tlsTrust = null;
        String query = u.getRawQuery();
        if (query != null && !query.isEmpty()) {
            for (String pair : query.split("&")) {
                int eq = pair.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("malformed URI parameter '" + pair + "' in '" + uri + "'");
                }
                String key = pair.substring(0, eq);
                String value = java.net.URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
                switch (key) {
                    case "transport" -> transport = value;
                    case "password" -> password = value;
                    case "timeout" -> timeout = parseDuration(value);
                    case "tls" -> tls = Boolean.parseBoolean(value);
                    case "tlsTrust" -> {
                        tls = true;
                        tlsTrust = value;
                    }
                    default -> throw new IllegalArgumentException("unknown URI parameter '" + key
                        + "' (known: transport, password, timeout, tls, tlsTrust)");
                }
            }
        }
        return new ClientConfig(u.getHost(), u.getPort() < 0 ? DEFAULT_PORT : u.getPort(), transport, password,
            timeout, tls, tlsTrust);
    }

    /** {@code 250ms}, {@code 5s}, {@code 2m}, or a plain number of milliseconds. */
    static Duration parseDuration(String s) {
        try {
            if (s.endsWith("ms")) {
                return Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2)));
            }
            if (s.endsWith("s")) {
                return Duration.ofSeconds(Long.parseLong(s.substring(0, s.length() - 1)));
            }
            if (s.endsWith("m")) {
                return Duration.ofMinutes(Long.parseLong(s.substring(0, s.length() - 1)));
            }
            return Duration.ofMillis(Long.parseLong(s));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("malformed timeout '" + s + "' (expected e.g. 500ms, 5s, 2m)", e);
        }
    }

    @Override
    public String toString() {
        return "rdmastore://" + host + ":" + port + "?transport=" + transport + (password != null ? "&password=***"
            : "") + "&timeout=" + timeout.toMillis() + "ms" + (tls ? "&tls=true" : "")
            + (tlsTrust != null ? "&tlsTrust=" + tlsTrust : "");
    }
}
