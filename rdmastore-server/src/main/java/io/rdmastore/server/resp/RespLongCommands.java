package io.rdmastore.server.resp;

import io.rdmastore.store.Store;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * Long commands: the ones whose cost grows with the size of a collection or of the keyspace, and the pool they run on
 * instead of the connection's event loop, so that a KEYS over a million keys or an HGETALL of a million fields does
 * not stall every other client of that loop (docs/resp.md, "Long commands off the event loop").
 *
 * <p>The rule ({@link #isLong}): a command of the list below whose element estimate, read in O(1) per key named before
 * it runs, reaches {@code longCommandElements} (default 1000). The estimate is the keyspace's size for KEYS, FLUSHALL
 * and FLUSHDB; the key's element count for SMEMBERS, HGETALL, HKEYS, HVALS, SSCAN, HSCAN, ZSCAN, SORT and SORT_RO;
 * the sum over the input keys for SINTER, SUNION, SDIFF (and their STORE forms), SINTERCARD, ZUNION, ZINTER, ZDIFF
 * (and their STORE forms) and ZINTERCARD; the range's length for LRANGE, ZRANGE, ZREVRANGE and ZRANGESTORE by index;
 * the sorted set's size, or the LIMIT count when smaller, for the by-score and by-lex ranges. The estimate may be
 * stale by the time the command runs; it only decides the thread.
 *
 * <p>Threads: {@link #isLong} on the event loop that dispatches the command; {@link #submit} from there too. The pool
 * has {@code longCommandThreads} named daemon threads ({@code rdmastore-resp-long-N}); its queue holds at most one
 * command per connection, because a connection reads nothing more until its long command has replied.
 */
final class RespLongCommands {
    private final Store store;
    private final long threshold;
    private final ThreadPoolExecutor pool;
    /** Long commands run on the pool since start (INFO stats {@code long_commands_offloaded}). */
    final LongAdder offloaded = new LongAdder();
    /** Test hook: run on the pool thread before each long command (a latch holds one mid-flight). Null: none. */
    volatile Runnable beforeRun;

    RespLongCommands(Store store, long threshold, int threads) {
        this.store = store;
        this.threshold = threshold;
        AtomicInteger n = new AtomicInteger();
        this.pool = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(),
            r -> {
                Thread t = new Thread(r, "rdmastore-resp-long-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
    }

    /** The default pool size: half the cores, at least 1 and at most 4 (1 on a 2-core machine). */
    static int defaultThreads() {
        return Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors() / 2));
    }

    /**
     * Runs {@code task} on the pool; false when the pool is shut down (the server is stopping), and then the caller
     * runs the command itself.
     */
    boolean submit(Runnable task) {
        try {
            pool.execute(() -> {
                Runnable hook = beforeRun;
                try {
                    if (hook != null) {
                        hook.run();
                    }
                } finally {
                    task.run();
                }
            });
            offloaded.increment();
            return true;
        } catch (RejectedExecutionException e) {
            return false;
        }
    }

    /**
     * Stops taking commands; the ones running finish (no interrupt: a command may be writing the log, and an
     * interrupted FileChannel closes).
     */
    void close() {
        pool.shutdown();
    }

    /**
     * Whether {@code argv} is a long command by the rule above. Malformed arguments answer false: the command then
     * fails its checks on the loop, which is cheap.
     */
    boolean isLong(byte[][] argv, int argc) {
        if (threshold == Long.MAX_VALUE) {
            return false;
        }
        RespCommand cmd = RespCommand.lookup(argv[0]);
        if (cmd == null || !cmd.arityOk(argc)) {
            return false;
        }
        return switch (cmd) {
            case KEYS, FLUSHALL, FLUSHDB -> store.size() >= threshold;
            case SMEMBERS, HGETALL, HKEYS, HVALS, SSCAN, HSCAN, ZSCAN, SORT, SORT_RO -> reaches(argv[1]);
            case SINTER, SUNION, SDIFF -> sum(argv, 1, argc);
            case SINTERSTORE, SUNIONSTORE, SDIFFSTORE -> sum(argv, 2, argc);
            case SINTERCARD, ZUNION, ZINTER, ZDIFF, ZINTERCARD -> sumCounted(argv, argc, 1);
            case ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE -> sumCounted(argv, argc, 2);
            case LRANGE, ZREVRANGE -> indexRange(argv[1], argv[2], argv[3]);
            case ZRANGE -> zrange(argv, argc, 1);
            case ZRANGESTORE -> zrange(argv, argc, 2);
            case ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGEBYLEX -> byValue(argv, argc, 1);
            default -> false;
        };
    }

    private boolean reaches(byte[] key) {
        return store.elements(key) >= threshold;
    }

    private boolean sum(byte[][] argv, int from, int to) {
        long n = 0;
        for (int i = from; i < to && n < threshold; i++) {
            n += store.elements(argv[i]);
        }
        return n >= threshold;
    }

    /** {@code argv[at]} is numkeys, the keys follow it. */
    private boolean sumCounted(byte[][] argv, int argc, int at) {
        long keys = parse(argv[at]);
        if (keys < 1 || keys > argc - at - 1) {
            return false;
        }
        return sum(argv, at + 1, at + 1 + (int) keys);
    }

    /** ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT o n] ...: by index unless BYSCORE or BYLEX is named. */
    private boolean zrange(byte[][] argv, int argc, int keyAt) {
        for (int i = keyAt + 3; i < argc; i++) {
            if (RespCommand.is(argv[i], "BYSCORE") || RespCommand.is(argv[i], "BYLEX")) {
                return byValue(argv, argc, keyAt);
            }
        }
        return indexRange(argv[keyAt], argv[keyAt + 1], argv[keyAt + 2]);
    }

    /** A range by score or lex: the sorted set's size, or the LIMIT count when it is smaller. */
    private boolean byValue(byte[][] argv, int argc, int keyAt) {
        for (int i = keyAt + 3; i + 2 < argc; i++) {
            if (RespCommand.is(argv[i], "LIMIT")) {
                long count = parse(argv[i + 2]);
                if (count >= 0 && count < threshold) {
                    return false;
                }
            }
        }
        return reaches(argv[keyAt]);
    }

    /** Redis's index range (negative from the end, clamped): its length against the threshold. */
    private boolean indexRange(byte[] key, byte[] startArg, byte[] stopArg) {
        long start = parse(startArg);
        long stop = parse(stopArg);
        if (start == Long.MIN_VALUE || stop == Long.MIN_VALUE) {
            return false;
        }
        if (start >= 0 && stop >= 0 && stop - start + 1 < threshold) {
            return false;
        }
        long len = store.elements(key);
        if (start < 0) {
            start = Math.max(0, len + start);
        }
        if (stop < 0) {
            stop = len + stop;
        }
        stop = Math.min(stop, len - 1);
        return stop >= start && stop - start + 1 >= threshold;
    }

    /** A decimal integer, or Long.MIN_VALUE. */
    private static long parse(byte[] b) {
        if (b.length == 0 || b.length > 19) {
            return Long.MIN_VALUE;
        }
        int i = 0;
        boolean neg = b[0] == '-';
        if (neg) {
            i = 1;
            if (b.length == 1) {
                return Long.MIN_VALUE;
            }
        }
        long v = 0;
        for (; i < b.length; i++) {
            int d = b[i] - '0';
            if (d < 0 || d > 9) {
                return Long.MIN_VALUE;
            }
            v = v * 10 + d;
        }
        return neg ? -v : v;
    }
}
