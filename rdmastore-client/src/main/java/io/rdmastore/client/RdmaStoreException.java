package io.rdmastore.client;

/**
 * The base of every failure the client reports; unchecked, so sync calls read like local calls.
 *
 * <p>{@link #outcomeUnknown()} tells whether the failed call may have changed what is stored: true for a write whose
 * request was sent and whose fate the client cannot know (connection lost or time-out after sending, write concern
 * not confirmed). The client never retries such a write by itself; whether it is safe to repeat is the caller's
 * decision (an idempotent SET is, an INCRBY is not).
 */
public class RdmaStoreException extends RuntimeException {
    @java.io.Serial
    private static final long serialVersionUID = 1L;

    private final boolean outcomeUnknown;

    public RdmaStoreException(String message) {
        this(message, null, false);
    }

    public RdmaStoreException(String message, Throwable cause) {
        this(message, cause, false);
    }

    protected RdmaStoreException(String message, Throwable cause, boolean outcomeUnknown) {
        super(message, cause);
        this.outcomeUnknown = outcomeUnknown;
    }

    /**
     * True when the call was a write that may or may not have been applied (sent, then the connection dropped or the
     * call timed out; or applied on the primary without the write concern's confirmation). False when nothing was
     * changed by this call: reads, refusals, writes that were never sent or were refused ({@code NOTPRIMARY}).
     */
    public boolean outcomeUnknown() {
        return outcomeUnknown;
    }
}
