package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static io.rdmastore.store.TestSupport.s;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Set values: each command against a reference model, and the same sets after log replay and after a snapshot. */
@Timeout(60)
class SetsTest {
    @TempDir
    Path dir;

    private static Set<String> strings(List<byte[]> l) {
        Set<String> out = new TreeSet<>();
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
            Sets sets = store.sets();
            assertEquals(3, sets.add(b("a"), bs("1", "2", "3", "2")));
            assertEquals(1, sets.add(b("a"), bs("3", "4")));
            assertEquals(ValueType.SET, store.type(b("a")));
            assertEquals(4, sets.size(b("a")));
            assertTrue(sets.isMember(b("a"), b("4")));
            assertArrayEquals(new boolean[] {true, false}, sets.areMembers(b("a"), bs("1", "9")));
            sets.add(b("b"), bs("3", "4", "5"));
            assertEquals(Set.of("3", "4"), strings(sets.combine(Sets.Op.INTER, bs("a", "b"))));
            assertEquals(Set.of("1", "2", "3", "4", "5"), strings(sets.combine(Sets.Op.UNION, bs("a", "b"))));
            assertEquals(Set.of("1", "2"), strings(sets.combine(Sets.Op.DIFF, bs("a", "b"))));
            assertEquals(Set.of(), strings(sets.combine(Sets.Op.INTER, bs("a", "none"))));
            assertEquals(1, sets.intersectionSize(bs("a", "b"), 1));
            assertEquals(2, sets.combineInto(Sets.Op.INTER, b("c"), bs("a", "b")));
            assertEquals(0, sets.combineInto(Sets.Op.INTER, b("c"), bs("a", "none")));
            assertFalse(store.exists(b("c")) > 0);
            assertTrue(sets.move(b("a"), b("d"), b("1")));
            assertFalse(sets.move(b("a"), b("d"), b("1")));
            assertEquals(2, sets.remove(b("a"), bs("2", "3", "nope")));
            assertEquals(Set.of("4"), strings(sets.members(b("a"))));
            assertEquals(1, sets.remove(b("a"), bs("4")));
            assertEquals(0, store.exists(b("a")));
            store.set(b("str"), b("v"));
            assertThrows(WrongTypeException.class, () -> sets.add(b("str"), bs("x")));
            assertThrows(WrongTypeException.class, () -> sets.combine(Sets.Op.UNION, bs("none", "str")));
            assertThrows(WrongTypeException.class, () -> store.hlen(b("b")));
            assertEquals(3, sets.randomMembers(b("b"), 10).size());
            assertEquals(7, sets.randomMembers(b("b"), -7).size());
            List<byte[]> popped = sets.pop(b("b"), 2);
            assertEquals(2, popped.size());
            assertEquals(1, sets.size(b("b")));
            assertEquals(1, sets.pop(b("b"), 5).size());
            assertEquals(0, store.exists(b("b")));
        }
    }

    /** Random set commands against a map of Java sets; the store must agree after each run and after recovery. */
    @Test
    void modelBasedWithRecoveryAndSnapshot() {
        Random rnd = new Random(7);
        Map<String, Set<String>> model = new HashMap<>();
        try (Store store = TestSupport.open(dir)) {
            Sets sets = store.sets();
            for (int i = 0; i < 5000; i++) {
                String k = "k" + rnd.nextInt(8);
                String m = "m" + rnd.nextInt(30);
                switch (rnd.nextInt(6)) {
                    case 0, 1 -> {
                        boolean fresh = model.computeIfAbsent(k, x -> new HashSet<>()).add(m);
                        assertEquals(fresh ? 1 : 0, sets.add(b(k), bs(m)));
                    }
                    case 2 -> {
                        Set<String> cur = model.get(k);
                        boolean had = cur != null && cur.remove(m);
                        if (cur != null && cur.isEmpty()) {
                            model.remove(k);
                        }
                        assertEquals(had ? 1 : 0, sets.remove(b(k), bs(m)));
                    }
                    case 3 -> {
                        String dest = "k" + rnd.nextInt(8);
                        Set<String> r = new HashSet<>(model.getOrDefault(k, Set.of()));
                        r.addAll(model.getOrDefault("k0", Set.of()));
                        if (r.isEmpty()) {
                            model.remove(dest);
                        } else {
                            model.put(dest, r);
                        }
                        assertEquals(r.size(), sets.combineInto(Sets.Op.UNION, b(dest), bs(k, "k0")));
                    }
                    case 4 -> {
                        List<byte[]> p = sets.pop(b(k), 1);
                        Set<String> cur = model.get(k);
                        if (cur == null) {
                            assertTrue(p.isEmpty());
                        } else {
                            assertTrue(cur.remove(s(p.getFirst())));
                            if (cur.isEmpty()) {
                                model.remove(k);
                            }
                        }
                    }
                    default -> {
                        String to = "k" + rnd.nextInt(8);
                        Set<String> src = model.get(k);
                        boolean moved = src != null && src.contains(m);
                        if (moved && !k.equals(to)) {
                            src.remove(m);
                            if (src.isEmpty()) {
                                model.remove(k);
                            }
                            model.computeIfAbsent(to, x -> new HashSet<>()).add(m);
                        }
                        assertEquals(moved, sets.move(b(k), b(to), b(m)));
                    }
                }
                if (i == 2500) {
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

    private static void assertAgrees(Store store, Map<String, Set<String>> model) {
        for (int i = 0; i < 8; i++) {
            String k = "k" + i;
            assertEquals(new TreeSet<>(model.getOrDefault(k, Set.of())), strings(store.sets().members(b(k))), k);
        }
    }

    @Test
    void scanVisitsEveryMemberAndCopyRenameKeepTheSet() {
        try (Store store = TestSupport.open(dir)) {
            Sets sets = store.sets();
            List<byte[]> many = new ArrayList<>();
            for (int i = 0; i < 1000; i++) {
                many.add(b("member:" + i));
            }
            sets.add(b("big"), many);
            Set<String> seen = new HashSet<>();
            long cursor = 0;
            int calls = 0;
            do {
                ScanResult r = sets.scan(b("big"), cursor, "member:1*", 50);
                seen.addAll(strings(r.keys()));
                cursor = r.nextCursor();
                calls++;
            } while (cursor != 0 && calls < 1000);
            assertEquals(111, seen.size());
            assertTrue(store.copy(b("big"), b("copy"), false));
            store.rename(b("copy"), b("renamed"), false);
            assertEquals(1000, sets.size(b("renamed")));
        }
        try (Store store = TestSupport.open(dir)) {
            assertEquals(1000, store.sets().size(b("renamed")));
            assertEquals(1000, store.sets().size(b("big")));
        }
    }
}
