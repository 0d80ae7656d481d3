package io.rdmastore.server.resp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.rdmastore.store.FsyncPolicy;
import io.rdmastore.store.Store;
import io.rdmastore.store.StoreConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** On a replica-set secondary (a store that refuses client writes) blocking pops are writes: refused, never parked. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class RespSecondaryTest {
    @TempDir
    Path dir;

    @Test
    void blockingPopsAnswerReadonlyOnASecondary() {
        try (Store store = Store.open(new StoreConfig().dataDir(dir).fsync(FsyncPolicy.NO).replicaSetMember(true))) {
            RespFace face = new RespFace(store, new RespFace.Context());
            EmbeddedChannel ch = new EmbeddedChannel();
            face.initialize(ch.pipeline());
            ch.writeInbound(Unpooled.copiedBuffer("BLPOP k 0\r\nBRPOPLPUSH a b 0\r\nBLMPOP 0 1 k LEFT\r\n"
                + "BZPOPMIN z 0\r\nBZPOPMAX z 0\r\nBZMPOP 0 1 z MIN\r\n"
                + "LMPOP 1 k LEFT\r\nLLEN k\r\n", StandardCharsets.US_ASCII));
            StringBuilder out = new StringBuilder();
            ByteBuf b;
            while ((b = ch.readOutbound()) != null) {
                out.append(b.toString(StandardCharsets.US_ASCII));
                b.release();
            }
            String ro = "-READONLY You can't write against a read only replica.\r\n";
            // LMPOP on an empty key changes nothing, as LPOP would: a null array
            assertEquals(ro + ro + ro + ro + ro + ro + "*-1\r\n:0\r\n", out.toString());
            assertEquals(0, face.blocking.blockedClients());
            ch.finishAndReleaseAll();
            face.closeAll();
        }
    }
}
