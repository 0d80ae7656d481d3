package io.rdmastore.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class HelpTest {
    @ParameterizedTest
    @ValueSource(strings = {"server", "cli", "doctor", "check-log", "demo", "replica-set", "replica-set demo", "bench"})
    void everySubcommandHasHelpAndVersion(String name) {
        String[] words = name.split(" ");
        Run help = Run.of(append(words, "--help"));
        assertEquals(0, help.exitCode(), help::toString);
        assertTrue(help.out().contains("Usage: rdmastore " + name), help::toString);
        Run version = Run.of(append(words, "--version"));
        assertEquals(0, version.exitCode(), version::toString);
        assertTrue(version.out().startsWith("rdmastore "), version::toString);
    }

    @Test
    void topLevelHelpListsEverySubcommand() {
        Run r = Run.of("--help");
        assertEquals(0, r.exitCode(), r::toString);
        for (String name : new String[] {"server", "cli", "doctor", "check-log", "demo", "replica-set", "bench"}) {
            assertTrue(r.out().contains("  " + name), name + " missing: " + r);
        }
        Run none = Run.of();
        assertTrue(none.out().contains("Usage: rdmastore"), none::toString);
    }

    @Test
    void unknownSubcommandIsAUsageError() {
        Run r = Run.of("frobnicate");
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().contains("frobnicate"), r::toString);
    }

    @Test
    void cliHelpKeepsDashHForTheHost() {
        Run r = Run.of("cli", "--help");
        assertTrue(r.out().contains("-h, --host"), r::toString);
        Run status = Run.of("replica-set", "status", "--help");
        assertEquals(0, status.exitCode(), status::toString);
        assertTrue(status.out().contains("-h, --host") && status.out().contains("--members=LIST")
            && status.out().contains("--json"), status::toString);
    }

    @Test
    void replicaSetHelpListsItsCommands() {
        Run r = Run.of("replica-set");
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.out().contains("  status") && r.out().contains("  demo"), r::toString);
    }

    private static String[] append(String[] words, String last) {
        String[] a = java.util.Arrays.copyOf(words, words.length + 1);
        a[words.length] = last;
        return a;
    }
}
