package io.rdmastore.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class ClientConfigTest {

    @Test
    void parsesEveryParameter() {
        ClientConfig c = ClientConfig.parse("rdmastore://db.example:7400?transport=UCX&password=p%40ss&timeout=250ms");
        assertEquals("db.example", c.host());
        assertEquals(7400, c.port());
        assertEquals("ucx", c.transport());
        assertEquals("p@ss", c.password());
        assertEquals(Duration.ofMillis(250), c.timeout());
        assertTrue(c.toString().contains("***"), "password must not be printed: " + c);
    }

    @Test
    void defaults() {
        ClientConfig c = ClientConfig.parse("rdmastore://127.0.0.1");
        assertEquals(ClientConfig.DEFAULT_PORT, c.port());
        assertEquals("auto", c.transport());
        assertNull(c.password());
        assertEquals(ClientConfig.DEFAULT_TIMEOUT, c.timeout());
        assertEquals(Duration.ofSeconds(2), ClientConfig.parse("rdmastore://h?timeout=2s").timeout());
        assertEquals(Duration.ofMinutes(1), ClientConfig.parse("rdmastore://h?timeout=1m").timeout());
        assertEquals(Duration.ofMillis(1500), ClientConfig.parse("rdmastore://h?timeout=1500").timeout());
    }

    @Test
    void badUrisFailClearly() {
        assertMessage("must start with rdmastore://", () -> ClientConfig.parse("redis://h:1"));
        assertMessage("unknown URI parameter 'foo'", () -> ClientConfig.parse("rdmastore://h?foo=1"));
        assertMessage("malformed timeout 'soon'", () -> ClientConfig.parse("rdmastore://h?timeout=soon"));
        assertMessage("unknown transport 'rdma'", () -> ClientConfig.parse("rdmastore://h?transport=rdma"));
        assertMessage("timeout must be positive", () -> ClientConfig.parse("rdmastore://h?timeout=0"));
        assertMessage("port out of range", () -> RdmaStoreClient.builder().port(70000).build());
    }

    private static void assertMessage(String expected, org.junit.jupiter.api.function.Executable e) {
        IllegalArgumentException x = assertThrows(IllegalArgumentException.class, e);
        assertTrue(x.getMessage().contains(expected), "message '" + x.getMessage() + "' lacks '" + expected + "'");
    }

    @Test
    void setOptionsValidate() {
        assertThrows(IllegalArgumentException.class, () -> new SetOptions(0, true, true));
        assertThrows(IllegalArgumentException.class, () -> SetOptions.ttl(Duration.ZERO));
        assertEquals(1500, SetOptions.nx().withTtl(Duration.ofMillis(1500)).ttlMillis());
    }
}
