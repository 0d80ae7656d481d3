package io.rdmastore.client;

import java.util.List;
import java.util.function.Consumer;

/**
 * Keys watched for one optimistic transaction (Redis's WATCH): read them, then run {@link #transaction}, which the
 * server executes only when none of the keys changed since the WATCH (else it returns null and nothing ran).
 *
 * <pre>{@code
 * while (true) {
 *     try (Watch w = client.watch("balance")) {
 *         long b = Long.parseLong(client.get("balance"));
 *         if (w.transaction(tx -> tx.set("balance", b - 10)) != null) break;   // else someone wrote it: retry
 *     }
 * }
 * }</pre>
 *
 * <p>A watch lives on the client's connection (the server keeps it under an id): a lost connection ends it, and its
 * transaction then fails. Threads: one thread at a time; a watch is used by one transaction at most.
 */
public final class Watch implements AutoCloseable {
    private final RdmaStoreClient client;
    private final long id;
    private boolean used;

    Watch(RdmaStoreClient client, long id) {
        this.client = client;
        this.id = id;
    }

    /**
     * Runs the transaction {@code body} queues if no watched key changed: its results, as
     * {@link RdmaStoreClient#transaction}; null when a watched key changed (nothing ran).
     */
    public List<Object> transaction(Consumer<Transaction> body) {
        if (used) {
            throw new IllegalStateException("this watch was used by a transaction already");
        }
        used = true;
        return client.transaction(id, body);
    }

    /** Forgets the watch when no transaction used it (UNWATCH). */
    @Override
    public void close() {
        if (!used) {
            used = true;
            client.unwatch(id);
        }
    }
}
