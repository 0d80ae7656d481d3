package io.rdmastore.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * E2's Redis client for the caller's buffers ({@link E2RespBuffers}) against a real redis-server: what it SETs from a
 * buffer's remaining bytes the array client ({@link E2Resp}) reads back, and what that one SETs it reads into a
 * buffer at its position, for lengths around its 16-byte reply head (part of the value, or all of it and its CRLF,
 * can arrive with the head).
 */
class E2RespBuffersTest {

    @Test
    @Timeout(60)
    void buffersRoundTripThroughRedisAtEveryLength() throws Exception {
        assertTrue(RedisServer.ensureInstalled(), "redis-server is required (.ci/run installs it)");
        try (RedisServer server = RedisServer.start(BenchOptions.Persistence.NONE);
             E2RespBuffers buffers = new E2RespBuffers(server.port());
             E2Resp arrays = new E2Resp(server.port())) {
            Random random = new Random(7);
            for (int length : new int[] {0, 1, 5, 9, 10, 11, 12, 13, 16, 17, 300, 256 << 10, (1 << 20) + 3}) {
                byte[] value = new byte[length];
                random.nextBytes(value);
                byte[] key = ("k" + length).getBytes(StandardCharsets.US_ASCII);
                // SET from the remaining bytes of a buffer that starts part-way in
                ByteBuffer src = ByteBuffer.allocateDirect(length + 7);
                src.position(7).put(value).position(7);
                buffers.set(key, src);
                assertArrayEquals(value, arrays.getValue(key), "SET from a buffer, " + length + " bytes");
                // GET into a buffer at its position, after a SET of the arrays' client
                byte[] other = new byte[length];
                random.nextBytes(other);
                arrays.set(key, other);
                ByteBuffer dst = ByteBuffer.allocateDirect(length + 11).position(11);
                assertEquals(length, buffers.get(key, dst));
                assertEquals(11 + length, dst.position(), "the position moves past the value");
                byte[] got = new byte[length];
                dst.get(11, got);
                assertArrayEquals(other, got, "GET into a buffer, " + length + " bytes");
            }
            assertEquals(-1, buffers.get("missing".getBytes(StandardCharsets.US_ASCII), ByteBuffer.allocateDirect(4)));
            // the connection is still in step after every reply above: one more round trip on it
            buffers.set("last".getBytes(StandardCharsets.US_ASCII), ByteBuffer.allocateDirect(3));
            assertEquals(3, buffers.get("last".getBytes(StandardCharsets.US_ASCII), ByteBuffer.allocateDirect(3)));
            IOException small = assertThrows(IOException.class,
                () -> buffers.get("k300".getBytes(StandardCharsets.US_ASCII), ByteBuffer.allocateDirect(299)));
            assertTrue(small.getMessage().contains("does not fit"), small.getMessage());
        }
    }
}
