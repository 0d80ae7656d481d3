package io.rdmastore.client;

/**
 * ZADD's conditions: {@code NX} (only add new members), {@code XX} (only update existing ones), {@code GT} / {@code LT}
 * (only update when the new score is greater / less) and {@code CH} (count changed members, not only added ones).
 * {@code ZAddOptions.NONE.xx().gt().ch()}; the server refuses the combinations Redis refuses (NX with XX, GT or LT).
 *
 * <p>Threads: immutable; any thread.
 */
public record ZAddOptions(boolean onlyNew, boolean onlyExisting, boolean onlyGreater, boolean onlyLess,
                          boolean countChanged) {
    /** Plain ZADD: adds new members and updates the scores of existing ones; returns how many were added. */
    public static final ZAddOptions NONE = new ZAddOptions(false, false, false, false, false);

    /** NX: only add new members. */
    public ZAddOptions nx() {
        return new ZAddOptions(true, onlyExisting, onlyGreater, onlyLess, countChanged);
    }

    /** XX: only update members that exist. */
    public ZAddOptions xx() {
        return new ZAddOptions(onlyNew, true, onlyGreater, onlyLess, countChanged);
    }

    /** GT: only update a score to a greater one. */
    public ZAddOptions gt() {
        return new ZAddOptions(onlyNew, onlyExisting, true, onlyLess, countChanged);
    }

    /** LT: only update a score to a smaller one. */
    public ZAddOptions lt() {
        return new ZAddOptions(onlyNew, onlyExisting, onlyGreater, true, countChanged);
    }

    /** CH: return the number of members added or changed. */
    public ZAddOptions ch() {
        return new ZAddOptions(onlyNew, onlyExisting, onlyGreater, onlyLess, true);
    }
}
