package io.rdmastore.bench;

import java.util.Locale;

/**
 * One measured figure, as DESIGN.md section 6 specifies for the JSON files (the fields added by the fair-measurement
 * work, {@link Tags}, are described in docs/bench/README.md).
 *
 * @param experiment E1..E7
 * @param system rdmastore-ucx, rdmastore-tcp, redis or limit
 * @param variant ring, am, raw-put, ...
 * @param sizeBytes message or value size
 * @param clients concurrent clients
 * @param metric round_trips_per_s, ops_per_s, p50_us, p99_us, p999_us, mb_per_s
 * @param value the figure (the median of the repeats when {@code tags} carry a spread)
 * @param shards shards of a cluster (E8), 0 for the experiments without (then absent from the JSON)
 * @param tags how the figure was measured (CPU mode, persistence pairing, contention, repeats and spread); null or
 *     {@link Tags#NONE} for none (then absent from the JSON)
 */
public record Row(String experiment, String system, String variant, long sizeBytes, int clients, String metric,
                  double value, int shards, Tags tags) {

    public Row(String experiment, String system, String variant, long sizeBytes, int clients, String metric,
               double value) {
        this(experiment, system, variant, sizeBytes, clients, metric, value, 0, null);
    }

    public Row(String experiment, String system, String variant, long sizeBytes, int clients, String metric,
               double value, int shards) {
        this(experiment, system, variant, sizeBytes, clients, metric, value, shards, null);
    }

    /** This row with other tags. */
    public Row with(Tags t) {
        return new Row(experiment, system, variant, sizeBytes, clients, metric, value, shards, t);
    }

    /** The CPU mode of the row, or "" when it carries none. */
    public String cpuMode() {
        return tags == null || tags.cpuMode() == null ? "" : tags.cpuMode();
    }

    /**
     * How a figure was measured. Every field is optional: null, 0 or NaN leave it out of the JSON.
     *
     * @param cpuMode awake or idle (docs/bench/README.md, "CPU modes")
     * @param persistence the pairing: everysec (rdmastore --fsync everysec, Redis AOF everysec) or none
     * @param contention whether two background CPU burners ran during the phase (null: the experiment has no such
     *     variant)
     * @param repeats how many repeats the value is the median of
     * @param min the smallest repeat
     * @param max the largest repeat
     */
    public record Tags(String cpuMode, String persistence, Boolean contention, int repeats, double min, double max) {
        public static final Tags NONE = new Tags(null, null, null, 0, Double.NaN, Double.NaN);

        public static Tags of(String cpuMode, String persistence, Boolean contention) {
            return new Tags(cpuMode, persistence, contention, 0, Double.NaN, Double.NaN);
        }

        public Tags withSpread(int n, double lo, double hi) {
            return new Tags(cpuMode, persistence, contention, n, lo, hi);
        }

        String json() {
            StringBuilder sb = new StringBuilder();
            if (cpuMode != null) {
                sb.append("\"cpu_mode\":\"").append(esc(cpuMode)).append("\", ");
            }
            if (persistence != null) {
                sb.append("\"persistence\":\"").append(esc(persistence)).append("\", ");
            }
            if (contention != null) {
                sb.append("\"contention\":").append(contention).append(", ");
            }
            if (repeats > 0) {
                sb.append("\"repeats\":").append(repeats).append(", ");
                sb.append("\"value_min\":").append(num(min)).append(", \"value_max\":").append(num(max)).append(", ");
            }
            return sb.toString();
        }
    }

    /** This row as one JSON object. */
    public String toJson() {
        return String.format(Locale.ROOT, "{\"experiment\":\"%s\", %s\"system\":\"%s\", \"variant\":\"%s\", "
            + "\"size_bytes\":%d, \"clients\":%d, %s\"metric\":\"%s\", \"value\":%s}", esc(experiment),
            tags == null ? "" : tags.json(), esc(system), esc(variant), sizeBytes, clients,
            shards > 0 ? "\"shards\":" + shards + ", " : "", esc(metric), num(value));
    }

    private static String num(double v) {
        return Double.isFinite(v) ? Double.toString(v) : "null";
    }

    private static String esc(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"");
    }
}
