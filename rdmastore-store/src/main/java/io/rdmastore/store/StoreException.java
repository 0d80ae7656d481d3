package io.rdmastore.store;

/**
 * Base of every error the store reports. The message is meant for the client as is (Redis-style where Redis has a
 * message). An operation that throws has changed nothing. Immutable; any thread.
 */
public class StoreException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** An error with a client-facing message. */
    public StoreException(String message) {
        super(message);
    }

    /** An error with a client-facing message and the cause (usually an {@link java.io.IOException}). */
    public StoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
