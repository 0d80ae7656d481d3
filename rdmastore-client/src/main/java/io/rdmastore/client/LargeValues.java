package io.rdmastore.client;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.WireReader;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.HugePages;
import io.rdmastore.transport.MemoryCopy;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.RemoteMemory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The client's side of GET_LARGE (docs/protocol.md, "Large values"): over ucx a GET asks with GET_LARGE; a value the
 * server lends instead of sending is read once, one-sided (on one host one {@code process_vm_readv} by the calling
 * thread), into the caller's direct buffer or into a registered bounce buffer for a {@code byte[]}; the lease is
 * named in the next GET_LARGE, which ends it on the server. And of SET_LARGE: a large SET lends the value, from a
 * registered bounce buffer in huge pages (a {@code byte[]}'s, or a caller's direct buffer's, copied) or from a caller's
 * buffer in huge pages ({@link #allocateLendable}) as it is, and the server reads it.
 *
 * <p>Threads: thread-safe; every method runs on the calling thread (never the transport's: a read there would stall
 * the worker). Memory: the bounce buffers (one each way, cached, up to {@value #MAX_CACHED_BOUNCE} bytes) and the
 * registrations of the last destination and the last lent source buffer are this object's, freed at {@link #close()}
 * or when the connection changes; a caller's buffer is registered while it is the last one used that way, and the
 * registration keeps a reference to it.
 */
final class LargeValues implements AutoCloseable {
    /** The largest bounce buffer kept between calls; larger values get a buffer for the one call. */
    static final long MAX_CACHED_BOUNCE = 64L << 20;
    /** Released leases piggybacked on one request at most. */
    private static final int MAX_RELEASES = 256;
    /** Marks a missing key in the decoder's result (null means "use GET": the server lacks GET_LARGE). */
    private static final Object MISSING = new Object();
    /** The buffers {@link #allocateLendable} gave out and not yet collected: start address to end address. */
    private static final ConcurrentSkipListMap<Long, Long> LENDABLE = new ConcurrentSkipListMap<>();
    private static final Cleaner CLEANER = Cleaner.create();

    private final ClientCore core;
    /** Leases read and done with, sent with the next GET_LARGE. */
    private final ConcurrentLinkedQueue<Long> done = new ConcurrentLinkedQueue<>();
    private final AtomicReference<Registered> bounce = new AtomicReference<>();
    private final AtomicReference<Registered> destination = new AtomicReference<>();
    /** Set when the server answered GET_LARGE with an unknown-opcode error: this client then uses GET. */
    private volatile boolean unsupported;
    /** Set when the server refused SET_LARGE (an older server, a replica set, rendezvous off): SET is used. */
    private volatile boolean setUnsupported;
    /**
     * Values from this many bytes on are lent by {@link #set} ({@code -Drdmastore.client.setLargeFrom=N}; 0 or less:
     * never): the GET side's measured crossover (docs/decisions.md).
     */
    static final int SET_LARGE_FROM = positive(Integer.getInteger("rdmastore.client.setLargeFrom", 256 * 1024));
    /**
     * A {@code byte[]} from this many bytes on is copied into the bounce in parts after its SET_LARGE is sent, each
     * part counted for the server, which reads it while the next is copied ({@code -Drdmastore.client.setPartsFrom=N};
     * 0 or less: never; docs/decisions.md, "A large SET is read while the client copies it").
     */
    static final int PARTS_FROM = positive(Integer.getInteger("rdmastore.client.setPartsFrom", 256 * 1024));
    /** The bytes of one such part ({@code -Drdmastore.client.setPart=N}; below 4 KiB, 4 KiB). */
    static final long PART = partBytes(Long.getLong("rdmastore.client.setPart", 128 * 1024));
    /** The count of a SET_LARGE's copied bytes in its bounce. */
    private static final java.lang.invoke.VarHandle PROGRESS = ValueLayout.JAVA_LONG.varHandle();
    /** A part's bytes as asked for, at least 4 KiB (a part of 0 bytes would never finish a copy). */
    static long partBytes(long asked) {
        return Math.max(4096, asked);
    }

    /**
     * The rounds beyond the usual a thread waiting for a SET_LARGE of {@code length} bytes yields before it blocks
     * ({@code ClientCore.Call.patience}): one per 512 bytes, so a 1 MiB SET (about 150 us) is still polled for when
     * its reply lands (2,048 yields, 0.4-2 ms on a free core; a contended core's first slow yield blocks the waiter
     * as before), up to 32,768.
     */
    static int patience(long length) {
        return (int) Math.min(length / 512, 32_768);
    }

    /** Set when the server could not read a SET_LARGE in parts: the whole value is lent then. */
    private volatile boolean partsUnsupported;
    /** The registered memory a SET_LARGE lends its value from (one, cached, up to {@value #MAX_CACHED_BOUNCE}). */
    private final AtomicReference<Registered> setBounce = new AtomicReference<>();
    /** The registration of the last caller's buffer a SET_LARGE lent as it is. */
    private final AtomicReference<Registered> source = new AtomicReference<>();
    /** Buffers a SET_LARGE that failed may still be read from: never reused, freed with this object. */
    private final ConcurrentLinkedQueue<Registered> quarantined = new ConcurrentLinkedQueue<>();
    private volatile boolean closed;

    /** A lent value: the server's lease and the descriptor of its memory. */
    private record Lent(long lease, long length, byte[] descriptor) {
    }

    /** Memory registered with one connection; {@code owner} keeps a caller's buffer reachable. */
    private record Registered(Connection connection, MemorySegment segment, RegisteredMemory registration, Arena arena,
                              Object owner) {
        void close() {
            try {
                registration.close();
            } finally {
                if (arena != null) {
                    arena.close();
                }
            }
        }
    }

    private static final ClientCore.Decoder<Object> DECODER = (st, r) -> {
        if (st == ProtocolDescriptor.STATUS_NULL) {
            return MISSING;
        }
        int kind = r.u8("kind");
        if (kind == ProtocolDescriptor.VALUE_INLINE) {
            return r.rest();
        }
        if (kind != ProtocolDescriptor.VALUE_LENT) {
            throw new io.rdmastore.client.protocol.ProtocolException("unknown GET_LARGE reply kind " + kind);
        }
        return new Lent(r.i64("lease"), r.i64("length"), r.bytes("descriptor", 64 * 1024));
    };

    LargeValues(ClientCore core) {
        this.core = core;
    }

    private static int positive(int n) {
        return n <= 0 ? Integer.MAX_VALUE : n;
    }

    /**
     * SET through SET_LARGE: the value is copied into registered memory that the server reads one-sided, then
     * stored as SET stores it. True when written, false when an NX/XX condition was not met, null when SET_LARGE does
     * not apply here (tcp, a server that refuses it): the caller sends SET.
     */
    Boolean set(byte[] key, byte[] value, int flags, long ttlMillis, Duration timeout) {
        Connection c = lendable();
        if (c == null) {
            return null;
        }
        if (partsUnsupported || value.length < PARTS_FROM) {
            return lendWhole(c, key, value, flags, ttlMillis, timeout);
        }
        // the count of bytes copied lives on a line of its own after the value
        long progressAt = (value.length + 63L) & ~63L;
        Registered buf = take(setBounce, c, progressAt + 8);
        Registered keep = buf.segment.byteSize() > MAX_CACHED_BOUNCE ? null : buf;
        MemorySegment bounce = buf.segment;
        bounce.set(ValueLayout.JAVA_LONG, progressAt, 0L);
        Runnable copy = () -> {
            MemorySegment from = MemorySegment.ofArray(value);
            for (long at = 0; at < value.length; ) {
                long n = Math.min(PART, value.length - at);
                MemoryCopy.copy(from, at, bounce, at, n);
                at += n;
                // after the part's bytes (the copy ends with a full fence): the server reads what the count covers
                PROGRESS.setRelease(bounce, progressAt, at);
            }
        };
        try {
            return lend(setBounce, keep, buf, key, value.length, flags | ProtocolDescriptor.SET_PARTS, ttlMillis,
                timeout, progressAt, copy);
        } catch (RdmaStoreServerException e) {
            String m = String.valueOf(e.getMessage());
            if (!m.startsWith("ERR SET_LARGE parts") && !m.contains("unknown flags")) {
                throw e;
            }
            // a server that cannot read parts (or predates them), or a count that stalled: lent again, whole
            if (!m.contains("stayed at")) {
                partsUnsupported = true;
            }
            return lendWhole(c, key, value, flags, ttlMillis, timeout);
        }
    }

    /** SET_LARGE of {@code value} copied whole into the bounce before the request. */
    private Boolean lendWhole(Connection c, byte[] key, byte[] value, int flags, long ttlMillis, Duration timeout) {
        Registered buf = take(setBounce, c, value.length);
        MemoryCopy.copy(value, buf.segment, 0);
        return lend(setBounce, buf.segment.byteSize() > MAX_CACHED_BOUNCE ? null : buf, buf, key, value.length, flags,
            ttlMillis, timeout, -1, null);
    }

    /**
     * SET through SET_LARGE from the caller's direct buffer: its remaining bytes. A buffer from
     * {@link #allocateLendable} (or one larger than {@value #MAX_CACHED_BOUNCE} bytes) is lent as it is, with no copy
     * on this side, its registration cached while it is the last one lent; any other is copied into the registered
     * bounce buffer first, which is in huge pages: the server's one read of a 1 MiB value from memory in 4 KiB pages
     * costs more than that copy and a read from huge pages together (E2's put-buf 1 MiB 208 us lent as it was, the
     * {@code byte[]} path's copy and lend 170; docs/decisions.md, "A caller's buffer is copied unless it is in huge
     * pages"). Null when SET_LARGE does not apply here (tcp, a server that refuses it, a heap buffer): the caller sends
     * SET.
     */
    Boolean set(byte[] key, ByteBuffer value, int flags, long ttlMillis, Duration timeout) {
        Connection c = value.isDirect() ? lendable() : null;
        if (c == null) {
            return null;
        }
        // exactly the remaining bytes: SET_LARGE's server reads its descriptor's memory from the start
        MemorySegment bytes = MemorySegment.ofBuffer(value);
        if (bytes.byteSize() <= MAX_CACHED_BOUNCE && !inHugePages(bytes)) {
            Registered buf = take(setBounce, c, bytes.byteSize());
            MemorySegment.copy(bytes, 0, buf.segment, 0, bytes.byteSize());
            return lend(setBounce, buf, buf, key, bytes.byteSize(), flags, ttlMillis, timeout, -1, null);
        }
        Registered reg = takeRegistered(source, c, bytes, value);
        return lend(source, reg, reg, key, value.remaining(), flags, ttlMillis, timeout, -1, null);
    }

    /**
     * A direct buffer of {@code capacity} bytes in huge pages (where the kernel gives them; {@link HugePages}) that a
     * large SET lends as it is. Freed when it (and every view of it) is no longer reachable.
     */
    static ByteBuffer allocateLendable(int capacity) {
        if (capacity < 0) {
            throw new IllegalArgumentException("capacity must not be negative: " + capacity);
        }
        MemorySegment seg = HugePages.allocate(Arena.ofAuto(), Math.max(1, capacity)).asSlice(0, capacity);
        ByteBuffer b = seg.asByteBuffer();
        long start = seg.address();
        LENDABLE.put(start, start + capacity);
        // the buffer's views keep the memory alive past this; then it is merely copied, as any other buffer is
        CLEANER.register(b, () -> LENDABLE.remove(start));
        return b;
    }

    /** Whether {@code bytes} lie within a buffer {@link #allocateLendable} gave out. */
    static boolean inHugePages(MemorySegment bytes) {
        Map.Entry<Long, Long> e = LENDABLE.floorEntry(bytes.address());
        return e != null && bytes.address() + bytes.byteSize() <= e.getValue();
    }

    /** The connection SET_LARGE can go out on, or null when SET is the way. */
    private Connection lendable() {
        if (setUnsupported || closed) {
            return null;
        }
        Connection c = core.connection();
        return "ucx".equals(c.transportName()) ? c : null;
    }

    /**
     * Sends SET_LARGE lending {@code buf}'s first {@code length} bytes and waits for the answer. Answered, the buffer
     * goes back to {@code slot} as {@code keep} (or is closed); unanswered (time-out, closed connection), the server
     * may still read it, so it is quarantined until this object closes.
     */
    private Boolean lend(AtomicReference<Registered> slot, Registered keep, Registered buf, byte[] key, long length,
                         int flags, long ttlMillis, Duration timeout, long progressAt, Runnable fill) {
        boolean answered = false;
        try {
            byte[] descriptor = buf.registration.descriptor();
            ClientCore.Call<Boolean> call = core.awaitedCall(ProtocolDescriptor.SET_LARGE, w -> {
                w.u8(flags).i64(ttlMillis).bytes(key).i64(length).bytes(descriptor);
                if (progressAt >= 0) {
                    w.i64(progressAt);
                }
            }, (st, r) -> st == ProtocolDescriptor.STATUS_OK, timeout);
            call.patience = patience(length);
            if (fill != null) {
                fill.run();
            }
            Boolean written;
            try {
                written = core.await(call, timeout);
            } catch (RdmaStoreServerException e) {
                // answered: the server is done with the buffer either way
                answered = true;
                String m = String.valueOf(e.getMessage());
                if (m.startsWith("ERR unknown opcode") || m.startsWith("ERR SET_LARGE unavailable")) {
                    setUnsupported = true;
                    return null;
                }
                throw e;
            }
            answered = true;
            return written;
        } finally {
            if (answered) {
                park(slot, keep, buf);
            } else {
                quarantined.add(buf);
            }
        }
    }

    /** The connection to use GET_LARGE on, or null when GET is the way (tcp, or a server without GET_LARGE). */
    private Connection usable() {
        if (unsupported || closed) {
            return null;
        }
        Connection c = core.connection();
        return "ucx".equals(c.transportName()) ? c : null;
    }

    /**
     * GET through GET_LARGE: the value, or null for a missing key; {@code fallback} is what GET would give, used when
     * GET_LARGE does not apply or the one-sided read failed (the lease then ends with its time-out or connection).
     */
    byte[] get(byte[] key, Duration timeout, java.util.function.Supplier<byte[]> fallback) {
        Connection c = usable();
        if (c == null) {
            return fallback.get();
        }
        Object r = ask(c, key, timeout);
        if (r == null) {
            return fallback.get();
        }
        if (r == MISSING) {
            return null;
        }
        if (r instanceof byte[] b) {
            return b;
        }
        Lent lent = (Lent) r;
        Registered buf = takeBounce(c, lent.length);
        try {
            if (!pull(c, lent, buf, 0, timeout)) {
                return fallback.get();
            }
            byte[] out = new byte[(int) lent.length];
            MemorySegment.copy(buf.segment, ValueLayout.JAVA_BYTE, 0, out, 0, out.length);
            return out;
        } finally {
            done.add(lent.lease);
            giveBounce(buf);
        }
    }

    /**
     * GET into {@code dst} at its position: the value's length (the position moves past it), or -1 for a missing key.
     *
     * @throws IllegalArgumentException when the value is larger than {@code dst.remaining()} (nothing is written)
     */
    int get(byte[] key, ByteBuffer dst, Duration timeout, java.util.function.Supplier<byte[]> fallback) {
        Connection c = dst.isDirect() ? usable() : null;
        Object r = c == null ? null : ask(c, key, timeout);
        if (r == null) {
            r = fallback.get();
            if (r == null) {
                r = MISSING;
            }
        }
        if (r == MISSING) {
            return -1;
        }
        if (r instanceof byte[] b) {
            requireRoom(dst, b.length);
            dst.put(b);
            return b.length;
        }
        Lent lent = (Lent) r;
        try {
            requireRoom(dst, lent.length);
            Registered reg = takeRegistered(destination, c, MemorySegment.ofBuffer(dst.duplicate().clear()), dst);
            boolean pulled;
            try {
                long offset = MemorySegment.ofBuffer(dst).address() - reg.segment.address();
                pulled = pull(c, lent, reg, offset, timeout);
            } finally {
                park(destination, reg, reg);
            }
            if (!pulled) {
                byte[] b = fallback.get();
                if (b == null) {
                    return -1;
                }
                requireRoom(dst, b.length);
                dst.put(b);
                return b.length;
            }
            dst.position(dst.position() + (int) lent.length);
            return (int) lent.length;
        } finally {
            done.add(lent.lease);
        }
    }

    private static void requireRoom(ByteBuffer dst, long length) {
        if (length > dst.remaining()) {
            throw new IllegalArgumentException("the value is " + length + " bytes; the destination has "
                + dst.remaining() + " bytes remaining");
        }
    }

    /** Sends GET_LARGE with the leases done so far; the decoded reply, or null when the server lacks GET_LARGE. */
    private Object ask(Connection c, byte[] key, Duration timeout) {
        long[] ended = drainDone();
        ClientCore.Call<Object> call = core.awaitedCall(ProtocolDescriptor.GET_LARGE, w -> {
            w.bytes(key).i32(ended.length);
            for (long id : ended) {
                w.i64(id);
            }
        }, DECODER, timeout);
        try {
            return core.await(call, timeout);
        } catch (RdmaStoreServerException e) {
            if (String.valueOf(e.getMessage()).startsWith("ERR unknown opcode")) {
                unsupported = true;
                return null;
            }
            throw e;
        }
    }

    private long[] drainDone() {
        if (done.isEmpty()) {
            return new long[0];
        }
        long[] ids = new long[MAX_RELEASES];
        int n = 0;
        Long id;
        while (n < ids.length && (id = done.poll()) != null) {
            ids[n++] = id;
        }
        return java.util.Arrays.copyOf(ids, n);
    }

    /** One one-sided read of the lent value into {@code local} at {@code offset}; false when it failed. */
    private boolean pull(Connection c, Lent lent, Registered local, long offset, Duration timeout) {
        if (lent.length == 0) {
            return true;
        }
        RemoteMemory remote = c.remoteMemory(lent.descriptor);
        CompletableFuture<Void> f = c.read(remote, 0, local.registration, offset, lent.length);
        long deadline = System.nanoTime() + timeout.toNanos();
        // over tcp this thread reads the emulated read's responses itself where the connection lets it
        c.awaitReading(f, deadline);
        int idle = 0;
        while (!f.isDone()) {
            if (System.nanoTime() - deadline > 0) {
                throw new RdmaStoreTimeoutException("reading a lent value of " + lent.length + " bytes timed out after "
                    + timeout.toMillis() + " ms");
            }
            idle = ClientCore.idleStep(idle, core.driveIfNeeded());
        }
        return !f.isCompletedExceptionally();
    }

    private Registered takeBounce(Connection c, long length) {
        return take(bounce, c, length);
    }

    /** The cached buffer in {@code slot} when it fits {@code length} on {@code c}, else a new one; give it back. */
    private static Registered take(AtomicReference<Registered> slot, Connection c, long length) {
        Registered b = slot.getAndSet(null);
        if (b != null && b.connection == c && b.segment.byteSize() >= length) {
            return b;
        }
        if (b != null) {
            b.close();
        }
        long size = Math.max(64 * 1024, Long.highestOneBit(Math.max(1, length - 1)) << 1);
        Arena arena = Arena.ofShared();
        try {
            // the server reads a SET's bounce with process_vm_readv, over huge pages a quarter of the time
            MemorySegment seg = HugePages.allocate(arena, size);
            return new Registered(c, seg, c.register(seg), arena, null);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    private void giveBounce(Registered b) {
        park(bounce, b.segment.byteSize() > MAX_CACHED_BOUNCE ? null : b, b);
    }

    /** Puts {@code keep} back in {@code slot} for the next call, or closes {@code used} when it cannot stay. */
    private void park(AtomicReference<Registered> slot, Registered keep, Registered used) {
        if (keep == null || closed || !slot.compareAndSet(null, keep)) {
            used.close();
        } else if (closed && slot.compareAndSet(keep, null)) {
            keep.close();
        }
    }

    /**
     * The registration of {@code memory} (which {@code owner} holds), taken for one call: the one cached in
     * {@code slot} when the caller passes the same memory again, else a new one. Give it back with {@link #park}.
     */
    private static Registered takeRegistered(AtomicReference<Registered> slot, Connection c, MemorySegment memory,
                                             Object owner) {
        Registered cached = slot.getAndSet(null);
        if (cached != null && cached.connection == c && cached.segment.address() == memory.address()
                && cached.segment.byteSize() == memory.byteSize()) {
            return cached;
        }
        if (cached != null) {
            cached.close();
        }
        return new Registered(c, memory, c.register(memory), null, owner);
    }

    @Override
    public void close() {
        closed = true;
        Registered b = bounce.getAndSet(null);
        if (b != null) {
            b.close();
        }
        Registered d = destination.getAndSet(null);
        if (d != null) {
            d.close();
        }
        for (AtomicReference<Registered> slot : List.of(setBounce, source)) {
            Registered s = slot.getAndSet(null);
            if (s != null) {
                s.close();
            }
        }
        Registered q;
        while ((q = quarantined.poll()) != null) {
            q.close();
        }
    }
}
