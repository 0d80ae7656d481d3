package io.rdmastore.client;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.bson.BsonDocument;
import org.bson.BsonValue;

/**
 * A named collection of BSON documents, queried with MongoDB-style filters ({@code $eq $ne $gt $gte $lt $lte $in
 * $exists $and $or}, dotted paths) and updated with {@code $set $unset $inc}.
 *
 * <pre>{@code
 * DocumentCollection users = client.collection("users");
 * BsonValue id = users.insertOne(BsonDocument.parse("{name: 'ada', age: 36}"));
 * List<BsonDocument> adults = users.find(BsonDocument.parse("{age: {$gte: 18}}"));
 * users.updateOne(BsonDocument.parse("{name: 'ada'}"), BsonDocument.parse("{$inc: {age: 1}}"));
 * users.createIndex("name"); // finds on {name: ...} now examine only the matching documents
 * }</pre>
 *
 * <p>Threads: thread-safe, like its client. Memory: documents are encoded before a method returns; returned documents
 * are fresh and owned by the caller.
 */
public final class DocumentCollection {
    private static final BsonDocument ALL = new BsonDocument();

    private final RdmaStoreClient client;
    private final byte[] name;

    DocumentCollection(RdmaStoreClient client, String name) {
        this.client = client;
        this.name = name.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** The collection's name. */
    public String name() {
        return new String(name, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** Inserts documents; returns their _ids in order (generated ObjectIds where a document had none). */
    public CompletableFuture<List<BsonValue>> insertManyAsync(List<BsonDocument> documents) {
        if (documents.isEmpty()) {
            throw new IllegalArgumentException("insertMany needs at least one document");
        }
        List<byte[]> raw = new ArrayList<>(documents.size());
        for (BsonDocument d : documents) {
            raw.add(Bson.encode(d));
        }
        return client.docCall(ProtocolDescriptor.DOC_INSERT, w -> {
            w.bytes(name).i32(raw.size());
            for (byte[] d : raw) {
                w.bytes(d);
            }
        }, (st, r) -> {
            int n = r.i32("count");
            List<BsonValue> ids = new ArrayList<>(Math.min(n, 1 << 16));
            for (int i = 0; i < n; i++) {
                ids.add(Bson.read(r, "_id").get("_id"));
            }
            return ids;
        });
    }

    public List<BsonValue> insertMany(List<BsonDocument> documents) {
        return client.docSync(() -> insertManyAsync(documents));
    }

    public CompletableFuture<BsonValue> insertOneAsync(BsonDocument document) {
        return insertManyAsync(List.of(document)).thenApply(ids -> ids.get(0));
    }

    /** Inserts one document; returns its _id. A duplicate _id fails with {@code DUPKEY}. */
    public BsonValue insertOne(BsonDocument document) {
        return insertMany(List.of(document)).get(0);
    }

    /** Documents matching {@code filter}, at most {@code limit} (0: no limit). */
    public CompletableFuture<List<BsonDocument>> findAsync(BsonDocument filter, int limit) {
        if (limit < 0) {
            throw new IllegalArgumentException("limit must not be negative: " + limit);
        }
        byte[] f = Bson.encode(filter);
        return client.docCall(ProtocolDescriptor.DOC_FIND, w -> w.bytes(name).i32(limit).bytes(f), (st, r) -> {
            int n = r.i32("count");
            List<BsonDocument> out = new ArrayList<>(Math.min(n, 1 << 16));
            for (int i = 0; i < n; i++) {
                out.add(Bson.read(r, "document"));
            }
            return out;
        });
    }

    public List<BsonDocument> find(BsonDocument filter, int limit) {
        return client.docSync(() -> findAsync(filter, limit));
    }

    public List<BsonDocument> find(BsonDocument filter) {
        return find(filter, 0);
    }

    /** Every document of the collection. */
    public List<BsonDocument> find() {
        return find(ALL, 0);
    }

    /** The first document matching {@code filter}, or null. */
    public BsonDocument findOne(BsonDocument filter) {
        List<BsonDocument> l = find(filter, 1);
        return l.isEmpty() ? null : l.get(0);
    }

    private CompletableFuture<UpdateResult> update(BsonDocument filter, BsonDocument update, boolean many,
                                                   boolean upsert) {
        byte[] f = Bson.encode(filter);
        byte[] u = Bson.encode(update);
        int flags = (many ? ProtocolDescriptor.DOC_MANY : 0) | (upsert ? ProtocolDescriptor.DOC_UPSERT : 0);
        return client.docCall(ProtocolDescriptor.DOC_UPDATE, w -> w.bytes(name).u8(flags).bytes(f).bytes(u),
            (st, r) -> {
                long matched = r.i64("matched");
                long modified = r.i64("modified");
                byte[] id = r.bytes("upserted id", Integer.MAX_VALUE);
                return new UpdateResult(matched, modified, id.length == 0 ? null : Bson.decode(id).get("_id"));
            });
    }

    public CompletableFuture<UpdateResult> updateOneAsync(BsonDocument filter, BsonDocument update, boolean upsert) {
        return update(filter, update, false, upsert);
    }

    public CompletableFuture<UpdateResult> updateManyAsync(BsonDocument filter, BsonDocument update, boolean upsert) {
        return update(filter, update, true, upsert);
    }

    /** Applies {@code update} ({@code $set $unset $inc}) to the first matching document. */
    public UpdateResult updateOne(BsonDocument filter, BsonDocument update) {
        return client.docSync(() -> update(filter, update, false, false));
    }

    public UpdateResult updateOne(BsonDocument filter, BsonDocument update, boolean upsert) {
        return client.docSync(() -> update(filter, update, false, upsert));
    }

    public UpdateResult updateMany(BsonDocument filter, BsonDocument update) {
        return client.docSync(() -> update(filter, update, true, false));
    }

    public UpdateResult updateMany(BsonDocument filter, BsonDocument update, boolean upsert) {
        return client.docSync(() -> update(filter, update, true, upsert));
    }

    private CompletableFuture<Long> delete(BsonDocument filter, boolean many) {
        byte[] f = Bson.encode(filter);
        int flags = many ? ProtocolDescriptor.DOC_MANY : 0;
        return client.docCall(ProtocolDescriptor.DOC_DELETE, w -> w.bytes(name).u8(flags).bytes(f),
            (st, r) -> r.i64("deleted"));
    }

    public CompletableFuture<Long> deleteOneAsync(BsonDocument filter) {
        return delete(filter, false);
    }

    public CompletableFuture<Long> deleteManyAsync(BsonDocument filter) {
        return delete(filter, true);
    }

    /** Deletes the first matching document; returns 1 or 0. */
    public long deleteOne(BsonDocument filter) {
        return client.docSync(() -> delete(filter, false));
    }

    public long deleteMany(BsonDocument filter) {
        return client.docSync(() -> delete(filter, true));
    }

    public CompletableFuture<Long> countDocumentsAsync(BsonDocument filter) {
        byte[] f = Bson.encode(filter);
        return client.docCall(ProtocolDescriptor.DOC_COUNT, w -> w.bytes(name).bytes(f), (st, r) -> r.i64("count"));
    }

    public long countDocuments(BsonDocument filter) {
        return client.docSync(() -> countDocumentsAsync(filter));
    }

    public long countDocuments() {
        return countDocuments(ALL);
    }

    private CompletableFuture<Boolean> index(String field, int action) {
        return client.docCall(ProtocolDescriptor.DOC_INDEX, w -> w.bytes(name).u8(action).string(field),
            (st, r) -> r.u8("changed") != 0);
    }

    /**
     * Creates an equality index on {@code field} (a dotted path), indexing the documents already there. Finds,
     * updates, deletes and counts whose filter requires the field to equal a value (not null, an array or a document)
     * then examine only the documents holding it. Completes with false when the index existed.
     */
    public CompletableFuture<Boolean> createIndexAsync(String field) {
        return index(field, ProtocolDescriptor.INDEX_CREATE);
    }

    /** As {@link #createIndexAsync}; true when the index is new. {@code _id} is always indexed. */
    public boolean createIndex(String field) {
        return client.docSync(() -> createIndexAsync(field));
    }

    /** Drops the index on {@code field}; false when there was none. The {@code _id} index cannot be dropped. */
    public boolean dropIndex(String field) {
        return client.docSync(() -> index(field, ProtocolDescriptor.INDEX_DROP));
    }

    /** The indexed fields: {@code _id} first, then the others in the order they were created. */
    public List<String> listIndexes() {
        return client.docSync(() -> client.docCall(ProtocolDescriptor.DOC_INDEXES, w -> w.bytes(name), (st, r) -> {
            int n = r.i32("count");
            List<String> out = new ArrayList<>(Math.min(n, 64));
            for (int i = 0; i < n; i++) {
                out.add(r.string("field", 1024));
            }
            return out;
        }));
    }
}
