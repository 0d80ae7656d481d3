package io.rdmastore.store;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

import org.bson.BsonDocument;
import org.bson.BsonValue;

/**
 * The storage engine. Thread-safe: any number of threads may call any method at once.
 */
public final class Store implements AutoCloseable {
    /** {@link #getEx} argument: leave the TTL as it is. */
    public static final long TTL_KEEP = -1;
    /** {@link #getEx} argument: remove the TTL. */
    public static final long TTL_PERSIST = -2;

    private Store() {
    }

    private static UnsupportedOperationException todo() {
        return new UnsupportedOperationException("not implemented yet");
    }

    public static Store open(StoreConfig config) { throw todo(); }
    public RecoveryReport recoveryReport() { throw todo(); }
    public StoreConfig config() { throw todo(); }

    public ValueType type(byte[] key) { throw todo(); }
    public long exists(byte[]... keys) { throw todo(); }
    public long delete(byte[]... keys) { throw todo(); }
    public boolean expireAt(byte[] key, long epochMillis) { throw todo(); }
    public long pttl(byte[] key) { throw todo(); }
    public long expireTime(byte[] key) { throw todo(); }
    public boolean persist(byte[] key) { throw todo(); }
    public boolean rename(byte[] from, byte[] to, boolean onlyIfAbsent) { throw todo(); }
    public long size() { throw todo(); }
    public void flushAll() { throw todo(); }
    public List<byte[]> keys(String globPattern) { throw todo(); }
    public ScanResult scan(long cursor, String globOrNull, int count, ValueType typeOrNull) { throw todo(); }
    public byte[] randomKey() { throw todo(); }

    public byte[] get(byte[] key) { throw todo(); }
    public <R> R readValue(byte[] key, Function<MemorySegment, R> reader) { throw todo(); }
    public SetResult set(byte[] key, byte[] value, SetOptions options) { throw todo(); }
    public void set(byte[] key, byte[] value) { throw todo(); }
    public byte[] getDel(byte[] key) { throw todo(); }
    public byte[] getEx(byte[] key, long expireAtMillis) { throw todo(); }
    public long incrBy(byte[] key, long delta) { throw todo(); }
    public String incrByFloat(byte[] key, double delta) { throw todo(); }
    public String incrByFloat(byte[] key, String delta) { throw todo(); }
    public long append(byte[] key, byte[] suffix) { throw todo(); }
    public long strlen(byte[] key) { throw todo(); }
    public byte[] getRange(byte[] key, long start, long end) { throw todo(); }
    public long setRange(byte[] key, long offset, byte[] bytes) { throw todo(); }
    public boolean mset(List<byte[]> keysAndValues, boolean onlyIfNoneExist) { throw todo(); }
    public List<byte[]> mget(byte[]... keys) { throw todo(); }

    public long hset(byte[] key, List<byte[]> fieldsAndValues) { throw todo(); }
    public boolean hsetnx(byte[] key, byte[] field, byte[] value) { throw todo(); }
    public byte[] hget(byte[] key, byte[] field) { throw todo(); }
    public List<byte[]> hmget(byte[] key, byte[]... fields) { throw todo(); }
    public List<byte[]> hgetAll(byte[] key) { throw todo(); }
    public long hdel(byte[] key, byte[]... fields) { throw todo(); }
    public boolean hexists(byte[] key, byte[] field) { throw todo(); }
    public long hlen(byte[] key) { throw todo(); }
    public List<byte[]> hkeys(byte[] key) { throw todo(); }
    public List<byte[]> hvals(byte[] key) { throw todo(); }
    public long hstrlen(byte[] key, byte[] field) { throw todo(); }
    public long hincrBy(byte[] key, byte[] field, long delta) { throw todo(); }
    public String hincrByFloat(byte[] key, byte[] field, String delta) { throw todo(); }
    public ScanResult hscan(byte[] key, long cursor, String globOrNull, int count) { throw todo(); }

    public BsonValue insertOne(String collection, BsonDocument document) { throw todo(); }
    public List<BsonValue> insertMany(String collection, List<BsonDocument> documents) { throw todo(); }
    public List<BsonDocument> find(String collection, BsonDocument filter, int limit) { throw todo(); }
    public BsonDocument findOne(String collection, BsonDocument filter) { throw todo(); }
    public UpdateResult updateOne(String collection, BsonDocument filter, BsonDocument update, boolean upsert) { throw todo(); }
    public UpdateResult updateMany(String collection, BsonDocument filter, BsonDocument update, boolean upsert) { throw todo(); }
    public UpdateResult replaceOne(String collection, BsonDocument filter, BsonDocument replacement, boolean upsert) { throw todo(); }
    public long deleteOne(String collection, BsonDocument filter) { throw todo(); }
    public long deleteMany(String collection, BsonDocument filter) { throw todo(); }
    public long count(String collection, BsonDocument filter) { throw todo(); }
    public boolean createCollection(String collection) { throw todo(); }
    public boolean dropCollection(String collection) { throw todo(); }
    public List<String> collections() { throw todo(); }

    public void flush() { throw todo(); }
    public void snapshot() { throw todo(); }
    public CompletableFuture<Path> snapshotAsync() { throw todo(); }
    public long lastSnapshotEpochMillis() { throw todo(); }
    public StoreStats stats() { throw todo(); }

    @Override
    public void close() { throw todo(); }
}
