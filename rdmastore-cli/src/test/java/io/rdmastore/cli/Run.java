package io.rdmastore.cli;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import picocli.CommandLine;

/** Runs the launcher in this JVM with captured output, as a user would see it. Test helper; one thread per instance. */
record Run(int exitCode, String out, String err) {
    static Run of(String... args) {
        return withStdin("", false, args);
    }

    static Run withStdin(String stdin, boolean terminal, String... args) {
        InputStream in = new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8));
        CommandLine cl = Main.commandLine(in, terminal);
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int code = cl.execute(args);
        return new Run(code, out.toString(), err.toString());
    }

    @Override
    public String toString() {
        return "exit " + exitCode + "\n--- out ---\n" + out + "--- err ---\n" + err;
    }
}
