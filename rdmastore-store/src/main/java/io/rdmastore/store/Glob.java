package io.rdmastore.store;

/**
 * Redis glob matching on bytes ({@code stringmatchlen}): {@code *}, {@code ?}, {@code [abc]}, {@code [^a]},
 * {@code [a-z]}, and {@code \x} escapes, used by KEYS, SCAN MATCH, HSCAN MATCH and CONFIG GET.
 *
 * <p>Every token but {@code *} matches exactly one byte, so a failed match only ever needs to retry from the most
 * recent star, one byte further on: the match takes at most O(pattern x string) steps. A recursive matcher that
 * retries every star at every position is exponential on patterns such as {@code a*a*a*a*...b} (Redis's
 * CVE-2022-36021), and on the one I/O thread that stalls every client.
 *
 * <p>Stateless; any thread.
 */
public final class Glob {
    private Glob() {
    }

    /** Whether {@code s} matches {@code pattern}; neither array is modified or kept. */
    public static boolean matches(byte[] pattern, byte[] s) {
        byte[] p = pattern;
        int pi = 0;
        int si = 0;
        int starP = -1;
        int starS = 0;
        while (si < s.length) {
            if (pi < p.length && p[pi] == '*') {
                while (pi < p.length && p[pi] == '*') {
                    pi++;
                }
                if (pi == p.length) {
                    return true;
                }
                starP = pi;
                starS = si;
                continue;
            }
            int next = pi < p.length ? single(p, pi, s[si]) : -1;
            if (next >= 0) {
                pi = next;
                si++;
            } else if (starP < 0) {
                return false;
            } else {
                // the last star swallows one more byte; earlier stars need never move again
                pi = starP;
                si = ++starS;
            }
        }
        while (pi < p.length && p[pi] == '*') {
            pi++;
        }
        return pi == p.length;
    }

    /** Matches the one-byte token at {@code p[pi]} (not a star) against {@code ch}: the next token's index, or -1. */
    private static int single(byte[] p, int pi, byte ch) {
        byte c = p[pi];
        switch (c) {
            case '?' -> {
                return pi + 1;
            }
            case '[' -> {
                pi++;
                boolean not = pi < p.length && p[pi] == '^';
                if (not) {
                    pi++;
                }
                boolean found = false;
                while (pi < p.length && p[pi] != ']') {
                    if (p[pi] == '\\' && pi + 1 < p.length) {
                        pi++;
                        found |= p[pi] == ch;
                        pi++;
                    } else if (pi + 2 < p.length && p[pi + 1] == '-') {
                        int lo = p[pi] & 0xff;
                        int hi = p[pi + 2] & 0xff;
                        if (lo > hi) {
                            int t = lo;
                            lo = hi;
                            hi = t;
                        }
                        int x = ch & 0xff;
                        found |= x >= lo && x <= hi;
                        pi += 3;
                    } else {
                        found |= p[pi] == ch;
                        pi++;
                    }
                }
                if (pi < p.length) {
                    pi++; // the closing ']'
                }
                return found != not ? pi : -1;
            }
            case '\\' -> {
                if (pi + 1 < p.length) {
                    pi++;
                }
                return p[pi] == ch ? pi + 1 : -1;
            }
            default -> {
                return c == ch ? pi + 1 : -1;
            }
        }
    }
}
