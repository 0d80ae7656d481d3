package io.rdmastore.client.cluster;

/**
 * Redis Cluster's key to hash slot function: CRC16 (XMODEM: polynomial 0x1021, initial value 0, no reflection) of
 * the key, or of its hash tag, modulo 16384. The hash tag is the part between the first {@code '{'} and the first
 * {@code '}'} after it, when that part is not empty; so {@code {user1}.name} and {@code {user1}.mail} share a slot.
 *
 * <p>Threads: stateless; any thread. Allocates nothing.
 */
public final class HashSlot {
    /** The number of hash slots, as in Redis Cluster. */
    public static final int SLOTS = 16384;

    private static final int[] TABLE = new int[256];

    static {
        for (int i = 0; i < 256; i++) {
            int crc = i << 8;
            for (int bit = 0; bit < 8; bit++) {
                crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
            }
            TABLE[i] = crc & 0xFFFF;
        }
    }

    private HashSlot() {
    }

    /** The slot of {@code key} (its hash tag's when it has a non-empty one), in [0, 16384). */
    public static int of(byte[] key) {
        return of(key, 0, key.length);
    }

    /** The slot of the key in {@code key[offset, offset + length)}. */
    public static int of(byte[] key, int offset, int length) {
        int end = offset + length;
        int open = -1;
        for (int i = offset; i < end; i++) {
            if (key[i] == '{') {
                open = i;
                break;
            }
        }
        if (open >= 0) {
            for (int i = open + 1; i < end; i++) {
                if (key[i] == '}') {
                    if (i > open + 1) {
                        return crc16(key, open + 1, i) & (SLOTS - 1);
                    }
                    break;
                }
            }
        }
        return crc16(key, offset, end) & (SLOTS - 1);
    }

    /** The slot of a key given as a string, encoded in UTF-8 as Redis clients send it. */
    public static int of(String key) {
        return of(key.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** CRC16/XMODEM of {@code b[from, to)}. */
    static int crc16(byte[] b, int from, int to) {
        int crc = 0;
        for (int i = from; i < to; i++) {
            crc = ((crc << 8) ^ TABLE[((crc >>> 8) ^ b[i]) & 0xFF]) & 0xFFFF;
        }
        return crc;
    }
}
