package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static io.rdmastore.store.TestSupport.s;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** List values: each command against a reference model, and the same lists after log replay and a snapshot. */
@Timeout(60)
class ListsTest {
    @TempDir
    Path dir;

    private static List<String> strings(List<byte[]> l) {
        List<String> out = new ArrayList<>();
        for (byte[] x : l) {
            out.add(s(x));
        }
        return out;
    }

    private static List<byte[]> bs(String... xs) {
        List<byte[]> out = new ArrayList<>();
        for (String x : xs) {
            out.add(b(x));
        }
        return out;
    }

    @Test
    void commands() {
        try (Store store = TestSupport.open(dir)) {
            Lists l = store.lists();
            assertEquals(3, l.push(b("k"), bs("a", "b", "c"), false, false));
            assertEquals(5, l.push(b("k"), bs("y", "z"), true, false));
            assertEquals(List.of("z", "y", "a", "b", "c"), strings(l.range(b("k"), 0, -1)));
            assertEquals(ValueType.LIST, store.type(b("k")));
            assertEquals(0, l.push(b("none"), bs("x"), true, true));
            assertEquals("a", s(l.index(b("k"), 2)));
            assertEquals("c", s(l.index(b("k"), -1)));
            assertNull(l.index(b("k"), 9));
            l.set(b("k"), -1, b("C"));
            assertThrows(BadRequestException.class, () -> l.set(b("k"), 5, b("x")));
            assertThrows(NoSuchKeyException.class, () -> l.set(b("none"), 0, b("x")));
            assertEquals(6, l.insert(b("k"), true, b("a"), b("before-a")));
            assertEquals(-1, l.insert(b("k"), true, b("nope"), b("x")));
            assertEquals(List.of(3L), l.positions(b("k"), b("a"), 1, 1, 0));
            l.push(b("k"), bs("a"), false, false);
            assertEquals(List.of(6L, 3L), l.positions(b("k"), b("a"), -1, 0, 0));
            assertEquals(2, l.remove(b("k"), 0, b("a")));
            assertEquals(List.of("z", "y", "before-a", "b", "C"), strings(l.range(b("k"), 0, -1)));
            l.trim(b("k"), 1, -2);
            assertEquals(List.of("y", "before-a", "b"), strings(l.range(b("k"), 0, 100)));
            assertEquals(List.of("y", "before-a"), strings(l.pop(b("k"), true, 2)));
            assertEquals("b", s(l.move(b("k"), b("k2"), false, true)));
            assertEquals(0, store.exists(b("k")));
            assertNull(l.pop(b("k"), true, 1));
            store.set(b("str"), b("v"));
            assertThrows(WrongTypeException.class, () -> l.push(b("str"), bs("x"), true, false));
            assertThrows(WrongTypeException.class, () -> l.move(b("k2"), b("str"), true, true));
            assertEquals(1, l.length(b("k2")));
        }
    }

    @Test
    void modelBasedWithRecoveryAndSnapshot() {
        Random rnd = new Random(11);
        Map<String, LinkedList<String>> model = new HashMap<>();
        try (Store store = TestSupport.open(dir)) {
            Lists l = store.lists();
            for (int i = 0; i < 6000; i++) {
                String k = "k" + rnd.nextInt(5);
                String v = "v" + rnd.nextInt(10);
                LinkedList<String> m = model.get(k);
                switch (rnd.nextInt(7)) {
                    case 0, 1 -> {
                        boolean left = rnd.nextBoolean();
                        model.computeIfAbsent(k, x -> new LinkedList<>());
                        if (left) {
                            model.get(k).addFirst(v);
                        } else {
                            model.get(k).addLast(v);
                        }
                        assertEquals(model.get(k).size(), l.push(b(k), bs(v), left, false));
                    }
                    case 2 -> {
                        List<byte[]> got = l.pop(b(k), true, 2);
                        if (m == null) {
                            assertNull(got);
                        } else {
                            List<String> want = new ArrayList<>();
                            for (int n = 0; n < 2 && !m.isEmpty(); n++) {
                                want.add(m.removeFirst());
                            }
                            assertEquals(want, strings(got));
                        }
                    }
                    case 3 -> {
                        if (m != null) {
                            int start = rnd.nextInt(4);
                            int stop = -1 - rnd.nextInt(3);
                            int from = start;
                            int to = m.size() + stop;
                            List<String> kept = from > to || from >= m.size() ? new LinkedList<>()
                                : new LinkedList<>(m.subList(from, Math.min(to, m.size() - 1) + 1));
                            m.clear();
                            m.addAll(kept);
                            l.trim(b(k), start, stop);
                        }
                    }
                    case 4 -> {
                        long removed = m == null ? 0 : m.removeIf(x -> x.equals(v)) ? 1 : 0;
                        long got = l.remove(b(k), 0, b(v));
                        assertEquals(removed > 0, got > 0);
                    }
                    case 5 -> {
                        if (m != null && !m.isEmpty()) {
                            int idx = rnd.nextInt(m.size());
                            m.set(idx, v);
                            l.set(b(k), idx, b(v));
                        }
                    }
                    default -> {
                        String to = "k" + rnd.nextInt(5);
                        byte[] moved = l.move(b(k), b(to), false, true);
                        if (m == null || m.isEmpty()) {
                            assertNull(moved);
                        } else {
                            String x = m.removeLast();
                            assertEquals(x, s(moved));
                            model.computeIfAbsent(to, y -> new LinkedList<>()).addFirst(x);
                        }
                    }
                }
                model.values().removeIf(LinkedList::isEmpty);
                if (i == 3000) {
                    store.snapshot();
                }
            }
            assertAgrees(store, model);
        }
        try (Store store = TestSupport.open(dir)) {
            assertAgrees(store, model);
            store.snapshot();
        }
        try (Store store = TestSupport.open(dir)) {
            assertAgrees(store, model);
        }
    }

    private static void assertAgrees(Store store, Map<String, LinkedList<String>> model) {
        for (int i = 0; i < 5; i++) {
            String k = "k" + i;
            assertEquals(model.getOrDefault(k, new LinkedList<>()), strings(store.lists().range(b(k), 0, -1)), k);
        }
    }

    @Test
    void storeReplacesAnyValueAndSurvivesARestart() {
        try (Store st = TestSupport.open(dir)) {
            st.set(b("d"), b("a string"), new SetOptions().expireAtMillis(System.currentTimeMillis() + 600_000));
            assertEquals(2, st.lists().store(b("d"), bs("x", "y")));
            assertEquals(List.of("x", "y"), strings(st.lists().range(b("d"), 0, -1)));
            assertEquals(-1, st.pttl(b("d")));
            st.lists().push(b("e"), bs("old"), true, false);
            assertEquals(0, st.lists().store(b("e"), List.of()));
            assertEquals(ValueType.NONE, st.type(b("e")));
        }
        try (Store st = TestSupport.open(dir)) {
            assertEquals(List.of("x", "y"), strings(st.lists().range(b("d"), 0, -1)));
            assertEquals(-1, st.pttl(b("d")));
            assertEquals(ValueType.NONE, st.type(b("e")));
        }
    }
}
