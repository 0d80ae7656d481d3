package io.rdmastore.store;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Off-heap memory for values, taken from and given back to the C heap ({@code malloc}/{@code free}) so that a value
 * can be freed the moment it is overwritten; values from {@link HugeBlocks#FROM} bytes, the ones clients read
 * one-sided, from {@link HugeBlocks} (huge pages). Per-value shared arenas would do the same safely but close with a
 * thread handshake each time, which is too slow for a write path. Safety comes from the caller: a segment is freed
 * only under its shard's write lock, and readers use it only under the read lock. Any thread.
 *
 * <p>Pins (docs/store.md, "Large values"): a segment pinned under its shard's lock stays allocated and unchanged
 * after that lock is released, until its last {@link #unpin}: a {@link #free} of a pinned segment is deferred to that
 * unpin, and writers ask {@link #isPinned} before writing a segment in place (copy-on-write).
 */
@SuppressWarnings("restricted") // the whole class is the store's one use of malloc/free; see the paragraph above
final class NativeMemory {
    private static final MethodHandle MALLOC;
    private static final MethodHandle FREE;
    /** Empty values: a native segment (as every other value is), so readers may re-scope it like any other. */
    private static final MemorySegment EMPTY = MemorySegment.NULL;
    private final AtomicLong usedBytes = new AtomicLong();
    /**
     * Where values from {@link HugeBlocks#FROM} bytes come from, one for the process as the C heap is (a closed store's
     * blocks serve the next one's values); null: from malloc as the others.
     */
    private static final HugeBlocks HUGE = HugeBlocks.enabled() ? new HugeBlocks() : null;
    /**
     * Pinned segments by address; empty unless a value is lent or a large value waits for the log (checked first, so
     * the write path stays cheap).
     */
    private final ConcurrentHashMap<Long, Pin> pins = new ConcurrentHashMap<>();

    /** Holders of a pinned segment and whether it was freed meanwhile. Changed only inside the map's compute. */
    private static final class Pin {
        int count;
        /** Of {@link #count}, the pins of lent values ({@link #pin}); the others are the log's ({@link #pinForLog}). */
        int lent;
        boolean freed;
    }

    static {
        Linker linker = Linker.nativeLinker();
        MALLOC = linker.downcallHandle(linker.defaultLookup().find("malloc").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
        FREE = linker.downcallHandle(linker.defaultLookup().find("free").orElseThrow(),
                FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    }

    /** A new segment of {@code size} bytes (contents undefined); the caller owns it until {@link #free}. */
    MemorySegment allocate(long size) {
        if (size == 0) {
            return EMPTY;
        }
        if (HUGE != null && size >= HugeBlocks.FROM) {
            long at = HUGE.allocate(size);
            usedBytes.addAndGet(size);
            return MemorySegment.ofAddress(at).reinterpret(size);
        }
        MemorySegment p;
        try {
            p = (MemorySegment) MALLOC.invokeExact(size);
        } catch (Throwable t) {
            throw new StoreException("off-heap allocation of " + size + " bytes failed", t);
        }
        if (p.equals(MemorySegment.NULL)) {
            throw new StoreException("out of off-heap memory allocating " + size + " bytes");
        }
        usedBytes.addAndGet(size);
        return p.reinterpret(size);
    }

    /**
     * Gives back a segment from {@link #allocate}; the caller must not touch it afterwards. A pinned segment is freed
     * at its last {@link #unpin} instead. Under the segment's shard write lock.
     */
    void free(MemorySegment segment) {
        if (segment == null || segment.byteSize() == 0) {
            return;
        }
        if (!pins.isEmpty() && pins.computeIfPresent(segment.address(), (a, p) -> {
            p.freed = true;
            return p;
        }) != null) {
            return;
        }
        release(segment);
    }

    /** Keeps {@code segment} allocated and unwritten until the matching {@link #unpin}. Under its shard's lock. */
    void pin(MemorySegment segment) {
        pin(segment, 1);
    }

    /**
     * As {@link #pin}, for a block the log writes from ({@link FrameBuilder#putExternal}) until it calls
     * {@link #unpinForLog}; not counted by {@link #pinned}.
     */
    void pinForLog(MemorySegment segment) {
        pin(segment, 0);
    }

    private void pin(MemorySegment segment, int lent) {
        pins.compute(segment.address(), (a, p) -> {
            Pin q = p == null ? new Pin() : p;
            q.count++;
            q.lent += lent;
            return q;
        });
    }

    /** Ends one pin; the last one frees a segment that was freed meanwhile. Any thread, no lock needed. */
    void unpin(MemorySegment segment) {
        unpin(segment, 1);
    }

    /** Ends a {@link #pinForLog}. */
    void unpinForLog(MemorySegment segment) {
        unpin(segment, 0);
    }

    private void unpin(MemorySegment segment, int lent) {
        boolean[] freeNow = new boolean[1];
        pins.computeIfPresent(segment.address(), (a, p) -> {
            p.lent -= lent;
            if (--p.count > 0) {
                return p;
            }
            freeNow[0] = p.freed;
            return null;
        });
        if (freeNow[0]) {
            release(segment);
        }
    }

    /** Whether {@code segment} is pinned: then it must not be written in place. Under its shard's write lock. */
    boolean isPinned(MemorySegment segment) {
        return !pins.isEmpty() && segment != null && pins.containsKey(segment.address());
    }

    /** Segments lent right now ({@link #pin}; the log's pins are not counted). */
    int pinned() {
        int n = 0;
        for (Pin p : pins.values()) {
            if (p.lent > 0) {
                n++;
            }
        }
        return n;
    }

    private void release(MemorySegment segment) {
        usedBytes.addAndGet(-segment.byteSize());
        if (HUGE != null && segment.byteSize() >= HugeBlocks.FROM) {
            HUGE.free(segment.address(), segment.byteSize());
            return;
        }
        try {
            FREE.invokeExact(segment);
        } catch (Throwable t) {
            throw new StoreException("off-heap free failed", t);
        }
    }

    /** Bytes mapped for large values ({@link HugeBlocks}) in this process, used or kept for reuse. */
    long mappedBytes() {
        return HUGE == null ? 0 : HUGE.mappedBytes();
    }

    /** Bytes currently allocated. */
    long usedBytes() {
        return usedBytes.get();
    }
}
