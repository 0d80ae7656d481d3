package io.rdmastore.store;

import java.util.Arrays;
import org.agrona.collections.Object2LongHashMap;

/**
 * The members of a sorted set value: an Agrona {@link Object2LongHashMap} from member to score (the score's bits, no
 * boxing) for O(1) ZSCORE and membership, and the members in (score, member) order in a list of sorted blocks of at
 * most {@value #MAX_BLOCK} entries, each block a pair of parallel arrays (scores, members). Order is Redis's: score,
 * then member bytes compared unsigned (memcmp, shorter first).
 *
 * <p>Costs, n members, m = about n / 96 blocks: add and remove O(log n + {@value #MAX_BLOCK}) (a binary search over the
 * blocks' last entries, one within the block, an array copy inside one block, now and then a block split or merge
 * that shifts the block list, O(m)); rank of a member and member at a rank O(log n) plus, after a change, a
 * recount of the block sizes from the changed block on (O(m), about 10 k additions at 1 M members); a range of k
 * members O(log n + k). Why not a library: {@link java.util.TreeMap} and
 * {@link java.util.concurrent.ConcurrentSkipListMap} have no rank (ZRANK, ZRANGE by index would be O(n)) and cost
 * about twice the memory per member of these arrays; no dependency offers an order-statistic tree.
 *
 * <p>Threads: guarded by its key's shard lock; readers may run at once under the read lock (the lazily filled rank
 * prefix is the one thing they write, published through a volatile count).
 */
final class ScoreSet {
    static final int MAX_BLOCK = 128;
    /** A NaN bit pattern: NaN is never a score, so it marks "absent" in the map. */
    private static final long MISSING = 0x7ff80000deadbeefL;

    /** Visits one member in order. */
    @FunctionalInterface
    interface Visitor {
        void visit(double score, Key member);
    }

    /** A monotone test over the order: true for a prefix of the members, false for the rest. */
    @FunctionalInterface
    interface Bound {
        boolean before(double score, Key member);
    }

    private static final class Block {
        double[] scores;
        Key[] members;
        int n;

        Block(int capacity) {
            scores = new double[capacity];
            members = new Key[capacity];
        }

        void insert(int pos, double s, Key m) {
            if (n == scores.length) {
                int cap = Math.min(MAX_BLOCK, Math.max(4, n * 2));
                scores = Arrays.copyOf(scores, cap);
                members = Arrays.copyOf(members, cap);
            }
            System.arraycopy(scores, pos, scores, pos + 1, n - pos);
            System.arraycopy(members, pos, members, pos + 1, n - pos);
            scores[pos] = s;
            members[pos] = m;
            n++;
        }

        void removeAt(int pos) {
            System.arraycopy(scores, pos + 1, scores, pos, n - pos - 1);
            System.arraycopy(members, pos + 1, members, pos, n - pos - 1);
            n--;
            members[n] = null;
        }
    }

    private final Object2LongHashMap<Key> index = new Object2LongHashMap<>(8, 0.65f, MISSING, false);
    private Block[] blocks = new Block[1];
    private int nblocks;
    /** prefix[i]: members in blocks before block i; valid for i below {@code valid}. */
    private int[] prefix = new int[1];
    /**
     * How many prefix entries are valid. Writers (under the shard's write lock) lower it; readers (many at once under
     * the read lock) fill the prefix in {@link #ensurePrefix} under this object's monitor and publish it by this
     * volatile write, so a reader that sees it complete also sees the array.
     */
    private volatile int valid;

    static int compare(double s1, Key m1, double s2, Key m2) {
        if (s1 < s2) {
            return -1;
        }
        if (s1 > s2) {
            return 1;
        }
        return Arrays.compareUnsigned(m1.bytes, m2.bytes);
    }

    int size() {
        return index.size();
    }

    boolean isEmpty() {
        return index.isEmpty();
    }

    /** The member's score, or NaN when it is not in the set. */
    double score(Key m) {
        long bits = index.getValue(m);
        return bits == MISSING ? Double.NaN : Double.longBitsToDouble(bits);
    }

    boolean contains(Key m) {
        return index.containsKey(m);
    }

    /** Sets the member's score (adding it when absent); returns true when the member is new. */
    boolean put(Key m, double s) {
        long old = index.put(m, Double.doubleToRawLongBits(s));
        if (old != MISSING) {
            double os = Double.longBitsToDouble(old);
            if (Double.doubleToRawLongBits(os) == Double.doubleToRawLongBits(s)) {
                return false;
            }
            // the map keeps the member object it already holds: move that one, so no second copy stays behind
            link(s, unlink(os, m));
            return false;
        }
        link(s, m);
        return true;
    }

    /** Removes the member; false when it was absent. */
    boolean remove(Key m) {
        long old = index.removeKey(m);
        if (old == MISSING) {
            return false;
        }
        unlink(Double.longBitsToDouble(old), m);
        if (index.isEmpty()) {
            index.compact();
        }
        return true;
    }

    /** The member's 0-based rank in ascending order, or -1 when absent. */
    int rank(Key m) {
        long bits = index.getValue(m);
        if (bits == MISSING) {
            return -1;
        }
        double s = Double.longBitsToDouble(bits);
        long loc = lowerBound((ss, mm) -> compare(ss, mm, s, m) < 0);
        ensurePrefix();
        return prefix[(int) (loc >>> 32)] + (int) loc;
    }

    /** How many members come before the first member for which {@code b} is false. */
    int count(Bound b) {
        long loc = lowerBound(b);
        if (nblocks == 0) {
            return 0;
        }
        ensurePrefix();
        return prefix[(int) (loc >>> 32)] + (int) loc;
    }

    /** Visits ranks {@code from..to} (inclusive, valid), ascending, or descending when {@code reverse}. */
    void forRange(int from, int to, boolean reverse, Visitor v) {
        if (from > to) {
            return;
        }
        ensurePrefix();
        if (!reverse) {
            int bi = blockOf(from);
            int pos = from - prefix[bi];
            for (int r = from; r <= to; r++) {
                Block b = blocks[bi];
                v.visit(b.scores[pos], b.members[pos]);
                if (++pos == b.n) {
                    bi++;
                    pos = 0;
                }
            }
        } else {
            int bi = blockOf(to);
            int pos = to - prefix[bi];
            for (int r = to; r >= from; r--) {
                Block b = blocks[bi];
                v.visit(b.scores[pos], b.members[pos]);
                if (--pos < 0 && bi > 0) {
                    bi--;
                    pos = blocks[bi].n - 1;
                }
            }
        }
    }

    /** The member at a valid rank. */
    Key memberAt(int rank) {
        ensurePrefix();
        int bi = blockOf(rank);
        return blocks[bi].members[rank - prefix[bi]];
    }

    /** The score at a valid rank. */
    double scoreAt(int rank) {
        ensurePrefix();
        int bi = blockOf(rank);
        return blocks[bi].scores[rank - prefix[bi]];
    }

    /** Visits every member in ascending order. */
    void forEach(Visitor v) {
        for (int i = 0; i < nblocks; i++) {
            Block b = blocks[i];
            for (int j = 0; j < b.n; j++) {
                v.visit(b.scores[j], b.members[j]);
            }
        }
    }

    // ---- internals ----

    /** The block holding {@code rank}; the prefix is valid. */
    private int blockOf(int rank) {
        int lo = 0;
        int hi = nblocks - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) >>> 1;
            if (prefix[mid] <= rank) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return lo;
    }

    private void ensurePrefix() {
        if (valid >= nblocks) {
            return;
        }
        synchronized (this) {
            int i = valid;
            if (i >= nblocks) {
                return;
            }
            int[] p = prefix.length < blocks.length ? Arrays.copyOf(prefix, blocks.length) : prefix;
            if (i == 0) {
                p[0] = 0;
                i = 1;
            }
            for (; i < nblocks; i++) {
                p[i] = p[i - 1] + blocks[i - 1].n;
            }
            prefix = p;
            valid = nblocks;
        }
    }

    private void invalidate(int fromBlock) {
        // prefix[i] depends on blocks before i only: a change in block b leaves prefix[0..b] valid
        if (valid > fromBlock + 1) {
            valid = fromBlock + 1;
        }
    }

    /**
     * The first position where {@code b} is false: (block << 32) | pos, where pos may equal the block's size (the
     * end of the last block when {@code b} holds everywhere). (0, 0) when empty.
     */
    private long lowerBound(Bound b) {
        if (nblocks == 0) {
            return 0;
        }
        int lo = 0;
        int hi = nblocks - 1;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            Block x = blocks[mid];
            if (b.before(x.scores[x.n - 1], x.members[x.n - 1])) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Block x = blocks[lo];
        int l = 0;
        int h = x.n;
        while (l < h) {
            int mid = (l + h) >>> 1;
            if (b.before(x.scores[mid], x.members[mid])) {
                l = mid + 1;
            } else {
                h = mid;
            }
        }
        return ((long) lo << 32) | l;
    }

    private void link(double s, Key m) {
        if (nblocks == 0) {
            blocks[0] = new Block(2);
            nblocks = 1;
            valid = 0;
        }
        long loc = lowerBound((ss, mm) -> compare(ss, mm, s, m) < 0);
        int bi = (int) (loc >>> 32);
        int pos = (int) loc;
        Block b = blocks[bi];
        if (b.n == MAX_BLOCK && pos == b.n && bi == nblocks - 1) {
            // appending in order (ascending scores): a fresh block keeps the full ones full
            b = new Block(4);
            insertBlock(++bi, b);
            pos = 0;
        } else if (b.n == MAX_BLOCK && pos == 0 && bi == 0) {
            b = new Block(4);
            insertBlock(0, b);
        } else if (b.n == MAX_BLOCK) {
            int half = MAX_BLOCK / 2;
            Block right = new Block(MAX_BLOCK);
            System.arraycopy(b.scores, half, right.scores, 0, b.n - half);
            System.arraycopy(b.members, half, right.members, 0, b.n - half);
            right.n = b.n - half;
            Arrays.fill(b.members, half, b.n, null);
            b.n = half;
            insertBlock(bi + 1, right);
            if (pos > half) {
                bi++;
                pos -= half;
                b = right;
            }
        }
        b.insert(pos, s, m);
        invalidate(bi);
    }

    /** Removes (s, m) from the blocks; returns the member object the blocks held. */
    private Key unlink(double s, Key m) {
        long loc = lowerBound((ss, mm) -> compare(ss, mm, s, m) < 0);
        int bi = (int) (loc >>> 32);
        int pos = (int) loc;
        Block b = blocks[bi];
        Key held = b.members[pos];
        b.removeAt(pos);
        invalidate(bi);
        if (b.n == 0) {
            removeBlock(bi);
        } else if (b.n < MAX_BLOCK / 4 && bi + 1 < nblocks && b.n + blocks[bi + 1].n <= MAX_BLOCK / 2) {
            Block next = blocks[bi + 1];
            for (int i = 0; i < next.n; i++) {
                b.insert(b.n, next.scores[i], next.members[i]);
            }
            removeBlock(bi + 1);
        } else if (b.scores.length > 8 && b.n < b.scores.length / 4) {
            b.scores = Arrays.copyOf(b.scores, b.scores.length / 2);
            b.members = Arrays.copyOf(b.members, b.members.length / 2);
        }
        return held;
    }

    private void insertBlock(int at, Block b) {
        if (nblocks == blocks.length) {
            blocks = Arrays.copyOf(blocks, blocks.length * 2);
        }
        System.arraycopy(blocks, at, blocks, at + 1, nblocks - at);
        blocks[at] = b;
        nblocks++;
        invalidate(at - 1);
    }

    private void removeBlock(int at) {
        System.arraycopy(blocks, at + 1, blocks, at, nblocks - at - 1);
        nblocks--;
        blocks[nblocks] = null;
        invalidate(Math.max(0, at - 1));
        if (nblocks == 0) {
            valid = 0;
        }
    }
}
