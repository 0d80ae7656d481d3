package io.rdmastore.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * How a bench run measures, from the command line: {@code --quick}, {@code --repeats N}, {@code --cpu-mode
 * awake|idle|both}, {@code --persistence everysec|none|both}, {@code --warmup S} and {@code --measure S}. Experiments
 * that run time-based phases take their warm-up and measured time from {@link #warmNanos} and {@link #measureNanos}
 * (their own defaults unless overridden). Immutable; any thread.
 *
 * @param quick a smoke run: short phases, one repeat, idle CPU only unless asked otherwise
 * @param repeats how many times each cell is measured (median and min-max are reported)
 * @param cpuModes the CPU states every system is measured in, in this order
 * @param persistence the persistence pairings measured (rdmastore's fsync policy against Redis's AOF setting)
 * @param warmSeconds warm-up per phase in seconds, or NaN for each experiment's default
 * @param measureSeconds measured time per phase in seconds, or NaN for each experiment's default
 */
public record BenchOptions(boolean quick, int repeats, List<CpuState.Mode> cpuModes, List<Persistence> persistence,
                           double warmSeconds, double measureSeconds) {

    public BenchOptions {
        if (repeats < 1) {
            throw new IllegalArgumentException("repeats must be at least 1, got " + repeats);
        }
        if (cpuModes.isEmpty() || persistence.isEmpty()) {
            throw new IllegalArgumentException("at least one CPU mode and one persistence pairing");
        }
        cpuModes = List.copyOf(cpuModes);
        persistence = List.copyOf(persistence);
    }

    /**
     * A persistence pairing: what rdmastore's server and redis-server are started with, so both do the same work per
     * write.
     */
    public enum Persistence {
        /** rdmastore {@code --fsync everysec} against redis-server {@code appendonly yes, appendfsync everysec}. */
        EVERYSEC("everysec", List.of("--fsync", "everysec"), List.of("--appendonly", "yes", "--appendfsync",
            "everysec")),
        /** rdmastore {@code --fsync no} against redis-server with neither AOF nor RDB snapshots. */
        NONE("none", List.of("--fsync", "no"), List.of("--appendonly", "no"));

        private final String label;
        private final List<String> serverArgs;
        private final List<String> redisArgs;

        Persistence(String label, List<String> serverArgs, List<String> redisArgs) {
            this.label = label;
            this.serverArgs = serverArgs;
            this.redisArgs = redisArgs;
        }

        /** The name in rows, tables and options: everysec or none. */
        public String label() {
            return label;
        }

        /** rdmastore server options for this pairing. */
        public List<String> serverArgs() {
            return serverArgs;
        }

        /** redis-server options for this pairing. */
        public List<String> redisArgs() {
            return redisArgs;
        }

        /** How the report names the pairing. */
        public String describe() {
            return this == EVERYSEC ? "rdmastore --fsync everysec vs Redis appendonly yes + appendfsync everysec"
                : "rdmastore --fsync no vs Redis without persistence";
        }

        static List<Persistence> parse(String v) {
            return switch (v.toLowerCase(Locale.ROOT)) {
                case "everysec" -> List.of(EVERYSEC);
                case "none", "no" -> List.of(NONE);
                case "both" -> List.of(EVERYSEC, NONE);
                default -> throw new IllegalArgumentException("--persistence takes everysec, none or both, not '" + v
                    + "'");
            };
        }
    }

    /**
     * The defaults: full runs repeat 3 times in both CPU modes with matched everysec persistence; quick runs once, idle.
     */
    public static BenchOptions defaults(boolean quick) {
        return new BenchOptions(quick, quick ? 1 : 3,
            quick ? List.of(CpuState.Mode.IDLE) : List.of(CpuState.Mode.AWAKE, CpuState.Mode.IDLE),
            List.of(Persistence.EVERYSEC), Double.NaN, Double.NaN);
    }

    /**
     * Parses the measurement options out of {@code args}; what it does not know is returned in {@code rest} (in order).
     *
     * @throws IllegalArgumentException on a malformed option
     */
    public static BenchOptions parse(List<String> args, List<String> rest) {
        boolean quick = args.contains("--quick");
        BenchOptions d = defaults(quick);
        int repeats = d.repeats;
        List<CpuState.Mode> modes = d.cpuModes;
        List<Persistence> persistence = d.persistence;
        double warm = Double.NaN;
        double measure = Double.NaN;
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            switch (a) {
                case "--quick" -> {
                }
                case "--repeats", "--cpu-mode", "--persistence", "--warmup", "--measure" -> {
                    if (i + 1 >= args.size()) {
                        throw new IllegalArgumentException(a + " needs a value");
                    }
                    String v = args.get(++i);
                    switch (a) {
                        case "--repeats" -> repeats = positiveInt(a, v);
                        case "--cpu-mode" -> modes = CpuState.Mode.parse(v);
                        case "--persistence" -> persistence = Persistence.parse(v);
                        case "--warmup" -> warm = seconds(a, v, true);
                        default -> measure = seconds(a, v, false);
                    }
                }
                default -> rest.add(a);
            }
        }
        return new BenchOptions(quick, repeats, modes, persistence, warm, measure);
    }

    private static int positiveInt(String option, String v) {
        try {
            int n = Integer.parseInt(v);
            if (n >= 1) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(option + " takes a whole number of at least 1, not '" + v + "'");
    }

    private static double seconds(String option, String v, boolean zeroAllowed) {
        try {
            double s = Double.parseDouble(v);
            if (Double.isFinite(s) && (s > 0 || zeroAllowed && s == 0) && s <= 3600) {
                return s;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(option + " takes seconds (" + (zeroAllowed ? "0" : "above 0")
            + " to 3600), not '" + v + "'");
    }

    /** The warm-up per phase: {@code --warmup} when given, else the experiment's default for this run's size. */
    public long warmNanos(long fullDefault, long quickDefault) {
        return Double.isNaN(warmSeconds) ? (quick ? quickDefault : fullDefault) : (long) (warmSeconds * 1e9);
    }

    /** The measured time per phase: {@code --measure} when given, else the experiment's default for this run's size. */
    public long measureNanos(long fullDefault, long quickDefault) {
        return Double.isNaN(measureSeconds) ? (quick ? quickDefault : fullDefault) : (long) (measureSeconds * 1e9);
    }

    /** One line for the report header. */
    public String describe() {
        List<String> m = new ArrayList<>();
        for (CpuState.Mode mode : cpuModes) {
            m.add(mode.label());
        }
        List<String> p = new ArrayList<>();
        for (Persistence x : persistence) {
            p.add(x.label());
        }
        return "repeats " + repeats + " (median and min-max per figure), CPU modes " + String.join(", ", m)
            + ", persistence " + String.join(", ", p)
            + (Double.isNaN(warmSeconds) ? "" : ", warm-up " + warmSeconds + " s")
            + (Double.isNaN(measureSeconds) ? "" : ", measured " + measureSeconds + " s") + " per phase";
    }
}
