package io.rdmastore.transport;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * Copies of values into memory another core reads: a value written into a peer's ring, a lent buffer the server
 * reads, a reply composed in the client's ring. {@link MemorySegment#copy} stores through the JVM's copy stub, which
 * takes every destination line back from the core that last read it before writing it; the C library's
 * {@code memcpy} writes whole lines without fetching them. Measured here (two cores, the destination read by the
 * other core between copies, p50): 64 KiB 9.1 us against 1.6, 256 KiB 39 us against 6.5. From some size on the C
 * library switches to another strategy that is as slow as the stub (1 MiB in one call 131-149 us), so a long copy
 * goes in {@value #CHUNK}-byte calls (1 MiB 26 us); docs/decisions.md, "Copies into memory another core reads".
 *
 * <p>The call is a critical downcall, so a heap array is passed as it is, with no copy first; a long copy holds
 * the collector back for at most one chunk's copy (a few microseconds). A full fence follows the copy, so its stores
 * are visible before any store after it, as a {@link MemorySegment#copy}'s are on x86: a ring frame's header, stored
 * after its payload, is what tells a receiver the payload is there (docs/transport-ucx.md, "Ordered frames").
 * Copies below {@value #FROM} bytes, into a read-only segment, or between overlapping ranges go through
 * {@link MemorySegment#copy}, which also stands in when {@code memcpy} cannot be bound.
 */
public final class MemoryCopy {
    /** Copies shorter than this go through {@link MemorySegment#copy}: a downcall costs more than it saves there. */
    static final long FROM = 2048;
    /** The longest single {@code memcpy}: past about this size it stops writing lines without fetching them. */
    static final long CHUNK = 256 << 10;

    private MemoryCopy() {
    }

    /**
     * Copies {@code length} bytes from {@code src} at {@code srcOffset} to {@code dst} at {@code dstOffset}, with the
     * checks of {@link MemorySegment#copy(MemorySegment, long, MemorySegment, long, long)} (bounds, liveness, the
     * owning thread, a read-only destination).
     */
    public static void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long length) {
        // the length first: a short copy (every frame's header) must not bind memcpy
        MethodHandle memcpy = length < FROM ? null : Holder.MEMCPY;
        if (memcpy == null || dst.isReadOnly()) {
            MemorySegment.copy(src, srcOffset, dst, dstOffset, length);
            return;
        }
        MemorySegment from = src.asSlice(srcOffset, length);
        MemorySegment to = dst.asSlice(dstOffset, length);
        if (to.asOverlappingSlice(from).isPresent()) {
            MemorySegment.copy(src, srcOffset, dst, dstOffset, length);
            return;
        }
        try {
            for (long at = 0; at < length; at += CHUNK) {
                long n = Math.min(CHUNK, length - at);
                MemorySegment ignored = (MemorySegment) memcpy.invokeExact(to.asSlice(at, n), from.asSlice(at, n), n);
            }
            // memcpy may store with string or non-temporal instructions, whose stores x86 does not always keep in
            // order with later ones; a frame's header word, stored after its payload, must not be seen first
            VarHandle.fullFence();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("memcpy failed", t);
        }
    }

    /** As {@link #copy(MemorySegment, long, MemorySegment, long, long)}, from a whole array. */
    public static void copy(byte[] src, MemorySegment dst, long dstOffset) {
        copy(MemorySegment.ofArray(src), 0, dst, dstOffset, src.length);
    }

    /** Whether long copies go through {@code memcpy} here (false: all go through {@link MemorySegment#copy}). */
    public static boolean usesMemcpy() {
        return Holder.MEMCPY != null;
    }

    /** Bound on first use, so that a process that never copies a long value never makes the downcall. */
    private static final class Holder {
        static final MethodHandle MEMCPY = bind();

        @SuppressWarnings("restricted") // memcpy with segments whose bounds were checked above
        private static MethodHandle bind() {
            try {
                Linker linker = Linker.nativeLinker();
                return linker.defaultLookup().find("memcpy").map(f -> linker.downcallHandle(f,
                    FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                        ValueLayout.JAVA_LONG), Linker.Option.critical(true))).orElse(null);
            } catch (RuntimeException | LinkageError e) {
                return null;
            }
        }
    }
}
