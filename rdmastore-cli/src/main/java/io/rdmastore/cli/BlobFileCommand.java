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
    @Parameters(index = "0", paramLabel = "KEY", description = "Blob key (UTF-8, at most 100 bytes).")
    String key;
    @Parameters(index = "1", paramLabel = "FILE", description = "The file.")
    Path file;

    abstract BlobInfo transfer(RdmaStoreClient client, byte[] key, LongConsumer progress);

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
            return client.blobs().putFile(key, file, progress);
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
