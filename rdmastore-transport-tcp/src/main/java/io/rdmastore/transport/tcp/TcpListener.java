package io.rdmastore.transport.tcp;

import io.netty.channel.ServerChannel;
import io.rdmastore.transport.Listener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;

/** A bound TCP port of a {@link TcpTransport}. Thread-safe. */
final class TcpListener implements Listener {
    private static final Logger LOG = LoggerFactory.getLogger(TcpListener.class);

    private final ServerChannel channel;
    private final InetSocketAddress local;

    TcpListener(ServerChannel channel) {
        this.channel = channel;
        this.local = (InetSocketAddress) channel.localAddress();
    }

    @Override
    public InetSocketAddress localAddress() {
        return local;
    }

    @Override
    public void close() {
        if (channel.isOpen()) {
            channel.close().awaitUninterruptibly();
            LOG.info("tcp listener on {} closed", TcpConnection.format(local));
        }
    }

    @Override
    public String toString() {
        return "tcp listener " + TcpConnection.format(local);
    }
}
