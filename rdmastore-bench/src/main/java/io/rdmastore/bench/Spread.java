package io.rdmastore.bench;

import java.util.Arrays;
import java.util.List;
import java.util.function.DoubleFunction;

/**
 * The repeats of one figure: their median and their range (min-max). NaN samples (a repeat that measured nothing) are
 * left out; with none left every field is NaN and {@code n} is 0. Immutable; any thread.
 *
 * @param median the middle sample (the mean of the two middle ones for an even count)
 * @param min the smallest sample
 * @param max the largest sample
 * @param n how many samples
 */
public record Spread(double median, double min, double max, int n) {

    /** The spread of {@code samples}. */
    public static Spread of(double... samples) {
        double[] s = Arrays.stream(samples).filter(Double::isFinite).sorted().toArray();
        if (s.length == 0) {
            return new Spread(Double.NaN, Double.NaN, Double.NaN, 0);
        }
        int m = s.length / 2;
        double median = s.length % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2;
        return new Spread(median, s[0], s[s.length - 1], s.length);
    }

    /** The spread of {@code samples}. */
    public static Spread of(List<Double> samples) {
        return of(samples.stream().mapToDouble(Double::doubleValue).toArray());
    }

    /** The median of {@code samples} (NaN when there are none). */
    public static double median(List<Double> samples) {
        return of(samples).median();
    }

    /** The range as a fraction of the median (0 for one sample; NaN when unknown). */
    public double relativeRange() {
        return n == 0 || median == 0 ? Double.NaN : (max - min) / Math.abs(median);
    }

    /** {@code median (min-max)}, or just the median for one sample, each number written by {@code f}; "-" if none. */
    public String format(DoubleFunction<String> f) {
        if (n == 0) {
            return "-";
        }
        return n == 1 ? f.apply(median) : f.apply(median) + " (" + f.apply(min) + "-" + f.apply(max) + ")";
    }

    /** This figure as a row, its spread in the row's tags (repeats, value_min, value_max). */
    public Row row(String experiment, String system, String variant, long size, int clients, String metric,
                   Row.Tags tags) {
        return new Row(experiment, system, variant, size, clients, metric, median, 0,
            (tags == null ? Row.Tags.NONE : tags).withSpread(n, min, max));
    }
}
