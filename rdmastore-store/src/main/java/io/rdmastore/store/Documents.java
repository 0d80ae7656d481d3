package io.rdmastore.store;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;

import org.bson.BsonDocument;
import org.bson.BsonValue;

import io.rdmastore.store.doc.BsonValues;
import io.rdmastore.store.doc.DocumentFilter;

/**
 * Document collections. One read/write lock guards them all: finds share it, changes take it exclusively. Stored
 * documents are never changed in place (an update stores a new copy), so a snapshot may keep references to them
 * after the lock is released. The {@code apply*} methods run with the write lock held (or during recovery).
 */
final class Documents {
    /** One collection: documents in insertion order, indexed by normalised {@code _id}, and its secondary indexes. */
    static final class Collection {
        final LinkedHashMap<Object, BsonDocument> byId = new LinkedHashMap<>();
        /** Secondary indexes by dotted field path, in the order they were created. */
        final LinkedHashMap<String, Index> indexes = new LinkedHashMap<>();

        private void indexAll(Object idKey, BsonDocument old, BsonDocument now) {
            for (Index ix : indexes.values()) {
                List<Object> was = old == null ? List.of() : ix.keys(old);
                List<Object> is = now == null ? List.of() : ix.keys(now);
                if (was.equals(is)) {
                    // an update that leaves the field alone (the usual one) changes nothing here: no bucket churn,
                    // and the document keeps its place in each bucket's order
                    continue;
                }
                ix.remove(idKey, was);
                ix.add(idKey, is);
            }
        }
    }

    /**
     * An equality index on one field path: each value found at the path (and each element of an array there), under
     * {@link BsonValues#idKey} so that numbers equal by value share a key, maps to the ids of the documents holding
     * it. A document without the field is not in the index; finds use it only for a scalar value (see
     * {@link #usable}), and check every candidate against the whole filter, so a key may be looser than equality.
     */
    static final class Index {
        final String field;
        private final String[] path;
        /**
         * Each key's documents: the one id itself while a single document holds the key (a unique field's every
         * bucket), an {@link Ids} set from the second on. A set per key cost about 200 bytes per document and an
         * allocation per insert, delete or changing update.
         */
        final HashMap<Object, Object> buckets = new HashMap<>();

        /** Two or more ids, in the order they gained the key. Never an id itself: ids are {@code idKey}s. */
        private static final class Ids extends LinkedHashSet<Object> {
            Ids(Object first) {
                super(4);
                add(first);
            }
        }

        Index(String field) {
            this.field = field;
            this.path = field.split("\\.");
        }

        /** Whether an equality with {@code v} can be answered from the index. */
        static boolean usable(BsonValue v) {
            return switch (v.getBsonType()) {
                case NULL, UNDEFINED, ARRAY, DOCUMENT, REGULAR_EXPRESSION, MIN_KEY, MAX_KEY -> false;
                default -> true;
            };
        }

        /** The document's keys in this index; one may repeat (adding to or removing from a bucket is idempotent). */
        List<Object> keys(BsonDocument doc) {
            List<BsonValue> values = new ArrayList<>(2);
            DocumentFilter.valuesAt(doc, path, values);
            List<Object> keys = new ArrayList<>(values.size());
            for (BsonValue v : values) {
                if (v.isArray()) {
                    for (BsonValue el : v.asArray()) {
                        if (usable(el)) {
                            keys.add(BsonValues.idKey(el));
                        }
                    }
                } else if (usable(v)) {
                    keys.add(BsonValues.idKey(v));
                }
            }
            return keys;
        }

        void add(Object idKey, BsonDocument doc) {
            add(idKey, keys(doc));
        }

        private void add(Object idKey, List<Object> keys) {
            for (Object k : keys) {
                Object b = buckets.putIfAbsent(k, idKey);
                if (b instanceof Ids ids) {
                    ids.add(idKey);
                } else if (b != null && !b.equals(idKey)) {
                    Ids ids = new Ids(b);
                    ids.add(idKey);
                    buckets.put(k, ids);
                }
            }
        }

        private void remove(Object idKey, List<Object> keys) {
            for (Object k : keys) {
                Object b = buckets.get(k);
                if (b instanceof Ids ids) {
                    if (ids.remove(idKey) && ids.size() == 1) {
                        buckets.put(k, ids.iterator().next());
                    }
                } else if (b != null && b.equals(idKey)) {
                    buckets.remove(k);
                }
            }
        }

        /** The ids of documents that hold {@code v} at the path (a usable value), in the order they gained it. */
        Set<Object> lookup(BsonValue v) {
            Object b = buckets.get(BsonValues.idKey(v));
            if (b == null) {
                return Set.of();
            }
            return b instanceof Ids ids ? ids : Set.of(b);
        }
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
        Object idKey = BsonValues.idKey(doc.get("_id"));
        Collection c = create(name);
        BsonDocument old = c.byId.put(idKey, doc);
        if (old == null) {
            documents.incrementAndGet();
        }
        c.indexAll(idKey, old, doc);
    }

    void applyDelete(String name, BsonValue id) {
        Collection c = collections.get(name);
        if (c == null) {
            return;
        }
        Object idKey = BsonValues.idKey(id);
        BsonDocument old = c.byId.remove(idKey);
        if (old != null) {
            documents.decrementAndGet();
            c.indexAll(idKey, old, null);
        }
    }

    /** Creates the index (and the collection) unless it exists, indexing the documents already there. */
    void applyIndexCreate(String name, String field) {
        Collection c = create(name);
        if (c.indexes.containsKey(field)) {
            return;
        }
        Index ix = new Index(field);
        for (var e : c.byId.entrySet()) {
            ix.add(e.getKey(), e.getValue());
        }
        c.indexes.put(field, ix);
    }

    void applyIndexDrop(String name, String field) {
        Collection c = collections.get(name);
        if (c != null) {
            c.indexes.remove(field);
        }
    }
}
