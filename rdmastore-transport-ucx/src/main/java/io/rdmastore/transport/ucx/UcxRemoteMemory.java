package io.rdmastore.transport.ucx;

import io.rdmastore.transport.RemoteMemory;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpRemoteKey;

import java.nio.ByteBuffer;

/**
 * A peer's registered memory. Its remote key is unpacked on the driver thread when an operation on it starts
 * ({@link #acquire}) and destroyed when the last one in flight ends ({@link #release}): a server reads a descriptor per
 * request, and a key kept until the worker closes would hold its native memory (over shared memory, a mapping of the
 * peer's segment) for every request ever served.
 */
final class UcxRemoteMemory implements RemoteMemory {
    private final long address;
    private final long length;
    private final byte[] rkey;
    /** Driver only, as the two below. */
    private UcpEndpoint unpackedFor;
    private UcpRemoteKey key;
    private int inFlight;

    private UcxRemoteMemory(long address, long length, byte[] rkey) {
        this.address = address;
        this.length = length;
        this.rkey = rkey;
    }

    static UcxRemoteMemory parse(byte[] descriptor) {
        if (descriptor == null || descriptor.length < 17) {
            throw new IllegalArgumentException("not a ucx memory descriptor");
        }
        ByteBuffer b = ByteBuffer.wrap(descriptor);
        long address = b.getLong();
        long length = b.getLong();
        if (length < 0) {
            throw new IllegalArgumentException("negative length in memory descriptor");
        }
        byte[] rkey = new byte[b.remaining()];
        b.get(rkey);
        return new UcxRemoteMemory(address, length, rkey);
    }

    long address() {
        return address;
    }

    @Override
    public long length() {
        return length;
    }

    /** Driver thread only: the key for an operation on {@code ep} about to start; {@link #release} when it ends. */
    UcpRemoteKey acquire(UcxTransport transport, UcpEndpoint ep) {
        if (unpackedFor != ep) {
            // (a key another endpoint still has operations with is left to the worker, which destroys it at close)
            inFlight = 0;
            key = ep.unpackRemoteKey(ByteBuffer.allocateDirect(rkey.length).put(rkey).flip());
            transport.track(key);
            unpackedFor = ep;
        }
        inFlight++;
        return key;
    }

    /** Driver thread only: an operation from {@link #acquire} ended; the last one destroys the key. */
    void release(UcxTransport transport, UcpRemoteKey used) {
        if (used != key) {
            // unpacked for an earlier endpoint: left to the worker's close
            return;
        }
        if (--inFlight == 0) {
            transport.untrack(key);
            key = null;
            unpackedFor = null;
        }
    }

    @Override
    public String toString() {
        return "ucx memory @" + Long.toHexString(address) + " [" + length + " bytes]";
    }
}
