package io.rdmastore.store;

import java.util.Arrays;

/**
 * A binary key or hash field with value semantics. Owns its array (always a private copy). Immutable; any thread.
 */
final class Key {
    final byte[] bytes;
    private final int hash;

    private Key(byte[] bytes) {
        this.bytes = bytes;
        int h = Arrays.hashCode(bytes);
        // Spread the bits so that the low bits used to pick a shard depend on every byte.
        h ^= h >>> 16;
        h *= 0x85ebca6b;
        h ^= h >>> 13;
        this.hash = h;
    }

    /** A key holding a private copy of {@code bytes}. */
    static Key copyOf(byte[] bytes) {
        return new Key(bytes.clone());
    }

    /** A key that takes ownership of {@code bytes}: the caller must not change the array afterwards. */
    static Key wrap(byte[] bytes) {
        return new Key(bytes);
    }

    @Override
    public int hashCode() {
        return hash;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Key k && k.hash == hash && Arrays.equals(k.bytes, bytes);
    }

    @Override
    public String toString() {
        return new String(bytes, java.nio.charset.StandardCharsets.ISO_8859_1);
    }
}
