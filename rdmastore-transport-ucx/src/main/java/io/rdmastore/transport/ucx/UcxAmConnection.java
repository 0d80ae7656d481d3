package io.rdmastore.transport.ucx;

import io.rdmastore.transport.Connection;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.TransportException;
import io.rdmastore.transport.TransportStatus;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpAmData;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucs.UcsConstants;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.TreeMap;

/**
 * The two-sided variant: each message is one UCX active message (like the papers' SEND), kept to compare against the
 * ring in experiment E1. Outgoing payloads are staged in the slot's send area (a bump allocator reset whenever no send
 * is in flight); large ones get their own buffer. Messages carry a sequence number so delivery stays in order even when
 * eager and rendezvous messages complete out of order.
 *
 * <p>Threads: driver thread except for the {@link Connection} methods.
 */
final class UcxAmConnection extends UcxConnectionBase {
    private long stage;
    private int stageCapacity;
    private int stageTop;
    private int inFlight;
    private long headerAddress;
    private long peerId;
    private long sendSeq;
    private long expectedSeq;
    private final TreeMap<Long, MemorySegment> early = new TreeMap<>();
    private byte[] current;

    UcxAmConnection(UcxTransport transport, Connection control, MessageHandler handler, String reason,
                    UcxTransport.Peer peer) {
        super(transport, control, handler, reason, peer);
    }

    @Override
    void attachLocal(int slot, long slotAddress, UcpEndpoint ep) {
        this.slot = slot;
        this.slotAddress = slotAddress;
        this.ep = ep;
        stage = slotAddress;
        stageCapacity = 2 * transport.ringCapacity();
        headerAddress = slotAddress + stageCapacity;
        transport.am().add((long) slot, this);
    }

    @Override
    byte[] offer(byte[] slotKey) {
        return ByteBuffer.allocate(8).putLong(slot).array();
    }

    @Override
    void attachRemote(byte[] offer) {
        peerId = ByteBuffer.wrap(offer).getLong();
    }

    @Override
    String wire() {
        return "active messages";
    }

    @Override
    int maxFramePayload() {
        return Integer.MAX_VALUE;
    }

    @Override
    long pendingLimit() {
        return stageCapacity;
    }

    @Override
    boolean hasPending() {
        return current != null || !pending.isEmpty();
    }

    @Override
    int poll() {
        return hasPending() ? (drainPending() == 0 ? 1 : 0) : 0;
    }

    @Override
    void markReady() {
        super.markReady();
        flushEarly();
    }

    int onAm(long seq, UcpAmData data) {
        if (!isOpen()) {
            return UcsConstants.STATUS.UCS_OK;
        }
        long length = data.getLength();
        // before the peer's OFFER is in, a reply could not be sent: hold the message until the connection is ready
        if (ready && data.isDataValid() && seq == expectedSeq) {
            expectedSeq++;
            deliver(MemorySegment.ofAddress(data.getDataAddress()).reinterpret(length));
            flushEarly();
            return UcsConstants.STATUS.UCS_OK;
        }
        MemorySegment copy = Arena.ofAuto().allocate(Math.max(1, length)).asSlice(0, length);
        if (data.isDataValid()) {
            MemorySegment.copy(MemorySegment.ofAddress(data.getDataAddress()).reinterpret(length), 0, copy, 0, length);
            transport.copies.received(length);
            early.put(seq, copy);
            flushEarly();
            return UcsConstants.STATUS.UCS_OK;
        }
        data.receive(copy.address(), new UcxCallback() {
            @Override
            public void onSuccess(UcpRequest request) {
                early.put(seq, copy);
                flushEarly();
            }

            @Override
            public void onError(int status, String message) {
                close(new TransportException("active message receive failed: " + message));
            }
        });
        return UcsConstants.STATUS.UCS_OK;
    }

    private void flushEarly() {
        if (!ready) {
            return;
        }
        MemorySegment next;
        while ((next = early.remove(expectedSeq)) != null) {
            expectedSeq++;
            deliver(next);
        }
    }

    @Override
    int sendNow(MemorySegment message, long offset, int length) {
        UcpEndpoint e = ep;
        if (e == null || !isOpen()) {
            return TransportStatus.CLOSED;
        }
        if (inFlight >= 64) {
            return TransportStatus.BACK_PRESSURED;
        }
        long source;
        MemorySegment own = null;
        if (length > stageCapacity / 2) {
            own = Arena.ofAuto().allocate(Math.max(1, length));
            MemorySegment.copy(message, offset, own, 0, length);
            transport.copies.sent(length);
            source = own.address();
        } else {
            if (inFlight == 0) {
                stageTop = 0;
            }
            if (stageTop + length > stageCapacity) {
                return TransportStatus.BACK_PRESSURED;
            }
            source = stage + stageTop;
            MemorySegment.copy(message, offset, MemorySegment.ofAddress(source).reinterpret(length), 0, length);
            stageTop += (length + 7) & ~7;
        }
        long header = headerAddress + (sendSeq & 63) * AmDispatcher.HEADER;
        MemorySegment h = MemorySegment.ofAddress(header).reinterpret(AmDispatcher.HEADER);
        h.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, 0, peerId);
        h.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, 8, sendSeq);
        sendSeq++;
        inFlight++;
        MemorySegment keep = own;
        e.sendAmNonBlocking(AmDispatcher.AM_ID, header, AmDispatcher.HEADER, source, length, 0, new UcxCallback() {
            @Override
            public void onSuccess(UcpRequest request) {
                inFlight--;
                keep(keep);
            }

            @Override
            public void onError(int status, String message) {
                inFlight--;
                close(new TransportException("active message send failed: " + message));
            }
        });
        ringPeer();
        return TransportStatus.OK;
    }

    private static void keep(MemorySegment segment) {
        java.lang.ref.Reference.reachabilityFence(segment);
    }

    @Override
    int drainPending() {
        while (true) {
            if (current == null) {
                current = pending.poll();
                if (current == null) {
                    return 0;
                }
            }
            int status = sendNow(MemorySegment.ofArray(current), 0, current.length);
            if (status == TransportStatus.BACK_PRESSURED) {
                return 1;
            }
            pendingBytes.addAndGet(-current.length);
            current = null;
        }
    }

    @Override
    void releaseRemote() {
        transport.am().remove((long) slot);
    }
}
