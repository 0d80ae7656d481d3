package io.rdmastore.server.resp;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Redis settings that tools and test suites set routinely but that do not apply to rdmastore (encodings, eviction,
 * RDB timing, replica behaviour, ...). {@code CONFIG SET} accepts them with Redis's validation and {@code CONFIG GET}
 * shows the value set (Redis's default until then); nothing else reads them. docs/resp.md lists them as ignored.
 * Aliases that Redis keeps in step ({@code hash-max-ziplist-entries} and {@code hash-max-listpack-entries}) change
 * together.
 *
 * <p>Threads: thread-safe (a concurrent map); any event loop may read or set.
 */
final class RespSettings {
    private enum Kind { BOOL, INT, MEMORY, STRING, SAVE, POLICY }

    private record Setting(Kind kind, String defaultValue, String alias) {
    }

    private static final Map<String, Setting> TABLE = new LinkedHashMap<>();

    static {
        memory("maxmemory", "0");
        def("maxmemory-policy", Kind.POLICY, "noeviction");
        integer("maxmemory-samples", "5");
        integer("maxmemory-eviction-tenacity", "10");
        memory("maxmemory-clients", "0");
        def("notify-keyspace-events", Kind.STRING, "");
        def("save", Kind.SAVE, "");
        aliased("hash-max-ziplist-entries", "hash-max-listpack-entries", Kind.INT, "128");
        aliased("hash-max-ziplist-value", "hash-max-listpack-value", Kind.INT, "64");
        aliased("zset-max-ziplist-entries", "zset-max-listpack-entries", Kind.INT, "128");
        aliased("zset-max-ziplist-value", "zset-max-listpack-value", Kind.INT, "64");
        aliased("list-max-ziplist-size", "list-max-listpack-size", Kind.INT, "-2");
        integer("list-compress-depth", "0");
        integer("set-max-intset-entries", "512");
        memory("stream-node-max-bytes", "4096");
        integer("stream-node-max-entries", "100");
        integer("lua-time-limit", "5000");
        integer("busy-reply-threshold", "5000");
        integer("min-replicas-to-write", "0");
        integer("min-replicas-max-lag", "10");
        aliased("replica-serve-stale-data", "slave-serve-stale-data", Kind.BOOL, "yes");
        aliased("replica-read-only", "slave-read-only", Kind.BOOL, "yes");
        integer("rdb-key-save-delay", "0");
        integer("key-load-delay", "0");
        def("sanitize-dump-payload", Kind.STRING, "no");
        memory("client-query-buffer-limit", "1073741824");
        def("client-output-buffer-limit", Kind.STRING,
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60");
        integer("hz", "10");
        def("dynamic-hz", Kind.BOOL, "yes");
        integer("timeout", "0");
        integer("tcp-keepalive", "300");
        integer("slowlog-log-slower-than", "10000");
        integer("slowlog-max-len", "128");
        integer("latency-monitor-threshold", "0");
        def("latency-tracking", Kind.BOOL, "yes");
        integer("active-expire-effort", "1");
        def("activedefrag", Kind.BOOL, "no");
        def("lazyfree-lazy-eviction", Kind.BOOL, "no");
        def("lazyfree-lazy-expire", Kind.BOOL, "no");
        def("lazyfree-lazy-server-del", Kind.BOOL, "no");
        def("lazyfree-lazy-user-del", Kind.BOOL, "no");
        def("lazyfree-lazy-user-flush", Kind.BOOL, "no");
        def("loglevel", Kind.STRING, "notice");
        def("aof-use-rdb-preamble", Kind.BOOL, "yes");
        def("rdbcompression", Kind.BOOL, "yes");
        def("rdbchecksum", Kind.BOOL, "yes");
        def("stop-writes-on-bgsave-error", Kind.BOOL, "yes");
        integer("hll-sparse-max-bytes", "3000");
        def("tracking-table-max-keys", Kind.INT, "1000000");
        def("close-on-replica-write", Kind.BOOL, "yes");
    }

    private static void def(String name, Kind kind, String defaultValue) {
        TABLE.put(name, new Setting(kind, defaultValue, null));
    }

    private static void integer(String name, String defaultValue) {
        def(name, Kind.INT, defaultValue);
    }

    private static void memory(String name, String defaultValue) {
        def(name, Kind.MEMORY, defaultValue);
    }

    private static void aliased(String name, String alias, Kind kind, String defaultValue) {
        TABLE.put(name, new Setting(kind, defaultValue, alias));
        TABLE.put(alias, new Setting(kind, defaultValue, name));
    }

    private final Map<String, String> values = new ConcurrentHashMap<>();

    RespSettings() {
        for (Map.Entry<String, Setting> e : TABLE.entrySet()) {
            values.put(e.getKey(), e.getValue().defaultValue());
        }
    }

    /** Whether {@code name} (lower case) is one of these settings. */
    static boolean knows(String name) {
        return TABLE.containsKey(name);
    }

    /** Every setting, name to value, in the table's order. */
    Map<String, String> all() {
        Map<String, String> out = new LinkedHashMap<>();
        for (String name : TABLE.keySet()) {
            out.put(name, values.get(name));
        }
        return out;
    }

    /** Checks and stores a value; null when accepted, else Redis's reason (without "ERR ..."). */
    String set(String name, String value) {
        Setting s = TABLE.get(name);
        String v = value;
        switch (s.kind()) {
            case BOOL -> {
                v = value.toLowerCase(Locale.ROOT);
                if (!v.equals("yes") && !v.equals("no")) {
                    return "argument must be 'yes' or 'no'";
                }
            }
            case INT -> {
                try {
                    v = Long.toString(Long.parseLong(value));
                } catch (NumberFormatException e) {
                    return "argument couldn't be parsed into an integer";
                }
            }
            case MEMORY -> {
                long bytes = RespCommands.parseMemory(value);
                if (bytes < 0) {
                    return "argument must be a memory value";
                }
                v = Long.toString(bytes);
            }
            case SAVE -> {
                String[] parts = value.trim().isEmpty() ? new String[0] : value.trim().split("\\s+");
                if (parts.length % 2 != 0) {
                    return "Invalid save parameters";
                }
                for (String p : parts) {
                    try {
                        if (Long.parseLong(p) < 0) {
                            return "Invalid save parameters";
                        }
                    } catch (NumberFormatException e) {
                        return "Invalid save parameters";
                    }
                }
                v = String.join(" ", parts);
            }
            case POLICY -> {
                v = value.toLowerCase(Locale.ROOT);
                switch (v) {
                    case "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru",
                         "allkeys-lfu", "allkeys-random", "noeviction" -> { }
                    default -> {
                        return "argument(s) must be one of the following: volatile-lru, volatile-lfu, "
                            + "volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction";
                    }
                }
            }
            case STRING -> { }
        }
        values.put(name, v);
        if (s.alias() != null) {
            values.put(s.alias(), v);
        }
        return null;
    }

    /** The value of a setting (lower-case name). */
    String get(String name) {
        return values.get(name);
    }
}
