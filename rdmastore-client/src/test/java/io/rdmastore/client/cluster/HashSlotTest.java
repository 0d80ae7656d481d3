package io.rdmastore.client.cluster;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The slot function against Redis's own answers: every expected value below is what redis-server 7 (started with
 * {@code --cluster-enabled yes}) replied to {@code CLUSTER KEYSLOT <key>}.
 */
class HashSlotTest {
    private static final Map<String, Integer> REDIS = new LinkedHashMap<>();

    static {
        REDIS.put("foo", 12182);
        REDIS.put("bar", 5061);
        REDIS.put("hello", 866);
        REDIS.put("{user1000}.following", 3443);
        REDIS.put("{user1000}.followers", 3443);
        REDIS.put("foo{}{bar}", 8363);
        REDIS.put("foo{{bar}}zap", 4015);
        REDIS.put("foo{bar}{zap}", 5061);
        REDIS.put("{}", 15257);
        REDIS.put("", 0);
        REDIS.put("a", 15495);
        REDIS.put("123456789", 12739);
        REDIS.put("{a}b", 15495);
        REDIS.put("x{}y", 16116);
        REDIS.put("{{}}", 4092);
        REDIS.put("user:1", 10778);
        REDIS.put("key:{tag}:x", 8338);
        REDIS.put("}{", 12793);
        REDIS.put("{abc", 444);
        REDIS.put("abc}", 11054);
        REDIS.put("rdmastore", 12915);
        REDIS.put("\u20acuro", 997);
        REDIS.put("key:0", 2592);
        REDIS.put("key:1", 6657);
        REDIS.put("key:99999", 2036);
    }

    @Test
    void matchesRedisClusterKeyslot() {
        for (Map.Entry<String, Integer> e : REDIS.entrySet()) {
            assertEquals(e.getValue(), HashSlot.of(e.getKey()), e.getKey());
            assertEquals(e.getValue(), HashSlot.of(e.getKey().getBytes(StandardCharsets.UTF_8)), e.getKey());
        }
    }

    @Test
    void binaryKeyWithTag() {
        // bytes ff fe 00 '{' 01 '}': the tag is the single byte 01; redis-server answered 4129
        assertEquals(4129, HashSlot.of(new byte[] {(byte) 0xff, (byte) 0xfe, 0, '{', 1, '}'}));
    }

    @Test
    void crc16IsXmodem() {
        // the CRC-16/XMODEM check value
        assertEquals(0x31C3, HashSlot.crc16("123456789".getBytes(StandardCharsets.US_ASCII), 0, 9));
    }

    @Test
    void offsetAndLengthSelectTheKey() {
        byte[] padded = "xx{user1000}.followingyy".getBytes(StandardCharsets.US_ASCII);
        assertEquals(3443, HashSlot.of(padded, 2, padded.length - 4));
        byte[] foo = "..foo..".getBytes(StandardCharsets.US_ASCII);
        assertEquals(12182, HashSlot.of(foo, 2, 3));
    }
}
