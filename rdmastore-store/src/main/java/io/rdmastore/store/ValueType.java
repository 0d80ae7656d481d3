package io.rdmastore.store;

/**
 * The kind of value a key holds, as reported by {@link Store#type(byte[])}. Documents live in collections, not in the
 * keyspace, so they have no value type. Immutable; any thread.
 */
public enum ValueType {
    /** The key does not exist (or has expired). */
    NONE("none"),
    /** A byte string. */
    STRING("string"),
    /** A map of byte-string fields to byte-string values. */
    HASH("hash"),
    /** A set of distinct byte strings. */
    SET("set"),
    /** A sequence of byte strings. */
    LIST("list"),
    /** A set of distinct byte strings ordered by a score (a double). */
    ZSET("zset");

    private final String redisName;

    ValueType(String redisName) {
        this.redisName = redisName;
    }

    /** The name Redis's TYPE command answers with: {@code none}, {@code string}, {@code hash}, {@code set}, {@code list}, {@code zset}. */
    public String redisName() {
        return redisName;
    }
}
