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
            // the banner is printed line by line: wait for its last line, not only the one with the port
            String sofar;
            synchronized (out) {
                sofar = out.toString();
            }
            m = listening.matcher(sofar);
            if (m.find() && sofar.contains("stop with") || System.nanoTime() > deadline || !t.isAlive()) {
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

    @Test
    void replicaSetOptionsAreCheckedBeforeAnythingStarts() {
        String data = dir.toString();
        String[][] cases = {
            {"member 'n2=127.0.0.1' is not id=host:port", "--replica-set", "rs0", "--node-id", "n1", "--members",
                "n1=127.0.0.1:7001,n2=127.0.0.1"},
            {"member 'n2=127.0.0.1:99999' has a bad port", "--replica-set", "rs0", "--node-id", "n1", "--members",
                "n1=127.0.0.1:7001,n2=127.0.0.1:99999"},
            {"member id 'n1' appears twice", "--replica-set", "rs0", "--node-id", "n1", "--members",
                "n1=127.0.0.1:7001,n1=127.0.0.1:7002"},
            {"node id 'n9' is not among the members [n1, n2]", "--replica-set", "rs0", "--node-id", "n9", "--members",
                "n1=127.0.0.1:7001,n2=127.0.0.1:7002"},
            {"replica set name must be 1..64 letters", "--replica-set", "rs 0!", "--node-id", "n1", "--members",
                "n1=127.0.0.1:7001"},
            {"--replica-set needs --node-id ID", "--replica-set", "rs0", "--members", "n1=127.0.0.1:7001"},
            {"--replica-set needs --members", "--replica-set", "rs0", "--node-id", "n1"},
            {"--members lists no member", "--replica-set", "rs0", "--node-id", "n1", "--members", ","},
            {"--node-id needs --replica-set NAME", "--node-id", "n1"},
            {"--members needs --replica-set NAME", "--members", "n1=127.0.0.1:7001"},
            {"--port 7002 differs from this member's port in --members", "--replica-set", "rs0", "--node-id", "n1",
                "--members", "n1=127.0.0.1:7001", "--port", "7002"},
            {"raft-port", "--replica-set", "rs0", "--node-id", "n1", "--members", "n1=127.0.0.1:7001", "--raft-port",
                "0"},
        };
        for (String[] c : cases) {
            String[] args = new String[c.length + 2];
            args[0] = "server";
            System.arraycopy(c, 1, args, 1, c.length - 1);
            args[c.length] = "--data-dir";
            args[c.length + 1] = data;
            Run r = Run.of(args);
            assertEquals(1, r.exitCode(), r::toString);
            assertTrue(r.err().startsWith("rdmastore server: "), r::toString);
            assertTrue(r.err().contains(c[0]), "expected '" + c[0] + "': " + r);
            assertFalse(r.err().contains("\tat "), "no stack trace: " + r);
            assertFalse(r.out().contains("listening"), "nothing started: " + r);
        }
    }

    @Test
    void replicaSetSettingsComeFromTheCommandLineOrAConfigFile() {
        var cfg = ServerCommand.toConfig(java.util.Map.of("replica-set", "rs0", "node-id", "n2", "members",
            "n1=127.0.0.1:7001,n2=127.0.0.1:7002,n3=127.0.0.1:7003", "replica-set-key", "k3y", "raft-port", "9002",
            "data-dir", dir.toString()));
        assertEquals("rs0", cfg.replicaSet().setName());
        assertEquals("n2", cfg.replicaSet().nodeId());
        assertEquals(3, cfg.replicaSet().members().size());
        assertEquals(7002, cfg.port(), "a member listens on its port in --members");
        assertEquals(9002, cfg.replicaSet().raftPort("n2"));
        assertEquals(17001, cfg.replicaSet().raftPort("n1"), "the others' election ports default to port + 10000");
        assertTrue(cfg.replicaSet().keySet());
        assertEquals(null, ServerCommand.toConfig(java.util.Map.of("data-dir", dir.toString())).replicaSet());
        assertTrue(ServerCommand.KEYS.containsAll(java.util.List.of("replica-set", "node-id", "members",
            "replica-set-key", "raft-port")));

        Run help = Run.of("server", "--help");
        for (String option : new String[] {"--replica-set=NAME", "--node-id=ID", "--members=LIST",
            "--replica-set-key=KEY", "--raft-port=N", ServerCommand.REPLICA_SET_KEY_ENV}) {
            assertTrue(help.out().contains(option), option + " missing: " + help);
        }
    }
}
