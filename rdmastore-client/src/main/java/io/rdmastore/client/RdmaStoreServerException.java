package io.rdmastore.client;

/**
 * The server answered with an error. {@link #code()} is the first word of the message, as in Redis: {@code ERR},
 * {@code WRONGTYPE}, {@code NOAUTH}, ... (docs/protocol.md lists them). The connection stays usable.
 */
public final class RdmaStoreServerException extends RdmaStoreException {
    @java.io.Serial
    private static final long serialVersionUID = 1L;

    private final String code;

    public RdmaStoreServerException(String message) {
        super(message);
        int space = message.indexOf(' ');
        this.code = space > 0 ? message.substring(0, space) : message;
    }

    /** The error code: the first word of the server's message. */
    public String code() {
        return code;
    }
}
