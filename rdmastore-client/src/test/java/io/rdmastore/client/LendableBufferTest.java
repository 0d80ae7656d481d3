package io.rdmastore.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

import org.junit.jupiter.api.Test;

/** Which direct buffers a large SET lends as they are: those the client gave out, and their parts. */
class LendableBufferTest {
    @Test
    void theClientsBuffersAndTheirPartsAreLendableOthersAreNot() {
        ByteBuffer b = RdmaStoreClient.allocateLendable(1 << 20);
        assertEquals(1 << 20, b.capacity());
        assertTrue(b.isDirect());
        assertTrue(LargeValues.inHugePages(MemorySegment.ofBuffer(b)));
        assertTrue(LargeValues.inHugePages(MemorySegment.ofBuffer(b.position(100).limit(5000))), "a part of it");
        assertTrue(LargeValues.inHugePages(MemorySegment.ofBuffer(b.clear().slice(4096, 8192))), "a slice");
        assertFalse(LargeValues.inHugePages(MemorySegment.ofBuffer(ByteBuffer.allocateDirect(1 << 20))));
        // a range that runs past the buffer's end is not within it
        MemorySegment whole = MemorySegment.ofBuffer(b.clear());
        assertFalse(LargeValues.inHugePages(MemorySegment.ofAddress(whole.address()).reinterpret((1 << 20) + 1)));
        assertThrows(IllegalArgumentException.class, () -> RdmaStoreClient.allocateLendable(-1));
    }
}
