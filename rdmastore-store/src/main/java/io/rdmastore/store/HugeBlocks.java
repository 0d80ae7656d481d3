package io.rdmastore.store;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Blocks for large values (from {@value #FROM} bytes) in memory advised to be backed by transparent huge pages.
 * Such values are lent: a client on this host reads one with {@code process_vm_readv(2)}, and the kernel pins the
 * server's pages for that copy one page at a time. Measured between two JVMs here, 1 MiB copied into memory in 4 KiB
 * pages took 91-98 us, into huge pages 21-32 us (docs/decisions.md, "Lent memory in huge pages"). A huge page only
 * backs a 2 MiB-aligned range its mapping covers whole, which a {@code malloc}'d block of 1 MiB never is.
 *
 * <p>Layout: sizes up to {@value #LARGEST_CLASS} bytes round up to a size class, four per doubling (at most a fifth
 * of a block is rounding), and each class carves its blocks from {@value #CHUNK}-byte chunks of its own, 2 MiB-aligned
 * mappings advised with {@code madvise(MADV_HUGEPAGE)}. A freed block goes back to its class and is reused by the next
 * value of that class; chunks are kept for the process's life, as a C allocator keeps its arenas. Larger blocks are
 * mappings of their own, rounded up to 2 MiB and unmapped when freed. Where the kernel gives no huge pages the same
 * memory comes in 4 KiB pages.
 *
 * <p>Threads: any thread; each class serializes its own allocations and frees.
 */
@SuppressWarnings("restricted") // mmap, munmap and madvise: the store's memory for large values, see above
final class HugeBlocks {
    /** Blocks from this size on come from here. */
    static final long FROM = 256 << 10;
    /** The size and alignment of an x86-64 huge page. */
    static final long PAGE = 2L << 20;
    /** The size of each class's chunks. */
    static final long CHUNK = 32L << 20;
    /** The largest size class; larger blocks are mappings of their own. */
    static final long LARGEST_CLASS = CHUNK / 2;
    private static final int PROT_READ_WRITE = 0x3;
    private static final int MAP_PRIVATE_ANONYMOUS = 0x22;
    private static final int MADV_HUGEPAGE = 14;
    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;
    private static final MethodHandle MADVISE;

    private final ConcurrentHashMap<Long, SizeClass> classes = new ConcurrentHashMap<>();
    /** Bytes mapped for blocks: whole chunks and the separate mappings. */
    private final AtomicLong mappedBytes = new AtomicLong();

    static {
        Linker linker = Linker.nativeLinker();
        MethodHandle mmap = null;
        MethodHandle munmap = null;
        MethodHandle madvise = null;
        try {
            var lookup = linker.defaultLookup();
            mmap = linker.downcallHandle(lookup.find("mmap").orElseThrow(), FunctionDescriptor.of(
                ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT,
                ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
            munmap = linker.downcallHandle(lookup.find("munmap").orElseThrow(), FunctionDescriptor.of(
                ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
            madvise = linker.downcallHandle(lookup.find("madvise").orElseThrow(), FunctionDescriptor.of(
                ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
        } catch (RuntimeException | LinkageError e) {
            mmap = null;
        }
        MMAP = mmap;
        MUNMAP = munmap;
        MADVISE = madvise;
    }

    /**
     * Whether the store's large values come from here: mmap could be bound and {@code -Drdmastore.hugePages=false}
     * is not set.
     */
    static boolean enabled() {
        return MMAP != null && !"false".equals(System.getProperty("rdmastore.hugePages"));
    }

    /** The block size a request of {@code size} bytes (at least {@link #FROM}) takes up. */
    static long classSize(long size) {
        if (size > LARGEST_CLASS) {
            return (size + PAGE - 1) & -PAGE;
        }
        long step = Long.highestOneBit(size - 1) / 4;
        return (size + step - 1) / step * step;
    }

    /** A block of at least {@code size} bytes (from {@link #FROM}), as the address of its first byte. */
    long allocate(long size) {
        long rounded = classSize(size);
        if (rounded > LARGEST_CLASS) {
            long at = map(rounded);
            mappedBytes.addAndGet(rounded);
            return at;
        }
        return classes.computeIfAbsent(rounded, SizeClass::new).take();
    }

    /** Gives back the block at {@code address} that {@link #allocate} gave for {@code size} bytes. */
    void free(long address, long size) {
        long rounded = classSize(size);
        if (rounded > LARGEST_CLASS) {
            unmap(address, rounded);
            mappedBytes.addAndGet(-rounded);
            return;
        }
        classes.get(rounded).give(address);
    }

    /** Bytes mapped for large values, used or kept for reuse. */
    long mappedBytes() {
        return mappedBytes.get();
    }

    /** One size class: its free blocks and the chunk it carves new ones from. */
    private final class SizeClass {
        private final long blockSize;
        private long[] free = new long[16];
        private int freeCount;
        private long chunkNext;
        private long chunkEnd;

        SizeClass(long blockSize) {
            this.blockSize = blockSize;
        }

        synchronized long take() {
            if (freeCount > 0) {
                return free[--freeCount];
            }
            if (chunkEnd - chunkNext < blockSize) {
                chunkNext = map(CHUNK);
                chunkEnd = chunkNext + CHUNK;
                mappedBytes.addAndGet(CHUNK);
            }
            long at = chunkNext;
            chunkNext += blockSize;
            return at;
        }

        synchronized void give(long address) {
            if (freeCount == free.length) {
                free = Arrays.copyOf(free, free.length * 2);
            }
            free[freeCount++] = address;
        }
    }

    /** A new mapping of {@code size} bytes (a multiple of {@link #PAGE}), 2 MiB-aligned and advised for huge pages. */
    private static long map(long size) {
        long raw;
        try {
            raw = (long) MMAP.invokeExact(0L, size + PAGE, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0L);
        } catch (Throwable t) {
            throw new StoreException("mmap of " + size + " bytes failed to run", t);
        }
        if (raw == -1L) {
            throw new StoreException("out of off-heap memory mapping " + size + " bytes for large values");
        }
        long at = (raw + PAGE - 1) & -PAGE;
        // the unaligned head and tail of the over-sized mapping go back at once
        if (at > raw) {
            unmap(raw, at - raw);
        }
        long tail = raw + size + PAGE - (at + size);
        if (tail > 0) {
            unmap(at + size, tail);
        }
        try {
            // refused (THP off, an old kernel): the memory stays as it is, in 4 KiB pages
            int ignored = (int) MADVISE.invokeExact(at, size, MADV_HUGEPAGE);
        } catch (Throwable t) {
            throw new StoreException("madvise failed to run", t);
        }
        return at;
    }

    private static void unmap(long address, long size) {
        try {
            if ((int) MUNMAP.invokeExact(address, size) != 0) {
                throw new StoreException("munmap of " + size + " bytes at " + address + " failed");
            }
        } catch (StoreException e) {
            throw e;
        } catch (Throwable t) {
            throw new StoreException("munmap failed to run", t);
        }
    }
}
