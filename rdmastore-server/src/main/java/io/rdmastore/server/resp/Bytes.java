package io.rdmastore.server.resp;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A key or channel name with value semantics, for the face's maps (watched keys, blocked keys, channels). Owns its
 * array: the caller must not change it afterwards. Immutable; any thread.
 */
final class Bytes {
    final byte[] b;
    private final int hash;

    Bytes(byte[] b) {
        this.b = b;
        this.hash = Arrays.hashCode(b);
    }

    @Override
    public int hashCode() {
        return hash;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Bytes x && x.hash == hash && Arrays.equals(x.b, b);
    }

    @Override
    public String toString() {
        return new String(b, StandardCharsets.UTF_8);
    }
}
