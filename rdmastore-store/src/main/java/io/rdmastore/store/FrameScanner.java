package io.rdmastore.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;

/**
 * Reads the frames of one segment or snapshot file in order and finds the first damaged one, telling a torn tail
 * (nothing valid after it) from a corrupt middle (a valid frame follows somewhere). Used by recovery and by
 * {@link LogChecker}. One instance per call; single thread.
 *
 * <p>A segment in the current format ({@link LogDescriptor#SEGMENT_MAGIC}) may be a reused file whose bytes past its
 * own frames are a former segment's (docs/store.md, "Reused segment files"): its frames end at the first one that is
 * damaged or whose oplog position does not rise past the one before it, and that end is clean unless a frame with a
 * higher position follows somewhere after it (then the middle is corrupt). A segment of the first format
 * ({@link LogDescriptor#SEGMENT_MAGIC_V1}) is never reused and is read to its size.
 */
final class FrameScanner {

    /** Receives each valid frame's payload; the buffer is valid only during the call. */
    interface FrameConsumer {
        void accept(ByteBuffer payload, long offset) throws IOException;
    }

    /**
     * The result of a scan.
     *
     * @param fileBytes  file size
     * @param frames     valid frames before the first bad one
     * @param validEnd   offset just past the last valid frame (the file size when clean, except in a reused segment,
     *                   whose former bytes follow)
     * @param badOffset  offset of the first bad frame or bad header, -1 when clean
     * @param tornTail   the damage has no valid frame after it
     * @param problem    what was wrong, null when clean
     * @param lastOp     op code of the first op of the last valid frame, -1 if none
     * @param lastIndex  oplog index of the last valid frame that ends with a position, else the index scanned after
     */
    record Outcome(long fileBytes, long frames, long validEnd, long badOffset, boolean tornTail, String problem,
                   int lastOp, long lastIndex) {
        boolean clean() {
            return badOffset < 0;
        }
    }

    private FrameScanner() {
    }

    /**
     * Scans a file of the kind {@code magic} names. A segment in the current format is read as one whose frames follow
     * index 0 ({@link #scanSegment} with the index its frames must rise past).
     */
    static Outcome scan(Path file, byte[] magic, FrameConsumer consumer) throws IOException {
        return scan(file, magic, 0, consumer);
    }

    /**
     * Scans a log segment of either format that follows oplog index {@code afterIndex} (the last index of the segment
     * before it, or the position of the snapshot it follows; 0 when unknown). In the current format its frames must
     * rise past it, which is what tells a reused file's former frames from its own, and when it is known the first
     * frame must be the next index: a segment that starts further on reports the records between as missing.
     */
    static Outcome scanSegment(Path file, long afterIndex, FrameConsumer consumer) throws IOException {
        return scan(file, LogDescriptor.SEGMENT_MAGIC, afterIndex, consumer);
    }

    private static Outcome scan(Path file, byte[] magic, long afterIndex, FrameConsumer consumer) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size < LogDescriptor.MAGIC_LENGTH) {
                return new Outcome(size, 0, 0, 0, true, "file shorter than its header", -1, afterIndex);
            }
            ByteBuffer header = ByteBuffer.allocate(LogDescriptor.HEADER_LENGTH).order(LogDescriptor.ORDER);
            readFully(ch, header, 0);
            boolean segment = Arrays.equals(magic, LogDescriptor.SEGMENT_MAGIC);
            // a current-format segment's frames must rise; one of the first format (never reused) is read to its size
            boolean rising = segment && matches(header.array(), LogDescriptor.SEGMENT_MAGIC);
            if (!rising && !matches(header.array(), magic)
                    && !(segment && matches(header.array(), LogDescriptor.SEGMENT_MAGIC_V1))) {
                return new Outcome(size, 0, 0, 0, false, "bad magic (not an rdmastore file of this kind)", -1,
                    afterIndex);
            }
            long pos = LogDescriptor.MAGIC_LENGTH;
            long frames = 0;
            int lastOp = -1;
            long lastIndex = afterIndex;
            byte[] payload = new byte[4096];
            while (pos < size) {
                String problem = null;
                int len = 0;
                long index = Long.MIN_VALUE;
                if (size - pos < LogDescriptor.HEADER_LENGTH) {
                    problem = "incomplete frame header";
                } else {
                    header.clear();
                    readFully(ch, header, pos);
                    len = header.getInt(0);
                    int crc = header.getInt(4);
                    if (len < 1 || len > LogDescriptor.MAX_PAYLOAD) {
                        problem = "bad frame length " + len;
                    } else if (pos + LogDescriptor.HEADER_LENGTH + len > size) {
                        problem = "incomplete frame (length " + len + ", " + (size - pos - 8) + " bytes present)";
                    } else {
                        if (payload.length < len) {
                            payload = new byte[Math.max(len, Math.min(payload.length * 2, LogDescriptor.MAX_PAYLOAD))];
                        }
                        ByteBuffer pb = ByteBuffer.wrap(payload, 0, len);
                        readFully(ch, pb, pos + LogDescriptor.HEADER_LENGTH);
                        if (LogDescriptor.crc(len, payload, 0, len) != crc) {
                            problem = "CRC mismatch";
                        } else if (payload[0] < 1 || payload[0] > LogDescriptor.OP_MAX) {
                            problem = "unknown op code " + payload[0];
                        } else {
                            index = positionIndex(pb, 0, len);
                        }
                        if (problem == null && rising) {
                            if (index <= lastIndex) {
                                problem = "oplog position does not rise past " + lastIndex;
                            } else if (frames == 0 && afterIndex > 0 && index != afterIndex + 1) {
                                // the segment before it lost its last records (or this one its first)
                                return new Outcome(size, 0, pos, pos, false, "the segment's first record is at index "
                                    + index + ", not " + (afterIndex + 1) + ": records are missing", lastOp,
                                    lastIndex);
                            }
                        }
                    }
                }
                if (problem != null) {
                    if (rising) {
                        // a reused file's former frames, or a torn last frame, unless a higher position follows
                        return validFrameAfter(ch, pos + 1, size, lastIndex)
                            ? new Outcome(size, frames, pos, pos, false, problem, lastOp, lastIndex)
                            : new Outcome(size, frames, pos, -1, false, null, lastOp, lastIndex);
                    }
                    boolean torn = !validFrameAfter(ch, pos + 1, size, Long.MIN_VALUE);
                    return new Outcome(size, frames, pos, pos, torn, problem, lastOp, lastIndex);
                }
                if (consumer != null) {
                    consumer.accept(ByteBuffer.wrap(payload, 0, len).slice().order(LogDescriptor.ORDER), pos);
                }
                if (index != Long.MIN_VALUE) {
                    lastIndex = index;
                }
                lastOp = payload[0];
                frames++;
                pos += LogDescriptor.HEADER_LENGTH + len;
                if (payload.length > 16 * 1024 * 1024) {
                    payload = new byte[4096];
                }
            }
            return new Outcome(size, frames, size, -1, false, null, lastOp, lastIndex);
        }
    }

    private static boolean matches(byte[] header, byte[] magic) {
        return Arrays.equals(header, 0, LogDescriptor.MAGIC_LENGTH, magic, 0, magic.length);
    }

    /**
     * The oplog index of a frame's payload at {@code [at, at + len)} when it ends with a position op (as every log
     * frame does), else {@link Long#MIN_VALUE}.
     */
    private static long positionIndex(ByteBuffer b, int at, int len) {
        int op = at + len - LogDescriptor.POSITION_OP_LENGTH;
        if (len < LogDescriptor.POSITION_OP_LENGTH || b.get(op) != LogDescriptor.OP_POSITION) {
            return Long.MIN_VALUE;
        }
        return b.order(LogDescriptor.ORDER).getLong(op + 9);
    }

    /**
     * Whether any offset in [from, size) starts a frame whose CRC checks and whose oplog index is above
     * {@code afterIndex} ({@link Long#MIN_VALUE}: any frame): then the damage is not the end.
     */
    private static boolean validFrameAfter(FileChannel ch, long from, long size, long afterIndex) throws IOException {
        if (size - from < LogDescriptor.HEADER_LENGTH + 1) {
            return false;
        }
        long window = Math.min(size - from, Integer.MAX_VALUE - 8L);
        MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_ONLY, from, window);
        m.order(LogDescriptor.ORDER);
        int limit = (int) window;
        byte[] tmp = new byte[0];
        for (int off = 0; off + LogDescriptor.HEADER_LENGTH < limit; off++) {
            int len = m.getInt(off);
            if (len < 1 || (long) off + LogDescriptor.HEADER_LENGTH + len > limit) {
                continue;
            }
            byte op = m.get(off + LogDescriptor.HEADER_LENGTH);
            if (op < 1 || op > LogDescriptor.OP_MAX) {
                continue;
            }
            if (afterIndex != Long.MIN_VALUE
                    && positionIndex(m, off + LogDescriptor.HEADER_LENGTH, len) <= afterIndex) {
                continue;
            }
            if (tmp.length < len) {
                tmp = new byte[len];
            }
            m.get(off + LogDescriptor.HEADER_LENGTH, tmp, 0, len);
            if (LogDescriptor.crc(len, tmp, 0, len) == m.getInt(off + 4)) {
                return true;
            }
        }
        return false;
    }

    static void readFully(FileChannel ch, ByteBuffer b, long position) throws IOException {
        long p = position;
        while (b.hasRemaining()) {
            int n = ch.read(b, p);
            if (n < 0) {
                throw new IOException("unexpected end of file");
            }
            p += n;
        }
    }
}
