package io.rdmastore.client;

import java.util.Locale;

/** What a read may return. */
public enum ReadConcern {
    /** The serving member's current value (the default); after a failover it may be one a new primary rolled back. */
    LOCAL,
    /**
     * A value no older than any write acknowledged before the read started: each read is followed, pipelined, by a
     * {@code READ_FENCE} and its value is returned only once a majority confirmed the member is still the primary.
     * Needs readPreference=primary.
     */
    LINEARIZABLE;

    /** {@code local} or {@code linearizable}, as in the URI. */
    public static ReadConcern parse(String value) {
        return switch (value.toLowerCase(Locale.ROOT)) {
            case "local" -> LOCAL;
            case "linearizable" -> LINEARIZABLE;
            default -> throw new IllegalArgumentException("unknown readConcern '" + value
                + "' (expected local or linearizable)");
        };
    }
}
