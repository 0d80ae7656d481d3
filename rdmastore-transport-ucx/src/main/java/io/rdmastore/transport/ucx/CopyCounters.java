package io.rdmastore.transport.ucx;

import java.util.concurrent.atomic.LongAdder;

/**
 * Bytes a transport copied beyond the one copy every message needs: on send, the caller's bytes into the send mirror
 * (ring) or the send stage (active messages); on receive, none (a message in one frame is handed to the handler where it
 * landed). What is counted: on send, a message kept for later (the unsent rest of a fragmented message, a message queued
 * by a thread that could not drive, a large active message's own buffer); on receive, fragments gathered into the
 * assembly buffer, the assembly's growth, and active messages held until their turn.
 *
 * <p>Threads: any thread may add and read; the sums are exact once the adding threads are quiet.
 */
final class CopyCounters {
    private final LongAdder sent = new LongAdder();
    private final LongAdder received = new LongAdder();

    void sent(long bytes) {
        sent.add(bytes);
    }

    void received(long bytes) {
        received.add(bytes);
    }

    /** Bytes copied on the send side beyond the copy into the mirror or stage. */
    long sentBytes() {
        return sent.sum();
    }

    /** Bytes copied on the receive side beyond handing the frame to the handler in place. */
    long receivedBytes() {
        return received.sum();
    }

    @Override
    public String toString() {
        return "copied beyond the ring: sent " + sentBytes() + " B, received " + receivedBytes() + " B";
    }
}
