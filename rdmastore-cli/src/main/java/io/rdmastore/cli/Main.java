package io.rdmastore.cli;

import io.rdmastore.server.RdmaStoreServer;
import java.io.InputStream;
import java.util.Locale;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The {@code rdmastore} launcher: {@code rdmastore <server|cli|doctor|check-log|demo|replica-set|bench> [options]}.
 *
 * <p>Threads: {@link #main} runs a command on the calling thread; {@link #commandLine} builds a fresh, unshared command
 * tree for each call (tests use it with captured writers). Output goes to the command line's {@code getOut()} and
 * {@code getErr()} writers; SLF4J lifecycle logs go to standard error.
 */
@Command(name = "rdmastore", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
    description = "rdmastore: a data store whose network paths run over RDMA, shared memory (UCX) or TCP.",
    subcommands = {ServerCommand.class, CliCommand.class, DoctorCommand.class, CheckLogCommand.class,
        DemoCommand.class, ReplicaSetCommand.class, ClusterCommand.class, BenchCommand.class, BlobFileCommand.Put.class,
        BlobFileCommand.Get.class, CommandLine.HelpCommand.class},
    footer = {"", "Run 'rdmastore <command> --help' for a command's options. Start with 'rdmastore demo', then"
        + " 'rdmastore replica-set demo'."})
public final class Main implements Runnable {
    /** System property of slf4j-simple's level; a value given with -D wins over the CLI's choice. */
    static final String LOG_LEVEL_PROPERTY = "org.slf4j.simpleLogger.defaultLogLevel";

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--log-level", paramLabel = "LEVEL",
        description = "Log level of lifecycle logs on stderr: error, warn, info, debug. Default: info for 'server',"
            + " warn for the other commands.")
    void logLevel(String level) {
        String l = level.toLowerCase(Locale.ROOT);
        if (!l.equals("error") && !l.equals("warn") && !l.equals("info") && !l.equals("debug")
            && !l.equals("trace") && !l.equals("off")) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                "--log-level must be error, warn, info, debug, trace or off: '" + level + "'");
        }
        System.setProperty(LOG_LEVEL_PROPERTY, l);
    }

    private Main() {
    }

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /**
     * Entry point of {@code bin/rdmastore}. Exit codes: 0 success, 1 failure, 2 usage error; {@code check-log} adds 2
     * for "repaired".
     */
    public static void main(String[] args) {
        System.exit(commandLine(System.in, Console.stdinIsTerminal()).execute(args));
    }

    /**
     * A fresh command tree.
     *
     * @param stdin the input of the {@code cli} command's piped mode and interactive shell
     * @param stdinIsTerminal whether {@code stdin} is a person at a terminal (interactive shell) or a pipe/file (one
     *     command per line)
     */
    public static CommandLine commandLine(InputStream stdin, boolean stdinIsTerminal) {
        CommandLine.IFactory defaults = CommandLine.defaultFactory();
        CommandLine cl = new CommandLine(new Main(), new CommandLine.IFactory() {
            @Override
            public <K> K create(Class<K> cls) throws Exception {
                if (cls == CliCommand.class) {
                    return cls.cast(new CliCommand(stdin, stdinIsTerminal));
                }
                return defaults.create(cls);
            }
        });
        cl.setCaseInsensitiveEnumValuesAllowed(true);
        // Values of the shell's commands may look like options (incrby k -5, doc delete c {} --many): everything
        // after the first positional belongs to the command, not to the parser.
        for (String passThrough : new String[] {"cli", "bench"}) {
            CommandLine sub = cl.getSubcommands().get(passThrough);
            sub.setStopAtPositional(true);
            sub.setUnmatchedOptionsArePositionalParams(passThrough.equals("bench"));
        }
        cl.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
            // User errors never show a stack trace; programming errors do, so they can be reported.
            if (e instanceof UserException || e instanceof IllegalArgumentException) {
                commandLine.getErr().println(commandLine.getCommandSpec().qualifiedName() + ": " + e.getMessage());
                commandLine.getErr().flush();
                return 1;
            }
            throw e;
        });
        return cl;
    }

    /** Sets the default log level of non-server commands to WARN unless the user chose one. */
    static void quietLogs() {
        if (System.getProperty(LOG_LEVEL_PROPERTY) == null) {
            System.setProperty(LOG_LEVEL_PROPERTY, "warn");
        }
    }

    /** {@code --version}: the tool, the server it embeds, and the JVM. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {"rdmastore " + RdmaStoreServer.VERSION,
                "Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ")"};
        }
    }

    /** Whether standard input is a terminal, so the {@code cli} command knows when to open a shell. */
    static final class Console {
        private Console() {
        }

        static boolean stdinIsTerminal() {
            java.io.Console c = System.console();
            return c != null && c.isTerminal();
        }
    }
}
