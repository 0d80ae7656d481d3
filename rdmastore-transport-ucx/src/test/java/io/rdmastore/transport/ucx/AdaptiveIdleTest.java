package io.rdmastore.transport.ucx;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

class AdaptiveIdleTest {
    @Test
    void theWindowFollowsTheGapsAndShrinksWhenTheAgentSleeps() {
        AdaptiveIdle a = new AdaptiveIdle(20_000, 200_000);
        assertEquals(200_000, a.window(), "starts wide: a new connection's first requests find the agent hot");
        for (int i = 0; i < 10; i++) {
            a.slept();
        }
        assertEquals(20_000, a.window(), "sparse traffic: down to the minimum, never below");
        a.workAfter(30_000);
        assertEquals(60_000, a.window(), "a 30 us gap found while spinning: spin through twice that");
        a.workAfter(5_000);
        assertEquals(60_000, a.window(), "a shorter gap does not narrow it");
        a.workAfter(1_000_000);
        assertEquals(200_000, a.window(), "never past the maximum");
        a.slept();
        assertEquals(100_000, a.window());
    }

    @Test
    void namedStrategies() {
        assertNotNull(IdleStrategies.adaptive("adaptive"));
        assertEquals(20_000, IdleStrategies.adaptive("LIGHT").window());
        assertNull(IdleStrategies.adaptive("backoff"));
        assertNotNull(IdleStrategies.of("backoff"));
        assertThrows(IllegalArgumentException.class, () -> IdleStrategies.of("adaptive"),
            "the adaptive strategies are run by the agent itself, not as an Agrona strategy");
        assertThrows(IllegalArgumentException.class, () -> new AdaptiveIdle(0, 10));
        assertThrows(IllegalArgumentException.class,
            () -> new UcxTransport.Context().idleStrategy("sometimes").conclude());
    }
}
