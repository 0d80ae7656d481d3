package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.RdmaStoreClient;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The switchable Source / Process / Sink timer: off by default, per-opcode sums in INFO when on. */
@Timeout(30)
class ServerTimingTest {

    static Map<String, String> timing(String info) {
        Map<String, String> out = new HashMap<>();
        int at = info.indexOf("# Timing");
        assertTrue(at >= 0, "INFO has no Timing section:\n" + info);
        for (String line : info.substring(at).split("\r\n")) {
            int colon = line.indexOf(':');
            if (colon > 0) {
                out.put(line.substring(0, colon), line.substring(colon + 1));
            }
        }
        return out;
    }

    @Test
    void offByDefaultShowsNoSums(@TempDir Path dir) {
        try (RdmaStoreServer server = TestServers.start(dir, c -> { });
             RdmaStoreClient client = TestServers.client(server, "tcp")) {
            client.set("k", "v");
            assertEquals("v", client.get("k"));
            Map<String, String> t = timing(client.info());
            assertEquals("off", t.get("timing"));
            assertTrue(!t.containsKey("get_count"), "sums while timing is off: " + t);
        }
    }

    @Test
    void onCountsEveryRequestPerOpcode(@TempDir Path dir) {
        try (RdmaStoreServer server = TestServers.start(dir, c -> c.timing(true));
             RdmaStoreClient client = TestServers.client(server, "tcp")) {
            for (int i = 0; i < 10; i++) {
                client.set("k" + i, "v" + i);
            }
            for (int i = 0; i < 7; i++) {
                assertEquals("v" + i, client.get("k" + i));
            }
            Map<String, String> t = timing(client.info());
            assertEquals("on", t.get("timing"));
            assertEquals("10", t.get("set_count"));
            assertEquals("7", t.get("get_count"));
            for (String op : new String[] {"get", "set"}) {
                for (String phase : new String[] {"source", "process", "sink"}) {
                    long ns = Long.parseLong(t.get(op + "_" + phase + "_ns"));
                    assertTrue(ns >= 0, op + " " + phase + " negative: " + ns);
                }
                assertTrue(Long.parseLong(t.get(op + "_process_ns")) > 0, op + " process time is zero: " + t);
            }
        }
    }

    @Test
    void flagParses() {
        assertTrue(RdmaStoreServer.parseArgs(new String[] {"--timing", "--port", "0"}).timing());
        assertTrue(!RdmaStoreServer.parseArgs(new String[] {"--port", "0"}).timing());
    }
}
