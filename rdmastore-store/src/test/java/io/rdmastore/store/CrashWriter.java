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

    /** Keys the blob mode overwrites in turn, so every write also retires a file. */
    static final int BLOB_KEYS = 5;
    /** Blob threshold of the blob mode: every value written there is a blob file. */
    static final int BLOB_THRESHOLD = 64;

    /** The blob mode's value number {@code i}: blob-sized, recognisable. */
    static byte[] blobValue(int i) {
        byte[] v = new byte[BLOB_THRESHOLD * 2];
        byte[] tag = ("value:" + i).getBytes(StandardCharsets.UTF_8);
        java.util.Arrays.fill(v, (byte) '.');
        System.arraycopy(tag, 0, v, 0, tag.length);
        return v;
    }

    public static void main(String[] args) {
        Path dir = Path.of(args[0]);
        int i = Integer.parseInt(args[1]);
        if (args.length > 2 && args[2].startsWith("blobs")) {
            blobs(dir, i, args[2].equals("blobs-everysec") ? FsyncPolicy.EVERYSEC : FsyncPolicy.ALWAYS);
            return;
        }
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

    /**
     * Overwrites {@value #BLOB_KEYS} keys with blob values: no file may go before the log drops it. With everysec the
     * files are written without fsync and forced by the log's syncer.
     */
    private static void blobs(Path dir, int i, FsyncPolicy fsync) {
        try (Store st = Store.open(new StoreConfig().dataDir(dir).fsync(fsync).snapshotLogBytes(4096)
                .blobs(new io.rdmastore.store.blob.BlobConfig().thresholdBytes(BLOB_THRESHOLD).reserveBytes(0)))) {
            System.out.println("ready");
            System.out.flush();
            while (true) {
                st.set(("blob:" + i % BLOB_KEYS).getBytes(StandardCharsets.UTF_8), blobValue(i));
                System.out.println("ack " + i);
                System.out.flush();
                i++;
            }
        }
    }
}
