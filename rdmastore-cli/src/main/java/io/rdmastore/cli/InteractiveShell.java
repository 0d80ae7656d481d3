package io.rdmastore.cli;

import io.rdmastore.client.ClientConfig;
import io.rdmastore.client.RdmaStoreClient;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import org.jline.reader.Candidate;
import org.jline.reader.Completer;
import org.jline.reader.EndOfFileException;
import org.jline.reader.LineReader;
import org.jline.reader.LineReaderBuilder;
import org.jline.reader.UserInterruptException;
import org.jline.terminal.Terminal;
import org.jline.terminal.TerminalBuilder;

/**
 * The interactive shell on JLine 3: line editing, history in {@code ~/.rdmastore_history}, tab completion of command
 * names (and of {@code doc} forms and {@code help} topics). Ctrl-C clears the line, Ctrl-D or {@code quit} leaves.
 *
 * <p>Threads: runs on the calling thread until the user leaves. Owns its terminal and session and closes both.
 */
final class InteractiveShell {
    /** The history file, in the user's home like redis-cli's {@code ~/.rediscli_history}. */
    static final String HISTORY_FILE = ".rdmastore_history";
    private static final List<String> DOC_FORMS = List.of("insert", "find", "update", "delete", "count");

    private final ClientConfig config;
    private final boolean raw;

    InteractiveShell(ClientConfig config, boolean raw) {
        this.config = config;
        this.raw = raw;
    }

    int run() throws IOException {
        try (Terminal terminal = TerminalBuilder.builder().system(true).name("rdmastore").build()) {
            PrintWriter out = terminal.writer();
            LineReader reader = LineReaderBuilder.builder().terminal(terminal).appName("rdmastore")
                .completer(completer())
                .variable(LineReader.HISTORY_FILE, Path.of(System.getProperty("user.home"), HISTORY_FILE))
                .variable(LineReader.HISTORY_SIZE, 1000)
                // JSON and values may hold '!' and '\'; the shell's own tokenizer reads them, not JLine's.
                .option(LineReader.Option.DISABLE_EVENT_EXPANSION, true)
                .build();
            try (ShellSession session = new ShellSession(() -> CliCommand.connect(config), out, raw)) {
                String where = config.host() + ":" + config.port();
                try {
                    RdmaStoreClient c = session.client();
                    out.println("connected to " + where + " over " + c.transport() + ": " + c.transportReason());
                } catch (UserException | io.rdmastore.client.RdmaStoreException e) {
                    out.println("(error) " + e.getMessage());
                }
                out.println("type 'help' for commands, 'quit' to leave");
                out.flush();
                while (true) {
                    String line;
                    try {
                        line = reader.readLine(session.connected() ? where + "> " : "not connected> ");
                    } catch (UserInterruptException e) {
                        continue;
                    } catch (EndOfFileException e) {
                        return 0;
                    }
                    if (session.runLine(line) == ShellSession.Outcome.QUIT) {
                        return 0;
                    }
                }
            } finally {
                reader.getHistory().save();
            }
        }
    }

    private static Completer completer() {
        List<String> names = ShellSession.commandNames();
        return (reader, line, candidates) -> {
            List<String> choices = List.of();
            if (line.wordIndex() == 0) {
                choices = names;
            } else if (line.wordIndex() == 1) {
                String first = line.words().get(0).toLowerCase(Locale.ROOT);
                if (first.equals("help")) {
                    choices = names;
                } else if (first.equals("doc")) {
                    choices = DOC_FORMS;
                }
            }
            for (String c : choices) {
                candidates.add(new Candidate(c));
            }
        };
    }
}
