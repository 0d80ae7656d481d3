package io.rdmastore.store;

import io.rdmastore.store.blob.BlobVersion;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The keyspace: {@value #SHARDS} shards, each a {@link HashMap} guarded by its own read/write lock. Readers of a
 * shard hold its read lock, writers its write lock; multi-key operations lock their shards in index order. String
 * values live off-heap ({@link NativeMemory}) and are freed only under the write lock, so a reader holding the read
 * lock can never see freed memory. The {@code apply*} methods change state without checks or locks: the caller holds
 * the shard's write lock (or is recovery, alone).
 */
final class Keyspace {
    static final int SHARDS = 1024;
    static final byte STRING = 1;
    static final byte HASH = 2;
    /** A set of byte strings ({@link Sets}); log ops 20-22. */
    static final byte SET = 3;
    /** A list of byte strings ({@link Lists}); log ops 23-27. */
    static final byte LIST = 4;
    /** A sorted set ({@link SortedSets}); log ops 28-30. */
    static final byte ZSET = 5;

    /** One key's value. Guarded by its shard's lock. */
    static final class Entry {
        byte type;
        long expireAt = -1;
        /**
         * STRING: off-heap bytes, capacity = byteSize(); {@link #length} bytes are the value. Null when the value is
         * a blob file ({@link #blob}).
         */
        MemorySegment string;
        long length;
        /** STRING held in a blob file: one reference, given back when the entry goes. Never written in place. */
        BlobVersion blob;
        /** HASH: fields in insertion order; values are private heap arrays. */
        LinkedHashMap<Key, byte[]> hash;
        /** SET: its members. */
        MemberSet set;
        /** LIST: its elements. */
        ValueList list;
        /** ZSET: its members and scores. */
        ScoreSet zset;

        boolean expired(long now) {
            return expireAt >= 0 && expireAt <= now;
        }
    }

    /** A shard: a map and its lock. */
    static final class Shard {
        final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
        final HashMap<Key, Entry> map = new HashMap<>();
        int withTtl;
    }

    final Shard[] shards = new Shard[SHARDS];
    final NativeMemory memory = new NativeMemory();
    final AtomicLong keys = new AtomicLong();
    final AtomicLong expires = new AtomicLong();

    Keyspace() {
        for (int i = 0; i < SHARDS; i++) {
            shards[i] = new Shard();
        }
    }

    static int shardIndex(Key k) {
        return k.hashCode() & (SHARDS - 1);
    }

    Shard shard(Key k) {
        return shards[shardIndex(k)];
    }

    // ---- state changes, called with the shard's write lock held ----

    void remove(Shard s, Key k) {
        Entry e = s.map.remove(k);
        if (e != null) {
            release(s, e);
        }
    }

    private void release(Shard s, Entry e) {
        keys.decrementAndGet();
        if (e.expireAt >= 0) {
            s.withTtl--;
            expires.decrementAndGet();
        }
        if (e.string != null) {
            memory.free(e.string);
            e.string = null;
        }
        if (e.blob != null) {
            e.blob.release();
            e.blob = null;
        }
    }

    Entry create(Shard s, Key k, byte type, long expireAt) {
        Entry e = new Entry();
        e.type = type;
        e.expireAt = expireAt;
        if (expireAt >= 0) {
            s.withTtl++;
            expires.incrementAndGet();
        }
        if (type == HASH) {
            e.hash = new LinkedHashMap<>();
        } else if (type == SET) {
            e.set = new MemberSet();
        } else if (type == LIST) {
            e.list = new ValueList();
        } else if (type == ZSET) {
            e.zset = new ScoreSet();
        }
        s.map.put(k, e);
        keys.incrementAndGet();
        return e;
    }

    void setExpire(Shard s, Entry e, long expireAt) {
        if (e.expireAt >= 0 && expireAt < 0) {
            s.withTtl--;
            expires.decrementAndGet();
        } else if (e.expireAt < 0 && expireAt >= 0) {
            s.withTtl++;
            expires.incrementAndGet();
        }
        e.expireAt = expireAt;
    }

    void applyStringPut(Key k, long expireAt, ByteBuffer src, int len) {
        Shard s = shard(k);
        Entry old = s.map.get(k);
        if (old != null && old.type == STRING && old.blob == null && fitsInPlace(old.string.byteSize(), len)
                && !memory.isPinned(old.string)) {
            // Overwriting a string of about the same size (the common SET) reuses its memory: no free, no malloc.
            // Readers hold the read lock and we hold the write lock, so none sees the bytes change.
            MemorySegment.copy(MemorySegment.ofBuffer(src.slice(src.position(), len)), 0, old.string, 0, len);
            src.position(src.position() + len);
            old.length = len;
            setExpire(s, old, expireAt);
            return;
        }
        MemorySegment seg = memory.allocate(len);
        MemorySegment.copy(MemorySegment.ofBuffer(src.slice(src.position(), len)), 0, seg, 0, len);
        src.position(src.position() + len);
        applyStringAdopt(k, expireAt, seg);
    }

    /** Replaces the key with a string whose bytes are {@code block} (from {@link #memory}), which the entry takes. */
    void applyStringAdopt(Key k, long expireAt, MemorySegment block) {
        Shard s = shard(k);
        remove(s, k);
        Entry e = create(s, k, STRING, expireAt);
        e.string = block;
        e.length = block.byteSize();
    }

    /** Replaces the key with a string held in blob file {@code v}; the entry takes its own reference. */
    void applyStringBlob(Key k, long expireAt, BlobVersion v) {
        Shard s = shard(k);
        v.retain(); // before the old entry goes: it may hold the same version (a replayed rename)
        remove(s, k);
        Entry e = create(s, k, STRING, expireAt);
        e.blob = v;
        e.length = v.length();
    }

    /** A string entry's bytes (its first {@link Entry#length}): off-heap memory or the blob's mapping. */
    static MemorySegment value(Entry e) {
        return e.blob != null ? e.blob.segment() : e.string;
    }

    /** Reuse a block when the value fits and would not leave more than about half of it idle. */
    private static boolean fitsInPlace(long capacity, int len) {
        return capacity >= len && capacity <= 2L * len + 64;
    }

    void applyStringWriteAt(Key k, long offset, ByteBuffer src, int len) {
        Shard s = shard(k);
        Entry e = s.map.get(k);
        if (e != null && e.type != STRING) {
            // Only during replay over a snapshot taken while writing: a later op in the log fixes the key.
            remove(s, k);
            e = null;
        }
        if (e == null) {
            e = create(s, k, STRING, -1);
            e.string = memory.allocate(0);
            e.length = 0;
        }
        if (e.blob != null) {
            // Only in replay over a fuzzy snapshot (live writes log a whole value over a blob): an assignment that
            // follows in the log fixes the key, so a file deleted meanwhile may read as zeros.
            MemorySegment copy = memory.allocate(e.length);
            if (e.blob.missing()) {
                copy.fill((byte) 0);
            } else {
                MemorySegment.copy(e.blob.segment(), 0, copy, 0, e.length);
            }
            e.blob.release();
            e.blob = null;
            e.string = copy;
        }
        long end = offset + len;
        if (memory.isPinned(e.string)) {
            // copy-on-write: a lent value's bytes stay as they were until its borrower is done
            MemorySegment n = memory.allocate(Math.max(end, e.string.byteSize()));
            MemorySegment.copy(e.string, 0, n, 0, e.length);
            memory.free(e.string);
            e.string = n;
        }
        if (end > e.string.byteSize()) {
            long cap = Math.max(end, Math.min(e.string.byteSize() * 2, end + (1L << 20)));
            if (cap > StoreConfig.HARD_MAX_VALUE_BYTES) {
                cap = end;
            }
            MemorySegment n = memory.allocate(cap);
            MemorySegment.copy(e.string, 0, n, 0, e.length);
            memory.free(e.string);
            e.string = n;
        }
        if (offset > e.length) {
            e.string.asSlice(e.length, offset - e.length).fill((byte) 0);
        }
        MemorySegment.copy(MemorySegment.ofBuffer(src.slice(src.position(), len)), 0, e.string, offset, len);
        src.position(src.position() + len);
        e.length = Math.max(e.length, end);
    }

    void applyHashPut(Key k, ByteBuffer src, boolean replace, long expireAt) {
        Shard s = shard(k);
        Entry e = s.map.get(k);
        if (replace || (e != null && e.type != HASH)) {
            remove(s, k);
            e = null;
        }
        if (e == null) {
            e = create(s, k, HASH, replace ? expireAt : -1);
        }
        int n = src.getInt();
        for (int i = 0; i < n; i++) {
            Key f = Key.wrap(readBytes(src));
            e.hash.put(f, readBytes(src));
        }
        if (e.hash.isEmpty()) {
            remove(s, k);
        }
    }

    void applyHashDelete(Key k, ByteBuffer src) {
        Shard s = shard(k);
        Entry e = s.map.get(k);
        int n = src.getInt();
        for (int i = 0; i < n; i++) {
            byte[] f = readBytes(src);
            if (e != null && e.type == HASH) {
                e.hash.remove(Key.wrap(f));
            }
        }
        if (e != null && e.type == HASH && e.hash.isEmpty()) {
            remove(s, k);
        }
    }

    void applyDelete(Key k) {
        remove(shard(k), k);
    }

    void applyExpire(Key k, long expireAt) {
        Shard s = shard(k);
        Entry e = s.map.get(k);
        if (e != null) {
            setExpire(s, e, expireAt);
        }
    }

    /** Empties every shard; the caller holds every shard's write lock. */
    void applyFlush() {
        for (Shard s : shards) {
            for (Entry e : s.map.values()) {
                release(s, e);
            }
            s.map.clear();
            s.withTtl = 0;
        }
    }

    /** Frees all off-heap memory; the store is closed and nothing reads any more. */
    void freeAll() {
        for (Shard s : shards) {
            s.lock.writeLock().lock();
            try {
                for (Entry e : s.map.values()) {
                    release(s, e);
                }
                s.map.clear();
            } finally {
                s.lock.writeLock().unlock();
            }
        }
    }

    /** The value type of a live entry; {@link ValueType#NONE} for null. */
    static ValueType valueType(Entry e) {
        if (e == null) {
            return ValueType.NONE;
        }
        return switch (e.type) {
            case STRING -> ValueType.STRING;
            case HASH -> ValueType.HASH;
            case LIST -> ValueType.LIST;
            case ZSET -> ValueType.ZSET;
            default -> ValueType.SET;
        };
    }

    static byte[] readBytes(ByteBuffer b) {
        int n = b.getInt();
        byte[] a = new byte[n];
        b.get(a);
        return a;
    }

    static byte[] copyOut(Entry e) {
        byte[] a = new byte[Math.toIntExact(e.length)];
        MemorySegment.copy(value(e), ValueLayout.JAVA_BYTE, 0, a, 0, a.length);
        return a;
    }

    /** The op that recreates a string entry: its bytes, or a reference to its blob file. */
    static void encodeString(FrameBuilder f, Key k, Entry e) {
        if (e.blob != null) {
            f.op(LogDescriptor.OP_STRING_BLOB).putBytes(k.bytes).putLong(e.expireAt).putLong(e.blob.version())
                .putLong(e.length).putInt(e.blob.crc32c());
        } else {
            f.op(LogDescriptor.OP_STRING_PUT).putBytes(k.bytes).putLong(e.expireAt).putBytes(e.string, e.length);
        }
    }

    /**
     * Appends every entry of a shard to {@code f} as full-state ops (a snapshot's view of the shard), calling
     * {@code flush} whenever the frame passes {@code chunkBytes}; returns the number of keys encoded. A string of
     * {@code largeFrom} bytes or more held in memory goes to {@code large} instead, which encodes it itself.
     */
    static long encodeShard(Shard s, FrameBuilder f, long chunkBytes, Runnable flush, long largeFrom,
                            java.util.function.BiConsumer<Key, Entry> large) {
        long n = 0;
        for (Map.Entry<Key, Entry> me : s.map.entrySet()) {
            n++;
            if (f.payloadLength() >= chunkBytes) {
                flush.run();
            }
            Key k = me.getKey();
            Entry e = me.getValue();
            if (e.type == STRING && e.blob == null && e.length >= largeFrom) {
                large.accept(k, e);
            } else if (e.type == STRING) {
                encodeString(f, k, e);
            } else if (e.type == SET) {
                Sets.encodeChunked(f, k, e, chunkBytes, flush);
            } else if (e.type == LIST) {
                Lists.encodeChunked(f, k, e, chunkBytes, flush);
            } else if (e.type == ZSET) {
                SortedSets.encodeChunked(f, k, e, chunkBytes, flush);
            } else {
                // Very large hashes go as a replace plus puts so no single op nears the frame limit.
                Iterator<Map.Entry<Key, byte[]>> it = e.hash.entrySet().iterator();
                boolean first = true;
                while (it.hasNext()) {
                    long bytes = 0;
                    java.util.ArrayList<Map.Entry<Key, byte[]>> chunk = new java.util.ArrayList<>();
                    if (!first && f.payloadLength() >= chunkBytes) {
                        flush.run();
                    }
                    while (it.hasNext() && bytes < chunkBytes) {
                        Map.Entry<Key, byte[]> fe = it.next();
                        chunk.add(fe);
                        bytes += fe.getKey().bytes.length + fe.getValue().length + 8;
                    }
                    if (first) {
                        f.op(LogDescriptor.OP_HASH_REPLACE).putBytes(k.bytes).putLong(e.expireAt);
                        first = false;
                    } else {
                        f.op(LogDescriptor.OP_HASH_PUT).putBytes(k.bytes);
                    }
                    f.putInt(chunk.size());
                    for (Map.Entry<Key, byte[]> fe : chunk) {
                        f.putBytes(fe.getKey().bytes).putBytes(fe.getValue());
                    }
                }
            }
        }
        return n;
    }
}
