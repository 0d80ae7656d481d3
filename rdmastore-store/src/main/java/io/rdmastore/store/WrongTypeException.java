package io.rdmastore.store;

/** An operation for one value type was applied to a key holding another. Immutable; any thread. */
public final class WrongTypeException extends StoreException {
    private static final long serialVersionUID = 1L;
    /** The exact Redis message (the RESP face prefixes nothing: it is already the error code plus text). */
    public static final String MESSAGE = "WRONGTYPE Operation against a key holding the wrong kind of value";

    /** The one and only message. */
    public WrongTypeException() {
        super(MESSAGE);
    }
}
