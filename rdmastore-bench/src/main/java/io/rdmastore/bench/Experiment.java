package io.rdmastore.bench;

/**
 * One experiment of DESIGN.md section 6. Implementations print their table, and add Markdown, JSON rows and a chart to
 * the {@link Report}. Register new ones in {@link BenchMain#EXPERIMENTS}.
 */
public interface Experiment {

    /** E1..E7, YCSB, ... */
    String id();

    /** One line for the help text. */
    String title();

    /**
     * Runs, side by side, every system this experiment compares.
     *
     * @param quick a smoke run: every system and size runs briefly and writes its files; no timing is asserted
     */
    void run(boolean quick, Report report) throws Exception;

    /**
     * Runs with the command line's measurement options (repeats, CPU modes, persistence pairings, phase lengths).
     * Experiments that do not take them run as {@link #run(boolean, Report)} with {@link BenchOptions#quick}.
     */
    default void run(BenchOptions options, Report report) throws Exception {
        run(options.quick(), report);
    }
}
