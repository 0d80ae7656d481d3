package io.rdmastore.transport;

/** A peer's registered memory, decoded from its descriptor. Immutable; thread-safe. */
public interface RemoteMemory {

    /** Length in bytes. */
    long length();
}
