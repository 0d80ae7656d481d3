package io.rdmastore.server.replication;

import java.util.Objects;

/**
 * One operation of a client on one key, as seen by that client: when it was invoked, when its reply came and what the
 * reply said. Immutable; any thread may read it.
 *
 * @param client the client (a sequential process) that issued it; informational only
 * @param key the key it read or wrote
 * @param kind read or write
 * @param value for a write the value written, for a read the value read; null means absent (a write of null deletes)
 * @param invokeNanos {@link System#nanoTime()} just before the call
 * @param completeNanos {@link System#nanoTime()} when the reply came or the client gave up; for an
 *     {@link Outcome#UNKNOWN} write the checker treats it as never (the write may take effect at any later time)
 * @param outcome what the client knows about the effect
 */
public record Op(int client, String key, Kind kind, String value, long invokeNanos, long completeNanos,
                 Outcome outcome) {

    /** What an operation does to its key's register. */
    public enum Kind { READ, WRITE }

    /** What the client knows about an operation's effect. */
    public enum Outcome {
        /** It took effect, between its invocation and completion; a read's value is what it returned. */
        OK,
        /** It definitely did not take effect (the server refused it). */
        FAIL,
        /** It may or may not have taken effect (time-out, connection lost); a read's value is meaningless. */
        UNKNOWN
    }

    public Op {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(outcome, "outcome");
        if (completeNanos < invokeNanos) {
            throw new IllegalArgumentException("completes before it is invoked: " + invokeNanos + " > "
                + completeNanos);
        }
    }

    /** A completed read that returned {@code value}. */
    public static Op read(int client, String key, String value, long invokeNanos, long completeNanos) {
        return new Op(client, key, Kind.READ, value, invokeNanos, completeNanos, Outcome.OK);
    }

    /** A write of {@code value} with the given outcome. */
    public static Op write(int client, String key, String value, long invokeNanos, long completeNanos,
                           Outcome outcome) {
        return new Op(client, key, Kind.WRITE, value, invokeNanos, completeNanos, outcome);
    }

    /** An acknowledged write of {@code value}. */
    public static Op write(int client, String key, String value, long invokeNanos, long completeNanos) {
        return write(client, key, value, invokeNanos, completeNanos, Outcome.OK);
    }
}
