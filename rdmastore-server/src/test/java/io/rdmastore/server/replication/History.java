package io.rdmastore.server.replication;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Records the operations of concurrent clients. Thread-safe: any thread may {@link #invoke} and complete its own
 * handles while another calls {@link #ops()}. Times come from {@link System#nanoTime()}, taken inside
 * {@link #invoke} and inside the completing call, so call {@code invoke} right before the operation and complete the
 * handle right after its reply.
 */
public final class History {
    private final ConcurrentLinkedQueue<Handle> handles = new ConcurrentLinkedQueue<>();

    /** Starts an operation now. {@code value} is the value to write; ignored (pass null) for a read. */
    public Handle invoke(int client, String key, Op.Kind kind, String value) {
        Handle h = new Handle(client, key, kind, kind == Op.Kind.WRITE ? value : null, System.nanoTime());
        handles.add(h);
        return h;
    }

    /** Adds an operation whose times the caller measured itself. */
    public void add(Op op) {
        Handle h = new Handle(op.client(), op.key(), op.kind(), op.value(), op.invokeNanos());
        h.op = op;
        h.done.set(true);
        handles.add(h);
    }

    /**
     * The operations recorded so far, in invocation order per recording thread. An operation not yet completed is
     * reported {@link Op.Outcome#UNKNOWN}, completing now: its client may still be waiting, or died waiting.
     */
    public List<Op> ops() {
        long now = System.nanoTime();
        List<Op> out = new ArrayList<>();
        for (Handle h : handles) {
            Op op = h.op;
            out.add(op != null ? op : new Op(h.client, h.key, h.kind, h.written, h.invokeNanos,
                Math.max(now, h.invokeNanos), Op.Outcome.UNKNOWN));
        }
        return out;
    }

    /** How many operations were invoked. */
    public int size() {
        return handles.size();
    }

    /**
     * One invoked operation, completed exactly once by {@link #ok}, {@link #fail} or {@link #unknown}. Called by the
     * thread that invoked it (or any thread, once).
     */
    public static final class Handle {
        private final int client;
        private final String key;
        private final Op.Kind kind;
        private final String written;
        private final long invokeNanos;
        private final AtomicBoolean done = new AtomicBoolean();
        private volatile Op op;

        private Handle(int client, String key, Op.Kind kind, String written, long invokeNanos) {
            this.client = client;
            this.key = key;
            this.kind = kind;
            this.written = written;
            this.invokeNanos = invokeNanos;
        }

        /** The read returned {@code value} (null: absent). */
        public Op ok(String value) {
            if (kind != Op.Kind.READ) {
                throw new IllegalStateException("ok(value) is for reads; a write completes with ok()");
            }
            return complete(value, Op.Outcome.OK);
        }

        /** The write was acknowledged. */
        public Op ok() {
            if (kind != Op.Kind.WRITE) {
                throw new IllegalStateException("a read completes with ok(value)");
            }
            return complete(written, Op.Outcome.OK);
        }

        /** The operation definitely did not take effect. */
        public Op fail() {
            return complete(written, Op.Outcome.FAIL);
        }

        /** The operation may or may not have taken effect. */
        public Op unknown() {
            return complete(written, Op.Outcome.UNKNOWN);
        }

        /** Completes with {@code outcome}; for a read, OK takes {@code value} as the value read. */
        public Op complete(String value, Op.Outcome outcome) {
            long now = System.nanoTime();
            if (!done.compareAndSet(false, true)) {
                throw new IllegalStateException("operation completed twice");
            }
            Op o = new Op(client, key, kind, kind == Op.Kind.WRITE ? written : value, invokeNanos,
                Math.max(now, invokeNanos), outcome);
            op = o;
            return o;
        }
    }
}
