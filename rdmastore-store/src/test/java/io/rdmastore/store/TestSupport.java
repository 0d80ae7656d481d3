package io.rdmastore.store;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/** Helpers shared by the tests. */
final class TestSupport {
    private TestSupport() {
    }

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String s(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    static StoreConfig config(Path dir) {
        return new StoreConfig().dataDir(dir).fsync(FsyncPolicy.NO);
    }

    static Store open(Path dir) {
        return Store.open(config(dir));
    }
}
