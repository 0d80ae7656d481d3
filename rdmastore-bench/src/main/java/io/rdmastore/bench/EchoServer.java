package io.rdmastore.bench;

import io.rdmastore.transport.Listener;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.TransportStatus;
import io.rdmastore.transport.tcp.TcpTransport;
import io.rdmastore.transport.ucx.UcxTransport;

import java.net.InetSocketAddress;

/**
 * Child process for E1: echoes every message on the connection it came from, from the transport's own thread.
 * Usage: {@code EchoServer tcp|ring|ring-flush|am}. Prints {@code READY <port>}; exits when its stdin closes or it is
 * killed.
 */
public final class EchoServer {
    private EchoServer() {
    }

    public static void main(String[] args) throws Exception {
        String variant = args.length > 0 ? args[0] : "ring";
        TcpTransport tcp = new TcpTransport();
        Network.Context ctx = new Network.Context().carrier(tcp);
        UcxTransport ucx = null;
        if (!variant.equals("tcp")) {
            ucx = new UcxTransport(E1RoundTrips.ucxContext(variant, false));
            if (!ucx.isAvailable()) {
                System.err.println("ucx unavailable: " + ucx.unavailabilityCause());
                System.exit(2);
            }
            ctx.upgrade(ucx);
        }
        Network network = new Network(ctx);
        Listener l = network.listen(new InetSocketAddress("127.0.0.1", 0), c -> (conn, m) -> {
            int status;
            while ((status = conn.offer(m)) == TransportStatus.BACK_PRESSURED) {
                Thread.onSpinWait();
            }
        });
        System.out.println("READY " + l.localAddress().getPort());
        System.out.flush();
        while (System.in.read() >= 0) {
            Thread.onSpinWait();
        }
        l.close();
        network.close();
        if (ucx != null) {
            ucx.close();
        }
        tcp.close();
    }
}
