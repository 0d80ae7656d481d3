package io.rdmastore.cli;

import io.rdmastore.client.ClientConfig;
import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreConnectionException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code rdmastore cli}: talks to a server. With a command on the command line it runs that one command (one-shot);
 * with standard input from a pipe or file it runs one command per line; at a terminal it opens an interactive shell
 * (history, completion). Exit code 0 when every command succeeded, 1 otherwise.
 *
 * <p>Threads: one call at a time. The command owns the client it opens and closes it before returning.
 */
@Command(name = "cli", versionProvider = Main.Version.class, sortOptions = false,
    description = {"Runs commands against a server: one-shot (rdmastore cli set k v), piped (one command per line on"
        + " stdin) or an interactive shell.",
        "Commands: ping get set del exists expire ttl incr incrby hset hget hgetall hdel mget mset doc info snapshot"
        + " transport help quit. Type 'help' in the shell for their forms."})
final class CliCommand implements Callable<Integer> {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Option(names = "--help", usageHelp = true, description = "Shows this help and exits (-h is the host).")
    boolean help;
    @Option(names = {"-V", "--version"}, versionHelp = true, description = "Prints version information and exits.")
    boolean version;
    @picocli.CommandLine.Mixin
    ServerOptions server;
    @Option(names = {"-u", "--uri"}, paramLabel = "URI", description = "rdmastore://host:port?transport=..&password=..;"
        + " replaces host, port, transport and password.")
    String uri;
    @Option(names = "--timeout", paramLabel = "TIME", defaultValue = "5s",
        description = "Time-out of connecting and of each command (default ${DEFAULT-VALUE}).")
    String timeout;
    @Option(names = "--raw", negatable = true, description = "Print bare values (default when not at a terminal)"
        + " instead of redis-cli style \"quoted\" values and (integer) n.")
    Boolean raw;
    @Parameters(paramLabel = "COMMAND", arity = "0..*", description = "A command and its arguments; none: read"
        + " commands from stdin (a shell at a terminal).")
    List<String> words = new ArrayList<>();

    private final InputStream stdin;
    private final boolean stdinIsTerminal;

    CliCommand(InputStream stdin, boolean stdinIsTerminal) {
        this.stdin = stdin;
        this.stdinIsTerminal = stdinIsTerminal;
    }

    @Override
    public Integer call() throws IOException {
        Main.quietLogs();
        PrintWriter out = spec.commandLine().getOut();
        ClientConfig config = clientConfig();
        boolean interactive = words.isEmpty() && stdinIsTerminal;
        boolean rawOutput = raw != null ? raw : !interactive;
        if (interactive) {
            return new InteractiveShell(config, rawOutput).run();
        }
        try (ShellSession session = new ShellSession(() -> connect(config), out, rawOutput)) {
            if (!words.isEmpty()) {
                return session.run(words) == ShellSession.Outcome.ERROR ? 1 : 0;
            }
            return piped(session);
        }
    }

    private int piped(ShellSession session) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(stdin, StandardCharsets.UTF_8));
        boolean failed = false;
        String line;
        while ((line = in.readLine()) != null) {
            String t = line.strip();
            if (t.isEmpty() || t.startsWith("#")) {
                continue;
            }
            ShellSession.Outcome o = session.runLine(t);
            if (o == ShellSession.Outcome.QUIT) {
                break;
            }
            failed |= o == ShellSession.Outcome.ERROR;
        }
        return failed ? 1 : 0;
    }

    ClientConfig clientConfig() {
        try {
            if (uri != null) {
                ClientConfig u = ClientConfig.parse(uri);
                return new ClientConfig(u.host(), u.port(), u.transport(),
                    u.password() != null ? u.password() : server.password(), u.timeout(), u.seeds(), u.replicaSet(),
                    u.writeConcern(), u.readPreference(), u.readConcern(), u.tls(), u.tlsTrust());
            }
            return server.config(Values.duration("--timeout", timeout));
        } catch (IllegalArgumentException e) {
            throw new UserException(e.getMessage(), e);
        }
    }

    static RdmaStoreClient connect(ClientConfig config) {
        try {
            return RdmaStoreClient.connect(config);
        } catch (RdmaStoreConnectionException e) {
            throw new UserException("cannot connect to " + config.host() + ":" + config.port() + " (transport "
                + config.transport() + "): " + e.getMessage() + (e.getMessage() != null
                && e.getMessage().contains("refused") ? " -- is a server running? start one with 'rdmastore server'"
                : ""), e);
        }
    }
}
