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

/**
 * {@code rdmastore cluster demo} end to end: two shards of three member processes on loopback, keys loaded through
 * JedisCluster, a live reshard under a writer, a shard primary SIGKILLed, every key read back.
 */
class ClusterDemoTest {
    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void demoReshardsKillsAShardPrimaryAndLosesNoKey() {
        Run r = Run.of("cluster", "demo", "--shards", "2", "--members", "3", "--keys", "400", "--slots", "500",
            "--transport", "tcp", "--timeout", "280s");
        String out = r.out();
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(out.contains("cluster created: epoch 1, 2 shards, 16384 slots"), r::toString);
        assertTrue(out.contains("loaded 400 keys through JedisCluster"), r::toString);
        assertTrue(out.matches("(?s).*moved 500 slots from the first shard to the second while writing.*"),
            r::toString);
        assertTrue(out.matches("(?s).*SIGKILL s1-n[123], the primary of shard s1.*"), r::toString);
        assertTrue(out.matches("(?s).*shard s1's new primary: s1-n[123], \\d+ ms after the kill.*"), r::toString);
        assertTrue(out.matches("(?s).*writes since the kill: [1-9]\\d* acknowledged.*"), r::toString);
        assertTrue(out.contains("400 of 400 keys read their last acknowledged value through JedisCluster; 0 lost"),
            r::toString);
        Matcher dir = Pattern.compile("data and logs in (\\S+)").matcher(out);
        assertTrue(dir.find(), r::toString);
        assertFalse(Files.exists(Path.of(dir.group(1))), "the demo's directory is deleted");
    }

    @Test
    void theCheckerReadsOnlyTheDemosOwnValuesForThatKey() {
        assertEquals(12, ClusterDemoCommand.generation("g12-7", 7));
        assertEquals(0, ClusterDemoCommand.generation("g0-0", 0));
        assertEquals(-1, ClusterDemoCommand.generation("g12-7", 17), "another key's value");
        assertEquals(-1, ClusterDemoCommand.generation("g12-17", 7), "another key's value");
        assertEquals(-1, ClusterDemoCommand.generation(null, 7), "a missing key");
        assertEquals(-1, ClusterDemoCommand.generation("gx-7", 7));
        assertEquals(-1, ClusterDemoCommand.generation("g-7", 7));
    }
}
