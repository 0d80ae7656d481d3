package io.rdmastore.transport;

import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * A transport that owns sockets: it listens on a port and connects by address (TCP). Its connections carry messages on
 * their own and also serve as the bootstrap and liveness channel for an {@link UpgradeTransport}.
 *
 * <p>A carrier connection starts with a 4-byte preface ({@link #PREFACE}) from the connecting side, so a listener can
 * tell the native protocol from others (RESP) on one port. Thread-safe.
 */
public interface CarrierTransport extends Transport {

    /** The native protocol's connection preface: ASCII "RDMS", big-endian. */
    int PREFACE = 0x52444D53;

    /** Binds {@code bind} and hands each new native connection to {@code handler}. */
    Listener listen(InetSocketAddress bind, ConnectionHandler handler);

    /**
     * Connects to {@code address}, sending the preface; blocks until connected or {@code timeout} passes.
     *
     * @throws TransportException when the connection cannot be made
     */
    Connection connect(InetSocketAddress address, MessageHandler handler, Duration timeout);
}
