package io.rdmastore.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;

/**
 * What the demos that start member processes share: a temporary directory for the members' data and logs, a time
 * limit for the whole run, progress lines stamped with the time since the start, and the clean-up on every way out
 * (the normal end, an error, and through a shutdown hook Ctrl-C or SIGTERM): the members are stopped and the directory
 * deleted. Threads: the command's thread; the shutdown hook only kills the members and deletes the directory.
 */
abstract class MemberDemo {
    /** The body of a demo, given its directory; returns the exit code. */
    @FunctionalInterface
    interface Body {
        int run(Path dir) throws IOException, InterruptedException;
    }

    PrintWriter out;
    /** The {@code --timeout} as given, for the message when it runs out. */
    String limitText;
    long t0;
    long deadline;
    /** Written by the command's thread, read by the shutdown hook. */
    final List<MemberProcess> members = new CopyOnWriteArrayList<>();

    /** Runs {@code body} in a new directory named after {@code name}, stopping the members and deleting it after. */
    int runWithMembers(String name, PrintWriter writer, String timeout, Body body)
        throws IOException, InterruptedException {
        out = writer;
        limitText = timeout;
        Duration limit = Values.duration("--timeout", timeout);
        t0 = System.nanoTime();
        deadline = t0 + limit.toNanos();
        Path dir = Files.createTempDirectory("rdmastore-" + name);
        Thread hook = new Thread(() -> {
            members.forEach(MemberProcess::kill);
            deleteTree(dir);
        }, "rdmastore-" + name + "-cleanup");
        Runtime.getRuntime().addShutdownHook(hook);
        int code;
        try {
            code = body.run(dir);
        } finally {
            progress("stopping the members (SIGTERM)");
            members.forEach(MemberProcess::terminate);
            members.forEach(m -> m.awaitExit(Duration.ofSeconds(10)));
            deleteTree(dir);
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs anyway; it finds nothing left to do
            }
        }
        out.printf(Locale.ROOT, "demo took %.1f s; every member stopped, %s deleted%n", seconds(), dir);
        out.flush();
        return code;
    }

    /** What is left of the demo's time limit, at most {@code atMost}. */
    Duration remaining(Duration atMost) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            throw new UserException("the demo ran out of its --timeout " + limitText);
        }
        return Duration.ofNanos(Math.min(left, atMost.toNanos()));
    }

    double seconds() {
        return (System.nanoTime() - t0) / 1e9;
    }

    void progress(String line) {
        out.printf(Locale.ROOT, "[%5.1fs] %s%n", seconds(), line);
        out.flush();
    }

    static void deleteTree(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            System.err.println("rdmastore: could not delete " + dir + ": " + e.getMessage());
        }
    }
}
