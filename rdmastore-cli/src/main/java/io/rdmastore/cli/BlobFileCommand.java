package io.rdmastore.cli;

import io.rdmastore.client.BlobInfo;
import io.rdmastore.client.ClientConfig;
import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.LongConsumer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code rdmastore put-file KEY FILE} and {@code rdmastore get-file KEY FILE}: a file to or from a blob, with a
 * progress bar on stderr. get-file writes a {@code .part} file and renames it only after the CRC32C matched.
 *
 * <p>Threads: one call; the command owns the client it opens and closes it before returning.
 */
abstract class BlobFileCommand implements Callable<Integer> {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Option(names = "--help", usageHelp = true, description = "Shows this help and exits (-h is the host).")
    boolean help;
    @picocli.CommandLine.Mixin
    ServerOptions server;
    @Option(names = "--timeout", paramLabel = "TIME", defaultValue = "30s",
        description = "Time-out of each request; transfers get more time with their size (default ${DEFAULT-VALUE}).")
    String timeout;
    @Option(names = "--no-progress", description = "No progress bar.")
    boolean noProgress;
    @Option(names = "--replica-set", paramLabel = "NAME", description = "The server is a member of replica set NAME:"
        + " discover it, write to its primary.")
    String replicaSet;
    @Option(names = "--w", paramLabel = "W", defaultValue = "1", description = "Write concern of put-file: 1 (the"
        + " primary, default) or majority (needs --replica-set).")
    String w;
    @Option(names = "--distribution", paramLabel = "HOW", defaultValue = "auto", description = "How put-file reaches"
        + " the other members: auto (default: parallel where the member is reachable over ucx, else from the primary),"
        + " parallel (every member pulls this file at once), pipeline (member to member), primary (after the commit).")
    String distribution;
    @Parameters(index = "0", paramLabel = "KEY", description = "Blob key (UTF-8, at most 100 bytes).")
    String key;
    @Parameters(index = "1", paramLabel = "FILE", description = "The file.")
    Path file;

    abstract BlobInfo transfer(RdmaStoreClient client, byte[] key, LongConsumer progress);

    private io.rdmastore.client.WriteConcern writeConcern() {
        try {
            return io.rdmastore.client.WriteConcern.parse(w);
        } catch (IllegalArgumentException e) {
            throw new UserException("--w: " + e.getMessage(), e);
        }
    }

    /** The put's client for blobs, distributed as {@code --distribution} says. */
    io.rdmastore.client.BlobClient blobs(RdmaStoreClient client) {
        try {
            return client.blobs().distribution(io.rdmastore.client.BlobClient.Distribution.parse(distribution));
        } catch (IllegalArgumentException e) {
            throw new UserException("--distribution: " + e.getMessage(), e);
        }
    }

    abstract String verb();

    /** Bytes the transfer will move when known in advance, else -1. */
    long expectedTotal() {
        try {
            return this instanceof Put && Files.isRegularFile(file) ? Files.size(file) : -1;
        } catch (java.io.IOException e) {
            return -1;
        }
    }

    @Override
    public Integer call() {
        Main.quietLogs();
        Duration t;
        try {
            t = Values.duration("--timeout", timeout);
        } catch (IllegalArgumentException e) {
            throw new UserException(e.getMessage(), e);
        }
        ClientConfig config = server.config(t);
        if (replicaSet != null) {
            config = new ClientConfig(config.host(), config.port(), config.transport(), config.password(), t, null,
                replicaSet, writeConcern(), null, null, false, null);
        } else if (!"1".equals(w)) {
            throw new UserException("--w " + w + " needs --replica-set NAME (a single server has no majority)");
        }
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        try (RdmaStoreClient client = CliCommand.connect(config)) {
            long start = System.nanoTime(); // the transfer's time: connecting (JVM, UCX start-up) is not the data path
            Bar bar = noProgress ? null : new Bar(err, verb());
            if (bar != null) {
                bar.total(expectedTotal());
            }
            BlobInfo info = transfer(client, key.getBytes(StandardCharsets.UTF_8), bar == null ? null : bar::update);
            if (bar != null) {
                bar.finish();
            }
            if (info == null) {
                throw new UserException("no blob '" + key + "'");
            }
            double sec = (System.nanoTime() - start) / 1e9;
            out.printf(Locale.ROOT, "%s %s: %d bytes, version %d, crc32c %08x, %.2f s (%.0f MB/s over %s)%n", verb(),
                key, info.length(), info.version(), info.crc32c(), sec, info.length() / sec / 1e6,
                client.transport());
            for (BlobInfo.Member m : info.members()) {
                out.printf(Locale.ROOT, "  %s: %s, %s, transfer %.0f ms, crc %.0f ms, fsync %.0f ms%n", m.member(),
                    m.path(), m.ok() ? "ok" : "FAILED (" + m.detail() + "; it takes the blob from the primary later)",
                    m.transferNanos() / 1e6, m.crcNanos() / 1e6, m.syncNanos() / 1e6);
            }
            if (replicaSet != null && this instanceof Put && info.members().isEmpty()) {
                out.println("  the secondaries take it from the primary after the commit (distribution "
                    + distribution + ")");
            }
            out.flush();
            return 0;
        } catch (RdmaStoreException | UncheckedIOException e) {
            throw new UserException(verb() + " " + key + " failed: " + e.getMessage(), e);
        }
    }

    /** A one-line progress bar, redrawn at most every 100 ms; the total is learnt from the first call's caller. */
    private static final class Bar {
        private final PrintWriter err;
        private final String verb;
        private long total = -1;
        private long lastDraw;

        Bar(PrintWriter err, String verb) {
            this.err = err;
            this.verb = verb;
        }

        void total(long n) {
            total = n;
        }

        void update(long done) {
            long now = System.nanoTime();
            if (now - lastDraw < 100_000_000L) {
                return;
            }
            lastDraw = now;
            draw(done);
        }

        private void draw(long done) {
            int width = 30;
            if (total > 0) {
                int filled = (int) Math.min(width, done * width / total);
                err.printf(Locale.ROOT, "\r%s [%s%s] %d%% %d MB", verb, "#".repeat(filled), ".".repeat(width - filled),
                    done * 100 / total, done / 1_000_000);
            } else {
                err.printf(Locale.ROOT, "\r%s %d MB", verb, done / 1_000_000);
            }
            err.flush();
        }

        void finish() {
            err.print("\r");
            err.flush();
        }
    }

    @Command(name = "put-file", sortOptions = false, description = "Stores FILE as blob KEY (memory-mapped and"
        + " lent to the server, which pulls it one-sided and checks its CRC32C).")
    static final class Put extends BlobFileCommand {
        @Override
        BlobInfo transfer(RdmaStoreClient client, byte[] key, LongConsumer progress) {
            if (!Files.isRegularFile(file)) {
                throw new UserException("no such file: " + file);
            }
            return blobs(client).putFile(key, file, progress);
        }

        @Override
        String verb() {
            return "put-file";
        }
    }

    @Command(name = "get-file", sortOptions = false, description = "Writes blob KEY to FILE (pulled one-sided"
        + " straight into the mapped file, CRC32C checked, then renamed into place).")
    static final class Get extends BlobFileCommand {
        @Override
        BlobInfo transfer(RdmaStoreClient client, byte[] key, LongConsumer progress) {
            return client.blobs().getFile(key, file, progress);
        }

        @Override
        String verb() {
            return "get-file";
        }
    }
}
