package io.rdmastore.client;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.BiFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A client's subscriptions: which {@link Subscription}s hold each channel and pattern, and the delivery thread that
 * hands pushed messages to their listeners in the order they arrived. The server holds one subscription per name and
 * connection; several Subscriptions may share a name, and the server is told to drop it when the last one closes.
 *
 * <p>Threads: {@link #onPush} runs on the transport thread that delivered the push and only routes it; listeners run
 * on the single {@code rdmastore-client-pubsub} thread. The registry is guarded by this object's lock.
 */
final class PubSub {
    private static final Logger LOG = LoggerFactory.getLogger(PubSub.class);
    private static final byte[] MESSAGE = "message".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] PMESSAGE = "pmessage".getBytes(StandardCharsets.US_ASCII);

    /**
     * Message bytes handed to the delivery thread and not yet delivered, past which the client drops its connection,
     * as the server drops a subscriber that does not read: listeners slower than the publishers must not grow the
     * client's memory without bound. 64 MiB, twice the server's default pub/sub output limit.
     */
    static final long MAX_PENDING_BYTES = 64L << 20;

    /** Sends (P)(UN)SUBSCRIBE for names: (opcode, names) to the server's count of subscriptions. */
    private final BiFunction<Byte, List<byte[]>, Long> server;
    /** Closes the connection the subscriptions live on (a slow listener's overflow). */
    private final Runnable disconnect;
    private final java.util.concurrent.atomic.AtomicLong pendingBytes = new java.util.concurrent.atomic.AtomicLong();
    private final Map<ByteBuffer, List<Subscription>> channels = new HashMap<>();
    private final Map<ByteBuffer, List<Subscription>> patterns = new HashMap<>();
    private final ExecutorService delivery = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "rdmastore-client-pubsub");
        t.setDaemon(true);
        return t;
    });

    PubSub(BiFunction<Byte, List<byte[]>, Long> server, Runnable disconnect) {
        this.server = server;
        this.disconnect = disconnect;
    }

    /** Registers {@code s}, then subscribes the server to its names; the caller's thread, waits for the reply. */
    Subscription subscribe(MessageListener listener, List<byte[]> names, boolean pattern) {
        Subscription s = new Subscription(this, listener, List.copyOf(names), pattern);
        synchronized (this) {
            for (byte[] n : names) {
                (pattern ? patterns : channels).computeIfAbsent(ByteBuffer.wrap(n), k -> new ArrayList<>()).add(s);
            }
        }
        try {
            server.apply(pattern ? ProtocolDescriptor.PSUBSCRIBE : ProtocolDescriptor.SUBSCRIBE, names);
        } catch (RuntimeException e) {
            s.close();
            throw e;
        }
        return s;
    }

    /** Forgets {@code s}; unsubscribes the server from the names no other subscription holds. */
    void unsubscribe(Subscription s) {
        List<byte[]> last = new ArrayList<>();
        synchronized (this) {
            Map<ByteBuffer, List<Subscription>> map = s.isPattern() ? patterns : channels;
            for (byte[] n : s.rawNames()) {
                ByteBuffer k = ByteBuffer.wrap(n);
                List<Subscription> l = map.get(k);
                if (l != null && l.remove(s) && l.isEmpty()) {
                    map.remove(k);
                    last.add(n);
                }
            }
        }
        if (!last.isEmpty()) {
            try {
                server.apply(s.isPattern() ? ProtocolDescriptor.PUNSUBSCRIBE : ProtocolDescriptor.UNSUBSCRIBE, last);
            } catch (RdmaStoreException e) {
                // the connection is gone, and the server's subscriptions with it
                LOG.debug("unsubscribe failed: {}", e.toString());
            }
        }
    }

    /** A pushed value from the server; the transport thread. */
    void onPush(Object value) {
        if (!(value instanceof List<?> l) || l.size() < 3 || !(l.get(0) instanceof byte[] kind)) {
            LOG.warn("ignoring a push that is not a pub/sub message: {}", value);
            return;
        }
        List<Subscription> targets;
        PubSubMessage m;
        synchronized (this) {
            if (java.util.Arrays.equals(kind, MESSAGE)) {
                m = new PubSubMessage((byte[]) l.get(1), (byte[]) l.get(2), null);
                targets = channels.get(ByteBuffer.wrap(m.channel()));
            } else if (java.util.Arrays.equals(kind, PMESSAGE) && l.size() == 4) {
                m = new PubSubMessage((byte[]) l.get(2), (byte[]) l.get(3), (byte[]) l.get(1));
                targets = patterns.get(ByteBuffer.wrap(m.pattern()));
            } else {
                return;
            }
            if (targets == null) {
                return;
            }
            targets = List.copyOf(targets);
        }
        List<Subscription> to = targets;
        long size = m.channel().length + m.message().length + 64L;
        if (pendingBytes.addAndGet(size) > MAX_PENDING_BYTES) {
            pendingBytes.addAndGet(-size);
            LOG.warn("pub/sub listeners are {} bytes of messages behind (limit {}): closing the connection, which ends "
                + "its subscriptions", pendingBytes.get(), MAX_PENDING_BYTES);
            disconnect.run();
            return;
        }
        try {
            delivery.execute(() -> {
                pendingBytes.addAndGet(-size);
                for (Subscription s : to) {
                    try {
                        s.deliver(m);
                    } catch (RuntimeException e) {
                        LOG.warn("a pub/sub listener failed on a message of {}", m.channelString(), e);
                    }
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // the client is closing
        }
    }

    void close() {
        delivery.shutdownNow();
    }
}
