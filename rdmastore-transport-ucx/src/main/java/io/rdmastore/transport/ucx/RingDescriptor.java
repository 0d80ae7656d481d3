package io.rdmastore.transport.ucx;

/**
 * Byte layout of the message ring (papers 001 and 003).
 *
 * <p>A ring is a power-of-two array of bytes in registered memory, zeroed, owned by the receiver. The sender writes each
 * frame with one put at its tail; frames start on 64-byte cache lines and never wrap:
 * <pre>
 *   0  int   payload length
 *   4  int   flags        PRESENT, plus FIRST | LAST | PAD; never 0 in a written frame
 *   8  long  ack          the sender's consumed position of the reverse ring (piggy-backed credit)
 *  16  ...   payload      length bytes, then padding (any bytes, covered by the CRC) up to the footer
 *   F  int   sequence     frame number in this direction, starting at 1, never 0; F = frame length - 8
 * F+4  int   crc          CRC32C of header, payload and sequence
 * </pre>
 * A put is not guaranteed to land in byte order on every UCX wire (cma copies with process_vm_writev), so a frame counts
 * only when its footer carries the expected sequence and a CRC matching the bytes in front of it: a torn frame is never
 * consumed. The receiver zeroes each frame's header word and footer after consuming it (the whole frame with flush
 * footers), so a stale frame at the head never carries the expected sequence. When fewer than {@link #MIN_FRAME} bytes remain before
 * the end of the ring both sides skip to its start; otherwise a PAD frame (no payload) tells the receiver to.
 *
 * <p>Credits: the receiver returns its consumed position in the {@code ack} word of its own frames and, when it has no
 * frame to send, with a small put into the sender's credit word: {@code int position, int ~position} (low 32 bits of the
 * position), so a torn credit is recognised and ignored.
 */
final class RingDescriptor {
    static final int HEADER = 16;
    static final int FOOTER = 8;
    /** Frames start on cache lines, so a 64-byte message touches two lines, not three. */
    static final int ALIGN = 64;
    static final int MIN_FRAME = ALIGN;

    static final int LENGTH_OFFSET = 0;
    static final int FLAGS_OFFSET = 4;
    static final int ACK_OFFSET = 8;

    static final int FIRST = 1;
    static final int LAST = 2;
    static final int PAD = 4;
    /** Set in every frame, so a middle fragment (neither FIRST nor LAST) is never mistaken for empty memory. */
    static final int PRESENT = 8;
    static final int WHOLE = FIRST | LAST;

    /** Bytes per connection for the credit word area (cache-line padded). */
    static final int CREDIT_AREA = 64;

    private RingDescriptor() {
    }

    static int align(int n) {
        return (n + ALIGN - 1) & ~(ALIGN - 1);
    }

    /** Total bytes a frame with {@code payload} bytes occupies. */
    static int frameLength(int payload) {
        return align(HEADER + payload + FOOTER);
    }
}
