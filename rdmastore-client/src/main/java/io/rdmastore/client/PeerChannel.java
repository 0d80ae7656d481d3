package io.rdmastore.client;

import io.rdmastore.client.protocol.WireReader;
import io.rdmastore.client.protocol.WireWriter;
import io.rdmastore.transport.Connection;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * A connection for server-to-server protocols (replication between the members of a replica set): any opcode, the
 * reply decoded by the caller. It negotiates its transport like a client (ucx where both ends have it, tcp otherwise)
 * and reconnects on the next call after a drop. Not for applications: use {@link RdmaStoreClient}.
 *
 * <p>Threads: thread-safe; {@link #call} may be used from any thread, {@link #await} drives the transport while it
 * waits (over ucx the waiting thread progresses the worker).
 */
public final class PeerChannel implements AutoCloseable {
    /** Decodes an OK or NULL reply's body on the transport thread. */
    @FunctionalInterface
    public interface ReplyDecoder<T> {
        T decode(byte status, WireReader body);
    }

    private final ClientCore core;

    private PeerChannel(ClientConfig config) {
        this.core = new ClientCore(config);
    }

    /** Creates the channel; the connection is made by the first call. */
    public static PeerChannel open(ClientConfig config) {
        return new PeerChannel(config);
    }

    /**
     * Sends one request. The future fails with {@link RdmaStoreServerException} (the reply's text) on an ERROR reply,
     * {@link RdmaStoreConnectionException} when the connection is lost, {@link RdmaStoreTimeoutException} after
     * {@code timeout}.
     */
    public <T> CompletableFuture<T> call(byte opcode, Consumer<WireWriter> body, ReplyDecoder<T> decoder,
                                         Duration timeout) {
        return core.call(opcode, body::accept, decoder::decode, timeout);
    }

    /** Waits for a call made on this channel, driving its transport meanwhile; rethrows its failure. */
    public <T> T await(CompletableFuture<T> call, Duration timeout) {
        if (call instanceof ClientCore.Call<T> c) {
            return core.await(c, timeout);
        }
        return call.join();
    }

    /**
     * The current connection (made now if there is none), for registering memory the peer reads one-sided, or reading
     * the peer's.
     */
    public Connection connection() {
        return core.connection();
    }

    /**
     * Pulls {@code length} bytes the peer lent (its {@code descriptor}, from a lease) with one-sided reads, several
     * in flight, driving the transport on this thread, through a staging buffer whose steps {@code out} takes in
     * order; returns the CRC32C of what arrived.
     *
     * @throws RdmaStoreException when the transfer fails or times out
     * @throws IOException when {@code out} fails
     */
    public int pull(byte[] descriptor, long length, BlobClient.ChunkWriter out, Duration timeout) throws IOException {
        return new BlobClient(core, timeout, WriteConcern.W1).pullLent(descriptor, length, out);
    }

    /** The transport the current connection runs on ("tcp", "ucx"), or "none" before the first call. */
    public String transport() {
        try {
            return core.transport();
        } catch (RuntimeException e) {
            return "none";
        }
    }

    /** Why that transport was chosen. */
    public String transportReason() {
        try {
            return core.transportReason();
        } catch (RuntimeException e) {
            return "not connected";
        }
    }

    @Override
    public void close() {
        core.close();
    }
}
