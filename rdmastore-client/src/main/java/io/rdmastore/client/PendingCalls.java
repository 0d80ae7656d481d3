package io.rdmastore.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Consumer;

/**
 * The calls of one connection waiting for their replies, by request id, with their deadlines. Request ids grow by one
 * per call, so a call lives in slot {@code id & mask} of a fixed array: adding and removing are one compare-and-set,
 * with no boxing and no allocation; a call whose slot is still taken by an older, slower one goes to an overflow map.
 * Time-outs are found by {@link #expire}, which the client's sweeper runs every few milliseconds, instead of a timer
 * task per call (which woke the JVM-wide timer thread on every call: a futex wake and a context switch each time).
 *
 * <p>Threads: thread-safe. {@link #add} runs on the calling thread, {@link #remove} on the transport thread that
 * delivers the reply, {@link #expire} on the sweeper; exactly one of them wins a call.
 */
final class PendingCalls {
    /** One waiting call: its id and deadline ({@link System#nanoTime()}). */
    interface Entry {
        long id();

        long deadlineNanos();
    }

    private static final int SLOTS = 1024;
    private static final int MASK = SLOTS - 1;

    private final AtomicReferenceArray<Entry> slots = new AtomicReferenceArray<>(SLOTS);
    private final Map<Long, Entry> overflow = new ConcurrentHashMap<>();
    /** Calls in the overflow map, so the common path never looks there (nor boxes an id). */
    private final AtomicInteger overflowing = new AtomicInteger();
    private final AtomicInteger size = new AtomicInteger();

    /** Adds a call; its id must not be pending already. */
    void add(Entry e) {
        size.incrementAndGet();
        if (slots.compareAndSet((int) (e.id() & MASK), null, e)) {
            return;
        }
        overflowing.incrementAndGet();
        overflow.put(e.id(), e);
    }

    /** Removes and returns the call with this id, or null when it is not pending (answered, timed out, failed). */
    Entry remove(long id) {
        int i = (int) (id & MASK);
        Entry e = slots.get(i);
        if (e != null && e.id() == id && slots.compareAndSet(i, e, null)) {
            size.decrementAndGet();
            return e;
        }
        if (overflowing.get() > 0) {
            e = overflow.remove(id);
            if (e != null) {
                overflowing.decrementAndGet();
                size.decrementAndGet();
                return e;
            }
        }
        return null;
    }

    /** Removes {@code e} if it is still pending; true when this call removed it. */
    boolean remove(Entry e) {
        int i = (int) (e.id() & MASK);
        if (slots.get(i) == e && slots.compareAndSet(i, e, null)) {
            size.decrementAndGet();
            return true;
        }
        if (overflowing.get() > 0 && overflow.remove(e.id(), e)) {
            overflowing.decrementAndGet();
            size.decrementAndGet();
            return true;
        }
        return false;
    }

    boolean isEmpty() {
        return size.get() == 0;
    }

    int size() {
        return size.get();
    }

    /** Removes every call whose deadline passed by {@code now} and hands each to {@code timedOut}. */
    void expire(long now, Consumer<Entry> timedOut) {
        if (size.get() == 0) {
            return;
        }
        for (int i = 0; i < SLOTS; i++) {
            Entry e = slots.get(i);
            if (e != null && now - e.deadlineNanos() >= 0 && remove(e)) {
                timedOut.accept(e);
            }
        }
        if (overflowing.get() > 0) {
            for (Entry e : overflow.values()) {
                if (now - e.deadlineNanos() >= 0 && remove(e)) {
                    timedOut.accept(e);
                }
            }
        }
    }

    /** Removes every pending call, in the order they were added (ids increase). */
    List<Entry> drain() {
        List<Entry> out = new ArrayList<>();
        for (int i = 0; i < SLOTS; i++) {
            Entry e = slots.get(i);
            if (e != null && remove(e)) {
                out.add(e);
            }
        }
        for (Entry e : overflow.values()) {
            if (remove(e)) {
                out.add(e);
            }
        }
        out.sort((a, b) -> Long.compare(a.id(), b.id()));
        return out;
    }
}
