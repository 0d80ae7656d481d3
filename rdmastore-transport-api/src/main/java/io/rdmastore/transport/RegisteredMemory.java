package io.rdmastore.transport;

import java.lang.foreign.MemorySegment;

/**
 * Local memory registered with a connection's transport so the peer can read or write it one-sided, and that this side
 * can use as the local end of {@link Connection#read} and {@link Connection#write}.
 *
 * <p>Ownership: the segment belongs to whoever registered it; it must stay alive until {@link #close()}. After close,
 * the peer's reads and writes of it fail. Thread-safe.
 */
public interface RegisteredMemory extends AutoCloseable {

    /** The registered memory. */
    MemorySegment segment();

    /** An opaque descriptor (address, length, key) for the peer's {@link Connection#remoteMemory(byte[])}. */
    byte[] descriptor();

    /** Deregisters. Idempotent. */
    @Override
    void close();
}
