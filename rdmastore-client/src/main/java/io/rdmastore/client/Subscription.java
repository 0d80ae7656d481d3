package io.rdmastore.client;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Channels or patterns one {@link MessageListener} is subscribed to ({@link RdmaStoreClient#subscribe},
 * {@link RdmaStoreClient#psubscribe}). {@link #close()} unsubscribes: no message is delivered to the listener after it
 * returns. Subscriptions live on the client's connection: when it is lost they end (the server forgets them), and a
 * new subscription is needed after the client reconnected.
 *
 * <p>Threads: thread-safe.
 */
public final class Subscription implements AutoCloseable {
    private final PubSub owner;
    private final MessageListener listener;
    private final List<byte[]> names;
    private final boolean pattern;
    private volatile boolean open = true;

    Subscription(PubSub owner, MessageListener listener, List<byte[]> names, boolean pattern) {
        this.owner = owner;
        this.listener = listener;
        this.names = names;
        this.pattern = pattern;
    }

    /** The channels (or patterns) subscribed to, as UTF-8 text. */
    public List<String> names() {
        List<String> out = new ArrayList<>(names.size());
        for (byte[] b : names) {
            out.add(new String(b, StandardCharsets.UTF_8));
        }
        return out;
    }

    /** Whether these are patterns (PSUBSCRIBE) rather than channels. */
    public boolean isPattern() {
        return pattern;
    }

    /** False once closed. */
    public boolean isOpen() {
        return open;
    }

    List<byte[]> rawNames() {
        return names;
    }

    /** On the delivery thread. */
    void deliver(PubSubMessage m) {
        if (open) {
            listener.onMessage(m);
        }
    }

    /** Unsubscribes (UNSUBSCRIBE or PUNSUBSCRIBE of the names no other subscription holds); idempotent. */
    @Override
    public void close() {
        if (open) {
            open = false;
            owner.unsubscribe(this);
        }
    }
}
