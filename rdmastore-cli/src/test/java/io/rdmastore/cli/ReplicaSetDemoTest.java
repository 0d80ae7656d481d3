package io.rdmastore.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code rdmastore replica-set demo} end to end: three member processes on loopback, a SIGKILL, a failover. */
class ReplicaSetDemoTest {
    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void demoFailsOverLosesNoAcknowledgedWriteAndLeavesNothingBehind() {
        Run r = Run.of("replica-set", "demo", "--transport", "tcp", "--keys", "500", "--timeout", "200s");
        String out = r.out();
        assertEquals(0, r.exitCode(), r::toString);

        assertTrue(out.matches("(?s).*primary elected: n[123] \\(term \\d+\\).*"), r::toString);
        assertTrue(out.matches("(?s).*wrote 500 keys to n[123][^\\n]*: 500 acknowledged by a majority.*"),
            r::toString);
        // the member killed is the primary at that moment (a loaded machine may have re-elected since the first)
        Matcher first = Pattern.compile("SIGKILL (n[123]) \\(pid \\d+\\), the primary \\(term (\\d+)\\)")
            .matcher(out);
        assertTrue(first.find(), r::toString);
        String oldPrimary = first.group(1);
        Matcher next = Pattern.compile("new primary: (n[123]) \\(term (\\d+)\\), elected (\\d+) ms after the kill; it"
            + " accepted a write acknowledged by a majority (\\d+) ms after the kill").matcher(out);
        assertTrue(next.find(), r::toString);
        String newPrimary = next.group(1);
        assertNotEquals(oldPrimary, newPrimary, r::toString);
        assertTrue(Long.parseLong(next.group(2)) > Long.parseLong(first.group(2)), "a newer term: " + r);
        assertTrue(out.contains("read back 500 acknowledged keys from " + newPrimary + " (new primary): 500 intact"),
            r::toString);
        assertTrue(out.matches("(?s).*from n[123] \\(secondary\\): 500 intact.*"), r::toString);
        assertTrue(out.contains("\n0 of 500 acknowledged writes lost\n"), r::toString);
        assertTrue(out.contains(oldPrimary + " rejoined as a secondary of " + newPrimary), r::toString);
        assertTrue(out.contains("replica set demo: primary " + newPrimary + " at 127.0.0.1:"), r::toString);
        // the last table: the old primary is a secondary again
        String last = out.substring(out.lastIndexOf("| member |"));
        assertTrue(last.matches("(?s).*\\| " + oldPrimary + " +\\| [0-9.:]+ +\\| secondary .*"), last);

        Matcher pids = Pattern.compile("\\(pid (\\d+)").matcher(out);
        List<Long> seen = new ArrayList<>();
        while (pids.find()) {
            seen.add(Long.parseLong(pids.group(1)));
        }
        assertEquals(5, seen.size(), "three starts, the killed primary, its restart: " + seen);
        for (long pid : seen) {
            assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "pid " + pid + " survived");
        }
        Matcher dir = Pattern.compile("data and logs in (\\S+) \\(deleted at the end\\)").matcher(out);
        assertTrue(dir.find(), r::toString);
        assertFalse(Files.exists(Path.of(dir.group(1))), "the demo's directory must be gone: " + dir.group(1));
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void badOptionsAreRefusedBeforeAnythingStarts() {
        Run keys = Run.of("replica-set", "demo", "--keys", "0");
        assertEquals(1, keys.exitCode(), keys::toString);
        assertTrue(keys.err().contains("rdmastore replica-set demo: --keys must be between 1 and 1000000"),
            keys::toString);
        Run transport = Run.of("replica-set", "demo", "--transport", "rdma");
        assertEquals(1, transport.exitCode(), transport::toString);
        assertTrue(transport.err().contains("transport must be one of auto, tcp, ucx"), transport::toString);
        assertFalse(transport.out().contains("starting"), transport::toString);
    }
}
