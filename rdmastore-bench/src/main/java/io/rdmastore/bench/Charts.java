package io.rdmastore.bench;

import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** PNG charts of an experiment's rows: one bar group per size, one series per system and variant. */
final class Charts {
    private Charts() {
    }

    static void bar(Path file, String title, List<Row> rows) throws IOException {
        bar(file, title, rows, false);
    }

    /** The same, with a logarithmic value axis when {@code logY} (for figures spanning orders of magnitude). */
    static void bar(Path file, String title, List<Row> rows, boolean logY) throws IOException {
        if (rows.isEmpty()) {
            return;
        }
        String metric = rows.getFirst().metric();
        Set<String> sizes = new LinkedHashSet<>();
        Map<String, Map<String, Double>> series = new LinkedHashMap<>();
        for (Row r : rows) {
            if (!r.metric().equals(metric)) {
                continue;
            }
            String size = Sizes.human(r.sizeBytes()) + (r.clients() > 1 ? " x" + r.clients() : "");
            sizes.add(size);
            series.computeIfAbsent(r.system() + " " + r.variant(), k -> new LinkedHashMap<>()).put(size, r.value());
        }
        CategoryChart chart = new CategoryChartBuilder().width(900).height(500).title(title).xAxisTitle("size")
            .yAxisTitle(metric).build();
        chart.getStyler().setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.InsideNE);
        if (logY) {
            // XChart's bars start at 0, which a log axis cannot show: draw each series as markers joined by lines
            chart.getStyler().setYAxisLogarithmic(true);
            chart.getStyler().setDefaultSeriesRenderStyle(
                org.knowm.xchart.CategorySeries.CategorySeriesRenderStyle.Line);
        }
        List<String> x = new ArrayList<>(sizes);
        for (Map.Entry<String, Map<String, Double>> e : series.entrySet()) {
            List<Double> y = new ArrayList<>();
            for (String s : x) {
                // a log axis cannot show 0: a missing cell is drawn as 1
                y.add(e.getValue().getOrDefault(s, logY ? 1.0 : 0.0));
            }
            chart.addSeries(e.getKey(), x, y);
        }
        BitmapEncoder.saveBitmap(chart, file.toString(), BitmapEncoder.BitmapFormat.PNG);
    }
}
