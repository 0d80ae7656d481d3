package io.rdmastore.client.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class WireTest {

    @Test
    void roundTripsEveryPrimitive() {
        WireWriter w = new WireWriter(8);
        w.header(ProtocolDescriptor.SET, 42).u8(3).i64(-7).bytes("key".getBytes(StandardCharsets.UTF_8))
            .nullableBytes(null).string("ü").i32(0).raw(new byte[] {9, 9});
        w.i32At(w.position() - 6, 77);
        MemorySegment m = MemorySegment.ofArray(w.toByteArray());
        WireReader r = new WireReader().wrap(m, 0);
        assertEquals(ProtocolDescriptor.SET, r.u8("op"));
        assertEquals(42, r.i64("id"));
        assertEquals(3, r.u8("flags"));
        assertEquals(-7, r.i64("ttl"));
        assertArrayEquals("key".getBytes(StandardCharsets.UTF_8), r.bytes("key", 10));
        assertNull(r.nullableBytes("v", 10));
        assertEquals("ü", r.string("s", 10));
        assertEquals(77, r.i32("patched"));
        assertArrayEquals(new byte[] {9, 9}, r.rest());
        r.end();
    }

    @Test
    void writerGrowsAndShrinksBack() {
        WireWriter w = new WireWriter(16);
        w.reset().raw(new byte[3 << 20]);
        assertEquals(3 << 20, w.position());
        w.reset().u8(1);
        assertEquals(1, w.message().byteSize());
    }

    @Test
    void truncatedAndOversizeInputFailClearly() {
        WireWriter w = new WireWriter(16).i32(100).raw(new byte[10]);
        WireReader r = new WireReader().wrap(w.message(), 0);
        ProtocolException e = assertThrows(ProtocolException.class, () -> r.bytes("key", 1000));
        assertTrue(e.getMessage().contains("truncated"), e.getMessage());

        WireReader big = new WireReader().wrap(new WireWriter(16).i32(10).raw(new byte[10]).message(), 0);
        WireReader.LimitException l = assertThrows(WireReader.LimitException.class, () -> big.bytes("key", 5));
        assertEquals("key of 10 bytes exceeds limit of 5 bytes", l.getMessage());

        WireReader neg = new WireReader().wrap(new WireWriter(16).i32(-5).message(), 0);
        assertTrue(assertThrows(ProtocolException.class, () -> neg.bytes("key", 5)).getMessage().contains("negative"));

        WireReader trailing = new WireReader().wrap(new WireWriter(16).u8(1).u8(2).message(), 0);
        trailing.u8("a");
        assertTrue(assertThrows(ProtocolException.class, trailing::end).getMessage().contains("trailing"));
    }

    @Test
    void opcodeNames() {
        assertEquals("GET", ProtocolDescriptor.opcodeName(ProtocolDescriptor.GET));
        assertEquals("SNAPSHOT", ProtocolDescriptor.opcodeName(ProtocolDescriptor.SNAPSHOT));
        assertEquals("0xfe", ProtocolDescriptor.opcodeName(0xFE));
        assertEquals("COMMAND", ProtocolDescriptor.opcodeName(ProtocolDescriptor.COMMAND));
        assertEquals("TRANSACTION", ProtocolDescriptor.opcodeName(ProtocolDescriptor.TRANSACTION));
        assertEquals("PUNSUBSCRIBE", ProtocolDescriptor.opcodeName(ProtocolDescriptor.PUNSUBSCRIBE));
        assertEquals("CLUSTER_MAP", ProtocolDescriptor.opcodeName(ProtocolDescriptor.CLUSTER_MAP));
        assertEquals("MIGRATE_PULL", ProtocolDescriptor.opcodeName(ProtocolDescriptor.MIGRATE_PULL));
        assertEquals("GET_LARGE", ProtocolDescriptor.opcodeName(ProtocolDescriptor.GET_LARGE));
        assertEquals("VALUE_RELEASE", ProtocolDescriptor.opcodeName(ProtocolDescriptor.VALUE_RELEASE));
        assertEquals("SET_LARGE", ProtocolDescriptor.opcodeName(ProtocolDescriptor.SET_LARGE));
        assertEquals("DOC_INDEX", ProtocolDescriptor.opcodeName(ProtocolDescriptor.DOC_INDEX));
        assertEquals("DOC_INDEXES", ProtocolDescriptor.opcodeName(ProtocolDescriptor.DOC_INDEXES));
        assertEquals("0x38", ProtocolDescriptor.opcodeName(56));
    }
}
