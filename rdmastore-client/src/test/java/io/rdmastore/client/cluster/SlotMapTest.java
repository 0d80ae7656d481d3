package io.rdmastore.client.cluster;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SlotMapTest {
    @Test
    void evenRangesAsRedisCli() {
        assertEquals(List.of(new SlotMap.Range(0, 5460), new SlotMap.Range(5461, 10922),
            new SlotMap.Range(10923, 16383)), SlotMap.evenRanges(3));
        assertEquals(List.of(new SlotMap.Range(0, 16383)), SlotMap.evenRanges(1));
        int total = 0;
        for (SlotMap.Range r : SlotMap.evenRanges(7)) {
            total += r.count();
        }
        assertEquals(HashSlot.SLOTS, total);
    }

    @Test
    void textRoundTripAndOwners() {
        String text = """
            epoch 3
            shard rs0 0-5460 n1=10.0.0.1:7379,n2=10.0.0.2:7380
            shard rs1 5461-10922,12000 n4=10.0.0.4:7379
            shard rs2 - n5=h5:1
            """;
        SlotMap m = SlotMap.parse(text);
        assertEquals(3, m.epoch());
        assertEquals("rs0", m.owner(0).name());
        assertEquals("rs1", m.owner(12000).name());
        assertNull(m.owner(11000));
        assertEquals(5461 + 5462 + 1, m.assignedSlots());
        assertEquals("10.0.0.1:7379", m.owner(5460).first().address());
        assertEquals("rs1", m.shardOfNode("n4").name());
        assertEquals(m, SlotMap.parse(m.encode()));
        assertEquals(text, m.encode());
        assertTrue(m.shard("rs2").ranges().isEmpty());
    }

    @Test
    void refusesOverlapsDuplicatesAndJunk() {
        assertThrows(IllegalArgumentException.class, () -> SlotMap.parse("epoch 1\nshard a 0-10 n1=h:1\nshard b 10 n2=h:2\n"));
        assertThrows(IllegalArgumentException.class, () -> SlotMap.parse("epoch 1\nshard a 0 n1=h:1\nshard a 1 n2=h:2\n"));
        assertThrows(IllegalArgumentException.class, () -> SlotMap.parse("epoch 1\nshard a 0 n1=h:1\nshard b 1 n1=h:2\n"));
        assertThrows(IllegalArgumentException.class, () -> SlotMap.parse("shard a 0 n1=h:1\n"));
        assertThrows(IllegalArgumentException.class, () -> SlotMap.parse("epoch 1\nshard a 0-16384 n1=h:1\n"));
        assertThrows(IllegalArgumentException.class, () -> SlotMap.parse("epoch 1\nshard a 0 n1=h\n"));
        assertThrows(IllegalArgumentException.class, () -> SlotMap.parse("epoch x\n"));
    }
}
