package io.rdmastore.bench;

/** Human-readable byte sizes. */
public final class Sizes {
    private Sizes() {
    }

    public static String human(long bytes) {
        if (bytes >= 1 << 30 && bytes % (1 << 30) == 0) {
            return (bytes >> 30) + " GiB";
        }
        if (bytes >= 1 << 20 && bytes % (1 << 20) == 0) {
            return (bytes >> 20) + " MiB";
        }
        if (bytes >= 1 << 10 && bytes % (1 << 10) == 0) {
            return (bytes >> 10) + " KiB";
        }
        if (bytes >= 1_000_000) {
            return (bytes / 1_000_000) + " MB";
        }
        return bytes + " B";
    }
}
