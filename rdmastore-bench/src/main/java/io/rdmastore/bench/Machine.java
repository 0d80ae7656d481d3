package io.rdmastore.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** What the benchmark ran on, for the report. */
final class Machine {
    private Machine() {
    }

    static String describe() {
        String cpu = "unknown cpu";
        try {
            cpu = Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name"))
                .findFirst().map(l -> l.substring(l.indexOf(':') + 1).trim()).orElse(cpu);
        } catch (IOException | RuntimeException ignored) {
            // not Linux: keep the default
        }
        return Runtime.getRuntime().availableProcessors() + " cores (" + cpu + "), "
            + (Runtime.getRuntime().maxMemory() >> 20) + " MiB max heap, Java " + Runtime.version() + ", "
            + System.getProperty("os.name") + " " + System.getProperty("os.version") + ", UCX " + ucxVersion();
    }

    static String ucxVersion() {
        try {
            Process p = new ProcessBuilder("ucx_info", "-v").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            p.waitFor();
            for (String line : out.split("\n")) {
                if (line.contains("Version")) {
                    return line.replace("#", "").replace("Version", "").trim();
                }
            }
        } catch (IOException | InterruptedException e) {
            return "unknown (ucx_info not installed)";
        }
        return "unknown";
    }
}
