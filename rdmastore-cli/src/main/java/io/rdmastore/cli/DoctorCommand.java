package io.rdmastore.cli;

import io.rdmastore.client.ClientConfig;
import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreException;
import io.rdmastore.transport.Transports;
import io.rdmastore.transport.ucx.UcxTransport;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code rdmastore doctor}: paper 002's context detection, for a person. Checks the JVM, the UCX library and its
 * version, whether the UCX provider loads here and why not, UCX_TLS, RDMA devices, the memlock limit, and with
 * {@code --server} which transport a connection to that server would use and why. One {@code PASS}, {@code WARN},
 * {@code FAIL} or {@code INFO} line per finding; exit code 1 when anything failed.
 *
 * <p>Threads: one call at a time. External tools ({@code ldconfig}, {@code ucx_info}) run with a time limit.
 */
@Command(name = "doctor", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
    description = {"Checks what this machine offers rdmastore: Java, UCX (library, version, transports), RDMA devices,"
        + " memlock limit; with --server, which transport a connection would use and why."},
    exitCodeListHeading = "Exit codes:%n", exitCodeList = {"0:no FAIL line", "1:at least one FAIL line"})
final class DoctorCommand implements Callable<Integer> {
    private static final Duration TOOL_TIMEOUT = Duration.ofSeconds(5);

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Option(names = {"-s", "--server"}, paramLabel = "HOST:PORT",
        description = "Also connect to this server and report the transport chosen and why.")
    String server;
    @Option(names = {"-a", "--password"}, paramLabel = "PW", description = "The server's password (or set "
        + ServerCommand.PASSWORD_ENV + ").")
    String password;

    private PrintWriter out;
    private int failures;

    @Override
    public Integer call() {
        Main.quietLogs();
        out = spec.commandLine().getOut();
        failures = 0;
        out.println("rdmastore doctor: what this machine offers (PASS fine, WARN works with less, FAIL broken)");
        java();
        List<String> rdmaDevices = rdmaDevices();
        ucxLibrary();
        ucxVersionAndTransports();
        ucxProvider();
        ucxSettings();
        devices(rdmaDevices);
        memlock(!rdmaDevices.isEmpty());
        if (server != null) {
            server();
        }
        out.println(failures == 0 ? "result: no failures" : "result: " + failures + " failure"
            + (failures == 1 ? "" : "s"));
        out.flush();
        return failures == 0 ? 0 : 1;
    }

    private void line(String status, String what, String detail) {
        if (status.equals("FAIL")) {
            failures++;
        }
        out.printf("%-4s  %-14s %s%n", status, what, detail);
        out.flush();
    }

    private void java() {
        Runtime.Version v = Runtime.version();
        line(v.feature() >= 25 ? "PASS" : "FAIL", "java", v + " (" + System.getProperty("java.vendor") + ") at "
            + System.getProperty("java.home") + (v.feature() >= 25 ? "" : ": rdmastore needs Java 25 or newer"));
        boolean nativeAccess = DoctorCommand.class.getModule().isNativeAccessEnabled();
        line(nativeAccess ? "PASS" : "WARN", "native access", nativeAccess ? "enabled"
            : "not enabled: start java with --enable-native-access=ALL-UNNAMED (bin/rdmastore does) to avoid warnings");
    }

    private void ucxLibrary() {
        String found = null;
        String ldconfig = Files.isExecutable(Path.of("/sbin/ldconfig")) ? "/sbin/ldconfig" : "ldconfig";
        Tool r = run(ldconfig, "-p");
        if (r.ok()) {
            for (String l : r.output().split("\n")) {
                if (l.contains("libucp.so.0") && l.contains("=>")) {
                    found = l.substring(l.indexOf("=>") + 2).trim();
                    break;
                }
            }
        }
        if (found != null) {
            line("PASS", "ucx library", "libucp.so.0 at " + found);
        } else {
            line("WARN", "ucx library", "libucp.so.0 not found" + (r.ok() ? " by ldconfig -p" : " (" + r.output()
                + ")") + ": only tcp is available; install it with: apt-get install libucx0");
        }
    }

    private void ucxVersionAndTransports() {
        Tool v = run("ucx_info", "-v");
        if (!v.ok()) {
            line("INFO", "ucx version", "ucx_info not available (" + v.output() + "); it comes with the Debian package"
                + " ucx-utils");
            return;
        }
        String version = v.output().lines().filter(l -> l.contains("Version")).findFirst()
            .map(l -> l.replace("#", "").replace("Version", "").trim()).orElse(v.output().lines().findFirst()
                .orElse("?"));
        line("PASS", "ucx version", version + " (ucx_info -v)");
        Tool d = run("ucx_info", "-d");
        if (d.ok()) {
            Set<String> tls = new LinkedHashSet<>();
            for (String l : d.output().split("\n")) {
                String t = l.replace("#", "").trim();
                if (t.startsWith("Transport:")) {
                    tls.add(t.substring("Transport:".length()).trim());
                }
            }
            line("INFO", "ucx transports", tls.isEmpty() ? "none listed by ucx_info -d" : String.join(", ", tls)
                + " (ucx_info -d)");
        }
    }

    private void ucxProvider() {
        String probe;
        try {
            probe = UcxTransport.probe();
        } catch (RuntimeException | LinkageError e) {
            probe = "unavailable: " + e;
        }
        if (probe.equals("available")) {
            line("PASS", "ucx provider", Transports.UCX + " available: connections between two ends with UCX"
                + " upgrade from tcp");
        } else {
            line("WARN", "ucx provider", Transports.UCX + " " + probe + ": connections stay on tcp"
                + (probe.contains("libucp") || probe.contains("UnsatisfiedLink") ? "; apt-get install libucx0" : ""));
        }
    }

    private void ucxSettings() {
        String env = System.getenv("UCX_TLS");
        String prop = System.getProperty("rdmastore.ucx.tls");
        if (prop != null) {
            line("INFO", "UCX_TLS", prop + " (system property rdmastore.ucx.tls" + (env != null ? "; overrides"
                + " UCX_TLS=" + env + " from the environment" : "") + ")");
        } else if (env != null) {
            line("INFO", "UCX_TLS", env + " (environment)");
        } else {
            line("INFO", "UCX_TLS", "not set: ^tcp, every transport UCX finds but its tcp wire (shared memory on one"
                + " host, RDMA verbs where there is a device; UCX's tcp wire checks no remote keys, so it is on only"
                + " with -Drdmastore.ucx.allowTcp=true or a UCX_TLS naming it)");
        }
        String signals = System.getenv("UCX_ERROR_SIGNALS");
        if (signals != null && signals.isEmpty()) {
            line("PASS", "UCX signals", "UCX_ERROR_SIGNALS=\"\": UCX leaves the JVM's signal handlers alone");
        } else {
            line("WARN", "UCX signals", "UCX_ERROR_SIGNALS is " + (signals == null ? "not set" : "\"" + signals + "\"")
                + ": UCX may take signals the JVM uses; export UCX_ERROR_SIGNALS=\"\" (bin/rdmastore does)");
        }
    }

    private static List<String> rdmaDevices() {
        Path dir = Path.of("/sys/class/infiniband");
        List<String> devices = new ArrayList<>();
        if (Files.isDirectory(dir)) {
            try (Stream<Path> s = Files.list(dir)) {
                s.map(p -> p.getFileName().toString()).sorted().forEach(devices::add);
            } catch (IOException e) {
                // unreadable sysfs counts as no devices; the line says so
            }
        }
        return devices;
    }

    private void devices(List<String> devices) {
        if (devices.isEmpty()) {
            line("WARN", "rdma devices", "none: UCX will use shared memory on one host and tcp across hosts");
            return;
        }
        List<String> described = new ArrayList<>();
        for (String d : devices) {
            String state = "";
            try {
                Path ports = Path.of("/sys/class/infiniband", d, "ports");
                try (Stream<Path> s = Files.list(ports)) {
                    for (Path p : s.sorted().toList()) {
                        state += " port " + p.getFileName() + " " + Files.readString(p.resolve("state")).trim()
                            + (Files.exists(p.resolve("link_layer")) ? " " + Files.readString(p.resolve("link_layer"))
                            .trim() : "");
                    }
                }
            } catch (IOException | RuntimeException e) {
                state = " (ports unreadable)";
            }
            described.add(d + state);
        }
        line("PASS", "rdma devices", String.join("; ", described));
    }

    private void memlock(boolean rdma) {
        String value = null;
        try {
            for (String l : Files.readAllLines(Path.of("/proc/self/limits"))) {
                if (l.startsWith("Max locked memory")) {
                    String[] f = l.substring("Max locked memory".length()).trim().split("\\s+");
                    value = f[0];
                    break;
                }
            }
        } catch (IOException e) {
            line("INFO", "memlock", "cannot read /proc/self/limits: " + e.getMessage());
            return;
        }
        if (value == null) {
            line("INFO", "memlock", "no 'Max locked memory' line in /proc/self/limits");
            return;
        }
        String shown = value.equals("unlimited") ? "unlimited" : human(Long.parseLong(value));
        boolean enough = value.equals("unlimited") || Long.parseLong(value) >= (1L << 30);
        if (enough || !rdma) {
            line("PASS", "memlock", shown + " (ulimit -l)" + (rdma ? "" : "; only RDMA devices pin memory, and there"
                + " are none"));
        } else {
            line("WARN", "memlock", shown + " (ulimit -l): RDMA registration pins memory; raise it (ulimit -l"
                + " unlimited, or memlock in /etc/security/limits.conf) or registrations will fail");
        }
    }

    private static String human(long bytes) {
        if (bytes >= (1L << 30) && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + " GiB";
        }
        if (bytes >= (1L << 20) && bytes % (1L << 20) == 0) {
            return (bytes >> 20) + " MiB";
        }
        if (bytes >= (1L << 10) && bytes % (1L << 10) == 0) {
            return (bytes >> 10) + " KiB";
        }
        return bytes + " bytes";
    }

    private void server() {
        int colon = server.lastIndexOf(':');
        String host = colon > 0 ? server.substring(0, colon) : server;
        int port;
        try {
            port = colon > 0 ? Integer.parseInt(server.substring(colon + 1)) : ClientConfig.DEFAULT_PORT;
        } catch (NumberFormatException e) {
            throw new UserException("--server must be HOST:PORT: '" + server + "'");
        }
        String pw = password != null ? password : System.getenv(ServerCommand.PASSWORD_ENV);
        ClientConfig cfg;
        try {
            cfg = new ClientConfig(host, port, "auto", pw == null || pw.isEmpty() ? null : pw, Duration.ofSeconds(5));
        } catch (IllegalArgumentException e) {
            throw new UserException("--server: " + e.getMessage());
        }
        try (RdmaStoreClient c = RdmaStoreClient.connect(cfg)) {
            String t = c.transport();
            String reason = c.transportReason();
            line(t.equals("tcp") ? "WARN" : "PASS", "server", host + ":" + port + " answers " + c.ping()
                + "; a connection from here uses " + t + ": " + reason);
        } catch (RdmaStoreException e) {
            line("FAIL", "server", "cannot connect to " + host + ":" + port + ": " + e.getMessage());
        }
    }

    /** The output of an external tool, or why it could not run. */
    record Tool(boolean ok, String output) {
    }

    private static Tool run(String... command) {
        Path output = null;
        try {
            // Output goes to a file, so a tool that hangs with its pipe open cannot outlast the time limit.
            output = Files.createTempFile("rdmastore-doctor", ".out");
            Process p = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .redirectOutput(output.toFile()).start();
            if (!p.waitFor(TOOL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                return new Tool(false, command[0] + " did not finish in " + TOOL_TIMEOUT.toSeconds() + " s");
            }
            String text = Files.readString(output, StandardCharsets.UTF_8);
            return p.exitValue() == 0 ? new Tool(true, text) : new Tool(false, command[0] + " exited with "
                + p.exitValue());
        } catch (IOException e) {
            return new Tool(false, command[0] + " not found");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Tool(false, "interrupted");
        } finally {
            if (output != null) {
                try {
                    Files.deleteIfExists(output);
                } catch (IOException e) {
                    // a leftover temp file in /tmp is harmless
                }
            }
        }
    }
}
