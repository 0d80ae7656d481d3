package io.rdmastore.client;

/**
 * The connection could not be made, was refused (wrong password, too many clients), or was lost while the call was in
 * flight. Calls in flight at a disconnect fail with this; whether the server applied their writes is unknown. The next
 * call reconnects.
 */
public final class RdmaStoreConnectionException extends RdmaStoreException {
    @java.io.Serial
    private static final long serialVersionUID = 1L;

    public RdmaStoreConnectionException(String message) {
        super(message);
    }

    public RdmaStoreConnectionException(String message, Throwable cause) {
        super(message, cause);
    }
}
