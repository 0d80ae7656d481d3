package io.rdmastore.cli;

import io.rdmastore.store.LogCheckReport;
import io.rdmastore.store.LogChecker;
import io.rdmastore.store.StoreException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code rdmastore check-log <data dir> [--repair]}: the store's offline {@link LogChecker}. Exit codes: 0 clean, 1
 * damaged and not repaired, 2 repaired, 3 the directory could not be checked. Threads: one call at a time.
 */
@Command(name = "check-log", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
    description = {"Checks every log segment and snapshot of a data directory (server stopped) and reports the first"
        + " damaged record of each.",
        "With --repair, cuts each damaged file at its first bad record after saving the original as"
        + " <file>.bak-<time>."},
    exitCodeListHeading = "Exit codes:%n",
    exitCodeList = {"0:clean", "1:damaged, not repaired", "2:repaired", "3:could not check (not a directory,"
        + " in use, I/O error)"})
final class CheckLogCommand implements Callable<Integer> {
    static final int CLEAN = 0;
    static final int DAMAGED = 1;
    static final int REPAIRED = 2;
    static final int CANNOT_CHECK = 3;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Parameters(index = "0", paramLabel = "DATA_DIR", description = "The server's data directory.")
    Path dataDir;
    @Option(names = "--repair", description = "Cut damaged files at their first bad record (originals kept).")
    boolean repair;

    @Override
    public Integer call() {
        Main.quietLogs();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        LogCheckReport report;
        try {
            report = repair ? LogChecker.repair(dataDir) : LogChecker.check(dataDir);
        } catch (StoreException e) {
            err.println("rdmastore check-log: " + e.getMessage());
            err.flush();
            return CANNOT_CHECK;
        }
        out.println("data dir " + dataDir.toAbsolutePath() + ": " + report.files().size() + " file"
            + (report.files().size() == 1 ? "" : "s"));
        out.println(report);
        int code;
        if (report.clean()) {
            out.println("clean: nothing to do");
            code = CLEAN;
        } else if (repair) {
            out.println("repaired: damaged files were cut at their first bad record; the originals are kept beside"
                + " them. Records after the damage in those files are lost from the store (they are in the backups).");
            code = REPAIRED;
        } else {
            boolean onlyTorn = report.files().stream().allMatch(f -> f.firstBadOffset() < 0 || f.tornTail());
            out.println(onlyTorn ? "damaged: a torn tail (an interrupted last write). The server cuts it at start-up;"
                + " or run 'rdmastore check-log " + dataDir + " --repair'."
                : "damaged: a corrupt record before the end; the server refuses to start so nothing is lost silently."
                + " Run 'rdmastore check-log " + dataDir + " --repair' to cut the damaged files (originals kept).");
            code = DAMAGED;
        }
        out.flush();
        return code;
    }
}
