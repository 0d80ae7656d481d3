package io.rdmastore.store;

import org.bson.BsonValue;

/**
 * What an update did, as MongoDB reports it. Immutable; any thread.
 *
 * @param matched    documents the filter matched
 * @param modified   documents actually changed (an update to the same values does not count)
 * @param upsertedId the {@code _id} of the document an upsert inserted, else null
 */
public record UpdateResult(long matched, long modified, BsonValue upsertedId) {
}
