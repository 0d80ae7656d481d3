package io.rdmastore.cli;

/**
 * A user's mistake or an environment problem the user can fix (bad argument, unreadable file, server not reachable):
 * printed as one line without a stack trace. Immutable; any thread.
 */
public final class UserException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public UserException(String message) {
        super(message);
    }

    public UserException(String message, Throwable cause) {
        super(message, cause);
    }
}
