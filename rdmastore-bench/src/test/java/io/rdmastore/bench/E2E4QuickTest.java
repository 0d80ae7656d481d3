package io.rdmastore.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@code --quick} run of E2 and of E4 writes its JSON, Markdown and PNG with rows for both transports. Timings are
 * not asserted (the machine is shared); only that every figure is there and the run succeeded.
 */
class E2E4QuickTest {

    private static Path only(Path out, String file) throws IOException {
        try (Stream<Path> s = Files.walk(out)) {
            List<Path> found = s.filter(p -> p.getFileName().toString().equals(file)).toList();
            assertEquals(1, found.size(), "expected one " + file + " under " + out + ", found " + found);
            return found.getFirst();
        }
    }

    private static String run(Path out, String experiment, String ucxColumn) throws Exception {
        int code = BenchMain.run(new String[] {experiment, "--quick", "--out", out.toString()});
        Path report = only(out, "report.md");
        assertEquals(0, code, experiment + " --quick failed:\n" + Files.readString(report));
        assertTrue(Files.size(only(out, experiment + ".png")) > 0, experiment + ".png is empty");
        assertTrue(Files.readString(only(out, experiment + ".md")).contains(ucxColumn),
            experiment + ".md has no ucx row");
        return Files.readString(only(out, experiment + ".json"));
    }

    @Test
    @Timeout(90)
    void e2QuickWritesLatencyAndBreakdownForBothTransports(@TempDir Path out) throws Exception {
        String json = run(out, "E2", "| rdmastore-ucx |");
        for (String system : List.of("rdmastore-ucx", "rdmastore-tcp")) {
            for (String op : List.of("get", "put")) {
                for (String metric : List.of("p50_us", "p99_us", "p999_us", "source_us", "process_us", "sink_us",
                    "other_us")) {
                    String row = "\"system\":\"" + system + "\", \"variant\":\"" + op + "\", \"size_bytes\":1024, "
                        + "\"clients\":1, \"metric\":\"" + metric + "\"";
                    assertTrue(json.contains(row), "E2.json lacks " + row + ":\n" + json);
                }
            }
        }
        for (String op : List.of("get", "put")) {
            // the host's floor for the 64 KiB cells, measured in the same run
            String row = "\"system\":\"floor\", \"variant\":\"" + op + "\", \"size_bytes\":65536, "
                + "\"clients\":1, \"metric\":\"p50_us\"";
            assertTrue(json.contains(row), "E2.json lacks " + row + ":\n" + json);
        }
        for (String op : List.of("get", "put")) {
            // the copies a ucx server made per operation, read from its INFO (tcp servers have no such counter)
            String row = "\"system\":\"rdmastore-ucx\", \"variant\":\"" + op + "\", \"size_bytes\":1024, "
                + "\"clients\":1, \"metric\":\"server_copies\"";
            assertTrue(json.contains(row), "E2.json lacks " + row + ":\n" + json);
        }
    }

    @Test
    @Timeout(90)
    void e4QuickWritesThroughputForBothTransportsAndThreadCounts(@TempDir Path out) throws Exception {
        String json = run(out, "E4", "| ucx ops/s |");
        for (String system : List.of("rdmastore-ucx", "rdmastore-tcp")) {
            for (String op : E4Crud.OPS) {
                for (int clients : E4Crud.CLIENTS) {
                    String row = "\"system\":\"" + system + "\", \"variant\":\"" + op + "\", \"size_bytes\":0, "
                        + "\"clients\":" + clients + ", \"metric\":\"ops_per_s\", \"value\":";
                    int at = json.indexOf(row);
                    assertTrue(at >= 0, "E4.json lacks " + row + ":\n" + json);
                    double v = Double.parseDouble(json.substring(at + row.length(), json.indexOf('}', at)).trim());
                    assertTrue(v > 0, system + " " + op + " x" + clients + " measured no operations");
                }
            }
        }
    }
}
