package io.rdmastore.transport.ucx;

import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.tcp.TcpTransport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpRequest;

/**
 * The hostile peer of {@link UcxIsolationTest}, run in its own JVM (a wild one-sided access may crash it): connects to
 * the server as an ordinary ucx client, then uses the remote key the server gave it for its own connection to get
 * {@code length} bytes at another connection's address. Prints {@code READ <hex>} or {@code FAILED <reason>}.
 */
public final class UcxIsolationAttacker {
    private UcxIsolationAttacker() {
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        long victimAddress = Long.parseLong(args[1]);
        int length = Integer.parseInt(args[2]);
        UcxTransport ucx = UcxTckNetworks.ucx(args[3]);
        Network network = new Network(new Network.Context().carrier(new TcpTransport()).upgrade(ucx));
        Connection c = network.connect(new InetSocketAddress("127.0.0.1", port), new MessageHandler() {
            @Override
            public void onMessage(Connection connection, MemorySegment message) {
            }
        }, ConnectOptions.DEFAULT.withTransport("ucx"));
        UcxConnection mine = (UcxConnection) c;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment local = arena.allocate(length);
            CompletableFuture<Void> f = new CompletableFuture<>();
            ucx.execute(() -> {
                try {
                    mine.ep.getNonBlocking(victimAddress, mine.remoteKey, local.address(), length, new UcxCallback() {
                        @Override
                        public void onSuccess(UcpRequest request) {
                            f.complete(null);
                        }

                        @Override
                        public void onError(int status, String message) {
                            f.completeExceptionally(new IllegalStateException(message + " (" + status + ")"));
                        }
                    });
                } catch (Throwable t) {
                    f.completeExceptionally(t);
                }
            });
            try {
                f.get(10, TimeUnit.SECONDS);
                byte[] got = local.toArray(ValueLayout.JAVA_BYTE);
                System.out.println("READ " + HexFormat.of().formatHex(got));
                System.out.println("TEXT " + new String(got, StandardCharsets.ISO_8859_1).replaceAll("[^ -~]", "."));
            } catch (Exception e) {
                System.out.println("FAILED " + e);
            }
        }
        System.out.flush();
        c.close();
        network.close();
        ucx.close();
    }
}
