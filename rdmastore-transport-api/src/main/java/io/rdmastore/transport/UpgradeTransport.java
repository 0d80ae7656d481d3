package io.rdmastore.transport;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;

/**
 * A transport that moves a connection bootstrapped by a {@link CarrierTransport} onto a faster wire (UCX: RDMA verbs,
 * shared memory). The carrier connection stays open as the control and liveness channel: when it closes, the upgraded
 * connection closes too. Thread-safe.
 */
public interface UpgradeTransport extends Transport {

    /** This side's capability for HELLO (for UCX: host id and worker address). Null when unavailable. */
    byte[] capability();

    /** Whether an upgrade with a peer that offered {@code peerCapability} can be tried, and why. */
    Assessment assess(byte[] peerCapability);

    /**
     * Starts the upgrade of {@code control}'s peer. Both sides call this after they agreed on this transport; each sends
     * its own messages on {@code control} with the {@code prefix} byte in front, and receives the peer's (prefix
     * stripped) through {@link Upgrade#onControlMessage(MemorySegment)}.
     *
     * @param control the carrier connection, already authenticated
     * @param initiator true on the connecting (client) side
     * @param peerCapability what the peer sent in HELLO or WELCOME
     * @param handler receives the upgraded connection's messages
     * @param prefix the byte to put in front of every control message this upgrade sends
     * @param reason why this transport was chosen, for {@link Connection#selectionReason()}
     */
    Upgrade begin(Connection control, boolean initiator, byte[] peerCapability, MessageHandler handler, byte prefix,
                  String reason);

    /** An assessment of a peer's capability. */
    record Assessment(boolean usable, String reason) {
    }

    /** One upgrade in progress. */
    interface Upgrade {

        /** A control message from the peer's upgrade, prefix stripped. Called on the carrier's thread. */
        void onControlMessage(MemorySegment message);

        /** Completes with the upgraded connection, or exceptionally. */
        CompletableFuture<Connection> result();

        /** Gives up (time-out, control closed), releasing what was set up. */
        void abort(Throwable cause);
    }
}
