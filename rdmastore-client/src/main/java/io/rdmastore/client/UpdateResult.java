package io.rdmastore.client;

import org.bson.BsonValue;

/**
 * The outcome of an update.
 *
 * @param matched documents that matched the filter
 * @param modified documents that changed
 * @param upsertedId the _id of the document an upsert inserted, or null
 */
public record UpdateResult(long matched, long modified, BsonValue upsertedId) {
}
