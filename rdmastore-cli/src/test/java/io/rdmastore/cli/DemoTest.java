package io.rdmastore.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The demo end to end: a tcp row always, ucx rows where UCX is installed (here and in CI). */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class DemoTest {
    @Test
    void demoPrintsATableWithTcpAndUcxRows() {
        boolean expectUcx = !"false".equals(System.getProperty("rdmastore.test.ucx"));
        if (!expectUcx) {
            System.out.println("DemoTest: rdmastore.test.ucx=false, so only the tcp row is required");
        }
        Run r = Run.of("demo", "--ops", "2000", "--seconds", "1");
        assertEquals(0, r.exitCode(), r::toString);
        String out = r.out();
        assertTrue(out.contains("| transport | wire"), r::toString);
        Matcher tcp = Pattern.compile("(?m)^\\| tcp +\\|[^\\n]*\\| +([0-9,]+) \\| +([0-9,]+) \\|").matcher(out);
        assertTrue(tcp.find(), "tcp row: " + r);
        assertTrue(Long.parseLong(tcp.group(1).replace(",", "")) > 0, r::toString);
        assertTrue(out.contains("GET -> \"hello over tcp\""), r::toString);
        assertTrue(out.contains("-> 1 document"), r::toString);
        if (expectUcx) {
            Matcher shm = Pattern.compile("(?m)^\\| ucx +\\| shared memory[^\\n]*\\| +([0-9,]+) \\|").matcher(out);
            assertTrue(shm.find(), "ucx shared-memory row: " + r);
            assertTrue(Long.parseLong(shm.group(1).replace(",", "")) > 0, r::toString);
            assertTrue(out.contains("client transport: ucx -- "), r::toString);
            assertTrue(out.matches("(?s).*ucx over shared memory \\(posix,cma,self\\) vs tcp: [0-9.]+x the round"
                + " trips/s.*"), r::toString);
        } else {
            assertTrue(out.contains("| tcp "), r::toString);
        }
        Matcher dir = Pattern.compile("data in (\\S+) \\(deleted at the end\\)").matcher(out);
        assertTrue(dir.find(), r::toString);
        assertFalse(Files.exists(Path.of(dir.group(1))), "temp data dir must be gone: " + dir.group(1));
        assertEquals(null, System.getProperty(DemoCommand.TLS_PROPERTY), "the demo restores rdmastore.ucx.tls");
    }

    @Test
    void badOptionsAreRefusedBeforeAnythingStarts() {
        Run r = Run.of("demo", "--ops", "0");
        assertEquals(1, r.exitCode(), r::toString);
        assertTrue(r.err().contains("--ops and --seconds must be positive"), r::toString);
    }
}
