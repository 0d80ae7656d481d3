package io.rdmastore.client;

/**
 * A call got no reply within its time-out. Only that call fails; the connection stays open and a late reply to the
 * call is discarded. A timed-out write has {@link #outcomeUnknown()} true (the server may have applied it) and is
 * never retried by the client.
 */
public final class RdmaStoreTimeoutException extends RdmaStoreException {
    @java.io.Serial
    private static final long serialVersionUID = 1L;

    public RdmaStoreTimeoutException(String message) {
        super(message, null, false);
    }

    /** With {@code outcomeUnknown}: whether a write was sent and may have been applied. */
    public RdmaStoreTimeoutException(String message, boolean outcomeUnknown) {
        super(message, null, outcomeUnknown);
    }
}
