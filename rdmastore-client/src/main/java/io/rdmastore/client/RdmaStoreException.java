package io.rdmastore.client;

/** The base of every failure the client reports; unchecked, so sync calls read like local calls. */
public class RdmaStoreException extends RuntimeException {
    @java.io.Serial
    private static final long serialVersionUID = 1L;

    public RdmaStoreException(String message) {
        super(message);
    }

    public RdmaStoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
