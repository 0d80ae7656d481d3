package io.rdmastore.transport;

import java.lang.foreign.MemorySegment;

/**
 * Receives a connection's messages.
 *
 * <p>Threads: called on the transport's thread, never concurrently for one connection. A handler must not block: it
 * may {@link Connection#offer(MemorySegment) offer} replies, hand work to other threads, or copy the message.
 */
public interface MessageHandler {

    /**
     * One whole message. {@code message} is valid only during this call: the transport reuses its memory afterwards,
     * so a handler that keeps data copies it.
     */
    void onMessage(Connection connection, MemorySegment message);

    /** The connection closed; {@code cause} is null for an orderly close. Called once. */
    default void onClose(Connection connection, Throwable cause) {
    }
}
