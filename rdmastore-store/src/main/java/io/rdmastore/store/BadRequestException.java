package io.rdmastore.store;

/**
 * A malformed request: an unknown filter or update operator (named in the message), a filter or update of the wrong
 * shape, an update that would change {@code _id}, a duplicate {@code _id}, a bad argument. Immutable; any thread.
 */
public final class BadRequestException extends StoreException {
    private static final long serialVersionUID = 1L;

    /** An error whose message says what was wrong. */
    public BadRequestException(String message) {
        super(message);
    }
}
