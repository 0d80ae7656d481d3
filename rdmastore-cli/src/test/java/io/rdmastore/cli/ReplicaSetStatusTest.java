package io.rdmastore.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.server.replication.ReplicaSetConfig;
import java.io.ByteArrayInputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bson.BsonArray;
import org.bson.BsonDocument;
import org.bson.BsonValue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code rdmastore server} as three members of a replica set in this JVM (each {@code server} command in a thread of
 * its own, on loopback, tcp), and {@code rdmastore replica-set status} against them: the table, JSON, an explicit
 * member list, and the exit code once no primary is left.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class ReplicaSetStatusTest {
    @TempDir
    Path dir;

    /** One {@code rdmastore server} command running in a thread; interrupting it stops the server. */
    private record ServerThread(Thread thread, StringWriter out) {
        String banner() {
            synchronized (out) {
                return out.toString();
            }
        }

        void stop() throws InterruptedException {
            thread.interrupt();
            thread.join(30_000);
            assertFalse(thread.isAlive(), "server command returns after an interrupt");
        }
    }

    private final List<ServerThread> servers = new ArrayList<>();

    @AfterEach
    void stopServers() throws InterruptedException {
        for (ServerThread s : servers) {
            s.stop();
        }
    }

    private ServerThread server(String... args) {
        StringWriter out = new StringWriter();
        CommandLine cl = Main.commandLine(new ByteArrayInputStream(new byte[0]), false);
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(out, true));
        Thread t = new Thread(() -> cl.execute(args), "server-" + args[4]);
        t.start();
        ServerThread s = new ServerThread(t, out);
        servers.add(s);
        return s;
    }

    private static Run until(Predicate<Run> done, long millis, String... args) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (true) {
            Run r = Run.of(args);
            if (done.test(r) || System.nanoTime() > deadline) {
                return r;
            }
            Thread.sleep(100);
        }
    }

    /** Rows of secondaries with a term, an offset, a lag in records and an up tcp link. */
    private static int linkedSecondaries(String table) {
        int n = 0;
        for (String line : table.split("\n")) {
            if (line.matches("\\| n[123] .*\\| secondary +\\| +\\d+ \\| +[0-9,]+ \\| +\\d+ \\|.*\\| tcp +\\| up .*")) {
                n++;
            }
        }
        return n;
    }

    @Test
    void statusShowsEveryMemberOnePrimaryAndFailsWithoutOne() throws Exception {
        List<Integer> ports = MemberProcess.freePorts(3, ReplicaSetConfig.DEFAULT_RAFT_PORT_OFFSET);
        String members = "n1=127.0.0.1:" + ports.get(0) + ",n2=127.0.0.1:" + ports.get(1) + ",n3=127.0.0.1:"
            + ports.get(2);
        for (int i = 0; i < 3; i++) {
            server("server", "--replica-set", "rs0", "--node-id", "n" + (i + 1), "--members", members, "--transport",
                "tcp", "--fsync", "no", "--election-timeout", "300ms", "--data-dir", dir.resolve("n" + (i + 1))
                    .toString());
        }
        for (int i = 0; i < 3; i++) {
            ServerThread s = servers.get(i);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!s.banner().contains("stop with Ctrl-C") && s.thread().isAlive() && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            String banner = s.banner();
            assertTrue(banner.contains("listening   127.0.0.1:" + ports.get(i)), banner);
            assertTrue(banner.contains("replica set rs0: this server is member n" + (i + 1) + " of " + members
                + " (3 members)"), banner);
            assertTrue(banner.contains("elections on port " + (ports.get(i) + 10_000)), banner);
        }

        String p1 = String.valueOf(ports.get(0));
        // a fresh set elects within a second or two; the first status may come before it has
        Run r = until(x -> x.exitCode() == 0 && linkedSecondaries(x.out()) == 2, 30_000,
            "replica-set", "status", "--port", p1);
        assertEquals(0, r.exitCode(), r::toString);
        String out = r.out();
        Matcher head = Pattern.compile("replica set rs0: primary (n[123]) at 127\\.0\\.0\\.1:(\\d+), term (\\d+); 3 of 3"
            + " members reachable").matcher(out);
        assertTrue(head.find(), r::toString);
        String primary = head.group(1);
        assertTrue(out.contains("| member | address"), r::toString);
        int primaries = 0;
        for (String line : out.split("\n")) {
            if (line.matches("\\| n[123] .*\\| primary +\\|.*")) {
                primaries++;
                assertTrue(line.startsWith("| " + primary + " "), line);
            }
        }
        assertEquals(1, primaries, r::toString);
        assertEquals(2, linkedSecondaries(out), "two secondaries with an offset, a lag and an up tcp link: " + r);
        assertTrue(out.contains("pulls over tcp: "), "the reason of each link's transport: " + r);

        Run json = Run.of("replica-set", "status", "--port", p1, "--json");
        assertEquals(0, json.exitCode(), json::toString);
        BsonDocument d = BsonDocument.parse(json.out());
        assertEquals("rs0", d.getString("replicaSet").getValue());
        assertTrue(d.getBoolean("ok").getValue());
        assertEquals(primary, d.getDocument("primary").getString("id").getValue());
        BsonArray list = d.getArray("members");
        assertEquals(3, list.size());
        for (BsonValue v : list) {
            BsonDocument m = v.asDocument();
            assertTrue(m.getBoolean("reachable").getValue(), m::toJson);
            assertTrue(m.get("offset").isNumber(), m::toJson);
            assertNotNull(m.getString("role"));
            if (m.getString("role").getValue().equals("secondary")) {
                assertEquals("tcp", m.getString("linkTransport").getValue(), m::toJson);
                assertTrue(m.get("lagRecords").isNumber(), m::toJson);
            }
        }

        // a blob to the set: every secondary pulls the file at once, and status says how its last blob came
        java.nio.file.Path file = dir.resolve("model.bin");
        byte[] content = new byte[9 << 20]; // above the 8 MiB blob threshold: stored as a file, pulled by each member
        new java.util.Random(5).nextBytes(content);
        java.nio.file.Files.write(file, content);
        Run put = Run.of("put-file", "--port", p1, "--replica-set", "rs0", "--w", "majority", "--distribution",
            "parallel", "--no-progress", "model", file.toString());
        assertEquals(0, put.exitCode(), put::toString);
        assertTrue(put.out().contains("put-file model: " + content.length + " bytes"), put::toString);
        assertEquals(2, put.out().split("parallel pull over tcp, ok", -1).length - 1, put::toString);
        Run blobStatus = until(x -> x.out().split("received its last blob: staged by the put", -1).length == 3,
            10_000, "replica-set", "status", "--port", p1);
        assertEquals(2, blobStatus.out().split("received its last blob: staged by the put", -1).length - 1,
            blobStatus::toString);
        Run noSet = Run.of("put-file", "--port", p1, "--w", "majority", "--no-progress", "model", file.toString());
        assertEquals(1, noSet.exitCode(), noSet::toString);
        assertTrue(noSet.err().contains("--w majority needs --replica-set NAME"), noSet::toString);

        // the members by address only: each one's ROLE names it
        Run byList = Run.of("replica-set", "status", "--members", members.replaceAll("n\\d=", ""));
        assertEquals(0, byList.exitCode(), byList::toString);
        assertTrue(byList.out().contains("| n1 ") && byList.out().contains("| n2 ") && byList.out().contains("| n3 "),
            byList::toString);

        // two of three gone: the last one cannot be primary, and a stopped member is shown as unreachable
        int survivor = primary.equals("n1") ? 1 : 0;
        for (int i = 0; i < 3; i++) {
            if (i != survivor) {
                servers.get(i).stop();
            }
        }
        String survivorPort = String.valueOf(ports.get(survivor));
        Run none = until(x -> x.exitCode() != 0, 30_000, "replica-set", "status", "--port", survivorPort);
        assertEquals(1, none.exitCode(), none::toString);
        assertTrue(none.out().contains("NO PRIMARY; 1 of 3 members reachable"), none::toString);
        assertTrue(none.out().matches("(?s).*\\| n\\d +\\| 127\\.0\\.0\\.1:\\d+ +\\| unreachable .*"), none::toString);
        assertTrue(none.err().contains("no primary found"), none::toString);
    }

    @Test
    void aStandaloneServerOrNobodyIsAnErrorNotATable() throws Exception {
        ServerThread s = server("server", "--port", "0", "--transport", "tcp", "--data-dir", dir.toString());
        Pattern listening = Pattern.compile("listening +127\\.0\\.0\\.1:(\\d+)");
        Matcher m = listening.matcher("");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!(m = listening.matcher(s.banner())).find() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        Run r = Run.of("replica-set", "status", "--port", m.group(1));
        assertEquals(1, r.exitCode(), r::toString);
        assertTrue(r.err().contains("is a standalone server, not a member of a replica set"), r::toString);

        int closed = MemberProcess.freePorts(1, 0).getFirst();
        Run nobody = Run.of("replica-set", "status", "--port", String.valueOf(closed));
        assertEquals(1, nobody.exitCode(), nobody::toString);
        assertTrue(nobody.err().startsWith("rdmastore replica-set status: cannot ask 127.0.0.1:" + closed),
            nobody::toString);
        Run bad = Run.of("replica-set", "status", "--members", "n1=localhost");
        assertEquals(1, bad.exitCode(), bad::toString);
        assertTrue(bad.err().contains("'n1=localhost' is not ID=HOST:PORT or HOST:PORT"), bad::toString);
    }
}
