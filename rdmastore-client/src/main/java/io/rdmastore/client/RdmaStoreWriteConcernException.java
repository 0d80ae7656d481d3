package io.rdmastore.client;

/**
 * A write was applied on the primary but its write concern was not confirmed: the WAIT sent after it answered
 * {@code TIMEOUT} (not on a majority within {@code wtimeout}), or {@code NOTPRIMARY} (the primary stepped down), or
 * its connection dropped before the WAIT's reply. The write may still reach a majority, or may be rolled back by the
 * next primary, so {@link #outcomeUnknown()} is true; the client does not retry it.
 */
public final class RdmaStoreWriteConcernException extends RdmaStoreException {
    @java.io.Serial
    private static final long serialVersionUID = 1L;

    public RdmaStoreWriteConcernException(String message, Throwable cause) {
        super(message, cause, true);
    }
}
