package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.transport.Connection;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.RemoteMemory;
import io.rdmastore.transport.TransportException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A blob's pull through staging slots: every byte reaches the sink at its offset exactly once, a slot is read into
 * again only after the sink took its chunk, and a failed read or sink write ends the transfer once, after the rest.
 */
@Timeout(30)
class BlobTransferTest {
    private static final long SLOT = 64 << 10;
    private static final int WINDOW = 3;

    private final ExecutorService puller = Executors.newSingleThreadExecutor();
    /** Completes the reads later, on its own thread, as a transport does. */
    private final ScheduledExecutorService transport = Executors.newSingleThreadScheduledExecutor();
    private final Arena arena = Arena.ofShared();

    @AfterEach
    void stop() {
        puller.shutdownNow();
        transport.shutdownNow();
        arena.close();
    }

    private record Remote(MemorySegment bytes) implements RemoteMemory {
        @Override
        public long length() {
            return bytes.byteSize();
        }
    }

    private record Local(MemorySegment segment) implements RegisteredMemory {
        @Override
        public byte[] descriptor() {
            return new byte[0];
        }

        @Override
        public void close() {
        }
    }

    /**
     * A connection whose one-sided reads copy from {@code Remote} after a random delay of up to 2 ms, completing on
     * the transport thread; the read at {@code failAt} (an offset, or -1) fails instead.
     */
    private Connection connection(long failAt) {
        Random delays = new Random(3);
        return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
                if (!method.getName().equals("read")) {
                    throw new UnsupportedOperationException(method.getName());
                }
                MemorySegment src = ((Remote) args[0]).bytes();
                long from = (long) args[1];
                MemorySegment dst = ((RegisteredMemory) args[2]).segment();
                long to = (long) args[3];
                long n = (long) args[4];
                CompletableFuture<Void> f = new CompletableFuture<>();
                long delay;
                synchronized (delays) {
                    delay = delays.nextInt(2_000);
                }
                transport.schedule(() -> {
                    if (from == failAt) {
                        f.completeExceptionally(new TransportException("read at " + from + " failed"));
                    } else {
                        MemorySegment.copy(src, from, dst, to, n);
                        f.complete(null);
                    }
                }, delay, TimeUnit.MICROSECONDS);
                return f;
            });
    }

    private static MemorySegment random(long n, long seed) {
        byte[] b = new byte[(int) n];
        new Random(seed).nextBytes(b);
        return MemorySegment.ofArray(b);
    }

    @Test
    void everyChunkReachesTheSinkOnceAndASlotIsReusedOnlyAfterItsChunkWasWritten() throws Exception {
        long length = 40 * SLOT + 12_345; // 41 chunks through 3 slots
        MemorySegment source = random(length, 1);
        MemorySegment file = arena.allocate(length);
        List<Long> offsets = new CopyOnWriteArrayList<>();
        List<Long> prefixes = new CopyOnWriteArrayList<>();
        CompletableFuture<Throwable> finished = new CompletableFuture<>();
        AtomicInteger finishes = new AtomicInteger();
        BlobTransfer t = new BlobTransfer(connection(-1), new Remote(source), new Local(arena.allocate(WINDOW * SLOT)),
            length, 100 << 10, WINDOW, false, puller, (offset, bytes) -> {
                // slow enough that the other slots' reads complete meanwhile and queue their own writes
                java.util.concurrent.locks.LockSupport.parkNanos(300_000);
                MemorySegment.copy(bytes, 0, file, offset, bytes.byteSize());
                offsets.add(offset);
            }, prefixes::add, failure -> {
                finishes.incrementAndGet();
                finished.complete(failure);
            });
        t.start();
        assertNull(finished.get(20, TimeUnit.SECONDS));
        assertArrayEquals(source.toArray(ValueLayout.JAVA_BYTE), file.toArray(ValueLayout.JAVA_BYTE),
            "the file holds the source: no slot was read into before the sink had taken its chunk");
        List<Long> sorted = new ArrayList<>(offsets);
        Collections.sort(sorted);
        List<Long> expected = new ArrayList<>();
        for (long off = 0; off < length; off += SLOT) {
            expected.add(off); // a 100 KiB chunk is pulled a 64 KiB slot at a time
        }
        assertEquals(expected, sorted, "each chunk written once");
        assertEquals(length, (long) prefixes.getLast());
        for (int i = 1; i < prefixes.size(); i++) {
            assertTrue(prefixes.get(i) > prefixes.get(i - 1), "the landed prefix only rises: " + prefixes);
        }
        assertEquals(length, t.landed());
        Thread.sleep(50);
        assertEquals(1, finishes.get(), "finished ran once");
    }

    @Test
    void aFailedReadEndsTheTransferOnceAfterTheReadsInFlight() throws Exception {
        long length = 20 * SLOT;
        long failAt = 7 * SLOT;
        MemorySegment source = random(length, 2);
        List<Long> offsets = new CopyOnWriteArrayList<>();
        CompletableFuture<Throwable> finished = new CompletableFuture<>();
        AtomicInteger finishes = new AtomicInteger();
        BlobTransfer t = new BlobTransfer(connection(failAt), new Remote(source),
            new Local(arena.allocate(WINDOW * SLOT)), length, SLOT, WINDOW, false, puller,
            (offset, bytes) -> offsets.add(offset), null, failure -> {
                finishes.incrementAndGet();
                finished.complete(failure);
            });
        t.start();
        Throwable failure = finished.get(20, TimeUnit.SECONDS);
        assertInstanceOf(TransportException.class, failure);
        assertTrue(!offsets.contains(failAt), "the failed chunk was not written");
        assertTrue(t.landed() <= failAt, "the prefix stops before the failed chunk: " + t.landed());
        Thread.sleep(50);
        assertEquals(1, finishes.get(), "finished ran once");
    }

    @Test
    void aFailedSinkWriteEndsTheTransferWithItsError() throws Exception {
        long length = 10 * SLOT;
        MemorySegment source = random(length, 3);
        CompletableFuture<Throwable> finished = new CompletableFuture<>();
        BlobTransfer t = new BlobTransfer(connection(-1), new Remote(source),
            new Local(arena.allocate(WINDOW * SLOT)), length, SLOT, WINDOW, false, puller, (offset, bytes) -> {
                if (offset == 4 * SLOT) {
                    throw new IOException("No space left on device");
                }
            }, null, finished::complete);
        t.start();
        Throwable failure = finished.get(20, TimeUnit.SECONDS);
        assertInstanceOf(IOException.class, failure);
        assertEquals("No space left on device", failure.getMessage());
        assertTrue(t.landed() <= 4 * SLOT);
    }
}
