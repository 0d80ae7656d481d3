package io.rdmastore.transport.ucx;

import io.rdmastore.transport.Connection;
import io.rdmastore.transport.MemoryCopy;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.TransportException;
import io.rdmastore.transport.TransportStatus;
import org.agrona.concurrent.UnsafeBuffer;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpRemoteKey;
import org.openucx.jucx.ucp.UcpRequest;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.concurrent.ThreadLocalRandom;
import java.util.zip.CRC32C;

import static io.rdmastore.transport.ucx.RingDescriptor.ACK_OFFSET;
import static io.rdmastore.transport.ucx.RingDescriptor.ALIGN;
import static io.rdmastore.transport.ucx.RingDescriptor.CHECK_OFFSET;
import static io.rdmastore.transport.ucx.RingDescriptor.FIRST;
import static io.rdmastore.transport.ucx.RingDescriptor.FOOTER;
import static io.rdmastore.transport.ucx.RingDescriptor.HEADER;
import static io.rdmastore.transport.ucx.RingDescriptor.LAST;
import static io.rdmastore.transport.ucx.RingDescriptor.MIN_FRAME;
import static io.rdmastore.transport.ucx.RingDescriptor.ORDERED;
import static io.rdmastore.transport.ucx.RingDescriptor.PAD;
import static io.rdmastore.transport.ucx.RingDescriptor.PRESENT;
import static io.rdmastore.transport.ucx.RingDescriptor.WHOLE;
import static io.rdmastore.transport.ucx.RingDescriptor.frameLength;
import static io.rdmastore.transport.ucx.RingDescriptor.orderedCheck;
import static io.rdmastore.transport.ucx.RingDescriptor.orderedHeader;

/**
 * A connection whose messages travel as frames put one-sided into the peer's ring ({@link RingDescriptor}).
 *
 * <p>Memory of the slot: {@code [receive ring: C][send mirror: C][credit word: 8][credit stage: 8]}. The sender composes
 * each frame in its mirror at the offset it will have in the peer's ring and puts that range; the mirror bytes are not
 * touched again until the peer's credit says the frame was consumed, so a put never reads memory being rewritten.
 * Where the peer's ring is mapped into this process (shared memory, CRC footer: {@link MappedRings}), the mirror is that
 * mapping: frames are composed in the peer's ring itself and the put is only the doorbell.
 *
 * <p>A message larger than a frame offered by a thread that can drive goes out as fragments written from the caller's
 * memory straight into the mirror; while the peer's ring is full the offer keeps driving the worker for credit, and only
 * when none comes (the peer is slow, or is itself waiting for this side to read) is the unsent rest copied, once, into
 * a reused off-heap spill buffer, sent from there ahead of anything queued later.
 *
 * <p>Threads: everything except the {@link io.rdmastore.transport.Connection} methods runs on the driver thread.
 */
final class UcxConnection extends UcxConnectionBase {
    /**
     * How long an offer of a fragmented message waits without credit before it copies the rest and returns: a peer
     * that consumes keeps the offer going; a stuck one costs this much of the driver's time once per message.
     */
    private final long fragmentWaitNanos = Long.getLong("rdmastore.ucx.fragmentWaitNanos", 1_000_000L);
    private final boolean flushFooter;
    private int capacity;
    private int mask;
    private int maxFrame;
    private UnsafeBuffer ring;
    private ByteBuffer ringBytes;
    private MemorySegment ringSegment;
    private UnsafeBuffer mirror;
    private ByteBuffer mirrorBytes;
    private MemorySegment mirrorSegment;
    private long mirrorAddress;
    /**
     * Whether the mirror is the peer's ring, mapped into this process ({@link MappedRings}): frames are composed in
     * place and need no put. Frames are only ever written while the connection is open, on the driver, and the
     * mapping goes with the remote key, which is closed on the driver too ({@link #releaseRemote}).
     */
    private boolean direct;
    /** This side accepts ordered frames ({@link RingDescriptor#ORDERED}) and sends them where it may. */
    private final boolean orderedFrames;
    /** Frames to the peer are ordered: its ring is mapped here and it accepts them. */
    private boolean ordered;
    /** The key of the checks of ordered frames to this side, sent in the OFFER. */
    private final long checkKey = ThreadLocalRandom.current().nextLong();
    /** The peer's key, for the checks of ordered frames to it. */
    private long peerCheckKey;
    private UnsafeBuffer credit;
    private UnsafeBuffer creditStage;
    private long creditAddress;
    private long creditStageAddress;
    private final CRC32C crc = new CRC32C();

    private long remoteRing;
    private long remoteCredit;
    /**
     * The peer's credit word where it is mapped here (with its ring, {@link #direct}): credit is then one ordered
     * store, like a frame, instead of a put that the worker must progress; null otherwise.
     */
    private UnsafeBuffer peerCredit;
    /** The key of the peer's slot (its ring and credit word); package-private for the isolation test. */
    UcpRemoteKey remoteKey;
    private boolean remoteKnown;

    // receive side
    private long head;
    private int expectedSeq = 1;
    private long lastAckSent;
    private boolean creditInFlight;
    private MemorySegment assembly;
    private long assembled;
    private boolean assembling;

    // send side
    private long tail;
    private int sendSeq = 1;
    private long peerHead;
    /** The message being sent in fragments from the pending queue or the spill; its bytes sent; its FIRST sent. */
    private MemorySegment current;
    private long currentOffset;
    private boolean currentBegun;
    /** Set while an offer writes fragments from the caller's memory: a reentrant offer must queue behind it. */
    private boolean sendingDirect;
    /** Reused home of the unsent rest of a message offered directly (up to {@link #pendingLimit()} bytes). */
    private MemorySegment spill;

    private final UcxCallback creditDone = new UcxCallback() {
        @Override
        public void onSuccess(UcpRequest request) {
            creditInFlight = false;
        }

        @Override
        public void onError(int status, String message) {
            creditInFlight = false;
        }
    };

    UcxConnection(UcxTransport transport, Connection control, MessageHandler handler, String reason,
                  UcxTransport.Peer peer) {
        super(transport, control, handler, reason, peer);
        this.flushFooter = transport.context().flushFooter();
        this.orderedFrames = !flushFooter && transport.context().orderedFramesValue();
    }

    @Override
    void attachLocal(int slot, long slotAddress, UcpEndpoint ep) {
        this.slot = slot;
        this.slotAddress = slotAddress;
        this.ep = ep;
        int cap = transport.ringCapacity();
        creditAddress = slotAddress + 2L * cap;
        creditStageAddress = creditAddress + 8;
        credit = new UnsafeBuffer(creditAddress, 8);
        creditStage = new UnsafeBuffer(creditStageAddress, 8);
    }

    @Override
    byte[] offer(byte[] slotKey) {
        return ByteBuffer.allocate(8 + 4 + 8 + 1 + 4 + slotKey.length + 8).putLong(slotAddress)
            .putInt(transport.ringCapacity()).putLong(creditAddress).put(footerMode())
            .putInt(slotKey.length).put(slotKey).putLong(checkKey).array();
    }

    /** The OFFER's footer byte: 0 crc, 1 flush, 2 crc and ordered frames accepted (peers that predate them send 0). */
    private byte footerMode() {
        return (byte) (flushFooter ? 1 : orderedFrames ? 2 : 0);
    }

    @Override
    void attachRemote(byte[] offer) {
        ByteBuffer b = ByteBuffer.wrap(offer);
        remoteRing = b.getLong();
        int remoteCapacity = b.getInt();
        remoteCredit = b.getLong();
        byte remoteMode = b.get();
        boolean remoteFlush = remoteMode == 1;
        byte[] key = new byte[b.getInt()];
        b.get(key);
        if (remoteMode == 2) {
            peerCheckKey = b.getLong();
        }
        if (remoteFlush != flushFooter) {
            throw new TransportException("peers disagree on the ring footer mode (crc vs flush)");
        }
        if (Integer.bitCount(remoteCapacity) != 1 || remoteCapacity < 4096) {
            throw new TransportException("peer announced a bad ring capacity " + remoteCapacity);
        }
        capacity = Math.min(remoteCapacity, transport.ringCapacity());
        mask = capacity - 1;
        maxFrame = capacity / 4 - MIN_FRAME;
        ringSegment = MemorySegment.ofAddress(slotAddress).reinterpret(capacity);
        ring = new UnsafeBuffer(slotAddress, capacity);
        ringBytes = ringSegment.asByteBuffer();
        remoteKey = ep.unpackRemoteKey(ByteBuffer.allocateDirect(key.length).put(key).flip());
        // Where the peer's ring is mapped here (shared memory), frames are composed straight in it: the "mirror" is
        // then the peer's ring itself and a put is only the doorbell. The flush footer needs UCX's ordering: put.
        long mapped = flushFooter ? 0 : MappedRings.pointer(remoteKey, remoteRing);
        direct = mapped != 0;
        ordered = direct && orderedFrames && remoteMode == 2;
        mirrorAt(direct ? mapped : slotAddress + transport.ringCapacity());
        long mappedCredit = direct && DIRECT_CREDIT ? MappedRings.pointer(remoteKey, remoteCredit) : 0;
        peerCredit = mappedCredit != 0 ? new UnsafeBuffer(mappedCredit, 8) : null;
        remoteKnown = true;
    }

    /** Points the mirror (where frames are composed) and its views at {@code address}, {@code capacity} bytes. */
    private void mirrorAt(long address) {
        mirrorAddress = address;
        mirrorSegment = MemorySegment.ofAddress(address).reinterpret(capacity);
        mirror = new UnsafeBuffer(address, capacity);
        mirrorBytes = mirrorSegment.asByteBuffer();
    }

    @Override
    String wire() {
        return "ring " + (capacity >> 10) + " KiB" + (ordered ? " mapped ordered" : direct ? " mapped" : "");
    }

    @Override
    int maxFramePayload() {
        return maxFrame;
    }

    @Override
    long pendingLimit() {
        return 2L * capacity;
    }

    @Override
    boolean hasPending() {
        return current != null || sendingDirect || !pending.isEmpty();
    }

    /**
     * When {@link #poll} loads the line after the head's with each look at the header word, so that a frame's two
     * lines move between the cores together (transport-ucx.md, "Cache lines"): {@code small} (default) while the
     * frames arriving are of one or two lines, {@code true} always, {@code false} never; property
     * {@code rdmastore.ucx.lineAhead}.
     */
    static final String LINE_AHEAD_MODE = lineAheadMode(System.getProperty("rdmastore.ucx.lineAhead", "small"));
    static final boolean LINE_AHEAD = !LINE_AHEAD_MODE.equals("false");
    /**
     * Whether credit to a peer whose slot is mapped here is stored straight into its credit word (default) rather than
     * put; {@code -Drdmastore.ucx.directCredit=false} puts it.
     */
    static final boolean DIRECT_CREDIT = !"false".equals(System.getProperty("rdmastore.ucx.directCredit"));
    /** Only while the frames arriving are of one or two lines. */
    static final boolean LINE_AHEAD_SMALL = LINE_AHEAD_MODE.equals("small");
    /** Whether the last frame delivered spanned at most two lines. */
    private boolean lastSmall = true;

    private static String lineAheadMode(String value) {
        if (!value.equals("small") && !value.equals("true") && !value.equals("false")) {
            throw new IllegalArgumentException("rdmastore.ucx.lineAhead is small, true or false, not '" + value + "'");
        }
        return value;
    }

    /**
     * Whether consumed ordered frames are cleared like CRC frames. They need not be: a frame counts only with the check
     * of the sequence expected next, which no earlier lap's bytes carry, and a receiver that writes nothing into its
     * ring lets the sender take each line back without fetching it (transport-ucx.md, "Cache lines");
     * {@code -Drdmastore.ucx.clearOrdered=true} clears them.
     */
    static final boolean CLEAR_ORDERED = Boolean.getBoolean("rdmastore.ucx.clearOrdered");

    /** Sums the second lines loaded ahead, so that the loads are not optimised away; never read otherwise. */
    private long lineAhead;

    /**
     * Frames composed in the peer's mapped ring are complete when the last store is; only puts (frames over a wire,
     * flush footers, a credit in flight) and a connection still being set up wait on the worker's progress.
     */
    @Override
    boolean needsProgress() {
        return !direct || flushFooter || creditInFlight || !remoteKnown;
    }

    // ---- receive ----

    @Override
    int poll() {
        if (!remoteKnown) {
            return 0;
        }
        int work = 0;
        for (int i = 0; i < 64; i++) {
            int pos = (int) (head & mask);
            int toEnd = capacity - pos;
            if (toEnd < MIN_FRAME) {
                head += toEnd;
                continue;
            }
            if (LINE_AHEAD && toEnd > ALIGN && (lastSmall || !LINE_AHEAD_SMALL)) {
                // The frame's second line, loaded with its first and not after its header (whose length would give
                // its address): where a line's move between two cores costs hundreds of nanoseconds, the two moves
                // overlap instead of queuing one behind the other.
                lineAhead += ring.getLong(pos + ALIGN);
            }
            long word = ring.getLongVolatile(pos);
            int flags = (int) (word >>> 32);
            if (flags == 0) {
                break;
            }
            int length = (int) word;
            if (length < 0 || length > maxFrame || pos + frameLength(length) > capacity) {
                break; // the header itself is still landing
            }
            int frame = frameLength(length);
            int footer = pos + frame - FOOTER;
            long ack;
            boolean orderedFrame = (flags & ORDERED) != 0 && orderedFrames;
            if (orderedFrame) {
                // the header is stored last, so every byte before it is in; the check tells it from stale bytes
                if (!checkHolds(pos, word)) {
                    break;
                }
                ack = ring.getLong(footer);
            } else {
                if (ring.getIntVolatile(footer) != expectedSeq) {
                    break;
                }
                if (!flushFooter && ring.getInt(footer + 4) != crc(ringBytes, pos, footer + 4)) {
                    break; // torn: some bytes have not landed yet
                }
                // The header read above may predate the frame (stale bytes of an earlier lap whose length happens to
                // put the footer in the same place); only the header as it is now, covered by the footer just checked,
                // counts.
                long validated = ring.getLongVolatile(pos);
                if (validated != word) {
                    continue;
                }
                ack = ring.getLong(pos + ACK_OFFSET);
            }
            if (ack > peerHead && ack <= tail) {
                peerHead = ack;
            }
            expectedSeq = next(expectedSeq);
            boolean clear = !orderedFrame || CLEAR_ORDERED;
            if ((flags & PAD) != 0) {
                if (clear) {
                    release(pos, frame, footer);
                }
                head += toEnd;
                continue;
            }
            receive(pos + HEADER, length, flags);
            if (clear) {
                release(pos, frame, footer);
            }
            head += frame;
            lastSmall = frame <= 2 * ALIGN;
            work++;
            if (!isOpen()) {
                return work;
            }
        }
        if (head - lastAckSent >= capacity >> 2 && !creditInFlight && ep != null) {
            sendCredit();
        }
        if (hasPending()) {
            drainPending();
        }
        return work;
    }

    private void receive(int offset, int length, int flags) {
        if ((flags & WHOLE) == WHOLE && !assembling) {
            deliver(ringSegment.asSlice(offset, length));
            return;
        }
        if ((flags & FIRST) != 0) {
            assembling = true;
            assembled = 0;
        }
        if (!assembling) {
            close(new TransportException("fragment without a first frame"));
            return;
        }
        long need = assembled + length;
        if (need > maxMessageLength()) {
            // The assembly grows with the fragments received, and never past the largest message this side accepts.
            assembling = false;
            assembly = null;
            close(new TransportException("message exceeds the maximum of " + maxMessageLength() + " bytes"));
            return;
        }
        if (assembly == null || assembly.byteSize() < need) {
            long size = Math.max(need, assembly == null ? 1 << 20 : assembly.byteSize() * 2);
            MemorySegment bigger = Arena.ofAuto().allocate(Math.min(size, Math.max(need, maxMessageLength())));
            if (assembly != null) {
                MemorySegment.copy(assembly, 0, bigger, 0, assembled);
                transport.copies.received(assembled);
            }
            assembly = bigger;
        }
        MemorySegment.copy(ringSegment, offset, assembly, assembled, length);
        transport.copies.received(length);
        assembled = need;
        if ((flags & LAST) != 0) {
            assembling = false;
            deliver(assembly.asSlice(0, assembled));
        }
    }

    /** Whether the ordered frame with header {@code word} at {@code pos} carries the check of the expected one. */
    private boolean checkHolds(int pos, long word) {
        return ring.getLong(pos + CHECK_OFFSET) == orderedCheck(word, expectedSeq, checkKey);
    }

    /**
     * Clears a consumed frame. With CRC footers only the header word and the footer need zeroing: a later frame is
     * accepted only with the next sequence number and a CRC over its own bytes, so stale payload bytes are harmless.
     * With flush footers (sequence only) the whole frame is zeroed. Ordered frames are left as they are
     * ({@link #CLEAR_ORDERED}).
     */
    private void release(int pos, int frame, int footer) {
        if (flushFooter) {
            ring.setMemory(pos, frame, (byte) 0);
        } else {
            ring.putLong(pos, 0L);
            ring.putLong(footer, 0L);
        }
    }

    private void sendCredit() {
        int position = (int) head;
        long word = (position & 0xFFFFFFFFL) | ((long) ~position << 32);
        lastAckSent = head;
        UnsafeBuffer mapped = peerCredit;
        if (mapped != null) {
            // one aligned 8-byte store: the peer reads the word whole, before or after it
            mapped.putLongOrdered(0, word);
            transport.creditStores.increment();
            ringPeer();
            return;
        }
        transport.creditPuts.increment();
        creditStage.putLong(0, word);
        creditInFlight = true;
        UcpRequest r = ep.putNonBlocking(creditStageAddress, 8, remoteCredit, remoteKey, creditDone);
        if (r == null) {
            creditInFlight = false;
        }
        // a sender waiting for room may be asleep
        ringPeer();
    }

    private void refreshPeerHead() {
        long word = credit.getLongVolatile(0);
        int position = (int) word;
        if ((int) (word >>> 32) != ~position || word == 0) {
            return;
        }
        long candidate = (tail & ~0xFFFFFFFFL) | (position & 0xFFFFFFFFL);
        if (candidate > tail) {
            candidate -= 1L << 32;
        }
        if (candidate > peerHead) {
            peerHead = candidate;
        }
    }

    private int crc(ByteBuffer bytes, int from, int to) {
        crc.reset();
        bytes.clear().position(from).limit(to);
        crc.update(bytes);
        return (int) crc.getValue();
    }

    private static int next(int seq) {
        int n = seq + 1;
        return n == 0 ? 1 : n;
    }

    // ---- send ----

    @Override
    int sendNow(MemorySegment message, long offset, int length) {
        if (length <= maxFrame) {
            return writeFrame(message, offset, length, WHOLE);
        }
        return sendDirect(message.asSlice(offset, length), null);
    }

    @Override
    boolean gathers() {
        return true;
    }

    /** Gathered from both parts: each byte of the body is copied once, straight into its frame's place. */
    @Override
    int sendNow(MemorySegment head, MemorySegment body) {
        long length = head.byteSize() + body.byteSize();
        if (length <= maxFrame) {
            return writeFrame(head, 0, (int) head.byteSize(), body, 0, (int) body.byteSize(), WHOLE);
        }
        return sendDirect(head, body);
    }

    private int sendDirect(MemorySegment head, MemorySegment body) {
        sendingDirect = true;
        try {
            return sendFragments(head, body);
        } finally {
            sendingDirect = false;
        }
    }

    /**
     * Writes the fragments of the message {@code head} then {@code body} (null: none) from the caller's memory while
     * the peer's ring has room, driving the worker for credit while it has none. The offer must copy before it
     * returns, so when credit stops coming the rest is spilled.
     */
    private int sendFragments(MemorySegment head, MemorySegment body) {
        long headLength = head.byteSize();
        long length = headLength + (body == null ? 0 : body.byteSize());
        long sent = 0;
        long lastRoom = System.nanoTime();
        while (sent < length) {
            int chunk = (int) Math.min(length - sent, maxFrame);
            int flags = (sent == 0 ? FIRST : 0) | (sent + chunk == length ? LAST : 0);
            int fromHead = (int) Math.max(0, Math.min(headLength - sent, chunk));
            int status = writeFrame(head, Math.min(sent, headLength), fromHead, body,
                Math.max(0, sent - headLength), chunk - fromHead, flags);
            if (status == TransportStatus.OK) {
                sent += chunk;
                lastRoom = System.nanoTime();
                continue;
            }
            if (status != TransportStatus.BACK_PRESSURED) {
                return status;
            }
            // A peer with frames waiting here may itself be waiting for this side's credit: waiting would deadlock.
            if (frameWaiting() || System.nanoTime() - lastRoom > fragmentWaitNanos) {
                spill(head, body, sent, length - sent, sent > 0);
                return TransportStatus.OK;
            }
            try {
                // puts over a software wire and the peer's credit put (landing here) need this worker's progress
                transport.worker().progress();
            } catch (Exception e) {
                close(e);
                return TransportStatus.CLOSED;
            }
            Thread.onSpinWait();
        }
        return TransportStatus.OK;
    }

    /** Whether the peer's next frame has landed at the head of the receive ring, unread. */
    private boolean frameWaiting() {
        int pos = (int) (head & mask);
        if (capacity - pos < MIN_FRAME) {
            pos = 0;
        }
        long word = ring.getLongVolatile(pos);
        int length = (int) word;
        int flags = (int) (word >>> 32);
        if (flags == 0 || length < 0 || length > maxFrame || pos + frameLength(length) > capacity) {
            return false;
        }
        if ((flags & ORDERED) != 0 && orderedFrames) {
            return checkHolds(pos, word);
        }
        return ring.getIntVolatile(pos + frameLength(length) - FOOTER) == expectedSeq;
    }

    /**
     * Copies the unsent rest of a message ({@code head} then {@code body}, from byte {@code from} on) once and makes it
     * the message the driver sends next.
     */
    private void spill(MemorySegment head, MemorySegment body, long from, long length, boolean begun) {
        MemorySegment home;
        if (length <= pendingLimit()) {
            if (spill == null) {
                spill = Arena.ofAuto().allocate(pendingLimit(), RingDescriptor.ALIGN);
            }
            home = spill.asSlice(0, length);
        } else {
            home = Arena.ofAuto().allocate(length, RingDescriptor.ALIGN);
        }
        long headLength = head.byteSize();
        long fromHead = Math.max(0, Math.min(headLength - from, length));
        MemorySegment.copy(head, Math.min(from, headLength), home, 0, fromHead);
        if (length > fromHead) {
            MemorySegment.copy(body, Math.max(0, from - headLength), home, fromHead, length - fromHead);
        }
        transport.copies.sent(length);
        pendingBytes.addAndGet(length);
        current = home;
        currentOffset = 0;
        currentBegun = begun;
        // the offering thread may not be the agent, which then sends the rest: it may be asleep
        transport.wake();
    }

    @Override
    int drainPending() {
        if (sendingDirect) {
            return 1;
        }
        while (true) {
            if (current == null) {
                byte[] next = pending.poll();
                if (next == null) {
                    return 0;
                }
                current = MemorySegment.ofArray(next);
                currentOffset = 0;
                currentBegun = false;
            }
            long size = current.byteSize();
            while (true) {
                long remaining = size - currentOffset;
                int chunk = (int) Math.min(remaining, maxFrame);
                int flags = (currentBegun ? 0 : FIRST) | (chunk == remaining ? LAST : 0);
                int status = writeFrame(current, currentOffset, chunk, flags);
                if (status == TransportStatus.BACK_PRESSURED) {
                    return 1;
                }
                if (status < 0) {
                    current = null;
                    return 0;
                }
                currentBegun = true;
                currentOffset += chunk;
                if (currentOffset == size) {
                    pendingBytes.addAndGet(-size);
                    current = null;
                    break;
                }
            }
        }
    }

    private int writeFrame(MemorySegment src, long srcOffset, int length, int flags) {
        return writeFrame(src, srcOffset, length, null, 0, 0, flags);
    }

    /** Writes one frame whose payload is {@code aLength} bytes of {@code a}, then {@code bLength} bytes of {@code b}. */
    private int writeFrame(MemorySegment a, long aOffset, int aLength, MemorySegment b, long bOffset, int bLength,
                           int flags) {
        int length = aLength + bLength;
        UcpEndpoint e = ep;
        if (e == null || !isOpen()) {
            return TransportStatus.CLOSED;
        }
        int frame = frameLength(length);
        int pos = (int) (tail & mask);
        int toEnd = capacity - pos;
        long need = toEnd < frame ? toEnd + frame : frame;
        if (tail + need - peerHead > capacity) {
            refreshPeerHead();
            if (tail + need - peerHead > capacity) {
                return TransportStatus.BACK_PRESSURED;
            }
        }
        if (toEnd < frame) {
            if (toEnd >= MIN_FRAME) {
                compose(pos, 0, PAD);
                put(e, pos, MIN_FRAME);
            }
            tail += toEnd;
            pos = 0;
        }
        MemoryCopy.copy(a, aOffset, mirrorSegment, pos + HEADER, aLength);
        if (bLength > 0) {
            MemoryCopy.copy(b, bOffset, mirrorSegment, pos + HEADER + aLength, bLength);
        }
        compose(pos, length, flags);
        put(e, pos, frame);
        tail += frame;
        return TransportStatus.OK;
    }

    /** Writes header and footer of a frame whose payload is already in the mirror. */
    private void compose(int pos, int length, int flags) {
        if (ordered) {
            composeOrdered(pos, length, flags);
            return;
        }
        mirror.putInt(pos, length);
        mirror.putInt(pos + 4, flags | PRESENT);
        mirror.putLong(pos + ACK_OFFSET, head);
        lastAckSent = head;
        int footer = pos + frameLength(length) - FOOTER;
        mirror.putInt(footer, sendSeq);
        mirror.putInt(footer + 4, flushFooter ? 0 : crc(mirrorBytes, pos, footer + 4));
        sendSeq = next(sendSeq);
    }

    /**
     * Writes ack, check and, last, the header of an ordered frame whose payload is already in the peer's mapped ring
     * ({@link RingDescriptor}, "Ordered frames"): one release store publishes the frame.
     */
    private void composeOrdered(int pos, int length, int flags) {
        mirror.putLong(pos + frameLength(length) - FOOTER, head);
        lastAckSent = head;
        long header = orderedHeader(length, flags);
        mirror.putLong(pos + CHECK_OFFSET, orderedCheck(header, sendSeq, peerCheckKey));
        mirror.putLongOrdered(pos, header);
        sendSeq = next(sendSeq);
    }

    private void put(UcpEndpoint e, int pos, int frame) {
        if (direct) {
            ringPeer();
            return;
        }
        if (!flushFooter) {
            e.putNonBlockingImplicit(mirrorAddress + pos, frame, remoteRing + pos, remoteKey);
            ringPeer();
            return;
        }
        int body = frame - FOOTER;
        e.putNonBlockingImplicit(mirrorAddress + pos, body, remoteRing + pos, remoteKey);
        e.flushNonBlocking(new UcxCallback() {
            @Override
            public void onSuccess(UcpRequest request) {
                UcpEndpoint now = ep;
                if (now != null) {
                    now.putNonBlockingImplicit(mirrorAddress + pos + body, FOOTER, remoteRing + pos + body,
                        remoteKey);
                    ringPeer();
                }
            }
        });
    }

    @Override
    void releaseRemote() {
        if (direct) {
            // the peer's ring is unmapped with its key, closed below: nothing may write there any more
            direct = false;
            ordered = false;
            peerCredit = null;
            mirrorAt(slotAddress + transport.ringCapacity());
        }
        if (remoteKey != null) {
            try {
                remoteKey.close();
            } catch (Throwable ignored) {
                // closing
            }
            remoteKey = null;
        }
        remoteKnown = false;
    }
}
