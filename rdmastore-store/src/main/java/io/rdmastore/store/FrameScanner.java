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
     * @param validEnd   offset just past the last valid frame (the file size when clean)
     * @param badOffset  offset of the first bad frame or bad header, -1 when clean
     * @param tornTail   the damage has no valid frame after it
     * @param problem    what was wrong, null when clean
     * @param lastOp     op code of the first op of the last valid frame, -1 if none
     */
    record Outcome(long fileBytes, long frames, long validEnd, long badOffset, boolean tornTail, String problem,
                   int lastOp) {
        boolean clean() {
            return badOffset < 0;
        }
    }

    private FrameScanner() {
    }

    static Outcome scan(Path file, byte[] magic, FrameConsumer consumer) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size < LogDescriptor.MAGIC_LENGTH) {
                return new Outcome(size, 0, 0, 0, true, "file shorter than its header", -1);
            }
            ByteBuffer header = ByteBuffer.allocate(LogDescriptor.HEADER_LENGTH).order(LogDescriptor.ORDER);
            readFully(ch, header, 0);
            if (!Arrays.equals(header.array(), 0, LogDescriptor.MAGIC_LENGTH, magic, 0, magic.length)) {
                return new Outcome(size, 0, 0, 0, false, "bad magic (not an rdmastore file of this kind)", -1);
            }
            long pos = LogDescriptor.MAGIC_LENGTH;
            long frames = 0;
            int lastOp = -1;
            byte[] payload = new byte[4096];
            while (pos < size) {
                String problem = null;
                int len = 0;
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
                        }
                    }
                }
                if (problem != null) {
                    boolean torn = !validFrameAfter(ch, pos + 1, size);
                    return new Outcome(size, frames, pos, pos, torn, problem, lastOp);
                }
                if (consumer != null) {
                    consumer.accept(ByteBuffer.wrap(payload, 0, len).slice().order(LogDescriptor.ORDER), pos);
                }
                lastOp = payload[0];
                frames++;
                pos += LogDescriptor.HEADER_LENGTH + len;
                if (payload.length > 16 * 1024 * 1024) {
                    payload = new byte[4096];
                }
            }
            return new Outcome(size, frames, size, -1, false, null, lastOp);
        }
    }

    /** Whether any offset in [from, size) starts a frame whose CRC checks: then the damage is not a torn tail. */
    private static boolean validFrameAfter(FileChannel ch, long from, long size) throws IOException {
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
