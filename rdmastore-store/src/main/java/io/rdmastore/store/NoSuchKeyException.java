package io.rdmastore.store;

/** An operation that needs an existing key (RENAME) found none. Immutable; any thread. */
public final class NoSuchKeyException extends StoreException {
    private static final long serialVersionUID = 1L;
    /** Redis's message. */
    public static final String MESSAGE = "no such key";

    /** The one and only message. */
    public NoSuchKeyException() {
        super(MESSAGE);
    }
}
