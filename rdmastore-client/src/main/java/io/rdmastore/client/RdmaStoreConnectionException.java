package io.rdmastore.client;

/**
 * The connection could not be made, was refused (wrong password, too many clients), or was lost while the call was in
 * flight. The next call reconnects (in a replica set: to the primary it rediscovers).
 *
 * <p>A write in flight when the connection dropped has {@link #outcomeUnknown()} true: the server may have applied it.
 * The client never retries it; a read, or a write that was never sent, is retried after a failover in a replica set.
 */
public final class RdmaStoreConnectionException extends RdmaStoreException {
    @java.io.Serial
    private static final long serialVersionUID = 1L;

    public RdmaStoreConnectionException(String message) {
        super(message, null, false);
    }

    public RdmaStoreConnectionException(String message, Throwable cause) {
        super(message, cause, false);
    }

    /** With {@code outcomeUnknown}: whether a write was sent and may have been applied. */
    public RdmaStoreConnectionException(String message, Throwable cause, boolean outcomeUnknown) {
        super(message, cause, outcomeUnknown);
    }
}
