package io.rdmastore.store;

import java.nio.file.Path;
import java.util.List;

/**
 * What {@link LogChecker#check(Path)} or {@link LogChecker#repair(Path)} found in a data directory. Immutable; any
 * thread.
 *
 * @param dataDir the directory checked
 * @param files   one entry per log segment and snapshot, oldest first
 */
public record LogCheckReport(Path dataDir, List<FileReport> files) {

    /** True when no file has a damaged record. */
    public boolean clean() {
        return files.stream().allMatch(f -> f.firstBadOffset() < 0);
    }

    /**
     * The state of one file.
     *
     * @param file           the file
     * @param fileBytes      its size when checked
     * @param records        valid records before the first bad one
     * @param firstBadOffset offset of the first damaged record, -1 if none
     * @param tornTail       true when the damage is only at the end (no valid record after it)
     * @param problem        what was wrong, or null
     * @param backup         where {@code repair} copied the file before truncating it, or null
     * @param bytesCut       bytes {@code repair} cut, 0 for {@code check}
     */
    public record FileReport(Path file, long fileBytes, long records, long firstBadOffset, boolean tornTail,
                             String problem, Path backup, long bytesCut) {
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder();
        for (FileReport f : files) {
            sb.append(f.file().getFileName()).append(": ").append(f.records()).append(" records, ")
                    .append(f.fileBytes()).append(" bytes");
            if (f.firstBadOffset() >= 0) {
                sb.append(", ").append(f.tornTail() ? "torn tail" : "CORRUPT").append(" at offset ")
                        .append(f.firstBadOffset()).append(" (").append(f.problem()).append(')');
            }
            if (f.backup() != null) {
                sb.append(", cut ").append(f.bytesCut()).append(" bytes, original saved as ")
                        .append(f.backup().getFileName());
            }
            sb.append('\n');
        }
        sb.append(clean() ? "OK" : "DAMAGED");
        return sb.toString();
    }
}
