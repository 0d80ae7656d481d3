package io.rdmastore.server.replication;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * Decides whether a history of single-key reads and writes is linearizable, treating each key as a register (absent,
 * or an initial value, at first). Keys are checked apart (linearizability is compositional). Per key it runs the Wing
 * and Gong search with Lowe's memoization of (set of operations linearized, register value), as Porcupine does: the
 * operations are a list of call and return events in time order; the search linearizes the first call it can, starts
 * over, and backs up when it meets the return of an operation it has not linearized.
 *
 * <p>Outcomes: {@link Op.Outcome#FAIL} operations and {@link Op.Outcome#UNKNOWN} reads are left out. An UNKNOWN write
 * may take effect at any time after its invocation, or never: one whose value no read returned is left out (leaving
 * it out changes no read), one whose value only it wrote must take effect before the first read of that value
 * completes, any other never completes. Each key has a budget of search steps and of time; a key that exceeds it is
 * {@link Verdict#UNDECIDED}, never a violation.
 *
 * <p>Immutable and thread-safe; {@link #check} may run from any thread and keeps no state between calls.
 */
public final class LinearizabilityChecker {
    /** The verdict for one key, or for a whole history (the worst of its keys). */
    public enum Verdict { OK, VIOLATION, UNDECIDED }

    private final Function<String, String> initialValue;
    private final long maxStepsPerKey;
    private final Duration timePerKey;
    private final long memoBytesPerKey;

    private LinearizabilityChecker(Builder b) {
        this.initialValue = b.initialValue;
        this.maxStepsPerKey = b.maxStepsPerKey;
        this.timePerKey = b.timePerKey;
        this.memoBytesPerKey = b.memoBytesPerKey;
    }

    /** Registers start absent; per key 20 million steps, 20 s and 512 MB of memoized configurations. */
    public static LinearizabilityChecker create() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Options, validated by {@link #build()}. Not thread-safe. */
    public static final class Builder {
        private Function<String, String> initialValue = k -> null;
        private long maxStepsPerKey = 20_000_000;
        private Duration timePerKey = Duration.ofSeconds(20);
        private long memoBytesPerKey = 512L << 20;

        /** Each key's value before the history starts (null: absent). */
        public Builder initialValue(Function<String, String> value) {
            this.initialValue = Objects.requireNonNull(value);
            return this;
        }

        /** The initial values of the keys named; the others start absent. */
        public Builder initialValues(Map<String, String> values) {
            Map<String, String> copy = new HashMap<>(values);
            return initialValue(copy::get);
        }

        /** Search steps per key before the key is UNDECIDED. */
        public Builder maxStepsPerKey(long steps) {
            this.maxStepsPerKey = steps;
            return this;
        }

        /** Search time per key before the key is UNDECIDED. */
        public Builder timePerKey(Duration time) {
            this.timePerKey = Objects.requireNonNull(time);
            return this;
        }

        /** Memory for memoized configurations per key (about 64 bytes plus one bit per op in flight each). */
        public Builder memoBytesPerKey(long bytes) {
            this.memoBytesPerKey = bytes;
            return this;
        }

        public LinearizabilityChecker build() {
            if (maxStepsPerKey <= 0 || timePerKey.isNegative() || timePerKey.isZero() || memoBytesPerKey <= 0) {
                throw new IllegalArgumentException("budgets must be positive: steps " + maxStepsPerKey + ", time "
                    + timePerKey + ", memo bytes " + memoBytesPerKey);
            }
            return new LinearizabilityChecker(this);
        }
    }

    /**
     * The verdict on one key.
     *
     * @param ops operations of the key that the search considered (after leaving out FAIL ones and UNKNOWN reads)
     * @param steps search steps taken
     * @param explanation for a violation, the operation that cannot be linearized and the operations around it; for
     *     UNDECIDED, which budget ran out; empty when OK
     */
    public record KeyResult(String key, Verdict verdict, int ops, long steps, Duration elapsed, String explanation) {
    }

    /** The verdicts on every key of a history, by key. */
    public record Result(Map<String, KeyResult> keys) {
        /** VIOLATION if any key has one, else UNDECIDED if any key is, else OK. */
        public Verdict verdict() {
            Verdict v = Verdict.OK;
            for (KeyResult r : keys.values()) {
                if (r.verdict() == Verdict.VIOLATION) {
                    return Verdict.VIOLATION;
                }
                if (r.verdict() == Verdict.UNDECIDED) {
                    v = Verdict.UNDECIDED;
                }
            }
            return v;
        }

        public boolean isLinearizable() {
            return verdict() == Verdict.OK;
        }

        public List<KeyResult> withVerdict(Verdict v) {
            return keys.values().stream().filter(r -> r.verdict() == v).toList();
        }

        /** One line per key, followed by the explanation of every key that is not OK. */
        public String report() {
            StringBuilder sb = new StringBuilder("linearizability: ").append(verdict()).append('\n');
            for (KeyResult r : keys.values()) {
                sb.append(String.format(Locale.ROOT, "  key %s: %s, %d ops, %d steps, %d ms%n", quote(r.key()),
                    r.verdict(), r.ops(), r.steps(), r.elapsed().toMillis()));
            }
            for (KeyResult r : keys.values()) {
                if (r.verdict() != Verdict.OK) {
                    sb.append(r.explanation()).append('\n');
                }
            }
            return sb.toString();
        }
    }

    /** Checks {@code history}; ops may be in any order. Times print relative to the earliest invocation. */
    public Result check(List<Op> history) {
        long base = history.stream().mapToLong(Op::invokeNanos).min().orElse(0);
        Map<String, List<Integer>> byKey = new TreeMap<>();
        for (int i = 0; i < history.size(); i++) {
            byKey.computeIfAbsent(history.get(i).key(), k -> new ArrayList<>()).add(i);
        }
        Map<String, KeyResult> out = new LinkedHashMap<>();
        for (Map.Entry<String, List<Integer>> e : byKey.entrySet()) {
            out.put(e.getKey(), new KeySearch(e.getKey(), history, e.getValue(), base).run());
        }
        return new Result(Collections.unmodifiableMap(out));
    }

    /** The search on one key; used once by one thread. */
    private final class KeySearch {
        private final String key;
        private final List<Op> history;
        private final long base;
        private final long startNanos = System.nanoTime();
        private final List<Integer> all;
        /** Original indexes of the operations searched, by search index. */
        private int[] index;
        private Op[] ops;
        /** Effective completion per search index; Long.MAX_VALUE: never. */
        private long[] complete;
        private final Map<String, Integer> valueIds = new HashMap<>();
        private int[] valueOf;
        private long steps;
        // the deepest point where the search got stuck, for the explanation
        private int bestDepth = -1;
        private int bestBlocked = -1;
        private int bestState;
        private int[] bestTail = new int[0];
        private int[] bestCandidates = new int[0];

        KeySearch(String key, List<Op> history, List<Integer> indexes, long base) {
            this.key = key;
            this.history = history;
            this.all = indexes;
            this.base = base;
        }

        private int valueId(String v) {
            return v == null ? 0 : valueIds.computeIfAbsent(v, x -> valueIds.size() + 1);
        }

        KeyResult run() {
            String initial = initialValue.apply(key);
            int initialId = valueId(initial);
            List<Integer> reads = new ArrayList<>();
            List<Integer> writes = new ArrayList<>();
            for (int i : all) {
                Op op = history.get(i);
                if (op.outcome() == Op.Outcome.FAIL || op.kind() == Op.Kind.READ && op.outcome() != Op.Outcome.OK) {
                    continue;
                }
                (op.kind() == Op.Kind.READ ? reads : writes).add(i);
            }
            // Which writes wrote each value, and when each value was first read by.
            Map<Integer, Integer> writers = new HashMap<>();
            for (int i : writes) {
                writers.merge(valueId(history.get(i).value()), 1, Integer::sum);
            }
            Map<Integer, Long> firstReadDone = new HashMap<>();
            for (int i : reads) {
                Op r = history.get(i);
                int v = valueId(r.value());
                if (v != initialId && !writers.containsKey(v)) {
                    return done(Verdict.VIOLATION, reads.size() + writes.size(), neverWritten(i, initial));
                }
                firstReadDone.merge(v, r.completeNanos(), Math::min);
            }
            List<Integer> kept = new ArrayList<>(reads);
            List<Long> completes = new ArrayList<>(Collections.nCopies(reads.size(), 0L));
            for (int i = 0; i < reads.size(); i++) {
                completes.set(i, history.get(reads.get(i)).completeNanos());
            }
            for (int i : writes) {
                Op w = history.get(i);
                long c = w.completeNanos();
                if (w.outcome() == Op.Outcome.UNKNOWN) {
                    int v = valueId(w.value());
                    Long readDone = firstReadDone.get(v);
                    if (readDone == null) {
                        continue; // nobody saw it: a history with it is linearizable iff one without it is
                    }
                    c = writers.get(v) == 1 && v != initialId ? Math.max(readDone, w.invokeNanos()) : Long.MAX_VALUE;
                }
                kept.add(i);
                completes.add(c);
            }
            // In invocation order, a linearized set is a full prefix plus a window of ops in flight (LinearizedSet).
            Integer[] byInvoke = new Integer[kept.size()];
            for (int i = 0; i < byInvoke.length; i++) {
                byInvoke[i] = i;
            }
            Arrays.sort(byInvoke, Comparator.<Integer>comparingLong(i -> history.get(kept.get(i)).invokeNanos())
                .thenComparingInt(i -> kept.get(i)));
            List<Integer> sortedKept = new ArrayList<>();
            List<Long> sortedCompletes = new ArrayList<>();
            for (int i : byInvoke) {
                sortedKept.add(kept.get(i));
                sortedCompletes.add(completes.get(i));
            }
            int n = sortedKept.size();
            index = new int[n];
            ops = new Op[n];
            complete = new long[n];
            valueOf = new int[n];
            for (int i = 0; i < n; i++) {
                index[i] = sortedKept.get(i);
                ops[i] = history.get(index[i]);
                complete[i] = sortedCompletes.get(i);
                valueOf[i] = valueId(ops[i].value());
            }
            return search(initialId);
        }

        private KeyResult search(int initialState) {
            int n = ops.length;
            // Events: 2*i is the call of op i, 2*i+1 its return; head and tail sentinels after them.
            Integer[] order = new Integer[2 * n];
            for (int e = 0; e < 2 * n; e++) {
                order[e] = e;
            }
            Arrays.sort(order, Comparator.<Integer>comparingLong(e -> time(e))
                .thenComparingInt(e -> e & 1) // at equal times calls first: the two ops count as concurrent
                .thenComparingInt(e -> e));
            int head = 2 * n;
            int tail = 2 * n + 1;
            int[] next = new int[2 * n + 2];
            int[] prev = new int[2 * n + 2];
            int last = head;
            for (Integer e : order) {
                next[last] = e;
                prev[e] = last;
                last = e;
            }
            next[last] = tail;
            prev[tail] = last;

            int finite = 0;
            for (int i = 0; i < n; i++) {
                if (complete[i] != Long.MAX_VALUE) {
                    finite++;
                }
            }
            LinearizedSet linearized = new LinearizedSet(n);
            Set<Config> seen = new HashSet<>();
            long memoBytes = 0;
            int[] stackOp = new int[n];
            int[] stackState = new int[n];
            int depth = 0;
            int state = initialState;
            long deadline = startNanos + timePerKey.toNanos();
            int e = next[head];
            while (finite > 0) {
                if (++steps > maxStepsPerKey) {
                    return done(Verdict.UNDECIDED, n, "key " + quote(key) + ": UNDECIDED, " + maxStepsPerKey
                        + " search steps were not enough (" + n + " ops)");
                }
                if ((steps & 1023) == 0 && System.nanoTime() - deadline > 0) {
                    return done(Verdict.UNDECIDED, n, "key " + quote(key) + ": UNDECIDED, " + timePerKey.toMillis()
                        + " ms were not enough (" + n + " ops, " + steps + " steps)");
                }
                if (e == tail) {
                    throw new IllegalStateException("search ran off the end of the event list");
                }
                int op = e >>> 1;
                if ((e & 1) == 0) {
                    int after = step(state, op);
                    if (after >= 0) {
                        linearized.add(op);
                        if (!seen.contains(linearized.probe(after))) {
                            Config c = linearized.config(after);
                            memoBytes += c.bytes();
                            if (memoBytes > memoBytesPerKey) {
                                return done(Verdict.UNDECIDED, n, "key " + quote(key) + ": UNDECIDED, "
                                    + memoBytesPerKey + " bytes of memoized configurations were not enough (" + n
                                    + " ops, " + steps + " steps, " + seen.size() + " configurations)");
                            }
                            seen.add(c);
                            stackOp[depth] = op;
                            stackState[depth++] = state;
                            state = after;
                            lift(e, next, prev);
                            if (complete[op] != Long.MAX_VALUE) {
                                finite--;
                            }
                            e = next[head];
                            continue;
                        }
                        linearized.remove(op);
                    }
                    e = next[e];
                } else {
                    // The return of an op not linearized: nothing linearized so far can be followed by it in time.
                    if (depth > bestDepth) {
                        remember(depth, op, state, stackOp, head, e, next);
                    }
                    if (depth == 0) {
                        return done(Verdict.VIOLATION, n, explain());
                    }
                    int undo = stackOp[--depth];
                    state = stackState[depth];
                    linearized.remove(undo);
                    if (complete[undo] != Long.MAX_VALUE) {
                        finite++;
                    }
                    unlift(2 * undo, next, prev);
                    e = next[2 * undo];
                }
            }
            return done(Verdict.OK, n, "");
        }

        private long time(int e) {
            int op = e >>> 1;
            return (e & 1) == 0 ? ops[op].invokeNanos() : complete[op];
        }

        /** The register value after op, or -1 if op cannot take effect on {@code state}. */
        private int step(int state, int op) {
            if (ops[op].kind() == Op.Kind.WRITE) {
                return valueOf[op];
            }
            return valueOf[op] == state ? state : -1;
        }

        private static void lift(int call, int[] next, int[] prev) {
            int ret = call + 1;
            next[prev[call]] = next[call];
            prev[next[call]] = prev[call];
            next[prev[ret]] = next[ret];
            prev[next[ret]] = prev[ret];
        }

        private static void unlift(int call, int[] next, int[] prev) {
            int ret = call + 1;
            next[prev[ret]] = ret;
            prev[next[ret]] = ret;
            next[prev[call]] = call;
            prev[next[call]] = call;
        }

        private void remember(int depth, int blocked, int state, int[] stackOp, int head, int ret, int[] next) {
            bestDepth = depth;
            bestBlocked = blocked;
            bestState = state;
            bestTail = Arrays.copyOfRange(stackOp, Math.max(0, depth - 6), depth);
            List<Integer> candidates = new ArrayList<>();
            for (int e = next[head]; e != ret && candidates.size() < 8; e = next[e]) {
                if ((e & 1) == 0 && (e >>> 1) != blocked) {
                    candidates.add(e >>> 1);
                }
            }
            bestCandidates = candidates.stream().mapToInt(Integer::intValue).toArray();
        }

        private String explain() {
            StringBuilder sb = new StringBuilder();
            sb.append("key ").append(quote(key)).append(": VIOLATION, no order of its ").append(ops.length)
                .append(" ops is legal. The longest legal order found takes ").append(bestDepth)
                .append(" ops and leaves the register at ").append(quote(valueName(bestState)))
                .append("; after it this op cannot take effect before it completes:\n");
            sb.append("  >> ").append(describe(bestBlocked)).append('\n');
            if (bestTail.length > 0) {
                sb.append("  the last ops of that order:\n");
                for (int op : bestTail) {
                    sb.append("     ").append(describe(op)).append('\n');
                }
            }
            if (bestCandidates.length > 0) {
                sb.append("  the other ops that could have come next:\n");
                for (int op : bestCandidates) {
                    sb.append("     ").append(describe(op)).append('\n');
                }
            }
            sb.append("  all ops of the key overlapping it in time:\n");
            Op b = ops[bestBlocked];
            int shown = 0;
            for (int op = 0; op < ops.length && shown < 12; op++) {
                if (op != bestBlocked && ops[op].invokeNanos() <= complete[bestBlocked]
                    && complete[op] >= b.invokeNanos()) {
                    sb.append("     ").append(describe(op)).append('\n');
                    shown++;
                }
            }
            if (shown == 0) {
                sb.append("     (none)\n");
            }
            return sb.toString();
        }

        private String neverWritten(int historyIndex, String initial) {
            Op r = history.get(historyIndex);
            StringBuilder sb = new StringBuilder("key ").append(quote(key)).append(": VIOLATION, a read returned ")
                .append(quote(r.value())).append(", which no OK or UNKNOWN write of the key wrote (initial value ")
                .append(quote(initial)).append("):\n  >> ").append(describe(historyIndex, r, r.completeNanos()))
                .append('\n');
            for (int i : all) {
                Op w = history.get(i);
                if (w.kind() == Op.Kind.WRITE && Objects.equals(w.value(), r.value())) {
                    sb.append("  written only by a write that did not take effect:\n     ")
                        .append(describe(i, w, w.completeNanos())).append('\n');
                }
            }
            return sb.toString();
        }

        private String valueName(int id) {
            if (id == 0) {
                return null;
            }
            for (Map.Entry<String, Integer> v : valueIds.entrySet()) {
                if (v.getValue() == id) {
                    return v.getKey();
                }
            }
            return "?";
        }

        private String describe(int op) {
            return describe(index[op], ops[op], complete[op]);
        }

        private String describe(int historyIndex, Op op, long effectiveComplete) {
            String what = op.kind() == Op.Kind.READ ? "READ  -> " + quote(op.value()) : "WRITE " + quote(op.value());
            String end;
            if (op.outcome() == Op.Outcome.UNKNOWN) {
                end = effectiveComplete == Long.MAX_VALUE ? "never" : "before " + millis(effectiveComplete)
                    + " (first read of it)";
                end += "; client gave up at " + millis(op.completeNanos());
            } else {
                end = millis(op.completeNanos());
            }
            return String.format(Locale.ROOT, "#%-5d client %-3d %-32s %-7s [%s, %s] ms", historyIndex, op.client(),
                what, op.outcome(), millis(op.invokeNanos()), end);
        }

        private String millis(long nanos) {
            return String.format(Locale.ROOT, "+%.3f", (nanos - base) / 1e6);
        }

        private KeyResult done(Verdict v, int n, String explanation) {
            return new KeyResult(key, v, n, steps, Duration.ofNanos(System.nanoTime() - startNanos), explanation);
        }
    }

    /**
     * The set of linearized ops (indexed in invocation order), kept as a bit set with the two facts that make it small
     * to remember: every op below {@code low} is in it and none from {@code high} on. A configuration stores only the
     * words between, so its size follows the ops in flight, not the history. The set's hash is a Zobrist hash, changed
     * by one XOR per op added or removed, so a probe neither copies nor scans the bits.
     */
    private static final class LinearizedSet {
        private final long[] bits;
        private final long[] zobrist;
        private final Config probe = new Config();
        private long hash;
        private int low;
        private int high;

        LinearizedSet(int n) {
            bits = new long[(n + 63) >>> 6];
            zobrist = new java.util.SplittableRandom(n).longs(n).toArray();
        }

        private boolean has(int op) {
            return (bits[op >>> 6] & 1L << op) != 0;
        }

        void add(int op) {
            bits[op >>> 6] |= 1L << op;
            hash ^= zobrist[op];
            high = Math.max(high, op + 1);
            while (low < high && has(low)) {
                low++;
            }
        }

        void remove(int op) {
            bits[op >>> 6] &= ~(1L << op);
            hash ^= zobrist[op];
            low = Math.min(low, op);
            while (high > low && !has(high - 1)) {
                high--;
            }
        }

        /** A view of the current configuration for a look-up, valid until the set changes. */
        Config probe(int state) {
            return probe.set(this, bits, low >>> 6, state);
        }

        /** A copy of the current configuration to remember. */
        Config config(int state) {
            int from = low >>> 6;
            int to = (high + 63) >>> 6;
            return new Config().set(this, Arrays.copyOfRange(bits, from, Math.max(from, to)), 0, state);
        }
    }

    /** A memoized search configuration: a linearized set (its words from {@code low}) and the register value. */
    private static final class Config {
        private long[] words;
        private int offset;
        private int length;
        private int low;
        private int state;
        private long hash;

        Config set(LinearizedSet s, long[] array, int offset, int value) {
            this.words = array;
            this.offset = offset;
            this.length = Math.max(0, ((s.high + 63) >>> 6) - (s.low >>> 6));
            this.low = s.low;
            this.state = value;
            this.hash = s.hash ^ (value * 0x9E3779B97F4A7C15L);
            return this;
        }

        long bytes() {
            return 64 + 8L * length;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Config c && c.hash == hash && c.state == state && c.low == low && c.length == length
                && Arrays.equals(c.words, c.offset, c.offset + c.length, words, offset, offset + length);
        }

        @Override
        public int hashCode() {
            return Long.hashCode(hash);
        }
    }

    private static String quote(String s) {
        return s == null ? "(absent)" : '"' + s + '"';
    }
}
