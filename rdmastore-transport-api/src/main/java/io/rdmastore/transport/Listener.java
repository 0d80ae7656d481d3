package io.rdmastore.transport;

import java.net.InetSocketAddress;

/** A bound port accepting connections. Thread-safe. */
public interface Listener extends AutoCloseable {

    /** The bound address (with the real port when 0 was asked for). */
    InetSocketAddress localAddress();

    /** Stops accepting; connections already made stay open. Idempotent. */
    @Override
    void close();
}
