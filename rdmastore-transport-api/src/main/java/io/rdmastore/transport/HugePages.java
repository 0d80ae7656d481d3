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
 * request). Where the kernel refuses, or THP is off, the memory is the same memory in 4 KiB pages.
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
    private static final MethodHandle MADVISE = lookup();
    private static final boolean ENABLED = !"false".equals(System.getProperty("rdmastore.hugePages"));

    private HugePages() {
    }

    /**
     * A buffer of at least {@code size} bytes from {@code arena}: from {@value #FROM} bytes rounded up to whole huge
     * pages, aligned to one and advised to be backed by them; below it, {@code size} bytes aligned to 4 KiB. Its
     * contents are zero, as {@link Arena#allocate} gives them.
     */
    public static MemorySegment allocate(Arena arena, long size) {
        if (size < FROM || !ENABLED) {
            return arena.allocate(size, 4096);
        }
        long rounded = (size + SIZE - 1) & -SIZE;
        MemorySegment seg = arena.allocate(rounded, SIZE);
        advise(seg);
        return seg;
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

    private static MethodHandle lookup() {
        try {
            Linker linker = Linker.nativeLinker();
            return linker.defaultLookup().find("madvise").map(a -> linker.downcallHandle(a,
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_INT))).orElse(null);
        } catch (RuntimeException | LinkageError e) {
            return null;
        }
    }
}
