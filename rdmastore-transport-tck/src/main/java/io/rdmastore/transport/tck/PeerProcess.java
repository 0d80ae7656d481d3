package io.rdmastore.transport.tck;

import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A peer in its own JVM for the TCK's kill test: builds a client {@link Network} with the public static
 * {@code client()} method of the class named by {@code args[0]}, connects to {@code args[1]:args[2]}, sends one
 * message, prints {@code CONNECTED}, and waits to be killed. It exits by itself when its standard input closes (the
 * test JVM is gone) or after 60 s, so a failed test leaves no process behind.
 */
public final class PeerProcess {
    /** The line printed once the connection is up and the first message is sent. */
    public static final String READY = "CONNECTED";

    private PeerProcess() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: PeerProcess <network factory class> <host> <port>");
            System.exit(64);
        }
        Thread watchdog = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    Thread.onSpinWait();
                }
            } catch (IOException e) {
                // The parent is gone either way.
            }
            Runtime.getRuntime().halt(3);
        }, "peer-stdin-watch");
        watchdog.setDaemon(true);
        watchdog.start();
        Network network = (Network) Class.forName(args[0]).getMethod("client").invoke(null);
        Connection c = network.connect(new InetSocketAddress(args[1], Integer.parseInt(args[2])),
            new MessageHandler() {
                @Override
                public void onMessage(Connection connection, MemorySegment message) {
                }
            }, ConnectOptions.DEFAULT);
        c.send(MemorySegment.ofArray(("peer " + ProcessHandle.current().pid()).getBytes(StandardCharsets.UTF_8)),
            Duration.ofSeconds(10));
        System.out.println(READY + " " + c.describe());
        System.out.flush();
        Thread.sleep(60_000);
        Runtime.getRuntime().halt(2);
    }
}
