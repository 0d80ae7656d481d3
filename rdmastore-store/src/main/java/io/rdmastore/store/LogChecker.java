package io.rdmastore.store;

import java.nio.file.Path;

/**
 * Offline check and repair of a data directory for the CLI's {@code check-log} command. Must not run while a
 * {@link Store} has the directory open. Stateless; any thread.
 */
public final class LogChecker {
    private LogChecker() {
    }

    /** Reads every segment and snapshot and reports the first damaged record of each; changes nothing. */
    public static LogCheckReport check(Path dataDir) {
        throw new UnsupportedOperationException("not implemented yet");
    }

    /** Like {@link #check}, then truncates every damaged file at its first bad record after copying it aside. */
    public static LogCheckReport repair(Path dataDir) {
        throw new UnsupportedOperationException("not implemented yet");
    }
}
