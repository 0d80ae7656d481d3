package io.rdmastore.bench;

/** A one-line progress bar on stderr for long runs. Single-threaded. */
final class Progress {
    private final String name;
    private final int total;
    private int done;
    private final long start = System.nanoTime();

    Progress(String name, int total) {
        this.name = name;
        this.total = Math.max(1, total);
    }

    void step(String what) {
        done++;
        int width = 30;
        int filled = done * width / total;
        long elapsed = (System.nanoTime() - start) / 1_000_000_000L;
        long eta = done == 0 ? 0 : elapsed * (total - done) / done;
        System.err.printf("\r%s [%s%s] %d/%d %-24s %ds, ~%ds left", name, "#".repeat(filled), ".".repeat(width - filled),
            done, total, what, elapsed, eta);
    }

    void done() {
        System.err.println();
    }
}
