package io.rdmastore.transport.ucx;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The selection reason says what UCX will really use on one host. */
class UcxReasonTest {
    private static UcxTransport ucx(String tls) {
        return new UcxTransport(new UcxTransport.Context().tls(tls).invoker(true).memoryBudget(1 << 20)
            .maxConnections(1).ringCapacity(64 << 10));
    }

    @Test
    @Timeout(30)
    void sharedMemoryOnlyWhenAllowed() {
        try (UcxTransport shm = ucx(UcxTckNetworks.SHM_TLS); UcxTransport tcp = ucx(UcxTckNetworks.TCP_TLS)) {
            assertTrue(shm.isAvailable(), () -> "UCX required: " + shm.unavailabilityCause());
            String viaShm = shm.assess(tcp.capability()).reason();
            String viaTcp = tcp.assess(shm.capability()).reason();
            assertTrue(viaShm.contains("through shared memory"), viaShm);
            assertTrue(viaTcp.contains("excludes shared memory"), viaTcp);
            assertFalse(viaTcp.contains("through shared memory"), viaTcp);
        }
    }
}
