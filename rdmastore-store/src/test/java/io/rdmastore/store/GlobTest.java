package io.rdmastore.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The glob matcher: Redis's semantics (checked against a plain backtracking reference) without its blow-up. */
class GlobTest {
    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }

    /** CVE-2022-36021: a*a*...*b against a run of a's took 36 s at 12 stars in a recursive matcher. */
    @Test
    @Timeout(10)
    void manyStarsAreNotExponential() {
        String pattern = "a*".repeat(60) + "b";
        byte[] s = b("a".repeat(20_000));
        long t0 = System.nanoTime();
        assertFalse(Glob.matches(b(pattern), s));
        assertTrue(Glob.matches(b(pattern), b("a".repeat(100) + "b")));
        assertFalse(Glob.matches(b("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b"), s));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms < 5_000, "took " + ms + " ms");
    }

    @Test
    void redisSemantics() {
        assertTrue(Glob.matches(b("*"), b("")));
        assertTrue(Glob.matches(b("h?llo"), b("hello")));
        assertFalse(Glob.matches(b("h?llo"), b("hllo")));
        assertTrue(Glob.matches(b("h*llo"), b("hllo")));
        assertTrue(Glob.matches(b("h[a-b]llo"), b("hbllo")));
        assertTrue(Glob.matches(b("h[b-a]llo"), b("hbllo")));
        assertTrue(Glob.matches(b("h[^e]llo"), b("hallo")));
        assertFalse(Glob.matches(b("h[^e]llo"), b("hello")));
        assertTrue(Glob.matches(b("a[\\]]b"), b("a]b")));
        assertTrue(Glob.matches(b("a\\*b"), b("a*b")));
        assertFalse(Glob.matches(b("a\\*b"), b("axb")));
        assertTrue(Glob.matches(b("*.txt"), b("a.b.txt")));
        assertFalse(Glob.matches(b("*.txt"), b("a.b.txt.gz")));
        assertTrue(Glob.matches(b("a[bc"), b("ab")));
    }

    /** Random patterns and strings over a small alphabet, against the exhaustive recursive matcher. */
    @Test
    @Timeout(30)
    void agreesWithReference() {
        Random rnd = new Random(42);
        String[] tokens = {"a", "b", "*", "?", "[ab]", "[^a]", "[a-b]", "\\*", "*", "a"};
        for (int n = 0; n < 50_000; n++) {
            StringBuilder p = new StringBuilder();
            int len = rnd.nextInt(7);
            for (int i = 0; i < len; i++) {
                p.append(tokens[rnd.nextInt(tokens.length)]);
            }
            StringBuilder s = new StringBuilder();
            int slen = rnd.nextInt(9);
            for (int i = 0; i < slen; i++) {
                s.append("ab*c".charAt(rnd.nextInt(4)));
            }
            byte[] pb = b(p.toString());
            byte[] sb = b(s.toString());
            assertEquals(reference(pb, 0, sb, 0), Glob.matches(pb, sb), p + " vs " + s);
        }
    }

    /** Redis's stringmatchlen before the fix, minus its quirk that "*" does not match the empty string. */
    private static boolean reference(byte[] p, int pi, byte[] s, int si) {
        if (pi == p.length) {
            return si == s.length;
        }
        byte c = p[pi];
        if (c == '*') {
            for (int k = si; k <= s.length; k++) {
                if (reference(p, pi + 1, s, k)) {
                    return true;
                }
            }
            return false;
        }
        if (si >= s.length) {
            return false;
        }
        int next = pi;
        boolean ok;
        if (c == '?') {
            ok = true;
            next++;
        } else if (c == '[') {
            next++;
            boolean not = next < p.length && p[next] == '^';
            if (not) {
                next++;
            }
            boolean found = false;
            while (next < p.length && p[next] != ']') {
                if (p[next] == '\\' && next + 1 < p.length) {
                    found |= p[next + 1] == s[si];
                    next += 2;
                } else if (next + 2 < p.length && p[next + 1] == '-') {
                    int lo = Math.min(p[next] & 0xff, p[next + 2] & 0xff);
                    int hi = Math.max(p[next] & 0xff, p[next + 2] & 0xff);
                    found |= (s[si] & 0xff) >= lo && (s[si] & 0xff) <= hi;
                    next += 3;
                } else {
                    found |= p[next] == s[si];
                    next++;
                }
            }
            if (next < p.length) {
                next++;
            }
            ok = found != not;
        } else if (c == '\\' && pi + 1 < p.length) {
            ok = p[pi + 1] == s[si];
            next += 2;
        } else {
            ok = c == s[si];
            next++;
        }
        return ok && reference(p, next, s, si + 1);
    }
}
