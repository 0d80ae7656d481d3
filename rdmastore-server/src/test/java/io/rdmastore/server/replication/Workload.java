package io.rdmastore.server.replication;

import io.rdmastore.client.RdmaStoreServerException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;

/**
 * Concurrent clients doing random single-key reads and writes for a bounded time, every operation recorded in a
 * {@link History} for the {@link LinearizabilityChecker}. Each client is one thread with its own {@link Ops} (made by
 * the factory in that thread), issuing one operation at a time; written values are unique ({@code c3-17}: client 3's
 * 17th operation). An exception from an operation completes it as the {@link Classifier} says (FAIL or UNKNOWN), and
 * the client pauses briefly before its next one.
 *
 * <p>{@link #run()} blocks until every client stops (time up, {@link #stop()}, or its operation budget spent); run
 * it in another thread to inject faults meanwhile. A Workload runs once. {@link #stop()} may be called from any thread.
 */
public final class Workload {
    /** One client's connection: single-key reads and writes. Used by one thread only. */
    public interface Ops extends AutoCloseable {
        /** The value of {@code key}, or null if absent. */
        String read(String key) throws Exception;

        void write(String key, String value) throws Exception;

        @Override
        default void close() throws Exception {
        }
    }

    /** Whether an operation that threw definitely did not take effect (FAIL) or may have (UNKNOWN). */
    @FunctionalInterface
    public interface Classifier {
        Op.Outcome classify(Op.Kind kind, Throwable error);
    }

    /** Every error is UNKNOWN: always safe, the checker just learns less. The default. */
    public static Classifier allUnknown() {
        return (kind, error) -> Op.Outcome.UNKNOWN;
    }

    /**
     * An error answer from the server ({@link RdmaStoreServerException}) is FAIL, anything else (time-out, lost
     * connection) UNKNOWN. Right for a standalone server, which answers an error only for a command it did not apply.
     */
    public static Classifier serverErrorsFail() {
        return (kind, error) -> error instanceof RdmaStoreServerException ? Op.Outcome.FAIL : Op.Outcome.UNKNOWN;
    }

    private final int clients;
    private final List<String> keys;
    private final Duration duration;
    private final long maxOpsPerClient;
    private final double readFraction;
    private final long seed;
    private final IntFunction<? extends Ops> factory;
    private final Classifier classifier;
    private final Duration pauseAfterError;
    private final History history;
    private final String valuePrefix;
    private volatile boolean stopped;
    private boolean ran;

    private Workload(Builder b) {
        this.clients = b.clients;
        this.keys = List.copyOf(b.keys);
        this.duration = b.duration;
        this.maxOpsPerClient = b.maxOpsPerClient;
        this.readFraction = b.readFraction;
        this.seed = b.seed;
        this.factory = b.factory;
        this.classifier = b.classifier;
        this.pauseAfterError = b.pauseAfterError;
        this.history = b.history;
        this.valuePrefix = b.valuePrefix;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Options, validated by {@link #build()}. Not thread-safe. */
    public static final class Builder {
        private int clients = 8;
        private List<String> keys = List.of("k0", "k1", "k2", "k3", "k4");
        private Duration duration = Duration.ofSeconds(5);
        private long maxOpsPerClient = Long.MAX_VALUE;
        private double readFraction = 0.5;
        private long seed = System.nanoTime();
        private IntFunction<? extends Ops> factory;
        private Classifier classifier = allUnknown();
        private Duration pauseAfterError = Duration.ofMillis(20);
        private History history = new History();
        private String valuePrefix = "";

        /** Client threads (default 8). */
        public Builder clients(int n) {
            this.clients = n;
            return this;
        }

        /** The keys, each chosen uniformly (default k0..k4). */
        public Builder keys(List<String> value) {
            this.keys = List.copyOf(value);
            return this;
        }

        /** {@code n} keys named k0, k1, ... */
        public Builder keys(int n) {
            List<String> list = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                list.add("k" + i);
            }
            return keys(list);
        }

        /** How long clients keep issuing operations (default 5 s); an operation in flight then still completes. */
        public Builder duration(Duration value) {
            this.duration = value;
            return this;
        }

        /** An operation budget per client (default none). */
        public Builder maxOpsPerClient(long n) {
            this.maxOpsPerClient = n;
            return this;
        }

        /** The share of reads (default 0.5). */
        public Builder readFraction(double value) {
            this.readFraction = value;
            return this;
        }

        /** The seed of the clients' choices (default: the clock); printed by {@link Result#toString()}. */
        public Builder seed(long value) {
            this.seed = value;
            return this;
        }

        /** Makes client {@code i}'s Ops, in client i's thread; closed when the client stops. Required. */
        public Builder ops(IntFunction<? extends Ops> value) {
            this.factory = value;
            return this;
        }

        /** How errors are classified (default {@link #allUnknown()}). */
        public Builder classifier(Classifier value) {
            this.classifier = value;
            return this;
        }

        /** How long a client waits after an error before its next operation (default 20 ms). */
        public Builder pauseAfterError(Duration value) {
            this.pauseAfterError = value;
            return this;
        }

        /** Records into this history (default a new one), e.g. to share it with other recorders. */
        public Builder history(History value) {
            this.history = value;
            return this;
        }

        /**
         * Prefixes every written value ({@code w2-c3-17}), so that two workloads writing the same keys write distinct
         * values (the checker needs each value written once to tell writes apart). Default none.
         */
        public Builder valuePrefix(String value) {
            this.valuePrefix = Objects.requireNonNull(value);
            return this;
        }

        public Workload build() {
            Objects.requireNonNull(factory, "ops factory");
            Objects.requireNonNull(classifier, "classifier");
            Objects.requireNonNull(history, "history");
            if (clients < 1 || keys.isEmpty() || duration.isNegative() || maxOpsPerClient < 1
                || readFraction < 0 || readFraction > 1) {
                throw new IllegalArgumentException("bad workload: " + clients + " clients, keys " + keys + ", "
                    + duration + ", " + maxOpsPerClient + " ops per client, read fraction " + readFraction);
            }
            return new Workload(this);
        }
    }

    /**
     * What the clients did.
     *
     * @param ops every operation, as {@link History#ops()} returned it when the clients had stopped
     * @param stuckClients clients whose operation had not returned 30 s after time was up (their operation is
     *     UNKNOWN in {@code ops}); they were interrupted and left behind
     */
    public record Result(History history, List<Op> ops, long reads, long writes, long failed, long unknown,
                         long opsFailedToStart, int stuckClients, long seed, Duration elapsed) {
        /** Operations that completed OK. */
        public long ok() {
            return ops.stream().filter(o -> o.outcome() == Op.Outcome.OK).count();
        }

        @Override
        public String toString() {
            return String.format(java.util.Locale.ROOT, "workload (seed %d): %d ops in %d ms: %d reads, %d writes,"
                    + " %d OK, %d FAIL, %d UNKNOWN, %d client start failures, %d stuck clients", seed, ops.size(),
                elapsed.toMillis(), reads, writes, ok(), failed, unknown, opsFailedToStart, stuckClients);
        }
    }

    /** Asks every client to stop after its current operation. */
    public void stop() {
        stopped = true;
    }

    /** Runs the clients and waits until they stop. */
    public Result run() throws InterruptedException {
        synchronized (this) {
            if (ran) {
                throw new IllegalStateException("a Workload runs once");
            }
            ran = true;
        }
        AtomicLong reads = new AtomicLong();
        AtomicLong writes = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        AtomicLong unknown = new AtomicLong();
        AtomicLong startFailures = new AtomicLong();
        CountDownLatch go = new CountDownLatch(1);
        long t0 = System.nanoTime();
        long end = t0 + duration.toNanos();
        List<Thread> threads = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
            int client = c;
            SplittableRandom random = new SplittableRandom(seed * 31 + c);
            Thread t = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                long seq = 0;
                Ops ops = null;
                try {
                    while (!stopped && System.nanoTime() - end < 0 && seq < maxOpsPerClient) {
                        if (ops == null) {
                            try {
                                ops = factory.apply(client);
                            } catch (RuntimeException e) {
                                startFailures.incrementAndGet();
                                if (!sleep(pauseAfterError)) {
                                    return;
                                }
                                continue;
                            }
                        }
                        String key = keys.get(random.nextInt(keys.size()));
                        boolean read = random.nextDouble() < readFraction;
                        String value = valuePrefix + "c" + client + "-" + seq++;
                        History.Handle h = history.invoke(client, key, read ? Op.Kind.READ : Op.Kind.WRITE, value);
                        (read ? reads : writes).incrementAndGet();
                        try {
                            if (read) {
                                h.ok(ops.read(key));
                            } else {
                                ops.write(key, value);
                                h.ok();
                            }
                        } catch (Exception e) {
                            Op.Outcome o = classifier.classify(read ? Op.Kind.READ : Op.Kind.WRITE, e);
                            if (o == Op.Outcome.FAIL) {
                                h.fail();
                                failed.incrementAndGet();
                            } else {
                                h.unknown();
                                unknown.incrementAndGet();
                            }
                            if (e instanceof InterruptedException || !sleep(pauseAfterError)) {
                                return;
                            }
                        }
                    }
                } finally {
                    if (ops != null) {
                        try {
                            ops.close();
                        } catch (Exception ignored) {
                            // the client is done; a failed close changes no recorded operation
                        }
                    }
                }
            }, "workload-client-" + c);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        go.countDown();
        int stuck = 0;
        long joinDeadline = end + Duration.ofSeconds(30).toNanos();
        for (Thread t : threads) {
            t.join(Math.max(1, (joinDeadline - System.nanoTime()) / 1_000_000));
            if (t.isAlive()) {
                t.interrupt();
                stuck++;
            }
        }
        return new Result(history, history.ops(), reads.get(), writes.get(), failed.get(), unknown.get(),
            startFailures.get(), stuck, seed, Duration.ofNanos(System.nanoTime() - t0));
    }

    /**
     * Reads every key once through {@code ops}, as client {@code clients()} (one more than the workload's), recording
     * into this workload's history; returns the whole history. Run it after the faults healed: an acknowledged write
     * that was lost then shows as a violation even if no client read the key again. Calls from one thread, after
     * {@link #run()} returned.
     */
    public List<Op> readEveryKey(Ops ops) {
        for (String key : keys) {
            History.Handle h = history.invoke(clients, key, Op.Kind.READ, null);
            try {
                h.ok(ops.read(key));
            } catch (Exception e) {
                if (classifier.classify(Op.Kind.READ, e) == Op.Outcome.FAIL) {
                    h.fail();
                } else {
                    h.unknown();
                }
            }
        }
        return history.ops();
    }

    /** The client threads' count; {@link #readEveryKey} records as the client with this number. */
    public int clients() {
        return clients;
    }

    private static boolean sleep(Duration d) {
        try {
            Thread.sleep(d);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
