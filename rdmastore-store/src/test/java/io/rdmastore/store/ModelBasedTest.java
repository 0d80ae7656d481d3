package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static io.rdmastore.store.TestSupport.s;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Supplier;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Thousands of random operations against the store and a plain in-memory model, compared after every step, with
 * close + reopen and snapshots at random points, for each fsync policy.
 */
class ModelBasedTest {
    private static final int OPS = 4000;
    private static final int KEYS = 24;
    private static final long FAR = 4_000_000_000_000L;

    @TempDir
    Path dir;

    /** The reference: strings, hashes (insertion-ordered) and TTLs, with Redis semantics written plainly. */
    static final class Model {
        final Map<String, String> strings = new HashMap<>();
        final Map<String, LinkedHashMap<String, String>> hashes = new HashMap<>();
        final Map<String, Long> ttl = new HashMap<>();

        boolean exists(String k) {
            return strings.containsKey(k) || hashes.containsKey(k);
        }

        void del(String k) {
            strings.remove(k);
            hashes.remove(k);
            ttl.remove(k);
        }

        void wrongIfHash(String k) {
            if (hashes.containsKey(k)) {
                throw new WrongTypeException();
            }
        }

        void wrongIfString(String k) {
            if (strings.containsKey(k)) {
                throw new WrongTypeException();
            }
        }
    }

    private static Object run(Supplier<Object> op) {
        try {
            Object r = op.get();
            if (r instanceof byte[] bytes) {
                return s(bytes);
            }
            if (r instanceof List<?> l) {
                List<Object> out = new ArrayList<>();
                for (Object o : l) {
                    out.add(o instanceof byte[] bytes ? s(bytes) : o);
                }
                return out;
            }
            return r;
        } catch (StoreException e) {
            return e.getClass().getSimpleName();
        }
    }

    @ParameterizedTest
    @EnumSource(FsyncPolicy.class)
    @Timeout(60)
    void randomOperationsMatchTheModel(FsyncPolicy policy) {
        run(new Random(policy.ordinal() * 7919L + 17),
            new StoreConfig().dataDir(dir).fsync(policy).snapshotLogBytes(32 * 1024));
    }

    /** Values of 4 bytes and more go to blob files: every operation, snapshots and reopens see them as strings. */
    @ParameterizedTest
    @EnumSource(value = FsyncPolicy.class, names = {"ALWAYS", "EVERYSEC"})
    @Timeout(90)
    void randomOperationsMatchTheModelWithBlobValues(FsyncPolicy policy) throws Exception {
        run(new Random(policy.ordinal() * 104729L + 3), new StoreConfig().dataDir(dir).fsync(policy)
            .snapshotLogBytes(32 * 1024).blobs(new io.rdmastore.store.blob.BlobConfig().thresholdBytes(4)
                .reserveBytes(0)));
        try (Store st = Store.open(new StoreConfig().dataDir(dir).fsync(policy))) {
            long strings = 0;
            for (int i = 0; i < KEYS; i++) {
                byte[] v = st.type(b("k" + i)) == ValueType.STRING ? st.get(b("k" + i)) : null;
                strings += v != null && v.length >= 4 ? 1 : 0;
            }
            // no file outlives its value (APPEND may have built 4-byte values in memory, so <=)
            long files;
            try (java.util.stream.Stream<Path> l = java.nio.file.Files.list(st.blobs().directory())) {
                files = l.count();
            }
            assertEquals(st.blobs().count(), files, "files on disk vs files the store knows");
            assertTrue(files <= strings && files > 0, files + " blob files for " + strings + " blob-sized values");
        }
    }

    private void run(Random rnd, StoreConfig cfg) {
        Model m = new Model();
        Store[] holder = {Store.open(cfg)};
        try {
            for (int step = 0; step < OPS; step++) {
                Store st = holder[0];
                String k = "k" + rnd.nextInt(KEYS);
                String k2 = "k" + rnd.nextInt(KEYS);
                String f = "f" + rnd.nextInt(6);
                String v = rnd.nextInt(4) == 0 ? Integer.toString(rnd.nextInt(100)) : "v" + rnd.nextInt(1000);
                int op = rnd.nextInt(17);
                Object expected;
                Object actual;
                String what = step + ": op " + op + " " + k + " " + k2 + " " + f + " " + v;
                switch (op) {
                    case 0 -> {
                        expected = run(() -> {
                            m.del(k);
                            m.strings.put(k, v);
                            return null;
                        });
                        actual = run(() -> {
                            st.set(b(k), b(v));
                            return null;
                        });
                    }
                    case 1 -> {
                        expected = run(() -> {
                            m.wrongIfHash(k);
                            return m.strings.get(k);
                        });
                        actual = run(() -> st.get(b(k)));
                    }
                    case 2 -> {
                        expected = run(() -> {
                            long n = (m.exists(k) ? 1 : 0) + (!k.equals(k2) && m.exists(k2) ? 1 : 0);
                            m.del(k);
                            m.del(k2);
                            return n;
                        });
                        actual = run(() -> st.delete(b(k), b(k2)));
                    }
                    case 3 -> {
                        expected = run(() -> {
                            m.wrongIfHash(k);
                            String n = m.strings.getOrDefault(k, "") + v;
                            m.strings.put(k, n);
                            return (long) n.length();
                        });
                        actual = run(() -> st.append(b(k), b(v)));
                    }
                    case 4 -> {
                        long d = rnd.nextInt(200) - 100;
                        expected = run(() -> {
                            m.wrongIfHash(k);
                            String cur = m.strings.getOrDefault(k, "0");
                            long x;
                            try {
                                x = Long.parseLong(cur);
                                if (!Long.toString(x).equals(cur)) {
                                    throw new NumberFormatException();
                                }
                            } catch (NumberFormatException e) {
                                throw new NotANumberException(NotANumberException.NOT_AN_INTEGER);
                            }
                            m.strings.put(k, Long.toString(x + d));
                            return x + d;
                        });
                        actual = run(() -> st.incrBy(b(k), d));
                    }
                    case 5 -> {
                        expected = run(() -> {
                            m.wrongIfString(k);
                            var h = m.hashes.computeIfAbsent(k, x -> new LinkedHashMap<>());
                            return h.put(f, v) == null ? 1L : 0L;
                        });
                        actual = run(() -> st.hset(b(k), List.of(b(f), b(v))));
                    }
                    case 6 -> {
                        expected = run(() -> {
                            m.wrongIfString(k);
                            var h = m.hashes.get(k);
                            long n = h != null && h.remove(f) != null ? 1 : 0;
                            if (h != null && h.isEmpty()) {
                                m.del(k);
                            }
                            return n;
                        });
                        actual = run(() -> st.hdel(b(k), b(f)));
                    }
                    case 7 -> {
                        expected = run(() -> {
                            m.wrongIfString(k);
                            var h = m.hashes.get(k);
                            return h == null ? null : h.get(f);
                        });
                        actual = run(() -> st.hget(b(k), b(f)));
                    }
                    case 8 -> {
                        long at = FAR + rnd.nextInt(1000);
                        expected = run(() -> {
                            if (!m.exists(k)) {
                                return false;
                            }
                            m.ttl.put(k, at);
                            return true;
                        });
                        actual = run(() -> st.expireAt(b(k), at));
                    }
                    case 9 -> {
                        expected = run(() -> m.exists(k) && m.ttl.remove(k) != null);
                        actual = run(() -> st.persist(b(k)));
                    }
                    case 10 -> {
                        expected = run(() -> {
                            if (!m.exists(k)) {
                                throw new NoSuchKeyException();
                            }
                            if (k.equals(k2)) {
                                return true;
                            }
                            String sv = m.strings.get(k);
                            var hv = m.hashes.get(k);
                            Long t = m.ttl.get(k);
                            m.del(k);
                            m.del(k2);
                            if (sv != null) {
                                m.strings.put(k2, sv);
                            } else {
                                m.hashes.put(k2, hv);
                            }
                            if (t != null) {
                                m.ttl.put(k2, t);
                            }
                            return true;
                        });
                        actual = run(() -> st.rename(b(k), b(k2), false));
                    }
                    case 11 -> {
                        expected = run(() -> {
                            m.del(k);
                            m.del(k2);
                            m.strings.put(k, v);
                            m.strings.put(k2, v + "2");
                            return true;
                        });
                        actual = run(() -> st.mset(List.of(b(k), b(v), b(k2), b(v + "2")), false));
                    }
                    case 12 -> {
                        int off = rnd.nextInt(8);
                        expected = run(() -> {
                            m.wrongIfHash(k);
                            StringBuilder sb = new StringBuilder(m.strings.getOrDefault(k, ""));
                            while (sb.length() < off) {
                                sb.append('\0');
                            }
                            for (int i = 0; i < v.length(); i++) {
                                if (off + i < sb.length()) {
                                    sb.setCharAt(off + i, v.charAt(i));
                                } else {
                                    sb.append(v.charAt(i));
                                }
                            }
                            m.strings.put(k, sb.toString());
                            return (long) sb.length();
                        });
                        actual = run(() -> st.setRange(b(k), off, b(v)));
                    }
                    case 13 -> {
                        expected = run(() -> {
                            m.wrongIfHash(k);
                            String old = m.strings.get(k);
                            m.del(k);
                            return old;
                        });
                        actual = run(() -> st.getDel(b(k)));
                    }
                    case 14 -> {
                        expected = run(() -> {
                            m.wrongIfString(k);
                            var h = m.hashes.get(k);
                            List<Object> out = new ArrayList<>();
                            if (h != null) {
                                h.forEach((x, y) -> {
                                    out.add(x);
                                    out.add(y);
                                });
                            }
                            return out;
                        });
                        actual = run(() -> st.hgetAll(b(k)));
                    }
                    case 15 -> {
                        if (rnd.nextInt(8) == 0) {
                            st.snapshot();
                        }
                        expected = null;
                        actual = null;
                    }
                    default -> {
                        if (rnd.nextInt(4) == 0) {
                            st.close();
                            holder[0] = Store.open(cfg);
                        }
                        expected = null;
                        actual = null;
                    }
                }
                assertEquals(expected, actual, what);
                if (step % 25 == 0 || op >= 15) {
                    compareAll(m, holder[0], what);
                }
            }
            holder[0].close();
            holder[0] = Store.open(cfg);
            compareAll(m, holder[0], "final reopen");
        } finally {
            holder[0].close();
        }
    }

    private static void compareAll(Model m, Store st, String what) {
        assertEquals(m.strings.size() + m.hashes.size(), st.size(), what + ": size");
        for (int i = 0; i < KEYS; i++) {
            String k = "k" + i;
            if (m.strings.containsKey(k)) {
                assertEquals(m.strings.get(k), s(st.get(b(k))), what + ": " + k);
            } else if (m.hashes.containsKey(k)) {
                List<String> flat = new ArrayList<>();
                m.hashes.get(k).forEach((x, y) -> {
                    flat.add(x);
                    flat.add(y);
                });
                List<String> got = new ArrayList<>();
                for (byte[] x : st.hgetAll(b(k))) {
                    got.add(s(x));
                }
                assertEquals(flat, got, what + ": " + k);
            } else {
                assertEquals(ValueType.NONE, st.type(b(k)), what + ": " + k);
            }
            Long t = m.ttl.get(k);
            long expect = !m.exists(k) ? -2 : t == null ? -1 : t;
            assertEquals(expect, st.expireTime(b(k)), what + ": ttl of " + k);
        }
    }
}
