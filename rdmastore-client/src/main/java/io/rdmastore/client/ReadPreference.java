package io.rdmastore.client;

import java.util.Locale;

/** Which member serves reads in a replica set; writes always go to the primary. */
public enum ReadPreference {
    /** Reads go to the primary (the default). */
    PRIMARY,
    /** Reads go to a secondary; they fail when none can be reached. They may return stale values. */
    SECONDARY,
    /** Reads go to a secondary, or to the primary when none can be reached. */
    SECONDARY_PREFERRED;

    /** {@code primary}, {@code secondary} or {@code secondaryPreferred}, as in the URI. */
    public static ReadPreference parse(String value) {
        return switch (value.toLowerCase(Locale.ROOT)) {
            case "primary" -> PRIMARY;
            case "secondary" -> SECONDARY;
            case "secondarypreferred" -> SECONDARY_PREFERRED;
            default -> throw new IllegalArgumentException("unknown readPreference '" + value
                + "' (expected primary, secondary or secondaryPreferred)");
        };
    }

    /** The URI spelling. */
    public String uriName() {
        return switch (this) {
            case PRIMARY -> "primary";
            case SECONDARY -> "secondary";
            case SECONDARY_PREFERRED -> "secondaryPreferred";
        };
    }
}
