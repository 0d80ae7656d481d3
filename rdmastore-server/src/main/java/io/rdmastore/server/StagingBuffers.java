package io.rdmastore.server;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayDeque;

/**
 * Off-heap buffers a blob's pull lands in before the file's own writes take its bytes (docs/blobs.md, "Landing"):
 * {@code slots} slots of {@code slotBytes} each, kept for the next pull, since the first touch of each page is what
 * the staging saves every later put. A new buffer is an anonymous {@code mmap} that nothing touches yet (where libc
 * has it; zeroed Java memory elsewhere): a request's thread takes it without paying for its pages, and the first
 * pull's reads fault them in on the pull's thread. At most {@code keep} idle buffers stay; more pulls at once get
 * buffers of their own, unmapped when they end.
 *
 * <p>Threads: thread-safe. Ownership: a taken buffer is the taker's until {@link #give}.
 */
final class StagingBuffers implements AutoCloseable {
    /** One buffer: its memory and the arena that frees it. */
    record Buffer(Arena arena, MemorySegment segment) {
    }

    private static final int PROT_READ = 1;
    private static final int PROT_WRITE = 2;
    private static final int MAP_PRIVATE = 2;
    private static final int MAP_ANONYMOUS = 0x20;
    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;

    static {
        MethodHandle mmap = null;
        MethodHandle munmap = null;
        String os = System.getProperty("os.name", "");
        if (os.startsWith("Linux")) {
            try {
                Linker linker = Linker.nativeLinker();
                SymbolLookup libc = linker.defaultLookup();
                mmap = linker.downcallHandle(libc.find("mmap").orElseThrow(), FunctionDescriptor.of(
                    ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
                munmap = linker.downcallHandle(libc.find("munmap").orElseThrow(), FunctionDescriptor.of(
                    ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
            } catch (RuntimeException e) {
                mmap = null;
            }
        }
        MMAP = munmap == null ? null : mmap;
        MUNMAP = munmap;
    }

    private final long bytes;
    private final int keep;
    private final ArrayDeque<Buffer> idle = new ArrayDeque<>();
    private boolean closed;

    StagingBuffers(int slots, long slotBytes, int keep) {
        this.bytes = slots * slotBytes;
        this.keep = keep;
    }

    /** An idle buffer, or a new one (untouched: the first pull into it faults its pages in). */
    Buffer take() {
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("the blob service is closing");
            }
            Buffer b = idle.pollFirst();
            if (b != null) {
                return b;
            }
        }
        Arena arena = Arena.ofShared();
        try {
            return new Buffer(arena, map(bytes, arena));
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /** {@code bytes} of untouched anonymous memory, unmapped when {@code arena} closes. */
    private static MemorySegment map(long bytes, Arena arena) {
        if (MMAP == null) {
            return arena.allocate(bytes, 4096);
        }
        MemorySegment at;
        try {
            at = (MemorySegment) MMAP.invokeExact(MemorySegment.NULL, bytes, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
        } catch (Throwable t) {
            throw new IllegalStateException("mmap of a staging buffer failed: " + t, t);
        }
        if (at.address() == -1L) {
            throw new OutOfMemoryError("cannot map a staging buffer of " + bytes + " bytes");
        }
        return at.reinterpret(bytes, arena, s -> {
            try {
                int ignored = (int) MUNMAP.invokeExact(s, bytes);
            } catch (Throwable t) {
                // nothing to do: the range stays mapped until the process ends
            }
        });
    }

    /** Gives a buffer back once nothing can write into it any more. */
    void give(Buffer b) {
        synchronized (this) {
            if (!closed && idle.size() < keep) {
                idle.addFirst(b);
                return;
            }
        }
        b.arena().close();
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            idle.forEach(b -> b.arena().close());
            idle.clear();
        }
    }
}
