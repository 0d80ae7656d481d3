package io.rdmastore.transport.ucx;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DoorbellTest {
    @Test
    @Timeout(20)
    void aPeerRingsOnlyWhileTheSleeperSaysItIsAsleep() {
        try (Doorbell sleeper = Doorbell.open(); Doorbell sender = Doorbell.open()) {
            assertNotNull(sleeper, "memfd and abstract Unix datagram sockets are available on Linux");
            assertNotNull(sender);
            Doorbell.Remote bell = sender.connect(ProcessHandle.current().pid(), sleeper.address());
            assertNotNull(bell, "the sleeper's flag maps from /proc/<pid>/fd");
            bell.ringIfAsleep();
            assertEquals(0, sender.ringsSent.get(), "awake: no ring");
            assertFalse(sleeper.sleep(20), "nothing rang: the sleep times out");
            sleeper.asleep(true);
            bell.ringIfAsleep();
            assertEquals(1, sender.ringsSent.get());
            assertTrue(sleeper.sleep(5_000), "the ring ends the sleep");
            assertFalse(sleeper.sleep(20), "the ring was drained");
            sleeper.ringSelf();
            assertTrue(sleeper.sleep(5_000), "a ring of its own wakes it too");
        }
    }

    @Test
    void aMalformedOrForeignAddressGivesNoDoorbell() {
        try (Doorbell d = Doorbell.open()) {
            assertNotNull(d);
            assertNull(d.connect(ProcessHandle.current().pid(), new byte[] {0, 0, 0, 99, 3, 'a', 'b', 'c'}),
                "fd 99 is not a 64-byte flag file");
            assertNull(d.connect(ProcessHandle.current().pid(), new byte[] {1}));
            assertNull(d.connect(-1, d.address()));
        }
    }
}
