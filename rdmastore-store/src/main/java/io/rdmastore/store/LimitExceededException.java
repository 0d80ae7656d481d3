package io.rdmastore.store;

/** A key, value, document or string offset is larger than the configured limit. Immutable; any thread. */
public final class LimitExceededException extends StoreException {
    private static final long serialVersionUID = 1L;

    /** An error whose message names the limit and the size seen. */
    public LimitExceededException(String message) {
        super(message);
    }
}
