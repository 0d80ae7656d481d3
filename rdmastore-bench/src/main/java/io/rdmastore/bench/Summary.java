package io.rdmastore.bench;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The report's summary: for each experiment, rdmastore-ucx against rdmastore-tcp and Redis as ratios of its headline
 * metric (the first metric of its rows), and ucx against the known limit (raw JUCX ping-pong, memcpy bandwidth) where
 * the experiment measured one; plus the server's CPU seconds per million operations where it was recorded. Ratios are
 * oriented so that above 1 means the first system is better (faster, or lower latency for {@code *_us} metrics), and
 * are geometric means over the (size, clients) cells both systems measured, taking each system's best variant per cell
 * (or, for an experiment in {@link #HEADLINE_VARIANT}, only that variant). Stateless; any thread.
 */
final class Summary {
    /**
     * Experiments whose headline is one variant rather than each system's best: E6 compares replicated writes
     * ({@code wmajority}); its best variant would be the unreplicated server.
     */
    static final Map<String, String> HEADLINE_VARIANT = Map.of("E6", "wmajority");

    private Summary() {
    }

    /** The summary as Markdown; {@code results} maps experiment to rows, or to null when it failed. */
    static String table(Map<String, List<Row>> results) {
        List<String> header = List.of("experiment", "headline metric", "ucx vs tcp", "ucx vs redis", "tcp vs redis",
            "ucx vs limit", "server CPU s / M ops (ucx, tcp, redis)");
        List<List<String>> body = new ArrayList<>();
        for (Map.Entry<String, List<Row>> e : results.entrySet()) {
            List<Row> rows = e.getValue();
            if (rows == null) {
                body.add(List.of(e.getKey(), "FAILED (see below)", "-", "-", "-", "-", "-"));
                continue;
            }
            if (rows.isEmpty()) {
                body.add(List.of(e.getKey(), "no rows", "-", "-", "-", "-", "-"));
                continue;
            }
            // one line per CPU mode where the rows carry one; contention cells are a variant, not the headline
            Map<String, List<Row>> byMode = new LinkedHashMap<>();
            for (Row r : rows) {
                if (r.tags() == null || !Boolean.TRUE.equals(r.tags().contention())) {
                    byMode.computeIfAbsent(r.cpuMode(), k -> new ArrayList<>()).add(r);
                }
            }
            for (Map.Entry<String, List<Row>> m : byMode.entrySet()) {
                List<Row> modeRows = m.getValue();
                String metric = modeRows.getFirst().metric();
                String variant = HEADLINE_VARIANT.get(e.getKey());
                Map<String, Map<String, Double>> best = best(variant == null ? modeRows
                    : modeRows.stream().filter(r -> r.variant().equals(variant)).toList(), metric);
                String name = m.getKey().isEmpty() ? e.getKey() : e.getKey() + " (" + m.getKey() + ")";
                body.add(List.of(name, variant == null ? metric : metric + " (" + variant + ")",
                    ratio(best, "rdmastore-ucx", "rdmastore-tcp", metric), ratio(best, "rdmastore-ucx", "redis", metric),
                    ratio(best, "rdmastore-tcp", "redis", metric), ratio(best, "rdmastore-ucx", "limit", metric),
                    cpu(modeRows)));
            }
        }
        return "## Summary\n\n" + Report.table(header, body) + "\nRatios above 1 favour the first system (higher "
            + "throughput, or lower latency for *_us metrics); geometric mean over the cells both measured, best variant"
            + " of each system per cell (cells also match on persistence pairing; values are the medians of the repeats)."
            + " One line per CPU mode where the experiment ran both; contention cells are left out. '-' where a system"
            + " was not part of the experiment.\n";
    }

    /** system -> (size/clients -> best value of {@code metric}). */
    private static Map<String, Map<String, Double>> best(List<Row> rows, String metric) {
        boolean lowerIsBetter = metric.endsWith("_us");
        Map<String, Map<String, Double>> best = new HashMap<>();
        for (Row r : rows) {
            if (!r.metric().equals(metric) || !Double.isFinite(r.value())) {
                continue;
            }
            String cell = r.sizeBytes() + "/" + r.clients()
                + (r.tags() == null || r.tags().persistence() == null ? "" : "/" + r.tags().persistence());
            best.computeIfAbsent(r.system(), k -> new HashMap<>()).merge(cell, r.value(),
                (a, b) -> lowerIsBetter ? Math.min(a, b) : Math.max(a, b));
        }
        return best;
    }

    private static String ratio(Map<String, Map<String, Double>> best, String a, String b, String metric) {
        Map<String, Double> x = best.get(a);
        Map<String, Double> y = best.get(b);
        if (x == null || y == null) {
            return "-";
        }
        double logSum = 0;
        int n = 0;
        for (Map.Entry<String, Double> e : x.entrySet()) {
            Double other = y.get(e.getKey());
            if (other != null && other > 0 && e.getValue() > 0) {
                double r = metric.endsWith("_us") ? other / e.getValue() : e.getValue() / other;
                logSum += Math.log(r);
                n++;
            }
        }
        return n == 0 ? "-" : String.format(Locale.ROOT, "%.2fx (%d cells)", Math.exp(logSum / n), n);
    }

    private static String cpu(List<Row> rows) {
        Map<String, Double> perMop = new LinkedHashMap<>();
        for (Row r : rows) {
            if (r.metric().equals("server_cpu_s_per_mop")) {
                perMop.putIfAbsent(r.system(), r.value());
            }
        }
        if (perMop.isEmpty()) {
            return "-";
        }
        List<String> parts = new ArrayList<>();
        for (String s : List.of("rdmastore-ucx", "rdmastore-tcp", "redis")) {
            Double v = perMop.get(s);
            parts.add(v == null ? "-" : YcsbWorkloads.num(v));
        }
        return String.join(", ", parts);
    }

    /** Versions of what ran: rdmastore's commit, the libraries on the class path, redis-server. */
    static String versions() {
        List<String> parts = new ArrayList<>();
        parts.add("rdmastore " + commit());
        Map<String, String> jars = new LinkedHashMap<>();
        jars.put("jucx-", "JUCX");
        jars.put("core-0", "YCSB core");
        jars.put("jedis-", "Jedis");
        jars.put("netty-all-", "Netty");
        jars.put("xchart-", "XChart");
        for (String entry : System.getProperty("java.class.path", "").split(File.pathSeparator)) {
            String name = entry.substring(entry.lastIndexOf(File.separatorChar) + 1);
            for (Map.Entry<String, String> j : jars.entrySet()) {
                if (name.startsWith(j.getKey()) && name.endsWith(".jar")) {
                    String v = name.substring(j.getKey().length(), name.length() - 4);
                    parts.add(j.getValue() + " " + (j.getKey().equals("core-0") ? "0" + v : v));
                }
            }
        }
        parts.add("redis-server " + (RedisServer.onPath("redis-server") ? RedisServer.version() : "not installed"));
        return String.join(", ", parts);
    }

    private static String commit() {
        try {
            Process p = new ProcessBuilder("git", "describe", "--always", "--dirty").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes()).trim();
            if (!p.waitFor(5, TimeUnit.SECONDS) || p.exitValue() != 0 || out.isEmpty() || out.contains(" ")) {
                return "(commit unknown)";
            }
            return "commit " + out;
        } catch (IOException | InterruptedException e) {
            return "(commit unknown)";
        }
    }
}
