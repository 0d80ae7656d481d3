package io.rdmastore.bench;

import java.util.Locale;

/**
 * One measured figure, as DESIGN.md section 6 specifies for the JSON files.
 *
 * @param experiment E1..E7
 * @param system rdmastore-ucx, rdmastore-tcp, redis or limit
 * @param variant ring, am, raw-put, ...
 * @param sizeBytes message or value size
 * @param clients concurrent clients
 * @param metric round_trips_per_s, ops_per_s, p50_us, p99_us, p999_us, mb_per_s
 * @param value the figure
 * @param shards shards of a cluster (E8), 0 for the experiments without (then absent from the JSON)
 */
public record Row(String experiment, String system, String variant, long sizeBytes, int clients, String metric,
                  double value, int shards) {

    public Row(String experiment, String system, String variant, long sizeBytes, int clients, String metric,
               double value) {
        this(experiment, system, variant, sizeBytes, clients, metric, value, 0);
    }

    /** This row as one JSON object. */
    public String toJson() {
        return String.format(Locale.ROOT, "{\"experiment\":\"%s\", \"system\":\"%s\", \"variant\":\"%s\", "
            + "\"size_bytes\":%d, \"clients\":%d, %s\"metric\":\"%s\", \"value\":%s}", esc(experiment),
            esc(system), esc(variant), sizeBytes, clients, shards > 0 ? "\"shards\":" + shards + ", " : "",
            esc(metric), Double.isFinite(value) ? Double.toString(value) : "null");
    }

    private static String esc(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"");
    }
}
