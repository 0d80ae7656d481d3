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
 * free-space check before each put is the only guard. The log reserves its segments' blocks ahead of its appends too
 * ({@link #reserveKeepingSize}).
 *
 * <p>Threads: thread-safe (no state).
 */
public final class Preallocation {
    private static final int O_RDWR = 2;
    /** Linux {@code fallocate(2)}: reserve blocks without changing the file's size. */
    private static final int FALLOC_FL_KEEP_SIZE = 1;
    private static final int ENOSPC = 28;
    private static final MethodHandle OPEN;
    private static final MethodHandle FALLOCATE;
    private static final MethodHandle CLOSE;
    /** Linux's {@code fallocate}, null elsewhere. */
    private static final MethodHandle FALLOCATE_LINUX;

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
        MethodHandle linux = null;
        try {
            linux = linker.downcallHandle(libc.find("fallocate").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
        } catch (RuntimeException e) {
            linux = null;
        }
        FALLOCATE_LINUX = open == null ? null : linux;
    }

    private Preallocation() {
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
        return onFile(file, fd -> (int) FALLOCATE.invokeExact(fd, 0L, length));
    }

    /** A call on an open file descriptor. */
    @FunctionalInterface
    private interface FdCall {
        int call(int fd) throws Throwable;
    }

    /** Opens {@code file} read-write, runs {@code call} on it and closes it; -1 when it cannot be opened. */
    private static int onFile(Path file, FdCall call) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment path = arena.allocateFrom(file.toAbsolutePath().toString());
            int fd = (int) OPEN.invokeExact(path, O_RDWR);
            if (fd < 0) {
                return -1;
            }
            try {
                return call.call(fd);
            } finally {
                int ignored = (int) CLOSE.invokeExact(fd);
            }
        } catch (Throwable t) {
            return -1;
        }
    }

    /**
     * Reserves the blocks of {@code [0, length)} of the existing file {@code file} without changing its size (Linux
     * {@code fallocate} with {@code FALLOC_FL_KEEP_SIZE}): appends up to {@code length} then write into blocks already
     * allocated, and the file's bytes and size stay exactly what was written. Best effort.
     *
     * @return 0, or -1 where the call is missing or failed (no {@code fallocate}, a file system without it, a full
     *     disk)
     */
    public static int reserveKeepingSize(Path file, long length) {
        if (FALLOCATE_LINUX == null || length <= 0) {
            return -1;
        }
        return onFile(file, fd -> (int) FALLOCATE_LINUX.invokeExact(fd, FALLOC_FL_KEEP_SIZE, 0L, length) == 0
            ? 0 : -1);
    }

    static boolean diskFull(int error) {
        return error == ENOSPC;
    }
}
