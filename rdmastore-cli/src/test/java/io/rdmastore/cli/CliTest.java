package io.rdmastore.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.server.RdmaStoreServer;
import io.rdmastore.server.ServerConfig;
import io.rdmastore.store.FsyncPolicy;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The cli command's one-shot and piped modes against a server in this JVM. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CliTest {
    @TempDir
    static Path dir;
    static RdmaStoreServer server;
    static String port;

    @BeforeAll
    static void start() {
        server = new RdmaStoreServer(new ServerConfig().port(0).dataDir(dir).fsync(FsyncPolicy.NO)).start();
        port = String.valueOf(server.port());
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }

    private static Run cli(String... command) {
        String[] args = new String[command.length + 3];
        args[0] = "cli";
        args[1] = "-p";
        args[2] = port;
        System.arraycopy(command, 0, args, 3, command.length);
        return Run.of(args);
    }

    @Test
    void oneShotSetThenGet() {
        Run set = cli("set", "greeting", "hello world");
        assertEquals(0, set.exitCode(), set::toString);
        assertEquals("OK\n", set.out());
        Run get = cli("get", "greeting");
        assertEquals(0, get.exitCode(), get::toString);
        assertEquals("hello world\n", get.out());
        Run formatted = cli("--no-raw", "get", "greeting");
        assertEquals("\"hello world\"\n", formatted.out(), formatted::toString);
        Run missing = cli("--no-raw", "get", "no-such-key");
        assertEquals("(nil)\n", missing.out(), missing::toString);
    }

    @Test
    void oneShotArgumentsThatLookLikeOptionsBelongToTheCommand() {
        assertEquals(0, cli("set", "n", "10").exitCode());
        Run r = cli("incrby", "n", "-3");
        assertEquals("7\n", r.out(), r::toString);
        assertEquals(0, cli("doc", "insert", "people", "{\"name\": \"ada\", \"age\": 36}").exitCode());
        assertEquals(0, cli("doc", "insert", "people", "{\"name\": \"alan\", \"age\": 41}").exitCode());
        Run upd = cli("doc", "update", "people", "{}", "{\"$inc\": {\"age\": 1}}", "--many");
        assertEquals("matched 2, modified 2\n", upd.out(), upd::toString);
        Run count = cli("doc", "count", "people", "{\"age\": {\"$gt\": 40}}");
        assertEquals("1\n", count.out(), count::toString);
        Run index = cli("--no-raw", "doc", "index", "people", "name");
        assertEquals("index on name created\n", index.out(), index::toString);
        assertEquals("0\n", cli("doc", "index", "people", "name").out(), "it exists");
        assertEquals("_id\nname\n", cli("doc", "indexes", "people").out());
        assertEquals("1\n", cli("doc", "count", "people", "{\"name\": \"alan\"}").out());
        Run drop = cli("--no-raw", "doc", "dropindex", "people", "name");
        assertEquals("index on name dropped\n", drop.out(), drop::toString);
        Run bad = cli("doc", "index", "people", "a..b");
        assertEquals(1, bad.exitCode(), bad::toString);
        assertTrue(bad.out().contains("invalid index field"), bad::toString);
    }

    @Test
    void userErrorsAreOneLineAndExitOne() {
        assertEquals(0, cli("set", "text", "abc").exitCode());
        Run wrongType = cli("incr", "text");
        assertEquals(1, wrongType.exitCode(), wrongType::toString);
        assertTrue(wrongType.out().startsWith("(error) "), wrongType::toString);
        assertFalse(wrongType.out().contains("Exception"), wrongType::toString);
        Run unknown = cli("frob", "x");
        assertEquals(1, unknown.exitCode());
        assertTrue(unknown.out().contains("unknown command 'frob'"), unknown::toString);
        Run arity = cli("get");
        assertTrue(arity.out().contains("wrong number of arguments for 'get'; usage: get <key>"), arity::toString);
        Run json = cli("doc", "insert", "c", "{\"a\": }");
        assertEquals(1, json.exitCode());
        assertTrue(json.out().contains("bad JSON in document"), json::toString);
        // Nothing was lost: the earlier value is intact.
        assertEquals("abc\n", cli("get", "text").out());
    }

    @Test
    void noServerIsAClearError() throws Exception {
        int free;
        try (ServerSocket s = new ServerSocket(0)) {
            free = s.getLocalPort();
        }
        Run r = Run.of("cli", "-p", String.valueOf(free), "--timeout", "2s", "ping");
        assertEquals(1, r.exitCode(), r::toString);
        assertTrue(r.out().contains("(error) cannot connect to 127.0.0.1:" + free), r::toString);
        assertFalse(r.out().contains("\tat "), r::toString);
    }

    @Test
    void pipedStdinRunsOneCommandPerLine() {
        String script = """
            # a comment, then blank lines are skipped

            set piped:a 1
            incr piped:a
            get piped:a
            set "piped:spaced key" "two words"
            get "piped:spaced key"
            hset piped:h name ada lang java
            hget piped:h lang
            doc insert piped {"name": "ada lovelace", "tags": ["math", "code"]}
            doc find piped {"name": "ada lovelace"} limit 1
            bogus command
            ttl piped:a
            quit
            get piped:a
            """;
        Run r = Run.withStdin(script, false, "cli", "-p", port);
        assertEquals(1, r.exitCode(), "the bogus line makes the run fail: " + r);
        String[] lines = r.out().split("\n");
        assertEquals("OK", lines[0], r::toString);
        assertEquals("2", lines[1], r::toString);
        assertEquals("2", lines[2], r::toString);
        assertEquals("OK", lines[3], r::toString);
        assertEquals("two words", lines[4], r::toString);
        assertEquals("2", lines[5], r::toString);
        assertEquals("java", lines[6], r::toString);
        assertTrue(lines[7].startsWith("{\"$oid\""), r::toString);
        assertTrue(lines[8].contains("\"name\": \"ada lovelace\""), r::toString);
        assertTrue(lines[9].startsWith("(error) unknown command 'bogus'"), r::toString);
        assertEquals("-1", lines[10], r::toString);
        assertEquals(11, lines.length, "quit stops before the last line: " + r);
    }

    @Test
    void transportAndHelpCommands() {
        Run t = cli("transport");
        assertEquals(0, t.exitCode(), t::toString);
        assertTrue(t.out().matches("(?s)(tcp|ucx): .+"), t::toString);
        Run h = cli("help", "doc");
        assertTrue(h.out().contains("doc update <collection> <filter> <update> [--many] [--upsert]"), h::toString);
        Run all = cli("help");
        for (String name : new String[] {"ping", "hgetall", "mset", "snapshot", "transport", "quit"}) {
            assertTrue(all.out().contains(name), name + ": " + all);
        }
    }

    @Test
    void oneShotOverUcx() {
        Assumptions.assumeTrue(!"false".equals(System.getProperty("rdmastore.test.ucx")),
            "rdmastore.test.ucx=false: this machine has no UCX, the ucx one-shot is not run");
        Run set = cli("--transport", "ucx", "set", "over-ucx", "v1");
        assertEquals(0, set.exitCode(), set::toString);
        Run t = cli("--transport", "ucx", "transport");
        assertTrue(t.out().startsWith("ucx: "), t::toString);
        assertEquals("v1\n", cli("--transport", "ucx", "get", "over-ucx").out());
    }
}
