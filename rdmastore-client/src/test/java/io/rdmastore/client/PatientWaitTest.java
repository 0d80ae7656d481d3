package io.rdmastore.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * A thread waiting for a large SET's reply keeps polling (yielding) through the rounds where an ordinary waiter parks,
 * so the reply lands on a polling thread instead of costing the server a doorbell and this side two wake-ups
 * (docs/decisions.md, "A large SET's waiter keeps polling").
 */
class PatientWaitTest {
    /** The round where an ordinary waiter stops yielding. */
    private static final int ORDINARY_PARK = firstPark(ClientCore.YIELD_ROUNDS);

    private static int firstPark(int yieldRounds) {
        int i = 0;
        while (ClientCore.phase(i, yieldRounds) != ClientCore.PARK) {
            i++;
        }
        return i;
    }

    @Test
    void anOrdinaryWaitSpinsThenYieldsThenParks() {
        assertEquals(ClientCore.SPIN, ClientCore.phase(0, ClientCore.YIELD_ROUNDS));
        assertEquals(ClientCore.YIELD, ClientCore.phase(ORDINARY_PARK - 1, ClientCore.YIELD_ROUNDS));
        assertEquals(ClientCore.PARK, ClientCore.phase(ORDINARY_PARK, ClientCore.YIELD_ROUNDS));
    }

    @Test
    void aLargeSetsWaiterYieldsWhereAnOrdinaryOneParks() {
        int patience = LargeValues.patience(1 << 20);
        assertEquals(2048, patience, "one round per 512 bytes");
        int yieldRounds = ClientCore.YIELD_ROUNDS + patience;
        assertEquals(ClientCore.YIELD, ClientCore.phase(ORDINARY_PARK, yieldRounds));
        assertEquals(ORDINARY_PARK + patience, firstPark(yieldRounds), "it parks once its patience is spent");
        assertEquals(0, LargeValues.patience(100), "a small value's waiter is an ordinary one");
        assertEquals(32_768, LargeValues.patience(1L << 40), "bounded");
    }

    @Test
    void aPartSizeBelowOnePageIsRaisedToOne() {
        // a part of 0 bytes (-Drdmastore.client.setPart=0) would never finish a copy
        assertEquals(4096, LargeValues.partBytes(0));
        assertEquals(4096, LargeValues.partBytes(-1));
        assertEquals(128 * 1024, LargeValues.partBytes(128 * 1024));
    }
}
