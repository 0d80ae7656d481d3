package io.rdmastore.store;

import java.util.List;

/**
 * The recent part of the log as an oplog: whole frames (header and payload, exactly as in the segment files) by
 * (term, index), for readers that consume it at their own positions: each secondary, a rejoining member's rollback.
 * Like a capped collection (MongoDB's oplog), it keeps the newest frames up to a byte budget; a reader whose position
 * fell out of it resynchronises from a snapshot. The log files stay the durable record.
 *
 * <p>Thread-safe: the log writer adds under its append lock (so indexes are consecutive and in file order), readers
 * read under this object's monitor. Frames handed out are never changed; readers must not change them.
 */
public final class Oplog {
    /** One frame with its position. {@code frame} is shared and read-only. */
    public record Entry(long term, long index, byte[] frame) {
    }

    private final long capacityBytes;
    private long[] terms = new long[1024];
    private byte[][] frames = new byte[1024][];
    /** Index of the oldest frame held; meaningful when count > 0. */
    private long first = 1;
    private int head;
    private int count;
    private long bytes;
    /** Position of the newest frame ever added (kept when the window is empty or cleared). */
    private long lastTerm;
    private long lastIndex;

    Oplog(long capacityBytes) {
        this.capacityBytes = capacityBytes;
    }

    /** Appends the frame at {@code index}, which must follow the last one; drops the oldest frames over budget. */
    synchronized void add(long term, long index, byte[] frame) {
        if (frame == null) {
            // Nothing retained (capacity 0): only the position moves.
            reset(term, index);
            return;
        }
        if (index != lastIndex + 1 && count > 0) {
            throw new IllegalStateException("oplog index " + index + " does not follow " + lastIndex);
        }
        if (count == 0) {
            first = index;
        }
        if (count == frames.length) {
            grow();
        }
        int slot = (head + count) & (frames.length - 1);
        terms[slot] = term;
        frames[slot] = frame;
        count++;
        bytes += frame.length;
        lastTerm = term;
        lastIndex = index;
        while (bytes > capacityBytes && count > 1) {
            bytes -= frames[head].length;
            frames[head] = null;
            head = (head + 1) & (frames.length - 1);
            count--;
            first++;
        }
    }

    private void grow() {
        int n = frames.length;
        long[] t = new long[n * 2];
        byte[][] f = new byte[n * 2][];
        for (int i = 0; i < count; i++) {
            int s = (head + i) & (n - 1);
            t[i] = terms[s];
            f[i] = frames[s];
        }
        terms = t;
        frames = f;
        head = 0;
    }

    /** Whether frames are kept at all (a member of a replica set); a standalone store only tracks the position. */
    boolean retains() {
        return capacityBytes > 0;
    }

    /** Forgets every frame and restarts after {@code (term, index)} (a snapshot was installed). */
    synchronized void reset(long term, long index) {
        for (int i = 0; i < count; i++) {
            frames[(head + i) & (frames.length - 1)] = null;
        }
        count = 0;
        bytes = 0;
        head = 0;
        first = index + 1;
        lastTerm = term;
        lastIndex = index;
    }

    /** Index of the oldest frame held, or lastIndex + 1 when none is. */
    public synchronized long firstIndex() {
        return count == 0 ? lastIndex + 1 : first;
    }

    public synchronized long lastIndex() {
        return lastIndex;
    }

    public synchronized long lastTerm() {
        return lastTerm;
    }

    public synchronized long bytes() {
        return bytes;
    }

    /** The term of the frame at {@code index}: -1 when it is not held (too old or not written yet). */
    public synchronized long termAt(long index) {
        if (count == 0) {
            return index == lastIndex && index > 0 ? lastTerm : -1;
        }
        if (index < first || index > lastIndex) {
            return -1;
        }
        return terms[(int) ((head + (index - first)) & (frames.length - 1))];
    }

    /**
     * Copies into {@code out} the frames from {@code from} on, at least one when there is one, then more while they
     * fit in {@code maxBytes}. Returns the number added: 0 when {@code from} is past the newest frame, -1 when it is
     * older than the oldest held (the reader must resynchronise).
     */
    public synchronized int read(long from, long maxBytes, List<Entry> out) {
        if (from > lastIndex) {
            return 0;
        }
        if (count == 0 || from < first) {
            return -1;
        }
        int n = 0;
        long size = 0;
        for (long i = from; i <= lastIndex; i++) {
            int s = (int) ((head + (i - first)) & (frames.length - 1));
            if (n > 0 && size + frames[s].length > maxBytes) {
                break;
            }
            out.add(new Entry(terms[s], i, frames[s]));
            size += frames[s].length;
            n++;
        }
        return n;
    }

    @Override
    public synchronized String toString() {
        return "Oplog[" + firstIndex() + ".." + lastIndex + ", " + bytes + " bytes]";
    }
}
