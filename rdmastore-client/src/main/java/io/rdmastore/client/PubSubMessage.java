package io.rdmastore.client;

import java.nio.charset.StandardCharsets;

/**
 * One published message: the channel it was published to, its payload and, for a pattern subscription, the pattern
 * that matched (else null). The arrays are the receiver's.
 *
 * <p>Threads: immutable apart from the arrays' content.
 */
public record PubSubMessage(byte[] channel, byte[] message, byte[] pattern) {
    public String channelString() {
        return new String(channel, StandardCharsets.UTF_8);
    }

    public String messageString() {
        return new String(message, StandardCharsets.UTF_8);
    }

    /** The matching pattern as text, or null for a channel subscription. */
    public String patternString() {
        return pattern == null ? null : new String(pattern, StandardCharsets.UTF_8);
    }
}
