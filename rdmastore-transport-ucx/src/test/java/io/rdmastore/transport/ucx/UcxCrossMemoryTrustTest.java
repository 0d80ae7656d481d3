package io.rdmastore.transport.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.Listener;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.RemoteMemory;
import io.rdmastore.transport.tcp.TcpTransport;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A one-sided read reads only what the peer lent, in the peer's own process. The server here answers a request
 * {@code [offset:8][descriptor]} by reading 64 bytes of the lent memory at that offset (on a thread of its own, where
 * reads from a peer on this host are process_vm_readv) and sending them back, or the error.
 *
 * <ul>
 *   <li>An honest peer's read works, and is process_vm_readv (its pid is vouched for by the kernel).</li>
 *   <li>A read past the lent range fails before anything is read.</li>
 *   <li>A peer (its own JVM) that declares the server's pid and lends "64 bytes" at the address of a secret in the
 *       server gets an error, and the secret never leaves the server. On the code before, the server read its own
 *       memory for it.</li>
 * </ul>
 */
class UcxCrossMemoryTrustTest {
    private static final String TLS = "posix,cma,self";

    private final List<AutoCloseable> open = new ArrayList<>();
    private final ExecutorService readers = Executors.newSingleThreadExecutor();
    private final java.util.concurrent.atomic.AtomicReference<Connection> serverSide =
        new java.util.concurrent.atomic.AtomicReference<>();

    @AfterEach
    void close() throws Exception {
        readers.shutdownNow();
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    static byte[] request(long offset, byte[] descriptor) {
        return ByteBuffer.allocate(8 + descriptor.length).putLong(offset).put(descriptor).array();
    }

    private InetSocketAddress server() {
        return server(false);
    }

    /**
     * The server; with {@code now}, each read is {@code Connection.readNow} on the transport's own thread (in the
     * handler), into unregistered memory, as SET_LARGE reads a client on this host.
     */
    private InetSocketAddress server(boolean now) {
        UcxTransport ucx = UcxTckNetworks.ucx(TLS);
        Network net = new Network(new Network.Context().carrier(new TcpTransport()).upgrade(ucx)
            .handshakeTimeout(Duration.ofSeconds(5)));
        open.add(net);
        open.add(ucx);
        Arena arena = Arena.ofShared();
        open.add(arena);
        Listener l = net.listen(new InetSocketAddress("127.0.0.1", 0), c -> {
            serverSide.set(c);
            return new MessageHandler() {
                @Override
                public void onMessage(Connection connection, MemorySegment message) {
                    ByteBuffer b = message.asByteBuffer();
                    long offset = b.getLong();
                    byte[] d = new byte[b.remaining()];
                    b.get(d);
                    if (now) {
                        String answer;
                        MemorySegment local = arena.allocate(64);
                        try {
                            RemoteMemory remote = connection.remoteMemory(d);
                            if (connection.readNow(remote, offset, MemorySegment.ofArray(new byte[64]), 0, 64)) {
                                // a heap segment has no address for the kernel: it must be declined
                                answer = "ERR a heap destination was taken";
                            } else if (connection.readNow(remote, offset, local, 0, 64)) {
                                answer = "OK " + new String(local.toArray(ValueLayout.JAVA_BYTE),
                                    StandardCharsets.ISO_8859_1);
                            } else {
                                answer = "ERR readNow declined";
                            }
                        } catch (RuntimeException e) {
                            answer = "ERR " + e;
                        }
                        connection.offer(MemorySegment.ofArray(answer.getBytes(StandardCharsets.ISO_8859_1)));
                        return;
                    }
                    readers.execute(() -> {
                        String answer;
                        MemorySegment local = arena.allocate(64);
                        try (RegisteredMemory reg = connection.register(local)) {
                            connection.read(connection.remoteMemory(d), offset, reg, 0, 64)
                                .get(10, TimeUnit.SECONDS);
                            answer = "OK " + new String(local.toArray(ValueLayout.JAVA_BYTE),
                                StandardCharsets.ISO_8859_1);
                        } catch (Exception e) {
                            answer = "ERR " + e;
                        }
                        connection.offer(MemorySegment.ofArray(answer.getBytes(StandardCharsets.ISO_8859_1)));
                    });
                }
            };
        });
        open.add(l);
        return l.localAddress();
    }

    @Test
    @Timeout(60)
    void anHonestPeersLentRangeIsReadAndNothingBeyondIt() throws Exception {
        honestPeer(server());
    }

    @Test
    @Timeout(60)
    void readNowOnTheTransportThreadReadsTheLentRangeAndNothingBeyondIt() throws Exception {
        honestPeer(server(true));
    }

    @Test
    @Timeout(90)
    void readNowForAPeerThatDeclaresAnotherPidFailsAndNothingIsRead() throws Exception {
        lyingPeer(server(true));
    }

    private void honestPeer(InetSocketAddress at) throws Exception {
        UcxTransport ucx = UcxTckNetworks.ucx(TLS);
        Network net = new Network(new Network.Context().carrier(new TcpTransport()).upgrade(ucx));
        open.add(net);
        open.add(ucx);
        LinkedBlockingQueue<String> answers = new LinkedBlockingQueue<>();
        Connection c = net.connect(at, new MessageHandler() {
            @Override
            public void onMessage(Connection connection, MemorySegment message) {
                answers.add(new String(message.toArray(ValueLayout.JAVA_BYTE), StandardCharsets.ISO_8859_1));
            }
        }, ConnectOptions.DEFAULT.withTransport("ucx"));
        open.add(c);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment lent = arena.allocate(64);
            byte[] text = "lent-by-the-peer-".repeat(4).substring(0, 64).getBytes(StandardCharsets.US_ASCII);
            lent.copyFrom(MemorySegment.ofArray(text));
            try (RegisteredMemory reg = c.register(lent)) {
                c.send(MemorySegment.ofArray(request(0, reg.descriptor())), Duration.ofSeconds(5));
                assertEquals("OK " + new String(text, StandardCharsets.US_ASCII), answers.poll(20, TimeUnit.SECONDS));
                assertTrue(serverSide.get().describe().contains("reads by process_vm_readv"),
                    "the kernel vouched for this peer, so its reads are process_vm_readv: "
                        + serverSide.get().describe());
                c.send(MemorySegment.ofArray(request(64, reg.descriptor())), Duration.ofSeconds(5));
                String beyond = answers.poll(20, TimeUnit.SECONDS);
                assertTrue(beyond != null && beyond.startsWith("ERR") && beyond.contains("refused"),
                    "a read past the lent range: " + beyond);
            }
        }
    }

    @Test
    @Timeout(90)
    void aPeerThatDeclaresAnotherPidGetsAnErrorAndNothingIsRead() throws Exception {
        lyingPeer(server());
    }

    private void lyingPeer(InetSocketAddress at) throws Exception {
        byte[] secret = ("SERVER-SECRET-" + System.nanoTime() + "-".repeat(64)).substring(0, 64)
            .getBytes(StandardCharsets.US_ASCII);
        Arena arena = Arena.ofShared();
        open.add(arena);
        MemorySegment s = arena.allocate(64);
        s.copyFrom(MemorySegment.ofArray(secret));
        String out = lie(at.getPort(), ProcessHandle.current().pid(), s.address());
        String answer = out.lines().filter(l -> l.startsWith("ANSWER")).findFirst().orElse(out);
        System.out.println("lying peer: " + answer);
        assertFalse(out.contains(new String(secret, StandardCharsets.US_ASCII).substring(0, 20)),
            "the server read its own memory for a peer that declared the server's pid:\n" + out);
        assertTrue(answer.startsWith("ANSWER ERR") && answer.contains("declared pid"),
            "the lying peer should get an error naming the pid check:\n" + out);
        assertTrue(Arrays.equals(secret, s.toArray(ValueLayout.JAVA_BYTE)));
    }

    private static String lie(int port, long pid, long address) throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process p = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xmx128m",
            "-XX:-CreateCoredumpOnCrash", "-XX:ErrorFile=/dev/null", "-cp", System.getProperty("java.class.path"),
            UcxLyingPeer.class.getName(), Integer.toString(port), Long.toString(pid), Long.toString(address), TLS)
            .redirectErrorStream(true).start();
        p.getOutputStream().close();
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> {
            try {
                return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "output lost: " + e;
            }
        });
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
        }
        p.waitFor(10, TimeUnit.SECONDS);
        try {
            return out.get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            return "no output (" + e + ")";
        }
    }
}
