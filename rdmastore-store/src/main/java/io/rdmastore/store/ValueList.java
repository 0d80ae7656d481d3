package io.rdmastore.store;

import java.util.ArrayList;
import java.util.List;

/**
 * The elements of a list value: a growable ring buffer, so pushes and pops at either end are O(1) and access by
 * index is O(1). Not thread-safe: guarded by its key's shard lock. Elements are private heap arrays.
 */
final class ValueList {
    private byte[][] items = new byte[8][];
    private int head;
    private int size;

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    byte[] get(int i) {
        return items[(head + i) & (items.length - 1)];
    }

    void set(int i, byte[] v) {
        items[(head + i) & (items.length - 1)] = v;
    }

    void addFirst(byte[] v) {
        grow();
        head = (head - 1) & (items.length - 1);
        items[head] = v;
        size++;
    }

    void addLast(byte[] v) {
        grow();
        items[(head + size) & (items.length - 1)] = v;
        size++;
    }

    byte[] removeFirst() {
        byte[] v = items[head];
        items[head] = null;
        head = (head + 1) & (items.length - 1);
        size--;
        return v;
    }

    byte[] removeLast() {
        int at = (head + size - 1) & (items.length - 1);
        byte[] v = items[at];
        items[at] = null;
        size--;
        return v;
    }

    /** Elements {@code from..to} inclusive (valid indexes), as a new list of the stored arrays. */
    List<byte[]> range(int from, int to) {
        List<byte[]> out = new ArrayList<>(Math.max(0, to - from + 1));
        for (int i = from; i <= to; i++) {
            out.add(get(i));
        }
        return out;
    }

    private void grow() {
        if (size < items.length) {
            return;
        }
        byte[][] n = new byte[items.length * 2][];
        for (int i = 0; i < size; i++) {
            n[i] = get(i);
        }
        items = n;
        head = 0;
    }
}
