package io.rdmastore.transport;

import java.time.Duration;
import java.util.Locale;

/**
 * How a client connects: which transport it accepts ({@code auto}: the best both ends share, falling back to TCP;
 * {@code tcp}; or a provider name such as {@code ucx}, required), credentials for the server, and a time-out.
 */
public record ConnectOptions(String transport, byte[] credentials, Duration timeout) {

    /** Auto transport, no credentials, 10 s. */
    public static final ConnectOptions DEFAULT = new ConnectOptions("auto", new byte[0], Duration.ofSeconds(10));

    public ConnectOptions {
        transport = transport == null ? "auto" : transport.toLowerCase(Locale.ROOT);
        credentials = credentials == null ? new byte[0] : credentials.clone();
        timeout = timeout == null ? Duration.ofSeconds(10) : timeout;
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
    }

    public ConnectOptions withTransport(String name) {
        return new ConnectOptions(name, credentials, timeout);
    }

    public ConnectOptions withCredentials(byte[] value) {
        return new ConnectOptions(transport, value, timeout);
    }

    public ConnectOptions withTimeout(Duration value) {
        return new ConnectOptions(transport, credentials, value);
    }
}
