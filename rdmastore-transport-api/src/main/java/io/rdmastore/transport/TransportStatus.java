package io.rdmastore.transport;

/**
 * Status codes returned by hot-path calls instead of exceptions. A non-negative value is success.
 */
public final class TransportStatus {
    /** The message was accepted. */
    public static final int OK = 0;
    /** No room now (no ring credit, send queue full): retry later, nothing was written. */
    public static final int BACK_PRESSURED = -1;
    /** The connection is still being set up. */
    public static final int NOT_CONNECTED = -2;
    /** The connection is closed; it will never accept another message. */
    public static final int CLOSED = -3;
    /** The message is larger than {@link Connection#maxMessageLength()}. */
    public static final int TOO_LARGE = -4;

    private TransportStatus() {
    }

    /** A human readable name for a status code. */
    public static String describe(int status) {
        return switch (status) {
            case OK -> "OK";
            case BACK_PRESSURED -> "BACK_PRESSURED";
            case NOT_CONNECTED -> "NOT_CONNECTED";
            case CLOSED -> "CLOSED";
            case TOO_LARGE -> "TOO_LARGE";
            default -> status >= 0 ? "OK(" + status + ")" : "UNKNOWN(" + status + ")";
        };
    }
}
