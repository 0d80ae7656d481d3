package io.rdmastore.client;

import java.time.Duration;

/**
 * Options of SET: a time to live and the NX (only if absent) / XX (only if present) conditions. Immutable.
 *
 * @param ttlMillis time to live in milliseconds; 0 for none
 * @param ifAbsent NX: set only when the key does not exist
 * @param ifPresent XX: set only when the key exists
 */
public record SetOptions(long ttlMillis, boolean ifAbsent, boolean ifPresent) {
    /** No TTL, no condition. */
    public static final SetOptions NONE = new SetOptions(0, false, false);

    public SetOptions {
        if (ttlMillis < 0) {
            throw new IllegalArgumentException("ttl must not be negative: " + ttlMillis + " ms");
        }
        if (ifAbsent && ifPresent) {
            throw new IllegalArgumentException("NX and XX exclude each other");
        }
    }

    public static SetOptions ttl(Duration ttl) {
        return NONE.withTtl(ttl);
    }

    public static SetOptions nx() {
        return new SetOptions(0, true, false);
    }

    public static SetOptions xx() {
        return new SetOptions(0, false, true);
    }

    public SetOptions withTtl(Duration ttl) {
        long ms = ttl.toMillis();
        if (ms <= 0) {
            throw new IllegalArgumentException("ttl must be at least 1 ms: " + ttl);
        }
        return new SetOptions(ms, ifAbsent, ifPresent);
    }
}
