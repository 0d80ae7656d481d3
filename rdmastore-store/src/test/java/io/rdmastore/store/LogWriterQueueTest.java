package io.rdmastore.store;

import static io.rdmastore.store.TestSupport.b;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The log writer's queue: appends never write the file, wait only when every buffer is queued, keep append order
 * across pooled buffers and large frames written as they are, and refuse writes after a failed one.
 */
class LogWriterQueueTest {
    @TempDir
    Path dir;

    /** A frame deleting a key of {@code keyBytes} bytes of {@code fill}: its payload says which frame it is. */
    private static FrameBuilder frameOf(int keyBytes, byte fill) {
        byte[] k = new byte[keyBytes];
        Arrays.fill(k, fill);
        return new FrameBuilder().op(LogDescriptor.OP_DELETE).putBytes(k);
    }

    private static long append(LogWriter w, FrameBuilder f) {
        return w.append(f, f.sealPositioned());
    }

    /** Each frame of segment 1 as {first key byte, key length, oplog index}, in file order. */
    private List<long[]> framesInFile() throws IOException {
        List<long[]> out = new ArrayList<>();
        FrameScanner.Outcome o = FrameScanner.scan(dir.resolve(LogDescriptor.segmentName(1)),
                LogDescriptor.SEGMENT_MAGIC, (payload, offset) -> {
                    ByteBuffer p = payload.order(LogDescriptor.ORDER);
                    assertEquals(LogDescriptor.OP_DELETE, p.get(0));
                    int len = p.getInt(1);
                    long index = p.getLong(p.limit() - 8);
                    out.add(new long[] {p.get(5), len, index});
                });
        assertTrue(o.clean(), "the segment reads clean: " + o.problem());
        return out;
    }

    /** A thread holding the log's write lock, so no write runs, until {@link #release}. */
    private record HeldWrites(CountDownLatch released, Future<?> holder) {
        void release() throws Exception {
            released.countDown();
            holder.get(10, TimeUnit.SECONDS);
        }
    }

    private static HeldWrites holdWrites(ExecutorService pool, LogWriter w) throws InterruptedException {
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch released = new CountDownLatch(1);
        Future<?> holder = pool.submit(() -> w.holdingWrites(ch -> {
            holding.countDown();
            try {
                released.await(20, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        assertTrue(holding.await(10, TimeUnit.SECONDS));
        return new HeldWrites(released, holder);
    }

    @Test
    @Timeout(30)
    void anExhaustedPoolMakesAppendsWaitThenContinue() throws Exception {
        int key = 60_000; // below the large-frame size: copied into the pooled buffers
        int frames = (int) (LogWriter.MAX_QUEUED_BYTES / key) + 40;
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try (LogWriter w = new LogWriter(dir, 1, 0, new Oplog(0))) {
            HeldWrites held = holdWrites(pool, w);
            Future<Long> appender = pool.submit(() -> {
                long t = 0;
                for (int i = 0; i < frames; i++) {
                    t = append(w, frameOf(key, (byte) (i % 100)));
                }
                return t;
            });
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (w.appendWaits() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertEquals(1, w.appendWaits(), "the append past the last buffer waits for the writer");
            assertFalse(appender.isDone(), "appends cannot go on while every buffer is queued and no write runs");
            held.release();
            long ticket = appender.get(20, TimeUnit.SECONDS);
            w.syncTo(ticket);
            assertEquals(frames, w.lastIndex());
        } finally {
            pool.shutdownNow();
        }
        List<long[]> got = framesInFile();
        assertEquals(frames, got.size());
        for (int i = 0; i < frames; i++) {
            assertEquals(i % 100, got.get(i)[0], "frame " + i + " in append order");
            assertEquals(i + 1, got.get(i)[2], "indexes follow the file");
        }
    }

    /**
     * With fsync everysec or always every appender writes its own records, so the write-behind thread must not follow
     * the appends: it neither polls every millisecond after a write nor is unparked by each append (each of its
     * wake-ups takes a core from a spinning transport thread or a client). Without {@code callersWrite} it does poll,
     * which shows the count would catch it.
     */
    @Test
    @Timeout(30)
    void whileCallersWriteTheWriteBehindThreadStaysAsleep() throws Exception {
        try (LogWriter w = new LogWriter(dir, 1, 0, new Oplog(0))) {
            w.callersWrite(true);
            long asleep = roundsDuringWrites(w, 400);
            assertTrue(asleep <= 20, "the write-behind thread woke " + asleep + " times in 400 ms of writes; its "
                + "backstop round is 50 ms");
            w.callersWrite(false);
            long polling = roundsDuringWrites(w, 400);
            assertTrue(polling > 40, "without callersWrite the write-behind thread polls after each write: "
                + polling + " rounds in 400 ms");
        }
    }

    /** Appends and writes one small frame after another for {@code millis}; the write-behind rounds meanwhile. */
    private static long roundsDuringWrites(LogWriter w, long millis) throws InterruptedException {
        Thread.sleep(120); // past the polling that earlier writes may have started
        long before = w.writerRounds();
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        int i = 0;
        while (System.nanoTime() < end) {
            w.writeTo(append(w, frameOf(16, (byte) (i++ % 100))));
            Thread.sleep(0, 200_000);
        }
        return w.writerRounds() - before;
    }

    /** A record no appender writes (callersWrite on) still reaches the file: the write-behind thread's backstop. */
    @Test
    @Timeout(30)
    void aRecordNobodyWritesStillReachesTheFile() throws Exception {
        try (LogWriter w = new LogWriter(dir, 1, 0, new Oplog(0))) {
            w.callersWrite(true);
            append(w, frameOf(16, (byte) 7));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (!w.allWritten() && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertTrue(w.allWritten(), "the write-behind thread wrote the record within 5 s");
            List<long[]> got = framesInFile();
            assertEquals(1, got.size());
            assertEquals(7, got.get(0)[0]);
        }
    }

    /**
     * The pool exhausted again and again: each time the writer hands its buffers back, the waiting append must take
     * one without losing another (a lost buffer still counts against the pool, so a few rounds would leave none and
     * every append waiting for ever), and the first buffer the log opened with is pooled like the rest.
     */
    @Test
    @Timeout(60)
    void anExhaustedPoolGivesEveryBufferBack() throws Exception {
        int key = 60_000;
        int perRound = (int) (LogWriter.MAX_QUEUED_BYTES / key) + 20;
        int rounds = 2 * LogWriter.MAX_BUFFERS + 2;
        ExecutorService pool = Executors.newFixedThreadPool(2);
        long ticket = 0;
        try (LogWriter w = new LogWriter(dir, 1, 0, new Oplog(0))) {
            for (int round = 0; round < rounds; round++) {
                int first = round * perRound;
                HeldWrites held = holdWrites(pool, w);
                long waitsBefore = w.appendWaits();
                Future<Long> appender = pool.submit(() -> {
                    long t = 0;
                    for (int i = first; i < first + perRound; i++) {
                        t = append(w, frameOf(key, (byte) (i % 100)));
                    }
                    return t;
                });
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (w.appendWaits() == waitsBefore && System.nanoTime() < deadline) {
                    Thread.sleep(2);
                }
                assertEquals(waitsBefore + 1, w.appendWaits(), "round " + round + ": the pool runs out");
                held.release();
                ticket = appender.get(10, TimeUnit.SECONDS);
            }
            w.syncTo(ticket);
            assertEquals((long) rounds * perRound, w.lastIndex());
        } finally {
            pool.shutdownNow();
        }
        List<long[]> got = framesInFile();
        assertEquals(rounds * perRound, got.size());
        for (int i = 0; i < got.size(); i++) {
            assertEquals(i % 100, got.get(i)[0], "frame " + i + " in append order");
        }
    }

    @Test
    @Timeout(30)
    void largeFramesInterleavedWithSmallOnesKeepAppendOrder() throws Exception {
        int[] sizes = {100, LogWriter.LARGE_FRAME_BYTES, 3000, LogWriter.BUFFER_BYTES * 2 + 7, 10, 10,
            LogWriter.BUFFER_BYTES - 100, 200_000, 5};
        Oplog oplog = new Oplog(64L << 20);
        try (LogWriter w = new LogWriter(dir, 1, 0, oplog)) {
            long t = 0;
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < sizes.length; i++) {
                    t = append(w, frameOf(sizes[i], (byte) (round * 10 + i)));
                }
                if (round == 1) {
                    w.writeTo(t);
                }
            }
            w.syncTo(t);
            assertEquals(3L * sizes.length, w.lastIndex());
        }
        List<long[]> got = framesInFile();
        assertEquals(3 * sizes.length, got.size());
        List<Oplog.Entry> kept = new ArrayList<>();
        assertEquals(got.size(), oplog.read(1, Long.MAX_VALUE, kept));
        for (int i = 0; i < got.size(); i++) {
            int round = i / sizes.length;
            int j = i % sizes.length;
            assertEquals((byte) (round * 10 + j), got.get(i)[0], "frame " + i);
            assertEquals(sizes[j], got.get(i)[1], "frame " + i);
            assertEquals(i + 1, got.get(i)[2], "frame " + i);
            byte[] frame = kept.get(i).frame();
            assertEquals(sizes[j], ByteBuffer.wrap(frame).order(LogDescriptor.ORDER)
                .getInt(LogDescriptor.HEADER_LENGTH + 1), "the oplog keeps frame " + i + " whole");
        }
    }

    @Test
    @Timeout(60)
    void largeAndSmallValuesSurviveARestart() {
        byte[][] values = new byte[12][];
        for (int i = 0; i < values.length; i++) {
            int n = i % 3 == 0 ? 100 + i : i % 3 == 1 ? 70_000 + i : 1_500_000 + i;
            values[i] = new byte[n];
            Arrays.fill(values[i], (byte) i);
        }
        StoreConfig c = TestSupport.config(dir);
        c.blobs(c.blobs().thresholdBytes(16L << 20));
        try (Store st = Store.open(c)) {
            for (int i = 0; i < values.length; i++) {
                st.set(b("k" + i), values[i]);
            }
            st.set(b("k0"), b("again"));
        }
        StoreConfig c2 = TestSupport.config(dir);
        c2.blobs(c2.blobs().thresholdBytes(16L << 20));
        try (Store st = Store.open(c2)) {
            assertArrayEquals(b("again"), st.get(b("k0")));
            for (int i = 1; i < values.length; i++) {
                assertArrayEquals(values[i], st.get(b("k" + i)), "key k" + i);
            }
            assertEquals(0, st.blobs().count(), "below the threshold nothing is a blob file");
        }
    }

    @Test
    @Timeout(30)
    void aFailedWriteRefusesTheNextAppend() throws Exception {
        try (LogWriter w = new LogWriter(dir, 1, 0, new Oplog(0))) {
            long ok = append(w, frameOf(100, (byte) 1));
            w.syncTo(ok);
            long[] t = new long[1];
            w.holdingWrites(ch -> {
                try {
                    ch.close();
                } catch (IOException e) {
                    throw new AssertionError(e);
                }
                // accepted: the append makes no system call; the write fails later, on whichever thread makes it
                t[0] = append(w, frameOf(LogWriter.LARGE_FRAME_BYTES * 2, (byte) 2));
            });
            StoreException failed = assertThrows(StoreException.class, () -> w.writeTo(t[0]));
            assertTrue(failed.getMessage().contains("log write failed") || failed.getMessage().startsWith("MISCONF"),
                failed.getMessage());
            StoreException refused = assertThrows(StoreException.class, () -> append(w, frameOf(10, (byte) 3)));
            assertTrue(refused.getMessage().startsWith("MISCONF"), refused.getMessage());
            assertThrows(StoreException.class, () -> w.syncTo(t[0]));
        }
    }
}
