package io.rdmastore.store;

/**
 * What {@link Store#set(byte[], byte[], SetOptions)} did. Immutable; any thread. {@code oldValue} is a fresh heap
 * copy owned by the caller.
 *
 * @param written  whether the value was written (false when NX or XX stopped it)
 * @param oldValue the previous string value when GET was asked for and the key held one, else null
 */
public record SetResult(boolean written, byte[] oldValue) {
    /** A write without GET. */
    public static final SetResult WRITTEN = new SetResult(true, null);
    /** A refused write without GET. */
    public static final SetResult NOT_WRITTEN = new SetResult(false, null);
}
