package io.rdmastore.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code rdmastore bench <E1|all> [--quick] [--out dir]}: runs experiments side by side and writes
 * {@code bench-results/<date-time>/} with report.md, one JSON, Markdown and PNG per experiment.
 */
public final class BenchMain {
    static final List<String> KNOWN = List.of("E1");

    private BenchMain() {
    }

    public static void main(String[] args) throws Exception {
        System.exit(run(args));
    }

    /** Runs and returns an exit code (0 ok, 2 usage). */
    public static int run(String[] args) throws Exception {
        List<String> which = new ArrayList<>();
        boolean quick = false;
        Path out = Path.of("bench-results");
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--quick" -> quick = true;
                case "--out" -> {
                    if (i + 1 >= args.length) {
                        return usage("--out needs a directory");
                    }
                    out = Path.of(args[++i]);
                }
                case "-h", "--help" -> {
                    usage(null);
                    return 0;
                }
                default -> {
                    String id = a.toUpperCase(Locale.ROOT);
                    if (id.equals("ALL")) {
                        which.addAll(KNOWN);
                    } else if (KNOWN.contains(id)) {
                        which.add(id);
                    } else {
                        return usage("unknown experiment '" + a + "'");
                    }
                }
            }
        }
        if (which.isEmpty()) {
            return usage("name an experiment");
        }
        Report report = new Report(out, "rdmastore bench " + String.join(" ", args));
        for (String id : which) {
            switch (id) {
                case "E1" -> new E1RoundTrips(quick).run(report);
                default -> throw new IllegalStateException(id);
            }
        }
        System.out.println("report: " + report.finish());
        return 0;
    }

    private static int usage(String error) {
        if (error != null) {
            System.err.println("rdmastore bench: " + error);
        }
        System.err.println("usage: rdmastore bench <" + String.join("|", KNOWN) + "|all> [--quick] [--out DIR]");
        System.err.println("  E1  round trips/s on one connection, 64 B and 4 KiB: tcp, ucx active messages,");
        System.err.println("      ucx ring (crc and flush footers), raw JUCX put ping-pong (the limit)");
        System.err.println("  --quick  a short smoke run (asserts nothing about timings)");
        return error == null ? 0 : 2;
    }
}
