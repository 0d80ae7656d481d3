package io.rdmastore.transport.tcp;

import io.rdmastore.transport.Network;

import java.time.Duration;

/** Builds the TCK's networks over {@link TcpTransport}; {@link #client()} is also called by the TCK's peer JVM. */
public final class TcpTckNetworks {
    private TcpTckNetworks() {
    }

    public static Network server() {
        return new Network(new Network.Context().carrier(new TcpTransport()).handshakeTimeout(Duration.ofSeconds(2)));
    }

    public static Network client() {
        return new Network(new Network.Context().carrier(new TcpTransport()));
    }
}
