package io.rdmastore.store;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

import org.bson.BsonDocument;
import org.bson.BsonInt32;

/**
 * The process {@link CrashTest} kills: opens a store with fsync=always and writes forever, printing {@code ack <i>}
 * after each write returns. Everything printed must survive SIGKILL.
 */
public final class CrashWriter {
    private CrashWriter() {
    }

    public static void main(String[] args) {
        Path dir = Path.of(args[0]);
        int i = Integer.parseInt(args[1]);
        try (Store st = Store.open(new StoreConfig().dataDir(dir).fsync(FsyncPolicy.ALWAYS)
                .snapshotLogBytes(16 * 1024))) {
            System.out.println("ready");
            System.out.flush();
            while (true) {
                byte[] k = ("key:" + i).getBytes(StandardCharsets.UTF_8);
                switch (i % 3) {
                    case 0 -> st.set(k, ("value:" + i).getBytes(StandardCharsets.UTF_8));
                    case 1 -> st.hset(k, List.of("f".getBytes(StandardCharsets.UTF_8),
                            ("value:" + i).getBytes(StandardCharsets.UTF_8)));
                    default -> st.insertOne("docs", new BsonDocument("_id", new BsonInt32(i)));
                }
                System.out.println("ack " + i);
                System.out.flush();
                i++;
            }
        }
    }
}
