package io.rdmastore.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 10, unit = TimeUnit.SECONDS)
class TokenizerTest {
    @Test
    void quotesKeepSpacesAndEscapes() {
        assertEquals(List.of("set", "k", "hello world", "it's"), Tokenizer.split("set k \"hello world\" \"it's\""));
        assertEquals(List.of("set", "k", "a \"b\"\n\u0001"), Tokenizer.split("set k \"a \\\"b\\\"\\n\\x01\""));
        assertEquals(List.of("set", "k", "raw \\n"), Tokenizer.split("  set   k 'raw \\n'  "));
        assertEquals(List.of("x", ""), Tokenizer.split("x \"\""));
    }

    @Test
    void jsonIsOneWordWithoutQuoting() {
        assertEquals(List.of("doc", "update", "users", "{\"name\": \"ada lovelace\"}", "{\"$set\": {\"a\": [1, 2]}}",
            "--many"), Tokenizer.split("doc update users {\"name\": \"ada lovelace\"} {\"$set\": {\"a\": [1, 2]}}"
            + " --many"));
        assertEquals(List.of("doc", "find", "c", "{\"s\": \"} {\"}"), Tokenizer.split("doc find c {\"s\": \"} {\"}"));
    }

    @Test
    void unbalancedInputIsAClearError() {
        UserException q = assertThrows(UserException.class, () -> Tokenizer.split("set k \"open"));
        assertTrue(q.getMessage().contains("unbalanced quote"), q.getMessage());
        UserException b = assertThrows(UserException.class, () -> Tokenizer.split("doc insert c {\"a\": 1"));
        assertTrue(b.getMessage().contains("unbalanced {"), b.getMessage());
    }
}
