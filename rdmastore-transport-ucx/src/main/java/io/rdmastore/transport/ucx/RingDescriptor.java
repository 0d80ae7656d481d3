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
 * consumed. The receiver zeroes each CRC frame's header word and footer after consuming it (the whole frame with flush
 * footers), so a stale frame at the head never carries the expected sequence; an ordered frame (below) is left as it
 * is, since its check already binds it to its sequence. When fewer than {@link #MIN_FRAME} bytes remain before
 * the end of the ring both sides skip to its start; otherwise a PAD frame (no payload) tells the receiver to.
 *
 * <p>Ordered frames ({@link #ORDERED}), for a sender that composes frames with its own stores straight in the
 * receiver's ring, mapped into its process on one host:
 * <pre>
 *   0  int   payload length
 *   4  int   flags        PRESENT | ORDERED, plus FIRST | LAST | PAD
 *   8  long  check        {@link #orderedCheck}: the header word, the frame's sequence and the receiver's key, mixed
 *  16  ...   payload
 *   F  long  ack          in place of sequence and CRC
 * </pre>
 * The sender writes payload, ack and check, then the header word last, in one 8-byte store with release ordering: once
 * the header is seen, every byte before it is, and no CRC is needed. The check tells a header from stale bytes of an
 * earlier lap (payload bytes, or a check word next to a header of another frame): it binds the header to the sequence
 * the receiver expects and to a random key the receiver chose for the connection and sent in its OFFER (footer mode 2,
 * the key after everything else). A receiver accepts ordered frames only where it said so; a put may land in any byte
 * order, so a put frame always carries the CRC.
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
    /** Published by its header, not proved by a CRC: see the class comment. */
    static final int ORDERED = 16;
    /** Where an ordered frame keeps its check (the ack's place in every other frame). */
    static final int CHECK_OFFSET = 8;

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

    /** The header word of an ordered frame. */
    static long orderedHeader(int length, int flags) {
        return (length & 0xFFFFFFFFL) | ((long) (flags | PRESENT | ORDERED) << 32);
    }

    /**
     * The check of an ordered frame with header word {@code header} and sequence {@code seq} for the receiver's
     * {@code key}: the three mixed (a 64-bit finaliser), so stale bytes pass with a chance of about 2^-64.
     */
    static long orderedCheck(long header, int seq, long key) {
        long x = header ^ key ^ (seq & 0xFFFFFFFFL) * 0x9E3779B97F4A7C15L;
        x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
        x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
        return x ^ (x >>> 31);
    }
}
