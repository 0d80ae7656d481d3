package io.rdmastore.bench;

import io.rdmastore.store.blob.Preallocation;
import io.rdmastore.transport.HugePages;
import io.rdmastore.transport.MemoryCopy;
import io.rdmastore.transport.ucx.CrossMemoryAttach;
import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * E2's {@code floor} rows for values from {@value #FROM} bytes: what moving a value between two processes on this host
 * costs with no protocol, no store and no checks, timed per operation like E2's calls.
 * <ul>
 *   <li>get: one {@code process_vm_readv(2)} of the value from the peer process, whose memory is in huge pages as
 *   the store's large values are (a kernel copy, the cheapest cross-process copy measured here; a window of shared
 *   memory copied on both sides measured no lower, docs/decisions.md "Lent copies through shared memory") into a
 *   reused buffer, then a copy into a new array of the value's length, as every E2 GET returns one (ours and Redis's
 *   client alike): the JVM zeroes a new array before anything can be written into it, and the kernel can copy into a
 *   heap array only through a call that takes its address as an argument (a critical downcall): {@code pread} of
 *   {@code /proc/<pid>/mem}, which copies through a page of its own and measured slower (1 MiB 220-280 us against
 *   100-110 for the read and the copy; docs/decisions.md, "Lent memory in huge pages"), so the zeroing and the
 *   second copy are part of any {@code byte[]} GET here. The bench's JVM touches its heap before anything is
 *   timed ({@code bin/rdmastore bench}); in a JVM that has not, a new array's pages fault on first use (3.6 ms for
 *   1 MiB against 158 us), which is the heap's cost, not the move's;</li>
 *   <li>put: what any {@code byte[]} PUT into a log pays between two cores, and no more: the value copied out of
 *   the caller's array into memory the other side can read (another process cannot read a Java array: the
 *   collector moves it and no API gives its address out, so every E2 PUT copies its array once before the other
 *   side can read it, ours into the server's ring or its lent buffer, Redis's client into its socket's buffer), then,
 *   on the other core, one gathering {@code write(2)} appending it
 *   from that memory to a file as a log record: {@value #RECORD_HEAD} bytes before the value and
 *   {@value #RECORD_TAIL} after it, what our log frames around an E2 key's value (length, CRC, op, key, expiry, the
 *   value's length; the oplog position after it) and about what Redis's AOF writes around it
 *   ({@code *3 $3 SET $8 e2:65536 $65536}, 35 bytes, and a CRLF). So the appends, like any log's, start part-way into
 *   a page, which the page cache charges for (docs/decisions.md, "The log's appends pay for their alignment in the
 *   page cache": a 64 KiB append 18 us against 10 at an aligned offset). This is what a log pays before it
 *   acknowledges a write under {@code everysec}; a thread of its own forces the file to disk once a second as
 *   everysec does; its blocks are reserved ahead as a log segment's are, and once it holds {@value #FILE_BYTES}
 *   bytes it is written over from its start, as our log writes a new segment over the file of one a snapshot
 *   covered (docs/decisions.md, "Log segments reuse their files"), so the appends land in pages the file has: a
 *   1 MiB {@code write(2)} into them took 90-120 us against 150-156 into reserved new pages. The value's lines cross
 *   from the copying core to the appending one once per PUT, as they must between a client and a server on two
 *   cores (docs/decisions.md, "A byte[] PUT's floor includes its copy out of the array").</li>
 * </ul>
 * A target below this floor cannot be met by any design that moves a {@code byte[]} value from one process into the
 * other (and, for a PUT, into a log). {@link #main} is the GET's peer: it holds the bytes and prints
 * {@code READY 0 <address>}.
 */
final class CopyFloor {
    /** Operations a floor records at least, whatever its window. */
    static final int MIN_TIMED = 100;

    /** The smallest size E2 measures a floor for. */
    static final int FROM = 16 << 10;
    /** Bytes a log writes before a value: our frame's head for an E2 key (docs/store.md, "Log format"). */
    static final int RECORD_HEAD = 33;
    /** Bytes a log writes after a value: our frame's oplog position. */
    static final int RECORD_TAIL = 17;
    /** The floor file's size before it starts afresh. */
    static final long FILE_BYTES = 64L << 20;
    private static long sink;

    private CopyFloor() {
    }

    /** The peer: {@code CopyFloor <bytes>} holds that many bytes of {@link #pattern} until its stdin closes. */
    public static void main(String[] args) throws IOException {
        long size = Long.parseLong(args[0]);
        // in huge pages, as the store keeps the values it lends (its cheapest to read: docs/decisions.md)
        MemorySegment held = HugePages.allocate(Arena.global(), size);
        for (long at = 0; at < size; at++) {
            held.set(ValueLayout.JAVA_BYTE, at, pattern(at));
        }
        System.out.println("READY 0 " + held.address());
        System.out.flush();
        while (System.in.read() >= 0) {
            Thread.onSpinWait();
        }
    }

    /** The peer's byte at {@code offset}: the first read of each measurement is checked against it. */
    static byte pattern(long offset) {
        return (byte) (offset * 31 + (offset >>> 8) + 7);
    }

    /** Whether the floor can be measured here (process_vm_readv bound). */
    static boolean available() {
        return CrossMemoryAttach.available();
    }

    /**
     * Times {@code op} ("get" or "put") of {@code size} bytes from {@code peer} (a {@link CopyFloor} child): about
     * {@code warmNanos} untimed, then about {@code windowNanos} each recorded in nanoseconds.
     */
    static Histogram measure(Child peer, String op, int size, long warmNanos, long windowNanos) throws IOException {
        return measure(peer, Long.parseLong(peer.ready.trim()), op, size, warmNanos, windowNanos);
    }

    /**
     * As {@link #measure(Child, String, int, long, long)}, a GET reading from {@code remote} in the peer; a PUT
     * ({@link #measurePut}) does not use the peer.
     */
    static Histogram measure(Child peer, long remote, String op, int size, long warmNanos, long windowNanos)
        throws IOException {
        if (op.equals("put")) {
            return measurePut(size, warmNanos, windowNanos);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(size, 4096);
            read(peer, buffer, remote, size);
            check(buffer, size);
            return timed(warmNanos, windowNanos, () -> {
                read(peer, buffer, remote, size);
                byte[] value = new byte[size];
                MemorySegment.copy(buffer, ValueLayout.JAVA_BYTE, 0, value, 0, size);
                sink += value[size - 1];
            });
        }
    }

    /** One operation of a floor. */
    private interface Operation {
        void run() throws IOException;
    }

    /**
     * Runs {@code op} about {@code warmNanos} untimed, then about {@code windowNanos} each recorded in nanoseconds, and
     * on until at least {@value #MIN_TIMED} are recorded (a loaded host can stretch a short window's operations).
     */
    private static Histogram timed(long warmNanos, long windowNanos, Operation op) throws IOException {
        Histogram h = new Histogram(60_000_000_000L, 3);
        long start = System.nanoTime();
        long measureFrom = start + warmNanos;
        long end = measureFrom + windowNanos;
        long now = start;
        while (now < end || h.getTotalCount() < MIN_TIMED) {
            long t0 = System.nanoTime();
            op.run();
            now = System.nanoTime();
            if (t0 >= measureFrom) {
                h.recordValue(now - t0);
            }
        }
        return h;
    }

    /**
     * The PUT floor: this thread (the client's part) copies a {@code byte[]} value into memory both threads share and
     * hands it over; an appender thread (the server's part, on the other core) appends it from that memory to the log
     * file as a record and hands back. Both wait by spinning, as E2's ucx client and server do. Timed from the copy's
     * start to the hand-back. Two threads of one process on the two cores pay what two processes sharing a mapping
     * would: the value's lines cross from one core to the other once per PUT.
     */
    static Histogram measurePut(int size, long warmNanos, long windowNanos) throws IOException {
        byte[] value = new byte[size];
        for (int i = 0; i < size; i++) {
            value[i] = pattern(i);
        }
        Path dir = Files.createTempDirectory("rdmastore-bench-floor-");
        try (Arena arena = Arena.ofShared(); Appender log = new Appender(dir, arena.allocate(size, 4096))) {
            log.put(value);
            log.checkFirstRecord(value);
            return timed(warmNanos, windowNanos, () -> log.put(value));
        } finally {
            Files.deleteIfExists(dir.resolve("floor.log"));
            Files.deleteIfExists(dir);
        }
    }

    private static void read(Child peer, MemorySegment buffer, long remote, int size) throws IOException {
        int errno = CrossMemoryAttach.read(peer.pid(), buffer.address(), remote, size);
        if (errno != 0) {
            throw new IOException("process_vm_readv from pid " + peer.pid() + " failed: errno " + errno);
        }
    }

    /** Fails unless {@code buffer} holds the peer's bytes: the floor must move the value, not read something else. */
    private static void check(MemorySegment buffer, int size) throws IOException {
        for (int i = 0; i < size; i++) {
            if (buffer.get(ValueLayout.JAVA_BYTE, i) != pattern(i)) {
                throw new IOException("the floor's read returned other bytes than the peer holds, at offset " + i);
            }
        }
    }

    /**
     * A file written by appends only, on a thread of its own, from memory the caller fills; written over from its
     * start once it holds {@value #FILE_BYTES} bytes, and forced to disk once a second by another thread, as a log
     * under everysec is.
     */
    private static final class Appender implements AutoCloseable {
        private final Path file;
        private final MemorySegment shared;
        private final FileChannel channel;
        private final Thread syncer;
        private final Thread appender;
        /** Puts handed over, and puts appended: the appender runs while they differ. */
        private final AtomicLong handed = new AtomicLong();
        private final AtomicLong appended = new AtomicLong();
        private volatile boolean closing;
        private volatile Throwable failure;

        Appender(Path dir, MemorySegment shared) throws IOException {
            this.file = dir.resolve("floor.log");
            this.shared = shared;
            // its blocks reserved ahead of the appends as a store's log segment's are
            Files.deleteIfExists(file);
            channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
            Preallocation.reserveKeepingSize(file, FILE_BYTES + (1L << 20));
            syncer = Thread.ofPlatform().daemon().name("floor-everysec").start(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    try {
                        Thread.sleep(1000);
                        channel.force(false);
                    } catch (InterruptedException e) {
                        return;
                    } catch (IOException e) {
                        // closed meanwhile: the floor is done
                        return;
                    }
                }
            });
            appender = Thread.ofPlatform().daemon().name("floor-appender").start(this::appendLoop);
        }

        /**
         * Copies {@code value} into the shared memory (as our client copies a value into the server's ring or its
         * lent buffer), hands it to the appender and waits until it is appended.
         */
        void put(byte[] value) throws IOException {
            MemoryCopy.copy(value, shared, 0);
            long n = handed.incrementAndGet();
            while (appended.get() != n) {
                if (failure != null) {
                    throw new IOException("the floor's appender failed", failure);
                }
                Thread.onSpinWait();
            }
        }

        /** The appender thread: each handed-over value appended as a log record, in one gathering write. */
        private void appendLoop() {
            ByteBuffer[] record = {ByteBuffer.allocateDirect(RECORD_HEAD), shared.asByteBuffer(),
                ByteBuffer.allocateDirect(RECORD_TAIL)};
            long done = 0;
            try {
                while (!closing) {
                    long n = handed.get();
                    if (n == done) {
                        Thread.onSpinWait();
                        continue;
                    }
                    if (channel.position() >= FILE_BYTES) {
                        channel.position(0);
                    }
                    for (ByteBuffer b : record) {
                        b.clear();
                    }
                    long left = RECORD_HEAD + shared.byteSize() + RECORD_TAIL;
                    while (left > 0) {
                        left -= channel.write(record);
                    }
                    done = n;
                    appended.set(n);
                }
            } catch (Throwable t) {
                failure = t;
            }
        }

        /** Fails unless the file's first record holds {@code value}: the floor must append the bytes it was given. */
        void checkFirstRecord(byte[] value) throws IOException {
            byte[] logged = new byte[value.length];
            try (FileChannel in = FileChannel.open(file, StandardOpenOption.READ)) {
                ByteBuffer into = ByteBuffer.wrap(logged);
                while (into.hasRemaining() && in.read(into, RECORD_HEAD + into.position()) > 0) {
                    // read on until the value is in or the file ends
                }
            }
            int at = Arrays.mismatch(logged, value);
            if (at >= 0) {
                throw new IOException("the floor's log holds other bytes than the value put, at offset " + at);
            }
        }

        @Override
        public void close() throws IOException {
            closing = true;
            syncer.interrupt();
            try {
                appender.join(5_000);
                syncer.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            channel.close();
        }
    }
}
