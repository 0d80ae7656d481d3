package io.rdmastore.store;

/** A stored value or an argument is not the number an arithmetic operation needs. Immutable; any thread. */
public final class NotANumberException extends StoreException {
    private static final long serialVersionUID = 1L;
    /** Redis's message for a value that is not a 64-bit integer. */
    public static final String NOT_AN_INTEGER = "value is not an integer or out of range";
    /** Redis's message for a value that is not a float. */
    public static final String NOT_A_FLOAT = "value is not a valid float";
    /** Redis's message when an integer increment overflows 64 bits. */
    public static final String OVERFLOW = "increment or decrement would overflow";
    /** Redis's message when a float increment would give NaN or an infinity. */
    public static final String NAN_OR_INFINITY = "increment would produce NaN or Infinity";

    /** One of the messages above. */
    public NotANumberException(String message) {
        super(message);
    }
}
