package io.rdmastore.transport;

/** Checks a client's credentials in HELLO before any transport detail (worker address, rkey) leaves the server. */
@FunctionalInterface
public interface Authenticator {
    /** Accepts everyone. */
    Authenticator NONE = credentials -> null;

    /** Returns null to accept, or the reason to refuse. Called on a transport thread; must not block. */
    String authenticate(byte[] credentials);
}
