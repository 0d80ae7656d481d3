package io.rdmastore.store;

import java.nio.file.Path;

/**
 * The log or a snapshot holds a damaged record that is not a torn tail (valid records follow it), so recovery stopped
 * rather than lose data silently. The message names the file and the offset and says how to repair.
 * Immutable; any thread.
 */
public final class CorruptLogException extends StoreException {
    private static final long serialVersionUID = 1L;
    private final transient Path file;
    private final long offset;

    /** A corrupt record at {@code offset} of {@code file}; {@code detail} says what was wrong with it. */
    public CorruptLogException(Path file, long offset, String detail) {
        super("corrupt record in " + file + " at offset " + offset + " (" + detail + "); valid records follow it,"
                + " so it is not a torn tail. Run `rdmastore check-log --repair " + file.getParent()
                + "` to truncate the file at that offset (the original is backed up first)");
        this.file = file;
        this.offset = offset;
    }

    /** The damaged file. */
    public Path file() {
        return file;
    }

    /** Byte offset of the first damaged record in {@link #file()}. */
    public long offset() {
        return offset;
    }
}
