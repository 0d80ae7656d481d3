package io.rdmastore.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Offline check and repair of a data directory for the CLI's {@code check-log} command. Must not run while a
 * {@link Store} has the directory open (repair refuses when it can take the directory lock). Stateless; any thread.
 */
public final class LogChecker {
    private LogChecker() {
    }

    /** Reads every segment and snapshot and reports the first damaged record of each; changes nothing. */
    public static LogCheckReport check(Path dataDir) {
        return run(dataDir, false);
    }

    /**
     * Like {@link #check}, then truncates every damaged file at its first bad record, after copying the original
     * to {@code <file>.bak-<epochMillis>}. Records after the damage in that file are lost (they are in the backup);
     * later files are kept. A damaged snapshot is cut the same way and given a new end record, so recovery loads
     * what is left of it and replays the log after it.
     */
    public static LogCheckReport repair(Path dataDir) {
        if (Store.OPEN_DIRS.contains(dataDir.toAbsolutePath().normalize())) {
            throw new StoreException("data directory " + dataDir + " is in use by a running store; stop it first");
        }
        try (FileChannel lock = FileChannel.open(dataDir.resolve("LOCK"), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE)) {
            var held = lock.tryLock();
            if (held == null) {
                throw new StoreException("data directory " + dataDir + " is in use by a running store; stop it first");
            }
            try {
                return run(dataDir, true);
            } finally {
                held.release();
            }
        } catch (IOException e) {
            throw new StoreException("cannot repair " + dataDir + ": " + e.getMessage(), e);
        }
    }

    private static LogCheckReport run(Path dataDir, boolean repair) {
        if (!Files.isDirectory(dataDir)) {
            throw new StoreException("not a directory: " + dataDir);
        }
        List<LogCheckReport.FileReport> reports = new ArrayList<>();
        try {
            List<Path> files;
            try (Stream<Path> s = Files.list(dataDir)) {
                files = s.filter(p -> LogDescriptor.segmentId(p) >= 0 || LogDescriptor.snapshotId(p) >= 0)
                        .sorted(Comparator.comparing(p -> p.getFileName().toString())).toList();
            }
            long previousId = -1;
            long previousIndex = 0;
            for (Path p : files) {
                boolean snapshot = LogDescriptor.snapshotId(p) >= 0;
                FrameScanner.Outcome o;
                if (snapshot) {
                    o = FrameScanner.scan(p, LogDescriptor.SNAPSHOT_MAGIC, null);
                } else {
                    // a segment follows the one before it, or else the snapshot of its id: what tells a reused
                    // file's former frames from its own
                    long id = LogDescriptor.segmentId(p);
                    Path base = p.resolveSibling(LogDescriptor.snapshotName(id));
                    long after = id == previousId + 1 ? previousIndex
                            : Files.exists(base) ? Store.snapshotPosition(base)[1] : 0;
                    o = FrameScanner.scanSegment(p, after, null);
                    previousId = id;
                    previousIndex = o.lastIndex();
                }
                String problem = o.problem();
                long bad = o.badOffset();
                if (snapshot && o.clean() && o.lastOp() != LogDescriptor.OP_SNAPSHOT_END) {
                    problem = "snapshot has no end record";
                    bad = o.validEnd();
                }
                Path backup = null;
                long cut = 0;
                if (repair && bad >= 0) {
                    backup = p.resolveSibling(p.getFileName() + ".bak-" + System.currentTimeMillis());
                    Files.copy(p, backup, StandardCopyOption.COPY_ATTRIBUTES);
                    try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
                        long keep = Math.max(bad, 0);
                        byte[] magic = snapshot ? LogDescriptor.SNAPSHOT_MAGIC : LogDescriptor.SEGMENT_MAGIC;
                        ch.truncate(keep);
                        if (keep < LogDescriptor.MAGIC_LENGTH) {
                            ch.truncate(0);
                            LogWriter.writeFully(ch, ByteBuffer.wrap(magic), 0);
                            keep = LogDescriptor.MAGIC_LENGTH;
                        }
                        cut = o.fileBytes() - keep;
                        if (snapshot) {
                            // A shortened snapshot is still a snapshot: close it so recovery accepts it and
                            // replays the later log on top.
                            ByteBuffer end = new FrameBuilder().op(LogDescriptor.OP_SNAPSHOT_END)
                                    .putLong(o.frames()).seal();
                            LogWriter.writeFully(ch, end, keep);
                        }
                        ch.force(true);
                    }
                    LogWriter.syncDirectory(dataDir);
                }
                reports.add(new LogCheckReport.FileReport(p, o.fileBytes(), o.frames(), bad,
                        bad >= 0 && o.tornTail(), problem, backup, cut));
            }
        } catch (IOException e) {
            throw new StoreException("cannot check " + dataDir + ": " + e.getMessage(), e);
        }
        return new LogCheckReport(dataDir, List.copyOf(reports));
    }
}
