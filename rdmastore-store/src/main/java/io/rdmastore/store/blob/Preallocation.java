package io.rdmastore.store.blob;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/**
 * Reserves a file's blocks with {@code posix_fallocate} before it is written through a memory mapping. A mapped write
 * that finds the disk full does not fail: the kernel sends SIGBUS and the JVM dies. With the blocks reserved first, a
 * full disk is an error code before any data moves. Where libc lacks the call (not Linux), nothing is reserved and the
 * free-space check before each put is the only guard.
 *
 * <p>Threads: thread-safe (no state).
 */
final class Preallocation {
    private static final int O_RDWR = 2;
    private static final int ENOSPC = 28;
    private static final MethodHandle OPEN;
    private static final MethodHandle FALLOCATE;
    private static final MethodHandle CLOSE;
    private static final MethodHandle MADVISE;
    /** Linux 5.14+: populate (prefault) page tables, writable, as a write would. */
    private static final int MADV_POPULATE_WRITE = 23;

    static {
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        MethodHandle open = null;
        MethodHandle fallocate = null;
        MethodHandle close = null;
        try {
            open = linker.downcallHandle(libc.find("open").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT),
                Linker.Option.firstVariadicArg(2));
            fallocate = linker.downcallHandle(libc.find("posix_fallocate").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_LONG));
            close = linker.downcallHandle(libc.find("close").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        } catch (RuntimeException e) {
            open = null;
        }
        OPEN = open;
        FALLOCATE = fallocate;
        CLOSE = close;
        MethodHandle madvise = null;
        try {
            madvise = linker.downcallHandle(libc.find("madvise").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_INT));
        } catch (RuntimeException e) {
            madvise = null;
        }
        MADVISE = madvise;
    }

    private Preallocation() {
    }

    /**
     * Faults in the pages of {@code [offset, offset + length)} of a writable mapping in one call, before a transfer
     * writes them: a one-sided read into pages not yet mapped takes a page fault per 4 KiB page, which cost a put of
     * 1 GiB more time than its copy. Page-aligned; best effort (older kernels refuse it, and the faults then happen
     * as the data arrives).
     */
    static void populate(MemorySegment mapping, long offset, long length) {
        if (MADVISE == null || length <= 0) {
            return;
        }
        long start = mapping.address() + offset;
        long aligned = start & ~4095L;
        long end = start + length;
        try {
            int ignored = (int) MADVISE.invokeExact(MemorySegment.ofAddress(aligned), end - aligned,
                MADV_POPULATE_WRITE);
        } catch (Throwable t) {
            // best effort
        }
    }

    /** Whether blocks can be reserved on this platform. */
    static boolean supported() {
        return OPEN != null;
    }

    /**
     * Reserves {@code length} bytes of the existing file {@code file}.
     *
     * @return 0, or the error number ({@code ENOSPC} = 28 when the disk is full)
     */
    static int reserve(Path file, long length) {
        if (OPEN == null || length == 0) {
            return 0;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment path = arena.allocateFrom(file.toAbsolutePath().toString());
            int fd = (int) OPEN.invokeExact(path, O_RDWR);
            if (fd < 0) {
                return -1;
            }
            try {
                return (int) FALLOCATE.invokeExact(fd, 0L, length);
            } finally {
                int ignored = (int) CLOSE.invokeExact(fd);
            }
        } catch (Throwable t) {
            return -1;
        }
    }

    static boolean diskFull(int error) {
        return error == ENOSPC;
    }
}
