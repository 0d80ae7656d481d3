package io.rdmastore.transport.tcp;

import io.rdmastore.transport.RemoteMemory;
import io.rdmastore.transport.TransportException;

import java.nio.ByteBuffer;

/** The peer's region, decoded from its descriptor: region id and length. Immutable; thread-safe. */
record TcpRemoteMemory(int regionId, long length) implements RemoteMemory {

    static TcpRemoteMemory decode(byte[] descriptor) {
        if (descriptor == null || descriptor.length != TcpRegisteredMemory.DESCRIPTOR_LENGTH
            || descriptor[0] != TcpRegisteredMemory.DESCRIPTOR_MAGIC) {
            throw new TransportException("not a tcp memory descriptor: expected "
                + TcpRegisteredMemory.DESCRIPTOR_LENGTH + " bytes starting with 'T', got "
                + (descriptor == null ? "null" : descriptor.length + " bytes"));
        }
        ByteBuffer b = ByteBuffer.wrap(descriptor, 1, descriptor.length - 1);
        int id = b.getInt();
        long length = b.getLong();
        if (length < 0) {
            throw new TransportException("bad tcp memory descriptor: negative length " + length);
        }
        return new TcpRemoteMemory(id, length);
    }
}
