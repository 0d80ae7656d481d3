package io.rdmastore.server;

import io.rdmastore.client.BlobBuffer;
import io.rdmastore.client.BlobClient;
import io.rdmastore.client.RdmaStoreClient;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A client process for {@link BlobTest}'s kill tests: {@code get <port> <transport> <key>} prints {@code PULLING} once
 * the first chunk of a blob arrived and then stalls; {@code put <port> <transport> <key> <bytes>} prints
 * {@code PUTTING} and puts a blob. The test kills it with SIGKILL.
 */
final class BlobChild {
    private BlobChild() {
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[1]);
        byte[] key = args[3].getBytes(StandardCharsets.UTF_8);
        try (RdmaStoreClient client = RdmaStoreClient.builder().port(port).transport(args[2])
            .timeout(Duration.ofSeconds(30)).connect()) {
            BlobClient blobs = client.blobs();
            if (args[0].equals("get")) {
                try (BlobBuffer b = blobs.allocate(64L << 20)) {
                    blobs.get(key, b, received -> {
                        System.out.println("PULLING");
                        System.out.flush();
                        try {
                            Thread.sleep(60_000);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    });
                }
            } else {
                long n = Long.parseLong(args[4]);
                try (BlobBuffer b = blobs.allocate(n)) {
                    for (long i = 0; i < n; i += 4096) {
                        b.segment().set(ValueLayout.JAVA_BYTE, i, (byte) i);
                    }
                    System.out.println("PUTTING");
                    System.out.flush();
                    blobs.put(key, b, n);
                    System.out.println("PUT DONE");
                }
            }
        }
    }
}
