package io.rdmastore.store;

import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * Byte layout of log segments and snapshots (see docs/store.md). All integers little-endian.
 * <pre>
 * file   := magic:8 frame*
 * frame  := length:int32 crc:int32 payload[length]      crc = CRC32C(length bytes ++ payload)
 * payload:= op+                                         one frame = one atomic change
 * op     := code:int8 fields...                         bytes := len:int32 data[len]
 * </pre>
 * A frame is applied whole or not at all. Every op is physical (it carries the resulting value) and idempotent, so a
 * snapshot taken while writes go on, plus a replay of the log written since it started, gives the exact state.
 * Stateless; any thread.
 */
final class LogDescriptor {
    static final ByteOrder ORDER = ByteOrder.LITTLE_ENDIAN;
    /**
     * A log segment: its frames' oplog positions rise, and they end at the first frame that is damaged or whose
     * position does not rise; the bytes after it may be those of a former segment whose file this one reuses
     * ({@link FrameScanner}; docs/store.md, "Reused segment files").
     */
    static final byte[] SEGMENT_MAGIC = "RDSLOG02".getBytes(StandardCharsets.US_ASCII);
    /** A log segment of the first format, read to its size; never reused. Still read, no longer written. */
    static final byte[] SEGMENT_MAGIC_V1 = "RDSLOG01".getBytes(StandardCharsets.US_ASCII);
    static final byte[] SNAPSHOT_MAGIC = "RDSSNP01".getBytes(StandardCharsets.US_ASCII);
    static final int MAGIC_LENGTH = 8;
    static final int HEADER_LENGTH = 8;
    /** Largest payload: values are below 1 GiB, so a frame holds one with room for keys and fields. */
    static final int MAX_PAYLOAD = Integer.MAX_VALUE - 1024;

    /** key:bytes expireAt:int64 value:bytes. Replaces whatever the key held. */
    static final byte OP_STRING_PUT = 1;
    /** key:bytes offset:int64 data:bytes. Writes into a string (zero-padded); creates it without TTL if absent. */
    static final byte OP_STRING_WRITE_AT = 2;
    /** key:bytes count:int32 (field:bytes value:bytes)*. Sets fields; creates the hash without TTL if absent. */
    static final byte OP_HASH_PUT = 3;
    /** key:bytes count:int32 field:bytes*. Removes fields; removes the key when the hash becomes empty. */
    static final byte OP_HASH_DEL = 4;
    /** key:bytes expireAt:int64 count:int32 (field:bytes value:bytes)*. Replaces whatever the key held. */
    static final byte OP_HASH_REPLACE = 5;
    /** key:bytes. */
    static final byte OP_DELETE = 6;
    /** key:bytes expireAt:int64 (-1 = persist). No-op when the key is absent. */
    static final byte OP_EXPIRE = 7;
    /** (no fields) Empties the keyspace. */
    static final byte OP_FLUSH_KEYS = 8;
    /** name:bytes (UTF-8). */
    static final byte OP_COLLECTION_CREATE = 9;
    /** name:bytes. */
    static final byte OP_COLLECTION_DROP = 10;
    /** name:bytes document:bytes (BSON). Inserts or replaces the document with that _id; creates the collection. */
    static final byte OP_DOCUMENT_PUT = 11;
    /** name:bytes idDocument:bytes (BSON {_id: value}). */
    static final byte OP_DOCUMENT_DELETE = 12;
    /** records:int64. Last frame of a complete snapshot. */
    static final byte OP_SNAPSHOT_END = 13;
    /**
     * key:bytes expireAt:int64 version:int64 length:int64 crc32c:int32. Replaces the key with a string value held
     * in blob file {@code version} (durable before this record is written).
     */
    static final byte OP_STRING_BLOB = 14;
    /**
     * term:int64 index:int64. The oplog position of the frame it ends: the last op of every log frame (written under
     * the log's lock, so indexes follow the file's order). As the first frame of a snapshot: the position the
     * snapshot covers (the log after it starts at index + 1). Changes nothing in the keyspace.
     */
    static final byte OP_POSITION = 15;
    /** Bytes of an OP_POSITION op: code, term, index. */
    static final int POSITION_OP_LENGTH = 17;
    /** key:bytes count:int32 member:bytes*. Adds members; creates the set without TTL if absent. */
    static final byte OP_SET_ADD = 20;
    /** key:bytes count:int32 member:bytes*. Removes members; removes the key when the set becomes empty. */
    static final byte OP_SET_REM = 21;
    /** key:bytes expireAt:int64 count:int32 member:bytes*. Replaces whatever the key held. */
    static final byte OP_SET_REPLACE = 22;
    /** key:bytes left:int8 count:int32 item:bytes*. Pushes at one end in order; creates the list if absent. */
    static final byte OP_LIST_PUSH = 23;
    /** key:bytes left:int8 count:int32. Pops from one end; removes the key when the list becomes empty. */
    static final byte OP_LIST_POP = 24;
    /** key:bytes expireAt:int64 count:int32 item:bytes*. Replaces whatever the key held. */
    static final byte OP_LIST_REPLACE = 25;
    /** key:bytes index:int64 item:bytes. Sets one element (a valid index). */
    static final byte OP_LIST_SET = 26;
    /** key:bytes from:int64 to:int64. Keeps elements from..to (valid, inclusive). */
    static final byte OP_LIST_TRIM = 27;
    /**
     * key:bytes count:int32 (score:float64 member:bytes)*. Sets members' scores (adding them); creates the sorted set
     * without TTL if absent.
     */
    static final byte OP_ZSET_ADD = 28;
    /** key:bytes count:int32 member:bytes*. Removes members; removes the key when the sorted set becomes empty. */
    static final byte OP_ZSET_REM = 29;
    /** key:bytes expireAt:int64 count:int32 (score:float64 member:bytes)*. Replaces whatever the key held. */
    static final byte OP_ZSET_REPLACE = 30;
    /** name:bytes field:bytes (UTF-8, a dotted path). Creates the collection's index on the field unless it exists. */
    static final byte OP_INDEX_CREATE = 32;
    /** name:bytes field:bytes. Drops the collection's index on the field if it exists. */
    static final byte OP_INDEX_DROP = 33;
    /** The highest op code; 16-19 are kept for replication, 31 for sorted sets. */
    static final byte OP_MAX = 33;

    private LogDescriptor() {
    }

    static int crc(int length, byte[] payload, int offset, int payloadLength) {
        CRC32C c = new CRC32C();
        c.update(length & 0xff);
        c.update((length >>> 8) & 0xff);
        c.update((length >>> 16) & 0xff);
        c.update((length >>> 24) & 0xff);
        c.update(payload, offset, payloadLength);
        return (int) c.getValue();
    }

    static String segmentName(long id) {
        return String.format("segment-%016d.rlog", id);
    }

    static String snapshotName(long id) {
        return String.format("snapshot-%016d.rsnap", id);
    }

    /** The id in a segment or snapshot file name, or -1 when the name is neither. */
    static long idOf(Path file, String prefix, String suffix) {
        String n = file.getFileName().toString();
        if (!n.startsWith(prefix) || !n.endsWith(suffix)) {
            return -1;
        }
        try {
            return Long.parseLong(n.substring(prefix.length(), n.length() - suffix.length()));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    static long segmentId(Path file) {
        return idOf(file, "segment-", ".rlog");
    }

    static long snapshotId(Path file) {
        return idOf(file, "snapshot-", ".rsnap");
    }
}
