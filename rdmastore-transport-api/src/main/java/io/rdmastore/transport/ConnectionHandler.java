package io.rdmastore.transport;

/**
 * Accepts connections on a {@link Listener}.
 *
 * <p>Threads: called on a transport thread; must not block.
 */
@FunctionalInterface
public interface ConnectionHandler {

    /** A new connection, ready to carry messages; returns the handler for its messages. */
    MessageHandler onConnection(Connection connection);
}
