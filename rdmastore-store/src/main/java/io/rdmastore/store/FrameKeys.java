package io.rdmastore.store;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;

/**
 * Which parts of the store a log frame touches, read from its payload without applying it: the shards of the keys it
 * names and whether it changes documents. A secondary locks exactly these before applying a frame from its primary,
 * so readers of other keys do not wait. Stateless; any thread. The buffer's position is left where it was.
 */
final class FrameKeys {
    private FrameKeys() {
    }

    /** What a frame touches: sorted, distinct shard indexes (null: every lock) and whether it changes documents. */
    record Touched(int[] shards, boolean documents) {
    }

    static Touched touched(ByteBuffer payload) {
        return touched(payload, null);
    }

    /** As {@link #touched(ByteBuffer)}, also adding {version, length, crc32c} of every blob the frame names. */
    static Touched touched(ByteBuffer payload, List<long[]> blobsOut) {
        ByteBuffer p = payload.duplicate().order(LogDescriptor.ORDER);
        int[] out = new int[4];
        int n = 0;
        boolean docs = false;
        while (p.hasRemaining()) {
            byte op = p.get();
            switch (op) {
                case LogDescriptor.OP_STRING_PUT, LogDescriptor.OP_STRING_WRITE_AT -> {
                    out = add(out, n++, key(p));
                    p.position(p.position() + 8);
                    skipBytes(p);
                }
                case LogDescriptor.OP_HASH_PUT, LogDescriptor.OP_HASH_DEL, LogDescriptor.OP_HASH_REPLACE -> {
                    out = add(out, n++, key(p));
                    if (op == LogDescriptor.OP_HASH_REPLACE) {
                        p.position(p.position() + 8);
                    }
                    int count = p.getInt();
                    int per = op == LogDescriptor.OP_HASH_DEL ? 1 : 2;
                    for (int i = 0; i < count * per; i++) {
                        skipBytes(p);
                    }
                }
                case LogDescriptor.OP_SET_ADD, LogDescriptor.OP_SET_REM, LogDescriptor.OP_SET_REPLACE -> {
                    out = add(out, n++, key(p));
                    if (op == LogDescriptor.OP_SET_REPLACE) {
                        p.position(p.position() + 8);
                    }
                    int count = p.getInt();
                    for (int i = 0; i < count; i++) {
                        skipBytes(p);
                    }
                }
                case LogDescriptor.OP_ZSET_ADD, LogDescriptor.OP_ZSET_REM, LogDescriptor.OP_ZSET_REPLACE -> {
                    out = add(out, n++, key(p));
                    if (op == LogDescriptor.OP_ZSET_REPLACE) {
                        p.position(p.position() + 8);
                    }
                    int count = p.getInt();
                    int score = op == LogDescriptor.OP_ZSET_REM ? 0 : 8;
                    for (int i = 0; i < count; i++) {
                        p.position(p.position() + score);
                        skipBytes(p);
                    }
                }
                case LogDescriptor.OP_DELETE -> out = add(out, n++, key(p));
                case LogDescriptor.OP_EXPIRE -> {
                    out = add(out, n++, key(p));
                    p.position(p.position() + 8);
                }
                case LogDescriptor.OP_STRING_BLOB -> {
                    out = add(out, n++, key(p));
                    p.position(p.position() + 8);
                    long version = p.getLong();
                    long length = p.getLong();
                    int crc = p.getInt();
                    if (blobsOut != null) {
                        blobsOut.add(new long[] {version, length, crc});
                    }
                }
                case LogDescriptor.OP_COLLECTION_CREATE, LogDescriptor.OP_COLLECTION_DROP -> {
                    docs = true;
                    skipBytes(p);
                }
                case LogDescriptor.OP_DOCUMENT_PUT, LogDescriptor.OP_DOCUMENT_DELETE, LogDescriptor.OP_INDEX_CREATE,
                     LogDescriptor.OP_INDEX_DROP -> {
                    docs = true;
                    skipBytes(p);
                    skipBytes(p);
                }
                case LogDescriptor.OP_SNAPSHOT_END -> p.position(p.position() + 8);
                case LogDescriptor.OP_POSITION -> p.position(p.position() + 16);
                default -> {
                    // FLUSH_KEYS, or an op without a place here: take every lock.
                    return new Touched(null, true);
                }
            }
        }
        int[] idx = Arrays.copyOf(out, n);
        Arrays.sort(idx);
        int m = 0;
        for (int i = 0; i < idx.length; i++) {
            if (m == 0 || idx[m - 1] != idx[i]) {
                idx[m++] = idx[i];
            }
        }
        return new Touched(Arrays.copyOf(idx, m), docs);
    }

    private static int key(ByteBuffer p) {
        int len = p.getInt();
        byte[] k = new byte[len];
        p.get(k);
        return Keyspace.shardIndex(Key.wrap(k));
    }

    private static void skipBytes(ByteBuffer p) {
        int len = p.getInt();
        p.position(p.position() + len);
    }

    private static int[] add(int[] a, int i, int v) {
        int[] b = i < a.length ? a : Arrays.copyOf(a, a.length * 2);
        b[i] = v;
        return b;
    }
}
