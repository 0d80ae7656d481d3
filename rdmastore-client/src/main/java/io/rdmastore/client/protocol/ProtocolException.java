package io.rdmastore.client.protocol;

/**
 * A message that does not follow the native protocol's layout: truncated, an impossible length, trailing bytes. Thrown
 * by {@link WireReader}; the receiver turns it into an {@code ERR} reply (server) or a failed call (client). Malformed
 * input is rare, so an exception here costs nothing on the hot path.
 */
public final class ProtocolException extends RuntimeException {
    @java.io.Serial
    private static final long serialVersionUID = 1L;

    public ProtocolException(String message) {
        super(message);
    }
}
