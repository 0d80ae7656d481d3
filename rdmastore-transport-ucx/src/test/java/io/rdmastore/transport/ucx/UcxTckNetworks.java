package io.rdmastore.transport.ucx;

import io.rdmastore.transport.Network;
import io.rdmastore.transport.tcp.TcpTransport;

import java.time.Duration;

/**
 * Builds the TCK's networks: a TCP carrier plus UCX restricted to one kind of wire. {@link Shm#client()} and
 * {@link Tcp#client()} are also called by the TCK's peer JVM.
 */
public final class UcxTckNetworks {
    /** Shared memory only: UCX's posix and cma transports (plus self). */
    public static final String SHM_TLS = "posix,cma,self";
    /** UCX's own TCP transport. */
    public static final String TCP_TLS = "tcp,self";

    private UcxTckNetworks() {
    }

    static UcxTransport ucx(String tls) {
        UcxTransport t = new UcxTransport(new UcxTransport.Context().tls(tls).ringCapacity(256 << 10)
            .maxConnections(80).memoryBudget(80L * ((512 << 10) + 4096)));
        if (!t.isAvailable()) {
            throw new IllegalStateException("UCX is required for these tests but cannot be used: "
                + t.unavailabilityCause() + " (install libucx0)", t.unavailabilityCause());
        }
        return t;
    }

    static Network server(String tls) {
        return new Network(new Network.Context().carrier(new TcpTransport()).upgrade(ucx(tls))
            .handshakeTimeout(Duration.ofSeconds(2)));
    }

    static Network client(String tls) {
        return new Network(new Network.Context().carrier(new TcpTransport()).upgrade(ucx(tls)));
    }

    /** Shared memory networks. */
    public static final class Shm {
        private Shm() {
        }

        public static Network server() {
            return UcxTckNetworks.server(SHM_TLS);
        }

        public static Network client() {
            return UcxTckNetworks.client(SHM_TLS);
        }
    }

    /** UCX-tcp networks. */
    public static final class Tcp {
        private Tcp() {
        }

        public static Network server() {
            return UcxTckNetworks.server(TCP_TLS);
        }

        public static Network client() {
            return UcxTckNetworks.client(TCP_TLS);
        }
    }
}
