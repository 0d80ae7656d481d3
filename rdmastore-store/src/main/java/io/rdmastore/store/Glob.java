package io.rdmastore.store;

/**
 * Redis glob matching on bytes ({@code stringmatchlen}): {@code *}, {@code ?}, {@code [abc]}, {@code [^a]},
 * {@code [a-z]}, and {@code \x} escapes. Stateless; any thread.
 */
final class Glob {
    private Glob() {
    }

    static boolean matches(byte[] pattern, byte[] s) {
        return match(pattern, 0, s, 0, 0);
    }

    private static boolean match(byte[] p, int pi, byte[] s, int si, int depth) {
        if (depth > 1000) {
            // Redis also bounds recursion so a hostile pattern cannot blow the stack.
            return false;
        }
        while (pi < p.length) {
            byte c = p[pi];
            switch (c) {
                case '*' -> {
                    while (pi + 1 < p.length && p[pi + 1] == '*') {
                        pi++;
                    }
                    if (pi + 1 == p.length) {
                        return true;
                    }
                    for (int k = si; k <= s.length; k++) {
                        if (match(p, pi + 1, s, k, depth + 1)) {
                            return true;
                        }
                    }
                    return false;
                }
                case '?' -> {
                    if (si >= s.length) {
                        return false;
                    }
                    si++;
                    pi++;
                }
                case '[' -> {
                    if (si >= s.length) {
                        return false;
                    }
                    pi++;
                    boolean not = pi < p.length && p[pi] == '^';
                    if (not) {
                        pi++;
                    }
                    boolean found = false;
                    while (pi < p.length && p[pi] != ']') {
                        if (p[pi] == '\\' && pi + 1 < p.length) {
                            pi++;
                            if (p[pi] == s[si]) {
                                found = true;
                            }
                            pi++;
                        } else if (pi + 2 < p.length && p[pi + 1] == '-') {
                            int lo = p[pi] & 0xff;
                            int hi = p[pi + 2] & 0xff;
                            if (lo > hi) {
                                int t = lo;
                                lo = hi;
                                hi = t;
                            }
                            int ch = s[si] & 0xff;
                            if (ch >= lo && ch <= hi) {
                                found = true;
                            }
                            pi += 3;
                        } else {
                            if (p[pi] == s[si]) {
                                found = true;
                            }
                            pi++;
                        }
                    }
                    if (pi < p.length) {
                        pi++; // the closing ']'
                    }
                    if (found == not) {
                        return false;
                    }
                    si++;
                }
                case '\\' -> {
                    if (pi + 1 < p.length) {
                        pi++;
                    }
                    if (si >= s.length || p[pi] != s[si]) {
                        return false;
                    }
                    si++;
                    pi++;
                }
                default -> {
                    if (si >= s.length || c != s[si]) {
                        return false;
                    }
                    si++;
                    pi++;
                }
            }
        }
        return si == s.length;
    }
}
