package io.rdmastore.server.resp;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The Redis command-line tools (Debian redis-tools) against the RESP face: redis-cli one-shot, from stdin and in
 * {@code --pipe} mode, and redis-benchmark with and without pipelining. A missing binary fails the test with the
 * package to install; it is never skipped.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RespRedisToolsTest {
    private static final Path CLI = Path.of("/usr/bin/redis-cli");
    private static final Path BENCHMARK = Path.of("/usr/bin/redis-benchmark");
    private static RespTestServer server;

    @BeforeAll
    static void start() {
        server = RespTestServer.start();
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private static void requireBinary(Path p) {
        if (!Files.isExecutable(p)) {
            fail(p + " is missing: apt-get install redis-tools");
        }
    }

    record Result(int exit, String out) {
    }

    private static Result run(byte[] stdin, int timeoutSeconds, String... command) {
        try {
            Path outFile = Files.createTempFile("resp-tool", ".out");
            try {
                ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(outFile.toFile());
                Process p = pb.start();
                try (var in = p.getOutputStream()) {
                    if (stdin != null) {
                        in.write(stdin);
                    }
                }
                if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    fail(String.join(" ", command) + " did not finish in " + timeoutSeconds + " s; output so far:\n"
                        + Files.readString(outFile));
                }
                return new Result(p.exitValue(), Files.readString(outFile));
            } finally {
                Files.deleteIfExists(outFile);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private static String cli(String... args) {
        requireBinary(CLI);
        List<String> cmd = new ArrayList<>(List.of(CLI.toString(), "-h", "127.0.0.1", "-p",
            Integer.toString(server.port())));
        cmd.addAll(List.of(args));
        Result r = run(null, 20, cmd.toArray(new String[0]));
        assertEquals(0, r.exit(), r.out());
        return r.out();
    }

    @Test
    void oneShotCommands() {
        assertEquals("PONG\n", cli("PING"));
        assertEquals("OK\n", cli("SET", "cli:k", "hello world"));
        assertEquals("hello world\n", cli("GET", "cli:k"));
        assertEquals("1\n", cli("INCR", "cli:n"));
        assertEquals("2\n", cli("HSET", "cli:h", "a", "1", "b", "2"));
        assertEquals("a\n1\nb\n2\n", cli("HGETALL", "cli:h"));
        // redis-cli prints an error with an empty line after it, with Redis too
        assertEquals("WRONGTYPE Operation against a key holding the wrong kind of value\n\n", cli("GET", "cli:h"));
        assertTrue(cli("INFO", "keyspace").contains("db0:keys="));
        assertTrue(cli("CLIENT", "LIST").contains("transport=tcp"));
        assertEquals("1) \"a\"\n2) \"1\"\n3) \"b\"\n4) \"2\"\n", cli("--no-raw", "HGETALL", "cli:h"));
        String resp3 = cli("-3", "--no-raw", "HGETALL", "cli:h");
        assertEquals("1# \"a\" => \"1\"\n2# \"b\" => \"2\"\n", resp3);
        assertTrue(cli("--no-raw", "NOSUCH").startsWith("(error) ERR unknown command 'NOSUCH'"));
    }

    @Test
    void commandsFromStdin() {
        requireBinary(CLI);
        Result r = run("SET stdin:a 1\nINCRBY stdin:a 41\nGET stdin:a\nDEL stdin:a\n".getBytes(StandardCharsets.UTF_8),
            20, CLI.toString(), "-h", "127.0.0.1", "-p", Integer.toString(server.port()));
        assertEquals(0, r.exit(), r.out());
        assertEquals("OK\n42\n42\n1\n", r.out());
    }

    @Test
    void pipeMode() {
        requireBinary(CLI);
        int n = 5000;
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            String k = "pipe:" + i;
            sb.append("*3\r\n$3\r\nSET\r\n$").append(k.length()).append("\r\n").append(k).append("\r\n$1\r\nv\r\n");
        }
        Result r = run(sb.toString().getBytes(StandardCharsets.US_ASCII), 30, CLI.toString(), "-h", "127.0.0.1", "-p",
            Integer.toString(server.port()), "--pipe");
        assertEquals(0, r.exit(), r.out());
        assertTrue(r.out().contains("errors: 0, replies: " + n), r.out());
        assertEquals("2\n", cli("EXISTS", "pipe:0", "pipe:" + (n - 1)));
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 16})
    void benchmarkRunsToTheEndWithoutErrors(int pipeline) {
        requireBinary(BENCHMARK);
        Result r = run(null, 100, BENCHMARK.toString(), "-h", "127.0.0.1", "-p", Integer.toString(server.port()),
            "-t", "ping,set,get,incr,mset,hset", "-n", "10000", "-c", "32", "-P", Integer.toString(pipeline), "-q");
        assertEquals(0, r.exit(), r.out());
        String out = r.out();
        for (String test : List.of("PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "MSET (10 keys)", "HSET")) {
            assertTrue(out.contains(test + ": "), test + " missing from:\n" + out);
        }
        assertFalse(out.toLowerCase(java.util.Locale.ROOT).contains("error"), out);
    }
}
