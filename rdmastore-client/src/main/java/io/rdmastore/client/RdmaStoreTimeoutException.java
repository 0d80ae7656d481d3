package io.rdmastore.client;

/**
 * A call got no reply within its time-out. Only that call fails; the connection stays open and a late reply to the
 * call is discarded. Whether the server applied a timed-out write is unknown.
 */
public final class RdmaStoreTimeoutException extends RdmaStoreException {
    @java.io.Serial
    private static final long serialVersionUID = 1L;

    public RdmaStoreTimeoutException(String message) {
        super(message);
    }
}
