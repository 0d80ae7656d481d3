package io.rdmastore.client;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * How a client connects: the server (or the seeds of a replica set), transport ({@code auto|tcp|ucx}), password, the
 * default time-out of each call (also the connect time-out), for a replica set its name, write concern, read
 * preference and read concern, and TLS. Built by {@link RdmaStoreClient.Builder} or parsed from a URI
 * {@code rdmastore://h1:7379,h2:7380?replicaSet=rs0&w=majority&transport=auto&password=secret&timeout=5s&tlsTrust=/ca.pem}.
 * Immutable; validated when built.
 *
 * <p>A single host without {@code replicaSet} connects to that host as it is (no discovery, nothing sent beyond the
 * calls). Several hosts, or a {@code replicaSet}, make a replica-set client: it asks the seeds for their {@code ROLE},
 * connects to the primary and follows failovers.
 *
 * @param host the first seed's host name or address
 * @param port the first seed's port
 * @param transport {@code auto} (the best both ends share, falling back to tcp), {@code tcp}, or {@code ucx} (required:
 *     connecting fails when it cannot be used)
 * @param password the server's password, or null
 * @param timeout default time-out of each call, and of connecting
 * @param seeds every seed, unresolved, the first being {@code host:port}; null means just that one
 * @param replicaSet the replica set's name, checked against every member's; null for none
 * @param writeConcern the default write concern; null means {@link WriteConcern#W1}
 * @param readPreference which member serves reads; null means {@link ReadPreference#PRIMARY}
 * @param readConcern null means {@link ReadConcern#LOCAL}
 * @param tls connect with TLS (the server must serve it); the password then never crosses the network in clear
 * @param tlsTrust PEM file of the certificates to trust, or null for the JVM's trust store (only with {@code tls})
 */
public record ClientConfig(String host, int port, String transport, String password, Duration timeout,
                           List<InetSocketAddress> seeds, String replicaSet, WriteConcern writeConcern,
                           ReadPreference readPreference, ReadConcern readConcern, boolean tls, String tlsTrust) {
    /** The server's default port. */
    public static final int DEFAULT_PORT = 7379;
    /** The default time-out of a call. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);

    public ClientConfig {
        Objects.requireNonNull(host, "host");
        if (host.isEmpty()) {
            throw new IllegalArgumentException("host is empty");
        }
        checkPort(port);
        transport = transport == null ? "auto" : transport.toLowerCase(Locale.ROOT);
        if (!transport.equals("auto") && !transport.equals("tcp") && !transport.equals("ucx")) {
            throw new IllegalArgumentException("unknown transport '" + transport + "' (expected auto, tcp or ucx)");
        }
        timeout = timeout == null ? DEFAULT_TIMEOUT : timeout;
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
        if (seeds == null || seeds.isEmpty()) {
            seeds = List.of(InetSocketAddress.createUnresolved(host, port));
        } else {
            seeds = List.copyOf(seeds);
            InetSocketAddress first = seeds.get(0);
            if (!first.getHostString().equals(host) || first.getPort() != port) {
                throw new IllegalArgumentException("the first seed " + address(first) + " is not host:port "
                    + host + ":" + port);
            }
            for (InetSocketAddress s : seeds) {
                checkPort(s.getPort());
            }
        }
        if (replicaSet != null && replicaSet.isEmpty()) {
            throw new IllegalArgumentException("replicaSet is empty");
        }
        writeConcern = writeConcern == null ? WriteConcern.W1 : writeConcern;
        readPreference = readPreference == null ? ReadPreference.PRIMARY : readPreference;
        readConcern = readConcern == null ? ReadConcern.LOCAL : readConcern;
        if (readPreference != ReadPreference.PRIMARY && replicaSet == null && seeds.size() == 1) {
            throw new IllegalArgumentException("readPreference=" + readPreference.uriName()
                + " needs a replica set (replicaSet=... or several hosts)");
        }
        if (readConcern == ReadConcern.LINEARIZABLE && readPreference != ReadPreference.PRIMARY) {
            throw new IllegalArgumentException("readConcern=linearizable needs readPreference=primary");
        }
    }

    /** A single-host configuration, as before replica sets. */
    public ClientConfig(String host, int port, String transport, String password, Duration timeout) {
        this(host, port, transport, password, timeout, null, null, null, null, null, false, null);
    }

    private static void checkPort(int port) {
        if (port <= 0 || port > 65535) {
            throw new IllegalArgumentException("port out of range: " + port);
        }
    }

    /** Whether this client discovers a replica set (several seeds or a set name) rather than using one host as is. */
    public boolean isReplicaSet() {
        return replicaSet != null || seeds.size() > 1;
    }

    /** The password as HELLO credentials (UTF-8), empty when none. */
    byte[] credentials() {
        return password == null ? new byte[0] : password.getBytes(StandardCharsets.UTF_8);
    }

    /** {@code host:port}, with brackets around an IPv6 literal. */
    static String address(InetSocketAddress a) {
        String h = a.getHostString();
        return (h.indexOf(':') >= 0 ? "[" + h + "]" : h) + ":" + a.getPort();
    }

    /** Parses {@code host[:port]} or {@code [v6]:port} (port defaulting to {@link #DEFAULT_PORT}), unresolved. */
    static InetSocketAddress parseAddress(String s, String context) {
        String host;
        String port = null;
        if (s.startsWith("[")) {
            int close = s.indexOf(']');
            if (close < 0) {
                throw new IllegalArgumentException("malformed address '" + s + "' in " + context);
            }
            host = s.substring(1, close);
            if (close + 1 < s.length()) {
                if (s.charAt(close + 1) != ':') {
                    throw new IllegalArgumentException("malformed address '" + s + "' in " + context);
                }
                port = s.substring(close + 2);
            }
        } else {
            int colon = s.lastIndexOf(':');
            host = colon >= 0 ? s.substring(0, colon) : s;
            port = colon >= 0 ? s.substring(colon + 1) : null;
        }
        if (host.isEmpty()) {
            throw new IllegalArgumentException("URI has no host: '" + context + "'");
        }
        int p;
        try {
            p = port == null ? DEFAULT_PORT : Integer.parseInt(port);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("malformed port '" + port + "' in " + context, e);
        }
        checkPort(p);
        return InetSocketAddress.createUnresolved(host, p);
    }

    /**
     * Parses {@code rdmastore://host[:port][,host2[:port]...][?transport=auto|tcp|ucx][&password=...]
     * [&timeout=5s|500ms|2m|1500][&replicaSet=rs0][&w=1|majority][&wtimeout=5s]
     * [&readPreference=primary|secondary|secondaryPreferred][&readConcern=local|linearizable]}.
     *
     * @throws IllegalArgumentException with what is wrong
     */
    public static ClientConfig parse(String uri) {
        int scheme = uri.indexOf("://");
        if (scheme < 0 || !uri.substring(0, scheme).equalsIgnoreCase("rdmastore")) {
            throw new IllegalArgumentException("URI must start with rdmastore:// but was '" + uri + "'");
        }
        String rest = uri.substring(scheme + 3);
        if (rest.indexOf('#') >= 0) {
            throw new IllegalArgumentException("malformed URI '" + uri + "': a fragment (#) is not allowed");
        }
        int q = rest.indexOf('?');
        String authority = q >= 0 ? rest.substring(0, q) : rest;
        String query = q >= 0 ? rest.substring(q + 1) : null;
        if (authority.endsWith("/")) {
            authority = authority.substring(0, authority.length() - 1);
        }
        if (authority.isEmpty()) {
            throw new IllegalArgumentException("URI has no host: '" + uri + "'");
        }
        if (authority.indexOf('/') >= 0 || authority.indexOf('@') >= 0) {
            throw new IllegalArgumentException("malformed URI '" + uri + "': expected host:port[,host:port...] "
                + "before '?' (the password goes in password=)");
        }
        List<InetSocketAddress> seeds = new ArrayList<>();
        for (String part : authority.split(",", -1)) {
            seeds.add(parseAddress(part, uri));
        }
        String transport = "auto";
        String password = null;
        Duration timeout = DEFAULT_TIMEOUT;
        String replicaSet = null;
        WriteConcern w = WriteConcern.W1;
        Duration wtimeout = null;
        ReadPreference readPreference = ReadPreference.PRIMARY;
        ReadConcern readConcern = ReadConcern.LOCAL;
        boolean tls = false;
        String tlsTrust = null;
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
                    case "replicaSet" -> replicaSet = value;
                    case "w" -> w = WriteConcern.parse(value);
                    case "wtimeout" -> wtimeout = parseDuration(value);
                    case "readPreference" -> readPreference = ReadPreference.parse(value);
                    case "readConcern" -> readConcern = ReadConcern.parse(value);
                    case "tls" -> tls = Boolean.parseBoolean(value);
                    case "tlsTrust" -> {
                        tls = true;
                        tlsTrust = value;
                    }
                    default -> throw new IllegalArgumentException("unknown URI parameter '" + key
                        + "' (known: transport, password, timeout, replicaSet, w, wtimeout, readPreference, "
                        + "readConcern, tls, tlsTrust)");
                }
            }
        }
        if (wtimeout != null) {
            w = w.withWtimeout(wtimeout);
        }
        InetSocketAddress first = seeds.get(0);
        return new ClientConfig(first.getHostString(), first.getPort(), transport, password, timeout, seeds,
            replicaSet, w, readPreference, readConcern, tls, tlsTrust);
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
        StringBuilder b = new StringBuilder("rdmastore://");
        for (int i = 0; i < seeds.size(); i++) {
            b.append(i > 0 ? "," : "").append(address(seeds.get(i)));
        }
        b.append("?transport=").append(transport).append(password != null ? "&password=***" : "")
            .append("&timeout=").append(timeout.toMillis()).append("ms");
        if (replicaSet != null) {
            b.append("&replicaSet=").append(replicaSet);
        }
        if (writeConcern.majority()) {
            b.append("&w=majority");
        }
        if (writeConcern.wtimeout() != null) {
            b.append("&wtimeout=").append(writeConcern.wtimeout().toMillis()).append("ms");
        }
        if (readPreference != ReadPreference.PRIMARY) {
            b.append("&readPreference=").append(readPreference.uriName());
        }
        if (readConcern != ReadConcern.LOCAL) {
            b.append("&readConcern=").append(readConcern.name().toLowerCase(Locale.ROOT));
        }
        if (tls) {
            b.append("&tls=true");
        }
        if (tlsTrust != null) {
            b.append("&tlsTrust=").append(tlsTrust);
        }
        return b.toString();
    }
}
