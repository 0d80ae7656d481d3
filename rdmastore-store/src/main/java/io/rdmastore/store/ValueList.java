package io.rdmastore.store;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The elements of a list value, packed: chunks of up to {@value #CHUNK_ELEMENTS} elements whose bytes lie back to back
 * in one array (with each element's end offset beside it), as Redis's quicklist of listpacks. A list of 1 M short
 * elements costs about the elements' bytes plus 4 per element, where one heap array per element cost 37 bytes for a
 * 13-byte element (bin/type-memory list). Pushes and pops at either end touch one chunk (at most
 * {@value #CHUNK_BYTES} bytes moved); access by index walks chunks from the nearer end or from the last position
 * looked at, so a scan by increasing index costs O(1) per element. Elements are copied out ({@link #get} returns a new
 * array). Not thread-safe: guarded by its key's shard lock.
 */
final class ValueList {
    /** Most elements in one chunk. */
    static final int CHUNK_ELEMENTS = 128;
    /** Most bytes in one chunk, unless a single element is larger (it then has a chunk of its own). */
    static final int CHUNK_BYTES = 4096;

    /** Elements {@code [0, count)}: element k is {@code data[start(k), ends[k])}. */
    private static final class Chunk {
        byte[] data;
        int[] ends = new int[4];
        int count;

        Chunk(int bytes) {
            data = new byte[Math.max(16, bytes)];
        }

        int start(int k) {
            return k == 0 ? 0 : ends[k - 1];
        }

        int end() {
            return count == 0 ? 0 : ends[count - 1];
        }

        boolean fits(int n) {
            return count < CHUNK_ELEMENTS && end() + n <= CHUNK_BYTES;
        }

        byte[] get(int k) {
            return Arrays.copyOfRange(data, start(k), ends[k]);
        }

        boolean equals(int k, byte[] v) {
            return Arrays.equals(data, start(k), ends[k], v, 0, v.length);
        }

        void insert(int k, byte[] v) {
            int n = v.length;
            int end = end();
            if (end + n > data.length) {
                data = Arrays.copyOf(data, Math.max(end + n, Math.min(2 * data.length, Math.max(CHUNK_BYTES,
                    end + n))));
            }
            if (count == ends.length) {
                ends = Arrays.copyOf(ends, Math.min(CHUNK_ELEMENTS, 2 * ends.length));
            }
            int at = start(k);
            System.arraycopy(data, at, data, at + n, end - at);
            System.arraycopy(v, 0, data, at, n);
            for (int i = count; i > k; i--) {
                ends[i] = ends[i - 1] + n;
            }
            ends[k] = at + n;
            count++;
        }

        byte[] remove(int k) {
            int at = start(k);
            int n = ends[k] - at;
            byte[] v = Arrays.copyOfRange(data, at, at + n);
            int end = end();
            System.arraycopy(data, at + n, data, at, end - at - n);
            for (int i = k; i < count - 1; i++) {
                ends[i] = ends[i + 1] - n;
            }
            count--;
            return v;
        }

        void replace(int k, byte[] v) {
            int at = start(k);
            int delta = v.length - (ends[k] - at);
            int end = end();
            if (end + delta > data.length) {
                data = Arrays.copyOf(data, Math.max(end + delta, 2 * data.length));
            }
            System.arraycopy(data, ends[k], data, ends[k] + delta, end - ends[k]);
            System.arraycopy(v, 0, data, at, v.length);
            for (int i = k; i < count; i++) {
                ends[i] += delta;
            }
        }
    }

    private final ArrayList<Chunk> chunks = new ArrayList<>();
    private int size;
    /** The chunk last looked at and the index of its first element; a hint, checked before use. */
    private int cursorChunk;
    private int cursorBase;

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    /** A copy of element {@code i} (0 to size-1). */
    byte[] get(int i) {
        Chunk c = locate(i);
        return c.get(i - cursorBase);
    }

    /** Whether element {@code i} equals {@code v}, without copying it out. */
    boolean equalsAt(int i, byte[] v) {
        Chunk c = locate(i);
        return c.equals(i - cursorBase, v);
    }

    /** The length of element {@code i}, without copying it out. */
    int lengthAt(int i) {
        Chunk c = locate(i);
        int k = i - cursorBase;
        return c.ends[k] - c.start(k);
    }

    void set(int i, byte[] v) {
        Chunk c = locate(i);
        c.replace(i - cursorBase, v);
    }

    void addFirst(byte[] v) {
        Chunk first = chunks.isEmpty() ? null : chunks.getFirst();
        if (first == null || !first.fits(v.length)) {
            first = new Chunk(v.length);
            chunks.addFirst(first);
        }
        first.insert(0, v);
        size++;
        resetCursor();
    }

    void addLast(byte[] v) {
        Chunk last = chunks.isEmpty() ? null : chunks.getLast();
        if (last == null || !last.fits(v.length)) {
            last = new Chunk(v.length);
            chunks.addLast(last);
        }
        last.insert(last.count, v);
        size++;
    }

    byte[] removeFirst() {
        Chunk first = chunks.getFirst();
        byte[] v = first.remove(0);
        if (first.count == 0) {
            chunks.removeFirst();
        }
        size--;
        resetCursor();
        return v;
    }

    byte[] removeLast() {
        Chunk last = chunks.getLast();
        byte[] v = last.remove(last.count - 1);
        if (last.count == 0) {
            chunks.removeLast();
            resetCursor();
        }
        size--;
        return v;
    }

    /** Elements {@code from..to} inclusive (valid indexes), as a new list of copies. */
    List<byte[]> range(int from, int to) {
        List<byte[]> out = new ArrayList<>(Math.max(0, to - from + 1));
        for (int i = from; i <= to; i++) {
            out.add(get(i));
        }
        return out;
    }

    private void resetCursor() {
        cursorChunk = 0;
        cursorBase = 0;
    }

    /** The chunk holding element {@code i}; leaves the cursor on it. */
    private Chunk locate(int i) {
        if (i < 0 || i >= size) {
            throw new IndexOutOfBoundsException("index " + i + " of a list of " + size);
        }
        int c = cursorChunk;
        int base = cursorBase;
        // start from whichever is nearer: the cursor, the front or the back
        int fromCursor = Math.abs(i - base);
        if (c >= chunks.size() || i < fromCursor) {
            c = 0;
            base = 0;
        }
        if (size - i < Math.abs(i - base)) {
            c = chunks.size() - 1;
            base = size - chunks.get(c).count;
        }
        while (i < base) {
            c--;
            base -= chunks.get(c).count;
        }
        while (i >= base + chunks.get(c).count) {
            base += chunks.get(c).count;
            c++;
        }
        cursorChunk = c;
        cursorBase = base;
        return chunks.get(c);
    }
}
