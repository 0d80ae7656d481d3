package io.rdmastore.store;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Off-heap memory for values, taken from and given back to the C heap ({@code malloc}/{@code free}) so that a value
 * can be freed the moment it is overwritten. Per-value shared arenas would do the same safely but close with a
 * thread handshake each time, which is too slow for a write path. Safety comes from the caller: a segment is freed
 * only under its shard's write lock, and readers use it only under the read lock. Any thread.
 */
@SuppressWarnings("restricted") // the whole class is the store's one use of malloc/free; see the paragraph above
final class NativeMemory {
    private static final MethodHandle MALLOC;
    private static final MethodHandle FREE;
    /** Empty values: a native segment (as every other value is), so readers may re-scope it like any other. */
    private static final MemorySegment EMPTY = MemorySegment.NULL;
    private final AtomicLong usedBytes = new AtomicLong();

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

    /** Gives back a segment from {@link #allocate}; it must not be touched afterwards. */
    void free(MemorySegment segment) {
        if (segment == null || segment.byteSize() == 0) {
            return;
        }
        usedBytes.addAndGet(-segment.byteSize());
        try {
            FREE.invokeExact(segment);
        } catch (Throwable t) {
            throw new StoreException("off-heap free failed", t);
        }
    }

    /** Bytes currently allocated. */
    long usedBytes() {
        return usedBytes.get();
    }
}
