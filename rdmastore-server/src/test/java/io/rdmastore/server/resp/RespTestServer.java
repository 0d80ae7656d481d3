package io.rdmastore.server.resp;

import io.netty.util.ResourceLeakDetector;
import io.rdmastore.store.FsyncPolicy;
import io.rdmastore.store.Store;
import io.rdmastore.store.StoreConfig;
import io.rdmastore.transport.Listener;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.tcp.TcpTransport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * A RESP-only server for tests, built from the real parts (a store in a temporary directory, the TCP carrier with the
 * RESP face as its foreign protocol, and a {@link Network} listener on 127.0.0.1 with an ephemeral port) so that these
 * tests depend on nothing of the server module outside this package. Native connections are accepted and echo every
 * message, which lets a test prove that protocol detection still routes the native preface to the native protocol.
 *
 * <p>Threads: start and close on one thread; the accessors are safe from any thread.
 */
final class RespTestServer implements AutoCloseable {
    static {
        // Every buffer the RESP handler fails to release is reported as LEAK in the test log.
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
    }

    final Path dir;
    final Store store;
    final RespFace face;
    final TcpTransport tcp;
    final Network network;
    final Listener listener;

    private RespTestServer(RespFace.Context context, int ioThreads) {
        try {
            dir = Files.createTempDirectory("rdmastore-resp-test");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        store = Store.open(new StoreConfig().dataDir(dir).fsync(FsyncPolicy.NO));
        face = new RespFace(store, context);
        tcp = new TcpTransport(new TcpTransport.Context().ioThreads(ioThreads).foreignProtocol(face::initialize));
        network = new Network(new Network.Context().carrier(tcp));
        listener = network.listen(new InetSocketAddress("127.0.0.1", 0), conn -> new MessageHandler() {
            @Override
            public void onMessage(io.rdmastore.transport.Connection c, MemorySegment message) {
                c.offer(message);
            }
        });
    }

    static RespTestServer start() {
        return new RespTestServer(new RespFace.Context(), 2);
    }

    static RespTestServer start(RespFace.Context context) {
        return new RespTestServer(context, 2);
    }

    /** With {@code ioThreads} event loops: 1 puts every connection on the same loop. */
    static RespTestServer start(RespFace.Context context, int ioThreads) {
        return new RespTestServer(context, ioThreads);
    }

    int port() {
        return listener.localAddress().getPort();
    }

    InetSocketAddress address() {
        return new InetSocketAddress("127.0.0.1", port());
    }

    @Override
    public void close() {
        listener.close();
        face.closeAll();
        tcp.close();
        network.close();
        store.close();
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
