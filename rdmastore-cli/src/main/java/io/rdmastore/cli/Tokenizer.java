package io.rdmastore.cli;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits a shell line into words the way redis-cli does, plus JSON: words are separated by blanks; {@code "double"}
 * quotes take backslash escapes ({@code \" \\ \n \t \xHH}); {@code 'single'} quotes are literal; a word that starts
 * with <code>{</code> or {@code [} runs to its matching bracket, so {@code doc insert users {"name": "ada lovelace"}}
 * needs no extra quoting. Stateless; any thread.
 */
final class Tokenizer {
    private Tokenizer() {
    }

    /**
     * The words of {@code line}.
     *
     * @throws UserException on an unbalanced quote or bracket, naming the column
     */
    static List<String> split(String line) {
        List<String> words = new ArrayList<>();
        int n = line.length();
        int i = 0;
        while (true) {
            while (i < n && Character.isWhitespace(line.charAt(i))) {
                i++;
            }
            if (i >= n) {
                return words;
            }
            char c = line.charAt(i);
            if (c == '{' || c == '[') {
                int end = jsonEnd(line, i);
                words.add(line.substring(i, end));
                i = end;
                continue;
            }
            StringBuilder w = new StringBuilder();
            while (i < n && !Character.isWhitespace(line.charAt(i))) {
                char ch = line.charAt(i);
                if (ch == '"') {
                    i = doubleQuoted(line, i + 1, w);
                } else if (ch == '\'') {
                    int close = line.indexOf('\'', i + 1);
                    if (close < 0) {
                        throw new UserException("unbalanced quote ' at column " + (i + 1));
                    }
                    w.append(line, i + 1, close);
                    i = close + 1;
                } else {
                    w.append(ch);
                    i++;
                }
            }
            words.add(w.toString());
        }
    }

    private static int doubleQuoted(String line, int i, StringBuilder w) {
        int start = i - 1;
        int n = line.length();
        while (i < n) {
            char ch = line.charAt(i);
            if (ch == '"') {
                return i + 1;
            }
            if (ch == '\\' && i + 1 < n) {
                char e = line.charAt(i + 1);
                switch (e) {
                    case 'n' -> w.append('\n');
                    case 't' -> w.append('\t');
                    case 'r' -> w.append('\r');
                    case 'x' -> {
                        if (i + 3 < n && hex(line.charAt(i + 2)) >= 0 && hex(line.charAt(i + 3)) >= 0) {
                            w.append((char) (hex(line.charAt(i + 2)) * 16 + hex(line.charAt(i + 3))));
                            i += 2;
                        } else {
                            w.append('x');
                        }
                    }
                    default -> w.append(e);
                }
                i += 2;
                continue;
            }
            w.append(ch);
            i++;
        }
        throw new UserException("unbalanced quote \" at column " + (start + 1));
    }

    private static int hex(char c) {
        return Character.digit(c, 16);
    }

    /** The index after the bracket that closes the one at {@code start}, skipping brackets inside JSON strings. */
    private static int jsonEnd(String line, int start) {
        int depth = 0;
        char quote = 0;
        for (int i = start; i < line.length(); i++) {
            char c = line.charAt(i);
            if (quote != 0) {
                if (c == '\\') {
                    i++;
                } else if (c == quote) {
                    quote = 0;
                }
                continue;
            }
            switch (c) {
                case '"', '\'' -> quote = c;
                case '{', '[' -> depth++;
                case '}', ']' -> {
                    depth--;
                    if (depth == 0) {
                        return i + 1;
                    }
                }
                default -> {
                }
            }
        }
        throw new UserException("unbalanced " + line.charAt(start) + " at column " + (start + 1)
            + (quote != 0 ? " (a string inside it is not closed)" : ""));
    }
}
