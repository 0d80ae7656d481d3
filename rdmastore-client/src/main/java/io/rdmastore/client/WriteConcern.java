package io.rdmastore.client;

import java.time.Duration;
import java.util.Objects;

/**
 * How many members must hold a write before the call returns: {@link #W1} (the primary's acknowledgement, the
 * default) or {@link #MAJORITY} (the write is followed, pipelined, by a {@code WAIT} for a majority; no extra round
 * trip). Immutable.
 *
 * @param majority whether to wait for a majority of members
 * @param wtimeout how long the server may wait for the majority; null means the call's time-out
 */
public record WriteConcern(boolean majority, Duration wtimeout) {
    /** The primary's acknowledgement only. */
    public static final WriteConcern W1 = new WriteConcern(false, null);
    /** A majority of members, within the call's time-out. */
    public static final WriteConcern MAJORITY = new WriteConcern(true, null);

    public WriteConcern {
        if (wtimeout != null && (wtimeout.isNegative() || wtimeout.isZero())) {
            throw new IllegalArgumentException("wtimeout must be positive: " + wtimeout);
        }
    }

    /** This concern with the server-side wait bounded by {@code value}. */
    public WriteConcern withWtimeout(Duration value) {
        return new WriteConcern(majority, Objects.requireNonNull(value, "wtimeout"));
    }

    /** {@code 1} or {@code majority}, as in the URI's {@code w=}. */
    public static WriteConcern parse(String w) {
        return switch (w) {
            case "1" -> W1;
            case "majority" -> MAJORITY;
            default -> throw new IllegalArgumentException("unknown write concern w='" + w
                + "' (expected 1 or majority)");
        };
    }

    /** The wait's time-out given the call's. */
    Duration wtimeout(Duration callTimeout) {
        return wtimeout != null ? wtimeout : callTimeout;
    }

    @Override
    public String toString() {
        return (majority ? "majority" : "1") + (wtimeout != null ? " (wtimeout " + wtimeout.toMillis() + " ms)" : "");
    }
}
