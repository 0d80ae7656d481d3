package io.rdmastore.store;

/**
 * A client write reached a store that does not accept writes now: a secondary of a replica set, or a member between
 * primaries. Nothing was changed, so the write may be retried on the primary. The message names the reason (and the
 * primary when known); it starts with {@code NOTPRIMARY}.
 */
public final class ReadOnlyException extends StoreException {
    private static final long serialVersionUID = 1L;

    public ReadOnlyException(String message) {
        super(message);
    }
}
