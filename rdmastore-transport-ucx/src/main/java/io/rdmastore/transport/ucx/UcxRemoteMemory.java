package io.rdmastore.transport.ucx;

import io.rdmastore.transport.RemoteMemory;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpRemoteKey;

import java.nio.ByteBuffer;

/** A peer's registered memory; the remote key is unpacked once per endpoint, on the driver thread. */
final class UcxRemoteMemory implements RemoteMemory {
    private final long address;
    private final long length;
    private final byte[] rkey;
    private UcpEndpoint unpackedFor;
    private UcpRemoteKey key;

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

    /** Driver thread only. */
    UcpRemoteKey key(UcxTransport transport, UcpEndpoint ep) {
        if (unpackedFor != ep) {
            key = ep.unpackRemoteKey(ByteBuffer.allocateDirect(rkey.length).put(rkey).flip());
            transport.track(key);
            unpackedFor = ep;
        }
        return key;
    }

    @Override
    public String toString() {
        return "ucx memory @" + Long.toHexString(address) + " [" + length + " bytes]";
    }
}
