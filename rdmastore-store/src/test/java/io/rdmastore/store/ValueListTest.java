package io.rdmastore.store;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The packed list against a plain model, through every operation, sizes across chunk limits and large elements. */
class ValueListTest {
    private static byte[] value(SplittableRandom rnd, int n) {
        byte[] v = new byte[rnd.nextInt(10) == 0 ? rnd.nextInt(ValueList.CHUNK_BYTES * 3) : rnd.nextInt(40)];
        for (int i = 0; i < v.length; i++) {
            v[i] = (byte) (n + i);
        }
        return v;
    }

    @Test
    void behavesAsADequeWithIndexes() {
        SplittableRandom rnd = new SplittableRandom(7);
        ValueList list = new ValueList();
        List<byte[]> model = new ArrayList<>();
        for (int step = 0; step < 60_000; step++) {
            int op = rnd.nextInt(10);
            if (op < 3) {
                byte[] v = value(rnd, step);
                list.addLast(v);
                model.add(v.clone());
            } else if (op < 6) {
                byte[] v = value(rnd, step);
                list.addFirst(v);
                model.addFirst(v.clone());
            } else if (op == 6 && !model.isEmpty()) {
                assertArrayEquals(model.removeFirst(), list.removeFirst());
            } else if (op == 7 && !model.isEmpty()) {
                assertArrayEquals(model.removeLast(), list.removeLast());
            } else if (op == 8 && !model.isEmpty()) {
                int i = rnd.nextInt(model.size());
                byte[] v = value(rnd, step);
                list.set(i, v);
                model.set(i, v.clone());
            } else if (!model.isEmpty()) {
                int i = rnd.nextInt(model.size());
                assertArrayEquals(model.get(i), list.get(i), "element " + i);
                assertEquals(model.get(i).length, list.lengthAt(i));
                assertEquals(true, list.equalsAt(i, model.get(i)));
                assertEquals(false, list.equalsAt(i, Arrays.copyOf(model.get(i), model.get(i).length + 1)));
            }
            assertEquals(model.size(), list.size());
            if (step % 5_000 == 0 && !model.isEmpty()) {
                // forwards and backwards scans (the cursor), and a range
                for (int i = 0; i < model.size(); i++) {
                    assertArrayEquals(model.get(i), list.get(i));
                }
                for (int i = model.size() - 1; i >= 0; i--) {
                    assertArrayEquals(model.get(i), list.get(i));
                }
                int from = rnd.nextInt(model.size());
                List<byte[]> r = list.range(from, model.size() - 1);
                for (int i = from; i < model.size(); i++) {
                    assertArrayEquals(model.get(i), r.get(i - from));
                }
            }
        }
        assertThrows(IndexOutOfBoundsException.class, () -> list.get(list.size()));
    }

    @Test
    void elementsAreCopies() {
        ValueList list = new ValueList();
        byte[] v = {1, 2, 3};
        list.addLast(v);
        v[0] = 9;
        byte[] got = list.get(0);
        assertArrayEquals(new byte[] {1, 2, 3}, got, "the list keeps its own copy");
        got[1] = 9;
        assertArrayEquals(new byte[] {1, 2, 3}, list.get(0), "and hands out copies");
    }
}
