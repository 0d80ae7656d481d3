package io.rdmastore.server.resp;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** DUMP payloads against bytes taken from redis-server 7.0.15's DUMP. */
class RespDumpTest {
    private static byte[] bytes(int... b) {
        byte[] out = new byte[b.length];
        for (int i = 0; i < b.length; i++) {
            out[i] = (byte) b[i];
        }
        return out;
    }

    private static String s(byte[] b) {
        return new String(b, StandardCharsets.ISO_8859_1);
    }

    @Test
    void crc64IsRedisCrc64() {
        byte[] check = "123456789".getBytes(StandardCharsets.US_ASCII);
        assertEquals(0xe9c6d914c4b8d9caL, RespDump.crc64(check, 0, check.length));
    }

    @Test
    void stringPayloadIsRedisPayload() {
        // redis-cli: SET foo bar; DUMP foo
        byte[] redis = bytes(0, 3, 'b', 'a', 'r', '\n', 0, 0xe6, 0xbe, 'I', '`', 0xee, 'f', 0xfd, 0x17);
        assertArrayEquals(redis, RespDump.dumpString("bar".getBytes(StandardCharsets.US_ASCII)));
        assertEquals("bar", s(RespDump.parse(redis).string()));
    }

    @Test
    void readsRedisIntegerStringsAndHashes() {
        // SET n 12345 (int encoded); HSET h a 1 b 22 with hash-max-listpack-entries 0 (RDB type 4)
        byte[] n = bytes(0, 0xc1, '9', '0', '\n', 0, 0x9d, 0x94, 0xea, '\'', 0x93, 0xfc, '\b', 0xb9);
        assertEquals("12345", s(RespDump.parse(n).string()));
        byte[] h = bytes(4, 2, 1, 'b', 0xc0, 0x16, 1, 'a', 0xc0, 1, '\n', 0, 0x9f, '<', 'i', ':', 'k', 0x87, 0xf5, 0xc2);
        List<byte[]> fields = RespDump.parse(h).hash();
        assertEquals(List.of("b", "22", "a", "1"), fields.stream().map(RespDumpTest::s).toList());
        List<byte[]> mine = List.of("f".getBytes(StandardCharsets.US_ASCII), new byte[300]);
        assertEquals(300, RespDump.parse(RespDump.dumpHash(mine)).hash().get(1).length);
    }

    @Test
    void refusesDamagedPayloads() {
        byte[] p = RespDump.dumpString("value".getBytes(StandardCharsets.US_ASCII));
        p[3] ^= 1;
        assertNull(RespDump.parse(p));
        assertNull(RespDump.parse("...".getBytes(StandardCharsets.US_ASCII)));
        byte[] newer = RespDump.dumpString(new byte[0]);
        newer[newer.length - 10] = 99;
        assertNull(RespDump.parse(newer));
    }
}
