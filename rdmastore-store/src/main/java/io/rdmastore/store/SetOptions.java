package io.rdmastore.store;

/**
 * Options of {@link Store#set(byte[], byte[], SetOptions)}, mirroring Redis SET's NX / XX / GET / KEEPTTL / PXAT.
 * Mutable and not thread-safe: a server thread may keep one instance, {@link #reset()} it and fill it per request;
 * the store reads it only during the call and keeps no reference.
 */
public final class SetOptions {
    private boolean ifAbsent;
    private boolean ifPresent;
    private boolean returnOld;
    private boolean keepTtl;
    private long expireAtMillis = -1;

    /** New options with everything off (a plain SET that clears any TTL). */
    public SetOptions() {
    }

    /** Clears every option; returns this. */
    public SetOptions reset() {
        ifAbsent = false;
        ifPresent = false;
        returnOld = false;
        keepTtl = false;
        expireAtMillis = -1;
        return this;
    }

    /** NX: write only if the key does not exist. */
    public SetOptions ifAbsent(boolean on) {
        ifAbsent = on;
        return this;
    }

    /** XX: write only if the key exists. */
    public SetOptions ifPresent(boolean on) {
        ifPresent = on;
        return this;
    }

    /** GET: return the old string value (the key must hold a string or nothing). */
    public SetOptions returnOld(boolean on) {
        returnOld = on;
        return this;
    }

    /** KEEPTTL: keep the key's current expiry instead of clearing it. */
    public SetOptions keepTtl(boolean on) {
        keepTtl = on;
        return this;
    }

    /** PXAT: expire at this epoch time in milliseconds; -1 for no expiry (the default). */
    public SetOptions expireAtMillis(long epochMillis) {
        expireAtMillis = epochMillis;
        return this;
    }

    /** NX was asked for. */
    public boolean ifAbsent() {
        return ifAbsent;
    }

    /** XX was asked for. */
    public boolean ifPresent() {
        return ifPresent;
    }

    /** GET was asked for. */
    public boolean returnOld() {
        return returnOld;
    }

    /** KEEPTTL was asked for. */
    public boolean keepTtl() {
        return keepTtl;
    }

    /** Absolute expiry in epoch milliseconds, or -1. */
    public long expireAtMillis() {
        return expireAtMillis;
    }

    /** Throws {@link BadRequestException} for contradictory options (Redis: "syntax error"). */
    void validate() {
        if (ifAbsent && ifPresent) {
            throw new BadRequestException("syntax error: NX and XX are mutually exclusive");
        }
        if (keepTtl && expireAtMillis != -1) {
            throw new BadRequestException("syntax error: KEEPTTL and an expiry are mutually exclusive");
        }
        if (expireAtMillis != -1 && expireAtMillis <= 0) {
            throw new BadRequestException("invalid expire time in 'set' command");
        }
    }
}
