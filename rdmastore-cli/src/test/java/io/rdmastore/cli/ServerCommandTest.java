package io.rdmastore.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.RdmaStoreClient;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ServerCommandTest {
    @TempDir
    Path dir;

    @Test
    void runsWithAConfigFileCommandLineWinsAndStopsOnInterrupt() throws Exception {
        Path data = dir.resolve("data");
        Path config = dir.resolve("rdmastore.properties");
        // The file asks for port 1 (privileged, would fail); the command line's --port 0 must win.
        Files.writeString(config, "port=1\nfsync=no\ntransport=tcp\ndata-dir=" + data + "\nmax-connections=5\n");
        StringWriter out = new StringWriter();
        CommandLine cl = Main.commandLine(new ByteArrayInputStream(new byte[0]), false);
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(new StringWriter(), true));
        AtomicInteger code = new AtomicInteger(-1);
        Thread t = new Thread(() -> code.set(cl.execute("server", "--config", config.toString(), "--port", "0")));
        t.start();
        Pattern listening = Pattern.compile("listening +127\\.0\\.0\\.1:(\\d+)");
        Matcher m;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            synchronized (out) {
                m = listening.matcher(out.toString());
            }
            if (m.find() || System.nanoTime() > deadline || !t.isAlive()) {
                break;
            }
            Thread.sleep(20);
        }
        assertTrue(m.find(0), "banner: " + out);
        String banner = out.toString();
        assertTrue(banner.contains("ucx: disabled by configuration (transport=tcp)"), banner);
        assertTrue(banner.contains("fsync no"), banner);
        assertTrue(banner.contains(data.toAbsolutePath().toString()), banner);
        int port = Integer.parseInt(m.group(1));
        try (RdmaStoreClient c = RdmaStoreClient.builder().host("127.0.0.1").port(port).connect()) {
            assertEquals("tcp", c.transport());
            c.set("k", "v");
            assertEquals("v", c.get("k"));
        }
        t.interrupt();
        t.join(20_000);
        assertFalse(t.isAlive(), "server command returns after an interrupt");
        assertEquals(0, code.get());
        assertTrue(out.toString().contains("rdmastore stopped"), out::toString);
        assertTrue(Files.list(data).findAny().isPresent(), "the log is in the configured data dir");
    }

    @Test
    void badConfigIsRefusedWithTheKeyNamed() throws Exception {
        Path config = dir.resolve("bad.properties");
        Files.writeString(config, "prot=7379\n");
        Run r = Run.of("server", "--config", config.toString());
        assertEquals(1, r.exitCode(), r::toString);
        assertTrue(r.err().contains("unknown key(s) [prot]"), r::toString);
        Run fsync = Run.of("server", "--fsync", "sometimes", "--data-dir", dir.toString());
        assertEquals(1, fsync.exitCode(), fsync::toString);
        assertTrue(fsync.err().contains("fsync must be one of always, everysec, no: 'sometimes'"), fsync::toString);
        Run size = Run.of("server", "--max-value-bytes", "12q", "--data-dir", dir.toString());
        assertTrue(size.err().contains("max-value-bytes must be a size"), size::toString);
        Run threshold = Run.of("server", "--blob-threshold", "0", "--data-dir", dir.toString());
        assertEquals(1, threshold.exitCode(), threshold::toString);
        assertTrue(threshold.err().contains("blob-threshold"), threshold::toString);
        assertEquals(4096, ServerCommand.toConfig(java.util.Map.of("blob-threshold", "4k", "data-dir",
            dir.toString())).blobConfig().thresholdBytes());
        Run missing = Run.of("server", "--config", dir.resolve("absent.properties").toString());
        assertTrue(missing.err().contains("does not exist or cannot be read"), missing::toString);
    }
}
