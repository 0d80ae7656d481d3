package io.rdmastore.cli;

import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code rdmastore replica-set status}: asks every member of a set (ROLE and INFO) and prints one row per member --
 * role, term, oplog offset, lag behind the primary in records and time, the transport of its replication link and why,
 * the link's status. The members come from {@code --members}, or from the member at {@code --host}/{@code --port}
 * (its ROLE lists them all). Exit code 0 when a primary answered, 1 when none did. Threads: one call at a time.
 */
@Command(name = "status", versionProvider = Main.Version.class, sortOptions = false,
    description = {"Asks every member of a replica set and prints a table: member, address, role, term, offset"
        + " (oplog index), lag in records and ms, the transport of its link to the primary and why, link status.",
        "Exit code 0 when a primary answered, 1 when no primary was found."})
final class ReplicaSetStatusCommand implements Callable<Integer> {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Option(names = "--help", usageHelp = true, description = "Shows this help and exits (-h is the host).")
    boolean help;
    @Option(names = {"-V", "--version"}, versionHelp = true, description = "Prints version information and exits.")
    boolean version;
    @Option(names = {"-h", "--host"}, paramLabel = "HOST", defaultValue = "127.0.0.1",
        description = "Any member's host (default ${DEFAULT-VALUE}); it names the others.")
    String host;
    @Option(names = {"-p", "--port"}, paramLabel = "PORT", defaultValue = "7379",
        description = "That member's port (default ${DEFAULT-VALUE}).")
    int port;
    @Option(names = "--members", paramLabel = "LIST", description = "Ask exactly these members instead:"
        + " ID=HOST:PORT,... or HOST:PORT,... (the server's --members list works as is).")
    String members;
    @Option(names = {"-a", "--password"}, paramLabel = "PW", description = "The members' password (or set the"
        + " environment variable " + ServerCommand.PASSWORD_ENV + ").")
    String password;
    @Option(names = {"-t", "--transport"}, paramLabel = "T", defaultValue = "tcp",
        description = "How to reach the members: tcp (default) | auto | ucx.")
    String transport;
    @Option(names = "--timeout", paramLabel = "TIME", defaultValue = "2s",
        description = "Time-out of each question to a member (default ${DEFAULT-VALUE}); a member that does not answer"
            + " in time is shown as unreachable.")
    String timeout;
    @Option(names = "--json", description = "Print JSON instead of the table.")
    boolean json;

    @Override
    public Integer call() {
        Main.quietLogs();
        PrintWriter out = spec.commandLine().getOut();
        String pw = password != null ? password : System.getenv(ServerCommand.PASSWORD_ENV);
        try (ReplicaSetProbe probe = new ReplicaSetProbe(Values.oneOf("--transport", transport, "tcp", "auto", "ucx"),
            pw == null || pw.isEmpty() ? null : pw, Values.duration("--timeout", timeout))) {
            Map<String, String> targets = members != null ? parseMembers(members)
                : probe.discover(host + ":" + port);
            ReplicaSetProbe.Status s = probe.status(targets);
            if (json) {
                out.println(ReplicaSetProbe.json(s));
            } else {
                ReplicaSetProbe.printTable(s, out);
            }
            out.flush();
            if (s.primary() == null) {
                spec.commandLine().getErr().println("rdmastore replica-set status: no primary found among "
                    + targets.values() + " (an election takes under a second once a majority of members is up)");
                spec.commandLine().getErr().flush();
                return 1;
            }
            return 0;
        }
    }

    /**
     * {@code ID=HOST:PORT,...} or {@code HOST:PORT,...} (ids then come from each member's ROLE) to id (or "" when not
     * given) and address, in order.
     */
    static Map<String, String> parseMembers(String list) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String item : list.split(",")) {
            String t = item.trim();
            if (t.isEmpty()) {
                continue;
            }
            int eq = t.indexOf('=');
            String id = eq > 0 ? t.substring(0, eq) : "";
            String address = t.substring(eq + 1);
            int colon = address.lastIndexOf(':');
            if (colon <= 0 || colon == address.length() - 1 || !address.substring(colon + 1).matches("\\d{1,5}")) {
                throw new UserException("--members: '" + t + "' is not ID=HOST:PORT or HOST:PORT");
            }
            // an address given without an id gets a placeholder key; the member's ROLE fills in its id
            m.put(id.isEmpty() ? "?" + m.size() : id, address);
        }
        if (m.isEmpty()) {
            throw new UserException("--members lists no member");
        }
        return m;
    }
}
