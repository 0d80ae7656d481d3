package io.rdmastore.transport.ucx;

import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.tcp.TcpTransport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The lying peer of {@link UcxCrossMemoryTrustTest}, in its own JVM: declares {@code args[1]} as its pid, lends 64
 * bytes of its own memory but names {@code args[2]} as their address, and asks the server to read them. Prints the
 * server's answer as {@code ANSWER <text>}.
 */
public final class UcxLyingPeer {
    private UcxLyingPeer() {
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        UcxTransport.Context c = new UcxTransport.Context().tls(args[3]).ringCapacity(256 << 10).maxConnections(4)
            .memoryBudget(4L * ((512 << 10) + 4096));
        c.declaredPid = Long.parseLong(args[1]);
        long address = Long.parseLong(args[2]);
        UcxTransport ucx = new UcxTransport(c);
        Network network = new Network(new Network.Context().carrier(new TcpTransport()).upgrade(ucx));
        LinkedBlockingQueue<String> answers = new LinkedBlockingQueue<>();
        Connection conn = network.connect(new InetSocketAddress("127.0.0.1", port), new MessageHandler() {
            @Override
            public void onMessage(Connection connection, MemorySegment message) {
                answers.add(new String(message.toArray(ValueLayout.JAVA_BYTE), StandardCharsets.ISO_8859_1));
            }
        }, ConnectOptions.DEFAULT.withTransport("ucx"));
        try (Arena arena = Arena.ofShared()) {
            MemorySegment lent = arena.allocate(64);
            RegisteredMemory reg = conn.register(lent);
            byte[] d = reg.descriptor();
            ByteBuffer.wrap(d).putLong(0, address);
            conn.send(MemorySegment.ofArray(UcxCrossMemoryTrustTest.request(0, d)), Duration.ofSeconds(5));
            String a = answers.poll(20, TimeUnit.SECONDS);
            System.out.println("ANSWER " + (a == null ? "none within 20 s" : a.replaceAll("[^ -~]", ".")));
            System.out.flush();
            reg.close();
        }
        conn.close();
        network.close();
        ucx.close();
    }
}
