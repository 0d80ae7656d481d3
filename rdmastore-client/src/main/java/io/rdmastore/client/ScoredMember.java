package io.rdmastore.client;

import java.nio.charset.StandardCharsets;

/**
 * A sorted set's member with its score, as ZRANGE ... WITHSCORES, ZPOPMIN and ZPOPMAX return them. The array is the
 * caller's.
 *
 * <p>Threads: immutable apart from the array's content.
 */
public record ScoredMember(byte[] member, double score) {
    /** The member as UTF-8 text. */
    public String memberString() {
        return new String(member, StandardCharsets.UTF_8);
    }

    @Override
    public String toString() {
        return memberString() + "=" + score;
    }
}
