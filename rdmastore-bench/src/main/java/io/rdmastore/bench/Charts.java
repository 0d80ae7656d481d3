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
        List<String> x = new ArrayList<>(sizes);
        for (Map.Entry<String, Map<String, Double>> e : series.entrySet()) {
            List<Double> y = new ArrayList<>();
            for (String s : x) {
                y.add(e.getValue().getOrDefault(s, 0.0));
            }
            chart.addSeries(e.getKey(), x, y);
        }
        BitmapEncoder.saveBitmap(chart, file.toString(), BitmapEncoder.BitmapFormat.PNG);
    }
}
