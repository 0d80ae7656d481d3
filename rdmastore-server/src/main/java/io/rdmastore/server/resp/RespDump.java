package io.rdmastore.server.resp;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * DUMP payloads in Redis's format: one RDB-encoded value, the RDB version (2 bytes, little-endian) and a CRC64 (Jones,
 * as Redis's {@code crc64}, 8 bytes little-endian) of everything before it. rdmastore writes strings as RDB type 0
 * (raw) and hashes as RDB type 4 (field/value pairs); it reads those plus integer-encoded strings, so a DUMP taken
 * here restores into Redis and a Redis DUMP of a string does too. Redis's compact encodings (listpack, LZF) are
 * refused as a bad payload.
 *
 * <p>Stateless; any thread.
 */
final class RespDump {
    static final int TYPE_STRING = 0;
    static final int TYPE_LIST = 1;
    static final int TYPE_SET = 2;
    static final int TYPE_HASH = 4;
    /** RDB_TYPE_ZSET_2: a count, then member and score (8-byte little-endian double) pairs. */
    static final int TYPE_ZSET_2 = 5;
    /** RDB version of Redis 7.0; a payload of a newer version is refused, as Redis does. */
    private static final int RDB_VERSION = 10;
    private static final long[] CRC_TABLE = new long[256];

    static {
        long poly = 0x95ac9329ac4bc9b5L; // 0xad93d23594c935a9 reflected
        for (int i = 0; i < 256; i++) {
            long crc = i;
            for (int k = 0; k < 8; k++) {
                crc = (crc & 1) != 0 ? (crc >>> 1) ^ poly : crc >>> 1;
            }
            CRC_TABLE[i] = crc;
        }
    }

    /** A decoded payload: a string value, or hash fields and values alternating, or set members (in {@code hash}). */
    record Value(int type, byte[] string, List<byte[]> hash) {
    }

    private RespDump() {
    }

    /**
     * The DUMP payload of {@code key} as DUMP writes it (MIGRATE moves keys with it), or null when the key does not
     * exist. A type DUMP cannot write is refused, so a migration never drops a key silently.
     *
     * @throws IllegalStateException for a value of a type without a payload here
     */
    static byte[] payload(io.rdmastore.store.Store store, byte[] key) {
        io.rdmastore.store.ValueType type = store.type(key);
        if (type == io.rdmastore.store.ValueType.STRING) {
            byte[] v = store.get(key);
            return v == null ? null : dumpString(v);
        } else if (type == io.rdmastore.store.ValueType.HASH) {
            List<byte[]> all = store.hgetAll(key);
            return all.isEmpty() ? null : dumpHash(all);
        } else if (type == io.rdmastore.store.ValueType.SET) {
            List<byte[]> all = store.sets().members(key);
            return all.isEmpty() ? null : dumpItems(TYPE_SET, all);
        } else if (type == io.rdmastore.store.ValueType.LIST) {
            List<byte[]> all = store.lists().range(key, 0, -1);
            return all.isEmpty() ? null : dumpItems(TYPE_LIST, all);
        } else if (type == io.rdmastore.store.ValueType.ZSET) {
            List<io.rdmastore.store.SortedSets.Scored> all = store.sortedSets().all(key);
            List<byte[]> members = new java.util.ArrayList<>(all.size());
            double[] scores = new double[all.size()];
            for (int i = 0; i < scores.length; i++) {
                members.add(all.get(i).member());
                scores[i] = all.get(i).score();
            }
            return all.isEmpty() ? null : dumpZset(members, scores);
        } else if (type == io.rdmastore.store.ValueType.NONE) {
            return null;
        }
        throw new IllegalStateException("a key of type " + type + " cannot be dumped or migrated yet");
    }

    static long crc64(byte[] b, int off, int len) {
        long crc = 0;
        for (int i = off; i < off + len; i++) {
            crc = CRC_TABLE[(int) ((crc ^ b[i]) & 0xff)] ^ (crc >>> 8);
        }
        return crc;
    }

    static byte[] dumpString(byte[] value) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(value.length + 16);
        out.write(TYPE_STRING);
        writeString(out, value);
        return seal(out);
    }

    /** A set (RDB type 2) or a list (RDB type 1, which Redis 7 still loads): a count and the items. */
    static byte[] dumpItems(int type, List<byte[]> members) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(type);
        writeLength(out, members.size());
        for (byte[] b : members) {
            writeString(out, b);
        }
        return seal(out);
    }

    /** A sorted set as RDB type 5; {@code membersAndScores}: member, score, member, score, ... */
    static byte[] dumpZset(List<byte[]> members, double[] scores) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(TYPE_ZSET_2);
        writeLength(out, members.size());
        for (int i = 0; i < members.size(); i++) {
            writeString(out, members.get(i));
            long bits = Double.doubleToRawLongBits(scores[i]);
            for (int b = 0; b < 8; b++) {
                out.write((int) (bits >>> (8 * b)) & 0xff);
            }
        }
        return seal(out);
    }

    /** A score read by {@link #parse} from a sorted set payload (its 8 bytes, little-endian). */
    static double score(byte[] eight) {
        long bits = 0;
        for (int b = 7; b >= 0; b--) {
            bits = bits << 8 | (eight[b] & 0xff);
        }
        return Double.longBitsToDouble(bits);
    }

    /** {@code fieldsAndValues}: field, value, field, value, ... */
    static byte[] dumpHash(List<byte[]> fieldsAndValues) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(TYPE_HASH);
        writeLength(out, fieldsAndValues.size() / 2);
        for (byte[] b : fieldsAndValues) {
            writeString(out, b);
        }
        return seal(out);
    }

    private static byte[] seal(ByteArrayOutputStream out) {
        out.write(RDB_VERSION);
        out.write(0);
        byte[] body = out.toByteArray();
        long crc = crc64(body, 0, body.length);
        byte[] all = new byte[body.length + 8];
        System.arraycopy(body, 0, all, 0, body.length);
        for (int i = 0; i < 8; i++) {
            all[body.length + i] = (byte) (crc >>> (8 * i));
        }
        return all;
    }

    private static void writeLength(ByteArrayOutputStream out, long n) {
        if (n < 64) {
            out.write((int) n);
        } else if (n < 16384) {
            out.write(0x40 | (int) (n >>> 8));
            out.write((int) n & 0xff);
        } else if (n <= 0xffffffffL) {
            out.write(0x80);
            for (int i = 3; i >= 0; i--) {
                out.write((int) (n >>> (8 * i)) & 0xff);
            }
        } else {
            out.write(0x81);
            for (int i = 7; i >= 0; i--) {
                out.write((int) (n >>> (8 * i)) & 0xff);
            }
        }
    }

    private static void writeString(ByteArrayOutputStream out, byte[] b) {
        writeLength(out, b.length);
        out.writeBytes(b);
    }

    /** The value of a payload, or null when its version, checksum or encoding is not one this reads. */
    static Value parse(byte[] p) {
        if (p.length < 11) {
            return null;
        }
        int end = p.length - 10;
        int version = (p[end] & 0xff) | (p[end + 1] & 0xff) << 8;
        long crc = 0;
        for (int i = 7; i >= 0; i--) {
            crc = crc << 8 | (p[end + 2 + i] & 0xff);
        }
        if (version > RDB_VERSION || crc != crc64(p, 0, end + 2)) {
            return null;
        }
        int[] pos = {1};
        try {
            Value v;
            if (p[0] == TYPE_STRING) {
                v = new Value(TYPE_STRING, readString(p, pos, end), null);
            } else if (p[0] == TYPE_HASH || p[0] == TYPE_SET || p[0] == TYPE_LIST) {
                long n = readLength(p, pos, end);
                if (n <= 0 || n > end) {
                    return null;
                }
                List<byte[]> items = new ArrayList<>();
                long count = p[0] == TYPE_HASH ? 2 * n : n;
                for (long i = 0; i < count; i++) {
                    items.add(readString(p, pos, end));
                }
                v = new Value(p[0], null, items);
            } else if (p[0] == TYPE_ZSET_2) {
                long n = readLength(p, pos, end);
                if (n <= 0 || n > end) {
                    return null;
                }
                List<byte[]> items = new ArrayList<>();
                for (long i = 0; i < n; i++) {
                    items.add(readString(p, pos, end));
                    byte[] s = new byte[8];
                    for (int b = 0; b < 8; b++) {
                        s[b] = p[check(pos[0]++, end)];
                    }
                    if (Double.isNaN(score(s))) {
                        return null;
                    }
                    items.add(s);
                }
                v = new Value(TYPE_ZSET_2, null, items);
            } else {
                return null;
            }
            return pos[0] == end ? v : null;
        } catch (IndexOutOfBoundsException | IllegalArgumentException e) {
            return null;
        }
    }

    private static long readLength(byte[] p, int[] pos, int end) {
        int first = p[check(pos[0]++, end)] & 0xff;
        switch (first >>> 6) {
            case 0 -> {
                return first & 0x3f;
            }
            case 1 -> {
                return (first & 0x3f) << 8 | (p[check(pos[0]++, end)] & 0xff);
            }
            case 2 -> {
                int bytes = first == 0x80 ? 4 : first == 0x81 ? 8 : -1;
                if (bytes < 0) {
                    throw new IllegalArgumentException("bad length");
                }
                long n = 0;
                for (int i = 0; i < bytes; i++) {
                    n = n << 8 | (p[check(pos[0]++, end)] & 0xff);
                }
                return n;
            }
            default -> {
                return -1 - (first & 0x3f); // a special encoding: -1 - its code
            }
        }
    }

    private static byte[] readString(byte[] p, int[] pos, int end) {
        long n = readLength(p, pos, end);
        if (n < 0) {
            int code = (int) (-1 - n);
            int bytes = code == 0 ? 1 : code == 1 ? 2 : code == 2 ? 4 : -1;
            if (bytes < 0) {
                throw new IllegalArgumentException("compressed strings are not read");
            }
            long v = 0;
            for (int i = 0; i < bytes; i++) {
                v |= (long) (p[check(pos[0]++, end)] & 0xff) << (8 * i);
            }
            long signed = bytes == 1 ? (byte) v : bytes == 2 ? (short) v : (int) v;
            return Long.toString(signed).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        }
        if (n > end - pos[0]) {
            throw new IllegalArgumentException("truncated");
        }
        byte[] b = new byte[(int) n];
        System.arraycopy(p, pos[0], b, 0, b.length);
        pos[0] += b.length;
        return b;
    }

    private static int check(int i, int end) {
        if (i >= end) {
            throw new IndexOutOfBoundsException(i);
        }
        return i;
    }
}
