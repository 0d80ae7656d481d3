package io.rdmastore.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Memory another process reads with {@code process_vm_readv(2)} (or writes with {@code process_vm_writev}), backed by
 * transparent huge pages where the kernel gives them. The kernel pins the other process's pages one 4 KiB page at a
 * time; over a 2 MiB huge page it pins one. Measured here between two JVMs, 1 MiB copied into the peer: 91-98 us when
 * the peer's memory is in 4 KiB pages, 21-32 us when it is in huge pages; the caller's own pages hardly matter
 * (docs/decisions.md, "Lent memory in huge pages").
 *
 * <p>A huge page backs only a 2 MiB-aligned range that its mapping covers whole, so from {@value #FROM} bytes a
 * buffer is rounded up to whole 2 MiB and aligned to 2 MiB, and {@code madvise(MADV_HUGEPAGE)} asks for huge pages
 * (the default {@code madvise} mode of {@code /sys/kernel/mm/transparent_hugepage/enabled} gives them only on that
 * request). The request must come before the memory is first touched: a page already there stays a 4 KiB page until
 * {@code khugepaged} happens to merge it, seconds to minutes later. So such a buffer is a mapping of its own
 * ({@code mmap}, untouched, zero), advised at once and unmapped when its arena closes; {@link Arena#allocate} zeroes
 * its memory before returning it, and a client's buffer allocated that way was still in 4 KiB pages seconds into a
 * run (docs/decisions.md, "The client's huge pages came after its first touch"). Where the kernel refuses, or THP is
 * off, the memory is the same memory in 4 KiB pages.
 *
 * <p>{@code -Drdmastore.hugePages=false} turns it off (the memory is then allocated as any other).
 *
 * <p>Threads: any thread; stateless.
 */
public final class HugePages {
    /** Buffers from this size on are rounded and advised; a smaller one would waste most of its huge page. */
    public static final long FROM = 256 << 10;
    /** The size and alignment of an x86-64 huge page. */
    public static final long SIZE = 2L << 20;
    private static final int MADV_HUGEPAGE = 14;
    private static final int PROT_READ_WRITE = 0x3;
    private static final int MAP_PRIVATE_ANONYMOUS = 0x22;
    private static final MethodHandle MADVISE = lookup("madvise", FunctionDescriptor.of(ValueLayout.JAVA_INT,
        ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
    private static final MethodHandle MMAP = lookup("mmap", FunctionDescriptor.of(ValueLayout.ADDRESS,
        ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
        ValueLayout.JAVA_LONG));
    private static final MethodHandle MUNMAP = lookup("munmap", FunctionDescriptor.of(ValueLayout.JAVA_INT,
        ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final boolean ENABLED = !"false".equals(System.getProperty("rdmastore.hugePages"));

    private HugePages() {
    }

    /**
     * A buffer of at least {@code size} bytes that lives as long as {@code arena}: from {@value #FROM} bytes rounded up
     * to whole huge pages, aligned to one, a mapping of its own advised to be backed by them before anything touches
     * it; below it, {@code size} bytes aligned to 4 KiB from the arena. Its contents are zero.
     */
    public static MemorySegment allocate(Arena arena, long size) {
        if (size < FROM || !ENABLED) {
            return arena.allocate(size, 4096);
        }
        long rounded = (size + SIZE - 1) & -SIZE;
        MemorySegment mapped = map(arena, rounded);
        if (mapped != null) {
            return mapped;
        }
        MemorySegment seg = arena.allocate(rounded, SIZE);
        advise(seg);
        return seg;
    }

    /**
     * {@code rounded} bytes of a fresh anonymous mapping, 2 MiB-aligned (the mapping is a huge page longer, to align
     * in), advised before any touch and unmapped when {@code arena} closes; null where mmap cannot be called.
     */
    @SuppressWarnings("restricted") // the mapping's address made a segment of the arena's lifetime
    private static MemorySegment map(Arena arena, long rounded) {
        if (MMAP == null || MUNMAP == null) {
            return null;
        }
        long span = rounded + SIZE;
        long base;
        try {
            base = ((MemorySegment) MMAP.invokeExact(MemorySegment.NULL, span, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS,
                -1, 0L)).address();
        } catch (Throwable t) {
            return null;
        }
        if (base == -1L) {
            // MAP_FAILED: out of address space or a limit; the arena's memory then, in 4 KiB pages at first
            return null;
        }
        long aligned = (base + SIZE - 1) & -SIZE;
        MemorySegment seg = MemorySegment.ofAddress(aligned).reinterpret(rounded, arena, s -> unmap(base, span));
        advise(seg);
        return seg;
    }

    private static void unmap(long base, long span) {
        try {
            int rc = (int) MUNMAP.invokeExact(MemorySegment.ofAddress(base), span);
            if (rc != 0) {
                throw new IllegalStateException("munmap of " + span + " bytes at " + base + " failed");
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("munmap failed to run", t);
        }
    }

    /** Asks for huge pages over {@code seg} (2 MiB-aligned); false when the kernel refused or madvise is missing. */
    static boolean advise(MemorySegment seg) {
        if (MADVISE == null) {
            return false;
        }
        try {
            return (int) MADVISE.invokeExact(seg, seg.byteSize(), MADV_HUGEPAGE) == 0;
        } catch (Throwable t) {
            return false;
        }
    }

    private static MethodHandle lookup(String name, FunctionDescriptor descriptor) {
        try {
            Linker linker = Linker.nativeLinker();
            return linker.defaultLookup().find(name).map(a -> linker.downcallHandle(a, descriptor)).orElse(null);
        } catch (RuntimeException | LinkageError e) {
            return null;
        }
    }
}
