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

    @Test
    void parsesReplicaSetParameters() {
        ClientConfig c = ClientConfig.parse("rdmastore://h1:7379,h2:7380,[::1]:7381,h4?replicaSet=rs0&w=majority"
            + "&wtimeout=750ms&readPreference=secondaryPreferred&timeout=2s");
        assertEquals("h1", c.host());
        assertEquals(7379, c.port());
        assertEquals(4, c.seeds().size());
        assertEquals("h2:7380", ClientConfig.address(c.seeds().get(1)));
        assertEquals("[::1]:7381", ClientConfig.address(c.seeds().get(2)));
        assertEquals(ClientConfig.DEFAULT_PORT, c.seeds().get(3).getPort());
        assertEquals("rs0", c.replicaSet());
        assertTrue(c.writeConcern().majority());
        assertEquals(Duration.ofMillis(750), c.writeConcern().wtimeout(Duration.ofSeconds(2)));
        assertEquals(ReadPreference.SECONDARY_PREFERRED, c.readPreference());
        assertEquals(ReadConcern.LOCAL, c.readConcern());
        assertTrue(c.isReplicaSet());
        assertEquals(c, ClientConfig.parse(c.toString()), "toString round-trips: " + c);

        ClientConfig l = ClientConfig.parse("rdmastore://h?readConcern=linearizable&w=1");
        assertEquals(ReadConcern.LINEARIZABLE, l.readConcern());
        assertTrue(!l.isReplicaSet() && !l.writeConcern().majority());
        assertEquals(Duration.ofSeconds(5), WriteConcern.MAJORITY.wtimeout(Duration.ofSeconds(5)),
            "defaults to the call's");
        assertTrue(ClientConfig.parse("rdmastore://a,b").isReplicaSet(), "several seeds discover a set");

        ClientConfig single = ClientConfig.parse("rdmastore://127.0.0.1:7400");
        assertTrue(!single.isReplicaSet());
        assertEquals(new ClientConfig("127.0.0.1", 7400, "auto", null, ClientConfig.DEFAULT_TIMEOUT), single);

        ClientConfig b = RdmaStoreClient.builder().seeds("a:1", "b:2").replicaSet("rs1")
            .writeConcern(WriteConcern.MAJORITY).readPreference(ReadPreference.SECONDARY).build();
        assertEquals("a", b.host());
        assertEquals(2, b.seeds().size());
        assertEquals(ReadPreference.SECONDARY, b.readPreference());
    }

    @Test
    void badReplicaSetParametersFailClearly() {
        assertMessage("unknown write concern w='2'", () -> ClientConfig.parse("rdmastore://h?w=2"));
        assertMessage("unknown readPreference 'nearest'",
            () -> ClientConfig.parse("rdmastore://a,b?readPreference=nearest"));
        assertMessage("unknown readConcern 'majority'", () -> ClientConfig.parse("rdmastore://h?readConcern=majority"));
        assertMessage("needs readPreference=primary",
            () -> ClientConfig.parse("rdmastore://a,b?readConcern=linearizable&readPreference=secondary"));
        assertMessage("needs a replica set", () -> ClientConfig.parse("rdmastore://h?readPreference=secondary"));
        assertMessage("wtimeout must be positive", () -> ClientConfig.parse("rdmastore://h?w=majority&wtimeout=0"));
        assertMessage("malformed port", () -> ClientConfig.parse("rdmastore://a:1,b:x"));
        assertMessage("URI has no host", () -> ClientConfig.parse("rdmastore://a,"));
        assertMessage("replicaSet is empty", () -> ClientConfig.parse("rdmastore://h?replicaSet="));
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
