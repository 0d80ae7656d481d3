package io.rdmastore.store;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;

import org.bson.BsonDocument;
import org.bson.BsonValue;

import io.rdmastore.store.doc.BsonValues;

/**
 * Document collections. One read/write lock guards them all: finds share it, changes take it exclusively. Stored
 * documents are never changed in place (an update stores a new copy), so a snapshot may keep references to them
 * after the lock is released. The {@code apply*} methods run with the write lock held (or during recovery).
 */
final class Documents {
    /** One collection: documents in insertion order, indexed by normalised {@code _id}. */
    static final class Collection {
        final LinkedHashMap<Object, BsonDocument> byId = new LinkedHashMap<>();
    }

    final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    final HashMap<String, Collection> collections = new HashMap<>();
    final AtomicLong documents = new AtomicLong();

    Collection create(String name) {
        return collections.computeIfAbsent(name, n -> new Collection());
    }

    void applyDrop(String name) {
        Collection c = collections.remove(name);
        if (c != null) {
            documents.addAndGet(-c.byId.size());
        }
    }

    void applyPut(String name, BsonDocument doc) {
        BsonValue id = doc.get("_id");
        if (create(name).byId.put(BsonValues.idKey(id), doc) == null) {
            documents.incrementAndGet();
        }
    }

    void applyDelete(String name, BsonValue id) {
        Collection c = collections.get(name);
        if (c != null && c.byId.remove(BsonValues.idKey(id)) != null) {
            documents.decrementAndGet();
        }
    }
}
