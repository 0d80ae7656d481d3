package io.rdmastore.server.resp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/** Unit tests of the reply encoder, the command lookup and the number and error helpers. */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class RespCodecTest {

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }

    private static String encode(int proto, java.util.function.Consumer<RespWriter> body) {
        RespWriter w = new RespWriter();
        ByteBuf out = Unpooled.buffer();
        w.out = out;
        w.proto = proto;
        body.accept(w);
        try {
            return out.toString(StandardCharsets.ISO_8859_1);
        } finally {
            out.release();
        }
    }

    @Test
    void integersAndBulksEncodeWithoutLoss() {
        assertEquals(":0\r\n:1\r\n:-1\r\n:9223372036854775807\r\n:-9223372036854775808\r\n:1234567890\r\n",
            encode(2, w -> {
                w.integer(0);
                w.integer(1);
                w.integer(-1);
                w.integer(Long.MAX_VALUE);
                w.integer(Long.MIN_VALUE);
                w.integer(1234567890);
            }));
        assertEquals("$0\r\n\r\n$3\r\na\r\n\r\n$-1\r\n", encode(2, w -> {
            w.bulk(new byte[0]);
            w.bulk(b("a\r\n"));
            w.bulk((byte[]) null);
        }));
        assertEquals("$2\r\n-5\r\n", encode(2, w -> w.bulkDecimal(-5)));
    }

    @Test
    void resp3TypesFallBackInResp2() {
        assertEquals("*4\r\n~2\r\n_\r\n,1.5\r\n=7\r\ntxt:abc\r\n", encode(2, w -> {
            w.mapHeader(2);
        }) + encode(3, w -> {
            w.setHeader(2);
            w.nullBulk();
            w.dbl(1.5);
            w.verbatim("abc");
        }));
        assertEquals("%1\r\n*2\r\n$-1\r\n*-1\r\n$3\r\n1.5\r\n$3\r\nabc\r\n", encode(3, w -> w.mapHeader(1))
            + encode(2, w -> {
                w.setHeader(2);
                w.nullBulk();
                w.nullArray();
                w.dbl(1.5);
                w.verbatim("abc");
            }));
    }

    @Test
    void errorsNeverBreakFraming() {
        assertEquals("-ERR a b\r\n", encode(2, w -> w.error("ERR a\r\nb".replace("\r\n", "\n"))));
        assertEquals("-ERR x  y\r\n", encode(2, w -> w.error("ERR x\r\ny")));
    }

    @Test
    void doublesPrintLikeRedis() {
        assertEquals("10.6", RespWriter.formatDouble(10.5 + 0.1));
        assertEquals("5200", RespWriter.formatDouble(5.0e3 + 2.0e2));
        assertEquals("-0.25", RespWriter.formatDouble(-0.25));
        assertEquals("inf", RespWriter.formatDouble(Double.POSITIVE_INFINITY));
    }

    @Test
    void commandLookupIgnoresCaseAndRejectsUnknownNames() {
        assertSame(RespCommand.GET, RespCommand.lookup(b("get")));
        assertSame(RespCommand.HINCRBYFLOAT, RespCommand.lookup(b("hIncrByFloat")));
        assertSame(RespCommand.SET, RespCommand.lookup(b("SET")));
        for (RespCommand c : RespCommand.all()) {
            assertSame(c, RespCommand.lookup(b(c.lowerName)));
        }
        assertNull(RespCommand.lookup(b("GETX")));
        assertNull(RespCommand.lookup(b("")));
        assertNull(RespCommand.lookup(b("XADD")));
        assertNull(RespCommand.lookup(b("g\u00c5t")));
    }

    @Test
    void numbersParseAsStrictlyAsRedis() {
        RespConnection c = new RespConnection(null, 1, true);
        String[] good = {"0", "-1", "42", "9223372036854775807", "-9223372036854775808"};
        long[] values = {0, -1, 42, Long.MAX_VALUE, Long.MIN_VALUE};
        for (int i = 0; i < good.length; i++) {
            assertEquals(true, RespCommands.parseLong(c, b(good[i])), good[i]);
            assertEquals(values[i], c.num);
        }
        for (String bad : new String[] {"", "-", "+1", "01", " 1", "1 ", "9223372036854775808", "1e3", "0x10",
            "-9223372036854775809"}) {
            assertEquals(false, RespCommands.parseLong(c, b(bad)), bad);
        }
        ByteBuf buf = Unpooled.copiedBuffer("*12\r\n", StandardCharsets.US_ASCII);
        assertEquals(12, RespConnection.parseLong(buf, 1, 3));
        buf.release();
        assertEquals(536870912L, RespCommands.parseMemory("512mb"));
        assertEquals(-1, RespCommands.parseMemory("lots"));
    }

    @Test
    void storeMessagesGetAnErrorCodeOnlyWhenTheyLackOne() {
        assertEquals("WRONGTYPE Operation against a key holding the wrong kind of value",
            RespConnection.errorText("WRONGTYPE Operation against a key holding the wrong kind of value"));
        assertEquals("ERR value is not an integer or out of range",
            RespConnection.errorText("value is not an integer or out of range"));
        assertEquals("ERR unknown error", RespConnection.errorText(null));
    }

    @Test
    void unknownCommandTextMatchesRedis() {
        byte[][] argv = {b("FOO"), b("bar"), b("baz")};
        assertEquals("ERR unknown command 'FOO', with args beginning with: 'bar' 'baz' ",
            RespCommands.unknownCommand(argv, 3));
    }
}
