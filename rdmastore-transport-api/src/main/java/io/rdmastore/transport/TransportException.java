package io.rdmastore.transport;

import java.io.Serial;

/** A transport failure outside the hot path: set-up, time-out, closed connection, bad peer. */
public class TransportException extends RuntimeException {
    @Serial
    private static final long serialVersionUID = 1L;

    public TransportException(String message) {
        super(message);
    }

    public TransportException(String message, Throwable cause) {
        super(message, cause);
    }
}
