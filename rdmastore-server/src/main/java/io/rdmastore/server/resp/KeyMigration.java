package io.rdmastore.server.resp;

import io.rdmastore.client.PeerChannel;
import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.server.replication.ReplicaSet;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.RegisteredMemory;
import io.rdmastore.transport.RemoteMemory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves a MIGRATE batch one-sided (docs/cluster.md, "How keys move"): the source lays the batch's DUMP records out in
 * one off-heap buffer, lends it to the target over a native connection and sends {@code MIGRATE_PULL}; the target
 * reads the whole buffer with one-sided reads, checks its CRC32C, applies every record as {@code ASKING} +
 * {@code RESTORE key ttl payload REPLACE} would, waits for a majority of its replica set when asked, and answers the
 * count. Used when the native connection to the target runs on ucx; over tcp the batch goes as RESP commands.
 *
 * <p>The buffer: {@code count x (keyLength:i32, key, ttlMillis:i64 (0 none), payloadLength:i32, payload)},
 * little-endian, and the CRC32C of all of it travels in the request.
 *
 * <p>Threads: {@link #send} runs on the MIGRATE's own thread, {@link #receive} on a thread the target starts for the
 * request (never a transport thread: a one-sided read on one host is a system call that may wait on the peer).
 */
public final class KeyMigration {
    private static final Logger LOG = LoggerFactory.getLogger(KeyMigration.class);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** The largest batch buffer a target accepts. */
    public static final long MAX_BATCH_BYTES = 1L << 30;
    /** Bytes per one-sided read of a batch. */
    private static final long CHUNK = 16L << 20;

    /** A batch moved one-sided, as seen by the source: keys and bytes. */
    public record Moved(int keys, long bytes, String path) {
    }

    private final RespFace face;
    private final Map<String, PeerChannel> peers = new ConcurrentHashMap<>();
    private volatile Function<String, PeerChannel> opener;
    private volatile boolean closed;
    final LongAdder batchesSent = new LongAdder();
    final LongAdder keysSent = new LongAdder();
    final LongAdder bytesSent = new LongAdder();
    final LongAdder batchesOverResp = new LongAdder();
    final LongAdder batchesPulled = new LongAdder();
    final LongAdder keysPulled = new LongAdder();
    final LongAdder bytesPulled = new LongAdder();
    volatile String lastPath = "none";

    KeyMigration(RespFace face) {
        this.face = face;
    }

    /** How this server opens a native channel to another node ({@code host:port}); without one, MIGRATE uses RESP. */
    public void peers(Function<String, PeerChannel> opener) {
        this.opener = opener;
    }

    /**
     * The channel to {@code address} when it runs on ucx (one-sided reads possible), else null: the caller sends the
     * batch over RESP. A channel that fails is dropped and opened again by the next batch.
     */
    PeerChannel oneSided(String address, Duration timeout) {
        Function<String, PeerChannel> o = opener;
        if (o == null || closed) {
            return null;
        }
        PeerChannel p = peers.computeIfAbsent(address, o);
        try {
            // the first call connects; ROLE is cheap and answered by any node
            p.await(p.call(ProtocolDescriptor.ROLE, w -> { }, (st, r) -> null, timeout), timeout);
        } catch (RuntimeException e) {
            drop(address, p);
            LOG.info("MIGRATE: no native channel to {} ({}); keys go over RESP", address, e.getMessage());
            return null;
        }
        return p.transport().equals("ucx") ? p : null;
    }

    private void drop(String address, PeerChannel p) {
        if (peers.remove(address, p)) {
            p.close();
        }
    }

    /**
     * Sends {@code keys} (present ones with their payloads and TTLs, in order) to the target behind {@code p} and
     * returns how many it applied; throws when it did not apply them (nothing to delete here then).
     */
    long send(String address, PeerChannel p, int slot, List<byte[]> keys, List<byte[]> payloads, List<Long> ttls,
              int waitReplicas, int timeoutMillis) {
        long length = 0;
        for (int i = 0; i < keys.size(); i++) {
            length += 4 + keys.get(i).length + 8 + 4 + payloads.get(i).length;
        }
        Duration timeout = Duration.ofMillis(timeoutMillis);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(length, 64);
            long at = 0;
            for (int i = 0; i < keys.size(); i++) {
                byte[] k = keys.get(i);
                byte[] v = payloads.get(i);
                buf.set(INT, at, k.length);
                MemorySegment.copy(k, 0, buf, ValueLayout.JAVA_BYTE, at + 4, k.length);
                at += 4 + k.length;
                buf.set(LONG, at, ttls.get(i));
                buf.set(INT, at + 8, v.length);
                MemorySegment.copy(v, 0, buf, ValueLayout.JAVA_BYTE, at + 12, v.length);
                at += 12 + v.length;
            }
            CRC32C crc = new CRC32C();
            crc.update(buf.asByteBuffer());
            int sum = (int) crc.getValue();
            long total = length;
            Connection c = p.connection();
            RegisteredMemory reg = c.register(buf);
            try {
                byte[] descriptor = reg.descriptor();
                long applied = p.await(p.call(ProtocolDescriptor.MIGRATE_PULL, w -> w.i32(slot).i32(keys.size())
                    .i64(total).i32(sum).bytes(descriptor).i32(waitReplicas).i64(timeoutMillis),
                    (st, r) -> r.i64("applied"), timeout.plusSeconds(5)), timeout.plusSeconds(5));
                batchesSent.increment();
                keysSent.add(applied);
                bytesSent.add(total);
                lastPath = "one-sided pull over " + p.transport();
                return applied;
            } catch (RuntimeException e) {
                if (!(e instanceof io.rdmastore.client.RdmaStoreServerException)) {
                    // a lost or timed-out channel is opened again next time; an error reply leaves it usable
                    drop(address, p);
                }
                throw e;
            } finally {
                reg.close();
            }
        }
    }

    /**
     * The target's side of {@code MIGRATE_PULL}: pulls the batch the source lent on {@code connection}, checks it, and
     * applies every record as ASKING + RESTORE ... REPLACE (the slot must be importing here or owned here); with
     * {@code waitReplicas} > 0, returns only once that many secondaries of this member's set hold the last record.
     * Returns the number of keys applied; throws with the reason otherwise (nothing applied on a bad CRC).
     */
    public long receive(Connection connection, int slot, int count, long length, int crc, byte[] descriptor,
                        int waitReplicas, long timeoutMillis) throws Exception {
        // a record takes at least 16 bytes (lengths and TTL), so count cannot exceed length / 16
        if (slot < 0 || slot >= 16384 || count < 1 || length < 1 || length > MAX_BATCH_BYTES || count > length / 16) {
            throw new IllegalArgumentException("ERR bad MIGRATE_PULL: slot " + slot + ", " + count + " keys, "
                + length + " bytes (at most " + MAX_BATCH_BYTES + ")");
        }
        io.rdmastore.server.cluster.ClusterNode cluster = face.cluster();
        if (cluster == null) {
            throw new IllegalStateException("ERR This instance has cluster support disabled");
        }
        if (cluster.importingFrom(slot) == null && cluster.redirect(slot, true, false) != null) {
            throw new IllegalStateException("ERR slot " + slot + " is neither importing nor owned here: "
                + cluster.redirect(slot, true, false));
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        List<byte[][]> commands = new ArrayList<>(count);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment local = arena.allocate(length, 64);
            RemoteMemory remote = connection.remoteMemory(descriptor);
            RegisteredMemory reg = connection.register(local);
            try {
                for (long off = 0; off < length; off += CHUNK) {
                    long n = Math.min(CHUNK, length - off);
                    long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
                    connection.read(remote, off, reg, off, n).get(left, TimeUnit.MILLISECONDS);
                }
            } finally {
                reg.close();
            }
            CRC32C check = new CRC32C();
            check.update(local.asByteBuffer());
            if ((int) check.getValue() != crc) {
                throw new IllegalStateException("ERR MIGRATE_PULL batch CRC32C mismatch: nothing applied");
            }
            long at = 0;
            byte[] replace = "REPLACE".getBytes(StandardCharsets.US_ASCII);
            for (int i = 0; i < count; i++) {
                int kl = field(local, at, length);
                byte[] key = local.asSlice(at + 4, kl).toArray(ValueLayout.JAVA_BYTE);
                at += 4 + kl;
                if (at + 12 > length) {
                    throw new IllegalStateException("ERR MIGRATE_PULL batch truncated at record " + i);
                }
                long ttl = local.get(LONG, at);
                int vl = field(local, at + 8, length);
                byte[] payload = local.asSlice(at + 12, vl).toArray(ValueLayout.JAVA_BYTE);
                at += 12 + vl;
                if (io.rdmastore.client.cluster.HashSlot.of(key) != slot) {
                    throw new IllegalStateException("ERR MIGRATE_PULL key of slot "
                        + io.rdmastore.client.cluster.HashSlot.of(key) + " in a batch of slot " + slot);
                }
                commands.add(new byte[][] {"RESTORE".getBytes(StandardCharsets.US_ASCII), key,
                    Long.toString(Math.max(ttl, 0)).getBytes(StandardCharsets.US_ASCII), payload, replace});
            }
            if (at != length) {
                throw new IllegalStateException("ERR MIGRATE_PULL batch has " + (length - at) + " bytes past its "
                    + count + " records");
            }
        }
        RespConnection c = new RespConnection(face, 0, true, HOST);
        byte[][] asking = {"ASKING".getBytes(StandardCharsets.US_ASCII)};
        long applied = 0;
        for (byte[][] restore : commands) {
            run(c, asking);
            String error = run(c, restore);
            if (error != null) {
                throw new IllegalStateException("ERR RESTORE of a migrated key failed: " + error + " (" + applied
                    + " of " + count + " applied)");
            }
            applied++;
        }
        batchesPulled.increment();
        keysPulled.add(applied);
        bytesPulled.add(length);
        ReplicaSet rs = face.replicaSet();
        if (waitReplicas > 0 && rs != null) {
            long index = face.store.oplog().lastIndex();
            long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
            long acked = rs.awaitReplicas(index, waitReplicas, left).get(left + 1000, TimeUnit.MILLISECONDS);
            if (acked < waitReplicas) {
                throw new IllegalStateException("IOERR the keys are on " + acked + " secondaries of this set, not "
                    + waitReplicas + ", within " + timeoutMillis + " ms");
            }
        }
        return applied;
    }

    /** Runs one command on {@code c}; returns its error reply's text, or null when it succeeded. */
    private String run(RespConnection c, byte[][] argv) {
        NativeCommands.run(face, c, argv);
        io.netty.buffer.ByteBuf o = c.w.out;
        c.w.out = null;
        if (o == null) {
            return null;
        }
        try {
            if (o.isReadable() && o.getByte(o.readerIndex()) == '-') {
                return o.toString(o.readerIndex(), Math.min(o.readableBytes(), 300), StandardCharsets.UTF_8).strip();
            }
            return null;
        } finally {
            o.release();
        }
    }

    /** The host of the connection RESTOREs run on: they neither block nor subscribe. */
    private static final RespConnection.Host HOST = new RespConnection.Host() {
        @Override
        public void blocked(RespConnection c) {
            throw new IllegalStateException("a migration's RESTORE cannot block");
        }

        @Override
        public void resumed(RespConnection c, java.util.function.Consumer<RespWriter> reply) {
        }

        @Override
        public void pushed(RespConnection c, java.util.function.Consumer<RespWriter> message) {
        }

        @Override
        public java.util.concurrent.Future<?> schedule(Runnable task, long millis) {
            throw new IllegalStateException("a migration's RESTORE schedules nothing");
        }
    };

    private static int field(MemorySegment m, long at, long length) {
        if (at + 4 > length) {
            throw new IllegalStateException("ERR MIGRATE_PULL batch truncated");
        }
        int n = m.get(INT, at);
        if (n < 0 || at + 4 + n > length) {
            throw new IllegalStateException("ERR MIGRATE_PULL batch has a field of " + n + " bytes past its end");
        }
        return n;
    }

    /** The lines of INFO's cluster section about moved keys. */
    void info(Map<String, String> section) {
        section.put("migrate_batches_one_sided", Long.toString(batchesSent.sum()));
        section.put("migrate_batches_resp", Long.toString(batchesOverResp.sum()));
        section.put("migrate_keys_one_sided", Long.toString(keysSent.sum()));
        section.put("migrate_bytes_one_sided", Long.toString(bytesSent.sum()));
        section.put("migrate_last_path", lastPath);
        section.put("migrate_pulled_batches", Long.toString(batchesPulled.sum()));
        section.put("migrate_pulled_keys", Long.toString(keysPulled.sum()));
        section.put("migrate_pulled_bytes", Long.toString(bytesPulled.sum()));
    }

    /** Closes the cached channels (server shutdown). */
    void close() {
        closed = true;
        peers.values().forEach(PeerChannel::close);
        peers.clear();
    }
}
