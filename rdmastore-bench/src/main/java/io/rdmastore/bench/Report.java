package io.rdmastore.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Writes one run's results: {@code <experiment>.json}, {@code <experiment>.md} and {@code report.md}, whose summary
 * table (see {@link Summary}) compares the systems of every experiment as ratios. Used by the single bench thread.
 */
public final class Report {
    private final Path dir;
    private final StringBuilder summary = new StringBuilder();
    private final StringBuilder details = new StringBuilder();
    private final Map<String, List<Row>> results = new LinkedHashMap<>();
    /** How long each experiment ran, in seconds, in the order run. */
    private final Map<String, Double> durations = new LinkedHashMap<>();
    /** The core-to-core round trip measured before each experiment, formatted, in the order run. */
    private final Map<String, String> hostStates = new LinkedHashMap<>();

    public Report(Path root, String command) {
        this(root, command, null);
    }

    /** A report whose header also says how it measured ({@code options}; null: not said). */
    public Report(Path root, String command, BenchOptions options) {
        this.dir = root.resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH-mm-ss")));
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + dir, e);
        }
        summary.append("# rdmastore benchmark report\n\n")
            .append("- command: `").append(command).append("`\n")
            .append("- machine: ").append(Machine.describe()).append("\n")
            .append("- versions: ").append(Summary.versions()).append("\n");
        if (options != null) {
            summary.append("- measurement: ").append(options.describe()).append(" (experiments E1, E2, E3, E4, YCSB;")
                .append(" docs/bench/README.md, \"Fair measurement\")\n")
                .append("- servers: ").append(ServerPriority.ORDINARY.describe()).append("; in E3 every server at ")
                .append(ServerPriority.RAISED.describe())
                .append(" (docs/bench/README.md, \"Servers at one priority\")\n");
        }
        summary.append("\n")
            .append("All figures of one experiment were taken side by side in this run; compare ratios, not absolute ")
            .append("numbers across runs.\n\n");
    }

    public Path directory() {
        return dir;
    }

    /** Saves an experiment's rows and its Markdown table (with notes) and adds them to the report. */
    public void add(String experiment, String title, String table, String notes, List<Row> rows) {
        String json = rows.stream().map(Row::toJson).collect(Collectors.joining(",\n  ", "[\n  ", "\n]\n"));
        String md = "## " + experiment + ": " + title + "\n\n" + table + "\n" + (notes.isEmpty() ? "" : notes + "\n");
        try {
            Files.writeString(dir.resolve(experiment + ".json"), json);
            Files.writeString(dir.resolve(experiment + ".md"), md);
            Charts.bar(dir.resolve(experiment + ".png"), experiment + ": " + title, rows);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        results.put(experiment, List.copyOf(rows));
        details.append(md).append("\n![").append(experiment).append("](").append(experiment).append(".png)\n\n");
    }

    /** Records that an experiment failed, so the report does not silently omit it. */
    public void failed(String experiment, Throwable cause) {
        results.put(experiment, null);
        details.append("## ").append(experiment).append(": FAILED\n\n```\n").append(cause).append("\n```\n\n");
    }

    /** Records the host's core-to-core round trip measured before an experiment ({@link CoreProbe}; null: none). */
    public void hostState(String experiment, Spread roundTripNs) {
        hostStates.put(experiment, roundTripNs == null ? "not measured" : CoreProbe.format(roundTripNs));
    }

    /** Records how long an experiment ran (it appears in the report's header). */
    public void duration(String experiment, double seconds) {
        durations.put(experiment, seconds);
    }

    /** Writes report.md; returns its path. */
    public Path finish() {
        Path p = dir.resolve("report.md");
        StringBuilder took = new StringBuilder();
        if (!durations.isEmpty()) {
            double total = durations.values().stream().mapToDouble(Double::doubleValue).sum();
            took.append(String.format(java.util.Locale.ROOT, "Run time: %.1f min (", total / 60));
            durations.forEach((e, sec) -> took.append(took.charAt(took.length() - 1) == '(' ? "" : ", ")
                .append(String.format(java.util.Locale.ROOT, "%s %.1f", e, sec / 60)));
            took.append(").\n\n");
        }
        if (!hostStates.isEmpty()) {
            took.append("Host before each experiment, core-to-core round trip in ns (two threads bouncing one cache ")
                .append("line; median of ").append(CoreProbe.SLICES).append(" slices of ")
                .append(CoreProbe.SLICE_NANOS / 1_000_000).append(" ms, fastest-slowest; docs/decisions.md, ")
                .append("\"The slow state is the vCPUs'\"): ")
                .append(hostStates.entrySet().stream().map(e -> e.getKey() + " " + e.getValue())
                    .collect(Collectors.joining(", ")))
                .append(".\n\n");
        }
        try {
            Files.writeString(p, summary.toString() + took + Summary.table(results) + "\n" + details);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return p;
    }

    /** A Markdown table. */
    public static String table(List<String> header, List<List<String>> body) {
        StringBuilder sb = new StringBuilder("| ").append(String.join(" | ", header)).append(" |\n|");
        sb.append("---|".repeat(header.size())).append('\n');
        for (List<String> r : body) {
            sb.append("| ").append(String.join(" | ", r)).append(" |\n");
        }
        return sb.toString();
    }

    /** Rows as aligned plain text for the terminal. */
    public static String plain(List<String> header, List<List<String>> body) {
        List<List<String>> all = new ArrayList<>();
        all.add(header);
        all.addAll(body);
        int[] w = new int[header.size()];
        for (List<String> r : all) {
            for (int i = 0; i < r.size(); i++) {
                w[i] = Math.max(w[i], r.get(i).length());
            }
        }
        StringBuilder sb = new StringBuilder();
        for (List<String> r : all) {
            for (int i = 0; i < r.size(); i++) {
                sb.append(String.format("%-" + (w[i] + 2) + "s", r.get(i)));
            }
            sb.append('\n');
        }
        return sb.toString();
    }
}
