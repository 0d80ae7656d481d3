package io.rdmastore.server;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.ProtocolException;
import io.rdmastore.client.protocol.WireReader;
import io.rdmastore.client.protocol.WireWriter;
import io.rdmastore.server.replication.ReplicaSet;
import io.rdmastore.store.SetOptions;
import io.rdmastore.store.SetResult;
import io.rdmastore.store.Store;
import io.rdmastore.store.StoreException;
import io.rdmastore.store.UpdateResult;
import io.rdmastore.store.doc.BsonValues;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.TransportStatus;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.bson.BSONException;
import org.bson.BsonBinaryReader;
import org.bson.BsonDocument;
import org.bson.BsonValue;
import org.bson.codecs.BsonDocumentCodec;
import org.bson.codecs.DecoderContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One native-protocol connection: decodes each request, executes it on the store inline on the transport thread that
 * delivered it, and replies on the same connection in request order.
 *
 * <p>Threads: {@link #onMessage} runs on the connection's transport thread, never concurrently (the SPI's promise), so
 * the reply writer, reader and store options are reused without locks. A long command (KEYS, SMEMBERS, HGETALL, ...
 * over a large collection) runs on the RESP face's long-command pool instead, and the requests that arrive meanwhile
 * are copied and run there after it, in order; until they are done the transport thread only queues, so one thread
 * at a time still owns the session's state. Replies that the transport refuses with
 * {@code BACK_PRESSURED} are queued (copied) and retried by the server's retry thread under this session's lock; while
 * anything is queued, newer replies queue behind it, so order is kept and nothing is dropped. A SNAPSHOT reply is a
 * placeholder in the same queue until the store's background snapshot completes.
 *
 * <p>Memory: the request segment is only read during {@code onMessage}; values that outlive it (keys and values for
 * the store) are copied into arrays, as the store's API takes them. A GET hands the transport the reply's header and
 * the store's off-heap view of the value, which it gathers into what it sends ({@link #appendValue}).
 */
final class NativeSession implements MessageHandler {
    private static final Logger LOG = LoggerFactory.getLogger(NativeSession.class);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final BsonDocumentCodec CODEC = new BsonDocumentCodec();
    private static final DecoderContext DECODE = DecoderContext.builder().build();
    private static final int MAX_COLLECTION_NAME = 1024;
    private static final byte[] PONG = "PONG".getBytes(StandardCharsets.US_ASCII);

    private final RdmaStoreServer server;
    private final Store store;
    private final ServerConfig config;
    private final Connection connection;
    private final long createdMillis = System.currentTimeMillis();
    private final WireReader reader = new WireReader();
    private final WireWriter writer = new WireWriter(16 * 1024);
    private final SetOptions setOptions = new SetOptions();
    /** Phase timer, or null when the server's timing is off (then no extra clock is read). */
    private final ServerTiming timing;
    /** When the current request's store operation began; written by {@link #markStore()} only while timing. */
    private long storeStartNanos;
    /** HGETALL's reader: the store's fields and values go straight into the reply, uncopied. Allocated once. */
    private final HashToWire hashToWire = new HashToWire();
    /** GET's zero-copy reader: appends the value to the reply, or says it is absent. Allocated once. */
    private final Function<MemorySegment, Boolean> copyValue = segment -> {
        if (segment == null) {
            return Boolean.FALSE;
        }
        appendValue(segment);
        return Boolean.TRUE;
    };

    // ---- replies waiting for the transport (guarded by this) ----
    private final ArrayDeque<PendingReply> queue = new ArrayDeque<>();
    private long queuedBytes;
    /** Entries in {@link #queue}; read without the lock on the hot path, written under it. */
    private volatile int queued;
    private boolean retryScheduled;
    private int retryDelayMicros;
    private volatile boolean closed;
    /** Oplog index of this connection's last write: what a WAIT waits for. The thread running its requests. */
    private volatile long lastWriteIndex;
    /**
     * While a long command runs off the transport thread ({@link #offloadCommand}): the requests that arrived after it,
     * copied, run in order once it has replied; null otherwise. Under {@link #holdLock}, with the two fields below.
     */
    private ArrayDeque<byte[]> held;
    private long heldBytes;
    /** The connection closed while a long command ran: {@link #finishClose} runs once the held requests are done. */
    private boolean closeDeferred;
    private Throwable deferredCause;
    private final Object holdLock = new Object();
    /** The current request is a long command to run on the pool once {@link #handle} ends; its thread only. */
    private boolean offloadPending;
    /** Whether requests run on the long-command pool now (held ones); read and written by the thread running them. */
    private boolean onPool;
    /** Most bytes of requests held behind a long command before the connection is closed (a flood). */
    private static final long MAX_HELD_BYTES = 256L << 20;
    /** Values this connection holds lent (GET_LARGE); counted by {@link ValueLeases}. */
    final java.util.concurrent.atomic.AtomicInteger valueLeases = new java.util.concurrent.atomic.AtomicInteger();

    /** A reply that could not be offered yet; {@code bytes} is null until a deferred reply is ready. */
    private static final class PendingReply {
        byte[] bytes;

        PendingReply(byte[] bytes) {
            this.bytes = bytes;
        }
    }

    NativeSession(RdmaStoreServer server, Store store, ServerConfig config, Connection connection) {
        this.server = server;
        this.store = store;
        this.config = config;
        this.connection = connection;
        this.timing = server.timing();
    }

    Connection connection() {
        return connection;
    }

    long createdMillis() {
        return createdMillis;
    }

    @Override
    public void onMessage(Connection c, MemorySegment message) {
        synchronized (holdLock) {
            if (held != null) {
                // a long command of this connection runs: this request runs after it, in order
                heldBytes += message.byteSize();
                if (heldBytes > MAX_HELD_BYTES) {
                    LOG.info("closing {}: {} bytes of requests sent behind a long command exceed {}",
                        connection.remoteAddress(), heldBytes, MAX_HELD_BYTES);
                    held.clear();
                    connection.close();
                    return;
                }
                held.add(message.toArray(ValueLayout.JAVA_BYTE));
                return;
            }
        }
        handle(message);
    }

    /**
     * Runs one request and sends its reply: on the transport thread, or on the long-command pool for the requests
     * held behind a long command (never two at once: while requests are held, the transport thread only queues).
     */
    private void handle(MemorySegment message) {
        long size = message.byteSize();
        if (size < ProtocolDescriptor.HEADER_LENGTH) {
            // Without a request id no reply can be matched to this request: the framing is broken, so close.
            LOG.info("closing {}: request of {} bytes is shorter than the {}-byte header", connection.remoteAddress(),
                size, ProtocolDescriptor.HEADER_LENGTH);
            connection.close();
            return;
        }
        int opcode = message.get(ValueLayout.JAVA_BYTE, ProtocolDescriptor.TYPE_OFFSET) & 0xFF;
        long id = message.get(LONG, ProtocolDescriptor.REQUEST_ID_OFFSET);
        WireWriter w = writer.header(ProtocolDescriptor.STATUS_OK, id);
        long start = System.nanoTime();
        storeStartNanos = start;
        ReplicaSet rs = server.replicaSet();
        if (rs != null) {
            ReplicaSet.enterRequest();
        }
        try {
            if (size > config.maxRequestBytes()) {
                error(id, "ERR request of " + size + " bytes exceeds limit of " + config.maxRequestBytes()
                    + " bytes (max-request-bytes)");
            } else {
                reader.wrap(message, ProtocolDescriptor.HEADER_LENGTH);
                if (rs == null) {
                    execute(opcode, id, reader, w);
                } else {
                    // Only a replica set's WAIT needs the index of this connection's last write.
                    long before = Store.lastCommitIndex();
                    execute(opcode, id, reader, w);
                    long after = Store.lastCommitIndex();
                    if (after != before) {
                        lastWriteIndex = after;
                    }
                }
            }
        } catch (WireReader.LimitException e) {
            error(id, "ERR " + e.getMessage());
        } catch (ProtocolException e) {
            error(id, "ERR malformed " + ProtocolDescriptor.opcodeName(opcode) + " request: " + e.getMessage());
        } catch (StoreException e) {
            error(id, storeError(e));
        } catch (BSONException e) {
            error(id, "ERR malformed BSON in " + ProtocolDescriptor.opcodeName(opcode) + ": " + e.getMessage());
        } catch (RuntimeException e) {
            // A bug or an unsupported operation must cost one error reply, never the transport thread.
            LOG.warn("{} from {} failed", ProtocolDescriptor.opcodeName(opcode), connection.remoteAddress(), e);
            error(id, "ERR internal error in " + ProtocolDescriptor.opcodeName(opcode) + ": " + e);
        } finally {
            reader.clear();
        }
        long executed = System.nanoTime();
        // a long command taken off this thread is timed where it runs, as this same request (runLong)
        boolean offloaded = offloadPending;
        if (!offloaded) {
            server.recordProcessNanos(executed - start);
        }
        try {
            try {
                send(writer);
            } finally {
                if (rs != null) {
                    rs.exitRequest();
                }
            }
            if (timing != null && !offloaded) {
                timing.record(opcode, storeStartNanos - start, executed - storeStartNanos,
                    System.nanoTime() - executed);
            }
        } finally {
            if (offloaded) {
                offloadPending = false;
                submitLong(message.toArray(ValueLayout.JAVA_BYTE));
            }
        }
    }

    /** Marks the end of decoding (Source) and the start of the store operation (Process) for the phase timer. */
    private void markStore() {
        if (timing != null) {
            storeStartNanos = System.nanoTime();
        }
    }

    private void error(long id, String text) {
        writer.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(text);
    }

    /** The store's messages are client-facing; Redis-style ones already start with their code. */
    static String storeError(StoreException e) {
        String m = String.valueOf(e.getMessage());
        int space = m.indexOf(' ');
        String first = space > 0 ? m.substring(0, space) : m;
        boolean coded = first.length() >= 2 && first.chars().allMatch(ch -> ch >= 'A' && ch <= 'Z');
        return coded ? m : "ERR " + m;
    }

    // ---- dispatch ----

    private void execute(int opcode, long id, WireReader r, WireWriter w) {
        currentOpcode = opcode;
        switch (opcode) {
            case ProtocolDescriptor.PING -> {
                if (r.hasRemaining()) {
                    w.raw(r.restSlice());
                } else {
                    w.raw(PONG);
                }
            }
            case ProtocolDescriptor.GET -> {
                byte[] key = key(r);
                r.end();
                markStore();
                if (store.readValue(key, copyValue) != Boolean.TRUE) {
                    w.u8At(ProtocolDescriptor.TYPE_OFFSET, ProtocolDescriptor.STATUS_NULL);
                }
            }
            case ProtocolDescriptor.GET_LARGE -> getLarge(id, r, w);
            case ProtocolDescriptor.VALUE_RELEASE -> {
                w.i64(releaseLeases(r));
                r.end();
            }
            case ProtocolDescriptor.SET -> set(r, w);
            case ProtocolDescriptor.SET_LARGE -> setLarge(id, r);
            case ProtocolDescriptor.DEL -> {
                byte[][] keys = keys(r, "key", config.maxKeyBytes());
                route(keys);
                r.end();
                w.i64(store.delete(keys));
            }
            case ProtocolDescriptor.EXISTS -> {
                byte[][] keys = keys(r, "key", config.maxKeyBytes());
                route(keys);
                r.end();
                w.i64(store.exists(keys));
            }
            case ProtocolDescriptor.PEXPIRE -> {
                byte[] key = key(r);
                long ms = r.i64("ttl");
                r.end();
                w.i64(store.expireAt(key, saturatedAdd(System.currentTimeMillis(), ms)) ? 1 : 0);
            }
            case ProtocolDescriptor.PTTL -> {
                byte[] key = key(r);
                r.end();
                w.i64(store.pttl(key));
            }
            case ProtocolDescriptor.INCRBY -> {
                byte[] key = key(r);
                long delta = r.i64("delta");
                r.end();
                w.i64(store.incrBy(key, delta));
            }
            case ProtocolDescriptor.HSET -> {
                byte[] key = key(r);
                List<byte[]> fv = pairs(r, "field", config.maxKeyBytes(), "value", config.maxValueBytes(), true);
                r.end();
                w.i64(store.hset(key, fv));
            }
            case ProtocolDescriptor.HGET -> {
                byte[] key = key(r);
                byte[] field = r.bytes("field", config.maxKeyBytes());
                r.end();
                byte[] v = store.hget(key, field);
                if (v == null) {
                    w.u8At(ProtocolDescriptor.TYPE_OFFSET, ProtocolDescriptor.STATUS_NULL);
                } else {
                    w.raw(v);
                }
            }
            case ProtocolDescriptor.HGETALL -> {
                byte[] key = key(r);
                r.end();
                hashToWire.w = w;
                store.hgetAll(key, hashToWire);
            }
            case ProtocolDescriptor.HDEL -> {
                byte[] key = key(r);
                byte[][] fields = keys(r, "field", config.maxKeyBytes());
                r.end();
                w.i64(store.hdel(key, fields));
            }
            case ProtocolDescriptor.MGET -> {
                byte[][] keys = keys(r, "key", config.maxKeyBytes());
                route(keys);
                r.end();
                List<byte[]> values = store.mget(keys);
                w.i32(values.size());
                for (byte[] v : values) {
                    w.nullableBytes(v);
                }
            }
            case ProtocolDescriptor.MSET -> {
                List<byte[]> kv = pairs(r, "key", config.maxKeyBytes(), "value", config.maxValueBytes(), true);
                routePairs(kv);
                r.end();
                store.mset(kv, false);
            }
            case ProtocolDescriptor.DOC_INSERT -> docInsert(r, w);
            case ProtocolDescriptor.DOC_FIND -> {
                String coll = collection(r);
                int limit = r.i32("limit");
                if (limit < 0) {
                    throw new ProtocolException("negative limit " + limit);
                }
                BsonDocument filter = document(r, "filter");
                r.end();
                markStore();
                List<BsonDocument> docs = store.find(coll, filter, limit);
                w.i32(docs.size());
                for (BsonDocument d : docs) {
                    writeDocument(w, d);
                }
            }
            case ProtocolDescriptor.DOC_UPDATE -> {
                String coll = collection(r);
                int flags = flags(r, ProtocolDescriptor.DOC_MANY | ProtocolDescriptor.DOC_UPSERT);
                BsonDocument filter = document(r, "filter");
                BsonDocument update = document(r, "update");
                r.end();
                markStore();
                boolean upsert = (flags & ProtocolDescriptor.DOC_UPSERT) != 0;
                UpdateResult u = (flags & ProtocolDescriptor.DOC_MANY) != 0
                    ? store.updateMany(coll, filter, update, upsert) : store.updateOne(coll, filter, update, upsert);
                w.i64(u.matched()).i64(u.modified());
                if (u.upsertedId() == null) {
                    w.i32(0);
                } else {
                    writeDocument(w, new BsonDocument("_id", u.upsertedId()));
                }
            }
            case ProtocolDescriptor.DOC_DELETE -> {
                String coll = collection(r);
                int flags = flags(r, ProtocolDescriptor.DOC_MANY);
                BsonDocument filter = document(r, "filter");
                r.end();
                markStore();
                w.i64((flags & ProtocolDescriptor.DOC_MANY) != 0 ? store.deleteMany(coll, filter)
                    : store.deleteOne(coll, filter));
            }
            case ProtocolDescriptor.DOC_COUNT -> {
                String coll = collection(r);
                BsonDocument filter = document(r, "filter");
                r.end();
                w.i64(store.count(coll, filter));
            }
            case ProtocolDescriptor.DOC_INDEX -> {
                String coll = collection(r);
                int action = r.u8("action");
                String field = r.string("field", 1024);
                r.end();
                markStore();
                boolean changed = switch (action) {
                    case ProtocolDescriptor.INDEX_CREATE -> store.createIndex(coll, field);
                    case ProtocolDescriptor.INDEX_DROP -> store.dropIndex(coll, field);
                    default -> throw new ProtocolException("unknown DOC_INDEX action " + action);
                };
                w.u8(changed ? 1 : 0);
            }
            case ProtocolDescriptor.DOC_INDEXES -> {
                String coll = collection(r);
                r.end();
                List<String> fields = store.indexes(coll);
                w.i32(fields.size());
                for (String f : fields) {
                    w.string(f);
                }
            }
            case ProtocolDescriptor.INFO -> {
                r.end();
                w.rawString(server.info(connection));
            }
            case ProtocolDescriptor.SNAPSHOT -> {
                r.end();
                snapshot(id);
            }
            case ProtocolDescriptor.BLOB_GET -> server.blobs().get(this, r, w);
            case ProtocolDescriptor.BLOB_GET_DONE -> server.blobs().getDone(this, r, w);
            case ProtocolDescriptor.BLOB_PUT -> server.blobs().put(this, id, r, w);
            case ProtocolDescriptor.BLOB_DEL -> server.blobs().delete(r, w);
            case ProtocolDescriptor.BLOB_STAGE -> server.blobs().stage(this, id, r);
            case ProtocolDescriptor.BLOB_STAGE_PROGRESS -> server.blobs().stageProgress(r, w);
            case ProtocolDescriptor.REPL_BLOB_LEND -> {
                ReplicaSet rs = server.replicaSet();
                String refused = rs == null ? "ERR this server is not a member of a replica set" : rs.checkKey(r);
                if (refused != null) {
                    error(id, refused);
                } else {
                    server.blobs().lendVersion(this, r, w);
                }
            }
            case ProtocolDescriptor.ROLE -> {
                r.end();
                role(w);
            }
            case ProtocolDescriptor.WAIT -> {
                int replicas = r.i32("numReplicas");
                long timeout = r.i64("timeoutMillis");
                r.end();
                if (timeout <= 0) {
                    throw new ProtocolException("timeout must be positive, was " + timeout);
                }
                awaitReplication(id, replicas, timeout, false);
            }
            case ProtocolDescriptor.READ_FENCE -> {
                long timeout = r.i64("timeoutMillis");
                r.end();
                if (timeout <= 0) {
                    throw new ProtocolException("timeout must be positive, was " + timeout);
                }
                awaitReplication(id, 0, timeout, true);
            }
            case ProtocolDescriptor.REPLICA_SET_CONFIG -> {
                int action = r.u8("action");
                String member = r.string("member", 256);
                String address = r.string("address", 1024);
                r.end();
                replicaSetConfig(id, action, member, address);
            }
            case ProtocolDescriptor.CLUSTER_MAP -> clusterMap(id, r, w);
            case ProtocolDescriptor.MIGRATE_PULL -> migratePull(id, r);
            case ProtocolDescriptor.COMMAND, ProtocolDescriptor.COMMAND_READ -> {
                byte[][] argv = keys(r, "argument", config.maxValueBytes());
                r.end();
                markStore();
                boolean readOnly = opcode == ProtocolDescriptor.COMMAND_READ;
                if (commands().isLong(argv) && offloadCommand()) {
                    // the reply leaves from the pool, before the replies of the requests held behind it
                    w.reset();
                } else {
                    commands().execute(id, argv, readOnly, w);
                }
            }
            case ProtocolDescriptor.TRANSACTION -> {
                long watch = r.i64("watch");
                int n = r.i32("command count");
                if (n <= 0 || (long) n * 8 > r.remaining()) {
                    throw new ProtocolException("command count " + n + " does not fit the " + r.remaining()
                        + " remaining bytes");
                }
                List<byte[][]> list = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    list.add(keys(r, "argument", config.maxValueBytes()));
                }
                r.end();
                markStore();
                commands().transaction(id, watch, list, w);
            }
            case ProtocolDescriptor.WATCH -> {
                byte[][] keys = keys(r, "key", config.maxKeyBytes());
                r.end();
                commands().watch(id, keys, w);
            }
            case ProtocolDescriptor.UNWATCH -> {
                long watch = r.i64("watch");
                r.end();
                if (!commands().unwatch(watch)) {
                    w.u8At(ProtocolDescriptor.TYPE_OFFSET, ProtocolDescriptor.STATUS_NULL);
                }
            }
            case ProtocolDescriptor.SUBSCRIBE, ProtocolDescriptor.PSUBSCRIBE, ProtocolDescriptor.UNSUBSCRIBE,
                ProtocolDescriptor.PUNSUBSCRIBE -> {
                boolean un = opcode == ProtocolDescriptor.UNSUBSCRIBE || opcode == ProtocolDescriptor.PUNSUBSCRIBE;
                byte[][] names = channels(r, un);
                r.end();
                commands().subscribe(id, names,
                    opcode == ProtocolDescriptor.PSUBSCRIBE || opcode == ProtocolDescriptor.PUNSUBSCRIBE, un, w);
            }
            case ProtocolDescriptor.REPL_PREPARE, ProtocolDescriptor.REPL_FETCH, ProtocolDescriptor.REPL_SNAPSHOT,
                ProtocolDescriptor.REPL_READ, ProtocolDescriptor.REPL_TERMS -> replication(opcode, id, r, w);
            default -> error(id, "ERR unknown opcode " + String.format("0x%02x", opcode)
                + " (this server speaks native protocol version " + ProtocolDescriptor.VERSION + ")");
        }
    }

    // ---- large values (51-52) ----

    /** GET_LARGE's reader: sends a value below the threshold inline, answers LARGE for one to lend. Allocated once. */
    private final Function<MemorySegment, Object> inlineOrLend = segment -> {
        if (segment == null) {
            return null;
        }
        if (lendsValueOf(segment.byteSize())) {
            return Boolean.FALSE;
        }
        writer.u8(ProtocolDescriptor.VALUE_INLINE);
        appendValue(segment);
        return Boolean.TRUE;
    };

    /**
     * Ends the reply with a stored value, inside the store's read: when no reply waits before this one, the transport
     * gathers the header and the value straight from the store's memory into what it sends, and the writer is left
     * empty so that nothing more is sent; otherwise (or when the transport refuses it) the value is copied behind the
     * header and sent as usual. One copy of the value fewer per GET (docs/decisions.md, "GET's value gathered").
     */
    private void appendValue(MemorySegment value) {
        if (queued == 0 && writer.position() + value.byteSize() <= connection.maxMessageLength()) {
            int status = connection.offer(writer.message(), value);
            if (status >= 0 || status == TransportStatus.CLOSED) {
                writer.reset();
                return;
            }
        }
        writer.raw(value);
    }

    private boolean lendsValueOf(long length) {
        return server.values().lends(this, length);
    }

    /** GET_LARGE: ends the leases the request names, then sends the value or lends it (docs/protocol.md). */
    private void getLarge(long id, WireReader r, WireWriter w) {
        byte[] key = key(r);
        releaseLeases(r);
        r.end();
        markStore();
        Object read = store.readValue(key, inlineOrLend);
        if (read == null) {
            w.u8At(ProtocolDescriptor.TYPE_OFFSET, ProtocolDescriptor.STATUS_NULL);
        } else if (read == Boolean.FALSE && !server.values().lend(this, key, w)) {
            // shrank below the threshold between the two looks: send it as it is now
            w.header(ProtocolDescriptor.STATUS_OK, id);
            if (store.readValue(key, inlineOrLend) == null) {
                w.u8At(ProtocolDescriptor.TYPE_OFFSET, ProtocolDescriptor.STATUS_NULL);
            }
        }
    }

    /** Reads {@code n:i32, n x leaseId:i64} and ends those of this connection's leases; returns how many ended. */
    private long releaseLeases(WireReader r) {
        int n = r.i32("lease count");
        if (n < 0 || n > ValueLeases.MAX_RELEASES_PER_REQUEST) {
            throw new ProtocolException("lease count " + n + " outside 0.." + ValueLeases.MAX_RELEASES_PER_REQUEST);
        }
        long ended = 0;
        for (int i = 0; i < n; i++) {
            if (server.values().release(this, r.i64("lease id"))) {
                ended++;
            }
        }
        return ended;
    }

    // ---- data-type commands (41-49) ----

    /** This connection's data-type command runner, made on its first use; transport thread only. */
    private io.rdmastore.server.resp.NativeCommands commands;

    private io.rdmastore.server.resp.NativeCommands commands() {
        if (commands == null) {
            commands = new io.rdmastore.server.resp.NativeCommands(server.respFace(), server.clientId(this),
                config.maxKeyBytes(), sink);
            if (closed) {
                commands.close();
            }
        }
        return commands;
    }

    /** {@code count:i32, count x channel}; a count of 0 ({@code orNone}: all of the connection's) gives none. */
    private byte[][] channels(WireReader r, boolean orNone) {
        int n = r.i32("channel count");
        if (n < 0 || (long) n * 4 > r.remaining() || (n == 0 && !orNone)) {
            throw new ProtocolException("channel count " + n + " does not fit the " + r.remaining()
                + " remaining bytes, or is 0");
        }
        byte[][] out = new byte[n][];
        for (int i = 0; i < n; i++) {
            out[i] = r.bytes("channel", config.maxKeyBytes());
        }
        return out;
    }

    /** Replies outside the request order (a blocking pop that completed) and pub/sub messages. */
    private final io.rdmastore.server.resp.NativeCommands.Sink sink = new io.rdmastore.server.resp.NativeCommands.Sink() {
        @Override
        public void late(byte[] message, long writeIndex) {
            if (writeIndex > 0) {
                wroteAt(writeIndex);
            }
            sendUnordered(message, 0);
        }

        @Override
        public void push(byte[] message, long limitBytes) {
            sendUnordered(message, limitBytes);
        }

        @Override
        public java.util.concurrent.ScheduledExecutorService scheduler() {
            return server.retryExecutor();
        }
    };

    /**
     * Any thread: sends a message that keeps no place in the reply order: at once when nothing is queued, else behind
     * what is. With {@code limitBytes} > 0 (pub/sub), a client with more than that queued is disconnected, like RESP's
     * pub/sub output limit.
     */
    private void sendUnordered(byte[] message, long limitBytes) {
        synchronized (this) {
            if (closed) {
                return;
            }
            if (queue.isEmpty()) {
                int status = connection.offer(MemorySegment.ofArray(message));
                if (status >= 0 || status == TransportStatus.CLOSED) {
                    return;
                }
            }
            queue.add(new PendingReply(message));
            queued = queue.size();
            queuedBytes += message.length;
            long limit = limitBytes > 0 ? Math.min(limitBytes, config.maxPendingReplyBytes())
                : config.maxPendingReplyBytes();
            if (queuedBytes > limit && queue.size() > 1) {
                LOG.info("closing {}: {} reply and message bytes queued for a client that does not read them "
                    + "(limit {})", connection.remoteAddress(), queuedBytes, limit);
                connection.close();
                return;
            }
            drainLocked();
        }
    }

    // ---- replica sets ----

    private final ReplicaSet.Replier replier = new ReplicaSet.Replier() {
        @Override
        public Object defer() {
            return deferReply();
        }

        @Override
        public void complete(Object placeholder, byte[] reply) {
            completeDeferred(placeholder, reply);
        }

        @Override
        public String transportName() {
            return connection.transportName();
        }

        @Override
        public String transportReason() {
            return connection.selectionReason();
        }
    };

    private void replication(int opcode, long id, WireReader r, WireWriter w) {
        ReplicaSet rs = server.replicaSet();
        if (rs == null) {
            error(id, "ERR this server is not a member of a replica set");
            return;
        }
        byte[] reply = rs.handle(opcode, id, r, replier);
        if (reply != null) {
            w.reset().raw(reply);
        }
    }

    /** REPLICA_SET_CONFIG: adds (1: address host:port) or removes (2) a member; answered once Ratis committed it. */
    private void replicaSetConfig(long id, int action, String member, String address) {
        ReplicaSet rs = server.replicaSet();
        if (rs == null) {
            error(id, "ERR this server is not a member of a replica set");
            return;
        }
        java.util.concurrent.CompletableFuture<Void> f;
        if (action == 1) {
            int colon = address.lastIndexOf(':');
            int port;
            try {
                port = colon > 0 ? Integer.parseInt(address.substring(colon + 1)) : -1;
            } catch (NumberFormatException e) {
                port = -1;
            }
            if (port < 1 || port > 65535 - 10000) {
                error(id, "ERR member address must be host:port, was '" + address + "'");
                return;
            }
            f = rs.addMember(member, address.substring(0, colon), port, port + 10000);
        } else if (action == 2) {
            f = rs.removeMember(member);
        } else {
            throw new ProtocolException("unknown action " + action + " (1 add, 2 remove)");
        }
        Object placeholder = deferReply();
        f.whenComplete((v, err) -> {
            WireWriter out = new WireWriter(256);
            if (err == null) {
                out.header(ProtocolDescriptor.STATUS_OK, id);
            } else {
                Throwable cause = err.getCause() != null ? err.getCause() : err;
                out.header(ProtocolDescriptor.STATUS_ERROR, id).rawString("ERR replica set change failed: "
                    + cause.getMessage());
            }
            completeDeferred(placeholder, out.toByteArray());
        });
    }

    /**
     * MIGRATE_PULL (docs/cluster.md, "How keys move"): the batch is pulled and applied on a thread of its own (one-sided
     * reads may wait on the peer; a WAIT for the set may take long); the reply keeps its place in the reply order.
     */
    private void migratePull(long id, WireReader r) {
        int slot = r.i32("slot");
        int count = r.i32("count");
        long length = r.i64("length");
        int crc = r.i32("crc32c");
        byte[] descriptor = r.bytes("descriptor", 64 * 1024);
        int waitReplicas = r.i32("waitReplicas");
        long timeout = r.i64("timeoutMillis");
        r.end();
        if (timeout <= 0) {
            throw new ProtocolException("timeout must be positive, was " + timeout);
        }
        io.rdmastore.server.resp.RespFace face = server.respFace();
        Object placeholder = deferReply();
        Thread.ofVirtual().name("rdmastore-migrate-in").start(() -> {
            WireWriter out = new WireWriter(256);
            try {
                long applied = face.migration().receive(connection, slot, count, length, crc, descriptor,
                    waitReplicas, timeout);
                out.header(ProtocolDescriptor.STATUS_OK, id).i64(applied);
            } catch (Exception e) {
                Throwable t = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null
                    ? e.getCause() : e;
                String text = String.valueOf(t.getMessage());
                out.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(text.matches("^[A-Z]+ .*") ? text
                    : "ERR MIGRATE_PULL failed: " + text);
            }
            completeDeferred(placeholder, out.toByteArray());
        });
    }

    /** ROLE: this member's role, the term, and where the primary is (a standalone server says so). */
    private void role(WireWriter w) {
        ReplicaSet rs = server.replicaSet();
        if (rs == null) {
            w.u8(0).i64(0).string("").string("").string("").string("").i32(0);
            return;
        }
        int role = switch (rs.role()) {
            case PRIMARY -> 1;
            case SECONDARY -> rs.primaryId() == null ? 3 : 2;
            default -> 3;
        };
        String primary = rs.primaryId();
        w.u8(role).i64(rs.term()).string(rs.setName()).string(rs.nodeId()).string(primary == null ? "" : primary)
            .string(rs.primaryAddress());
        w.i32(rs.members().size());
        for (var m : rs.members().entrySet()) {
            w.string(m.getKey()).string(m.getValue().getHostString() + ":" + m.getValue().getPort());
        }
    }

    /** WAIT and READ_FENCE: the reply keeps its place in the reply order and is given when the set answers. */
    private void awaitReplication(long id, int replicas, long timeoutMillis, boolean fence) {
        ReplicaSet rs = server.replicaSet();
        if (rs == null) {
            if (!fence) {
                writer.i64(0);
            }
            return;
        }
        Object placeholder = deferReply();
        var f = fence ? rs.confirmPrimary(timeoutMillis) : rs.awaitReplicas(lastWriteIndex, replicas, timeoutMillis);
        f.whenComplete((count, err) -> {
            WireWriter out = new WireWriter(128);
            if (err == null) {
                out.header(ProtocolDescriptor.STATUS_OK, id);
                if (!fence) {
                    out.i64(count);
                }
            } else {
                Throwable cause = err instanceof java.util.concurrent.CompletionException && err.getCause() != null
                    ? err.getCause() : err;
                out.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(String.valueOf(cause.getMessage()));
            }
            completeDeferred(placeholder, out.toByteArray());
        });
    }

    private byte[] key(WireReader r) {
        byte[] key = r.bytes("key", config.maxKeyBytes());
        if (server.cluster() != null) {
            routeSlot(io.rdmastore.client.cluster.HashSlot.of(key));
        }
        return key;
    }

    // ---- cluster ----

    /** The opcode being executed, for the cluster's read/write decision. Transport thread only. */
    private int currentOpcode;

    /**
     * Cluster mode: throws MOVED, CLUSTERDOWN or CROSSSLOT (as a coded store error, so the client sees Redis's text)
     * unless this node serves the keys' slot. A native client picked its member itself, so a secondary serves reads.
     */
    private void route(byte[][] keys) {
        if (server.cluster() == null || keys.length == 0) {
            return;
        }
        int slot = io.rdmastore.client.cluster.HashSlot.of(keys[0]);
        for (int i = 1; i < keys.length; i++) {
            if (io.rdmastore.client.cluster.HashSlot.of(keys[i]) != slot) {
                throw new StoreException("CROSSSLOT Keys in request don't hash to the same slot");
            }
        }
        routeSlot(slot);
    }

    private void routeSlot(int slot) {
        var cluster = server.cluster();
        if (cluster.migrations() && cluster.migratingTo(slot) != null) {
            // native clients have no ASKING: they wait until the slot's move ends (RdmaStoreClusterClient retries)
            throw new StoreException("TRYAGAIN slot " + slot + " is migrating");
        }
        boolean read = switch (currentOpcode) {
            case ProtocolDescriptor.GET, ProtocolDescriptor.EXISTS, ProtocolDescriptor.PTTL, ProtocolDescriptor.HGET,
                ProtocolDescriptor.HGETALL, ProtocolDescriptor.MGET, ProtocolDescriptor.GET_LARGE -> true;
            default -> false;
        };
        String redirect = cluster.redirect(slot, !read, true);
        if (redirect != null) {
            throw new StoreException(redirect);
        }
    }

    private void routePairs(List<byte[]> kv) {
        if (server.cluster() == null) {
            return;
        }
        byte[][] keys = new byte[kv.size() / 2][];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = kv.get(2 * i);
        }
        route(keys);
    }

    /**
     * CLUSTER_MAP: action 0 replies (cluster mode:u8, node id, replica-set name, epoch:i64, map text); action 1 (node
     * id, map text) installs a newer map and replies once it is durable (committed, for a replica set).
     */
    private void clusterMap(long id, WireReader r, WireWriter w) {
        int action = r.u8("action");
        var cluster = server.cluster();
        if (action == 0) {
            r.end();
            var rs = server.replicaSet();
            if (cluster == null) {
                w.u8(0).string("").string(rs == null ? "" : rs.setName()).i64(0).string("");
                return;
            }
            var v = cluster.view();
            w.u8(1).string(v.selfId() == null ? "" : v.selfId()).string(rs == null ? "" : rs.setName())
                .i64(v.map().epoch()).string(v.map().shards().isEmpty() ? "" : v.map().encode());
            return;
        }
        if (action != 1) {
            throw new ProtocolException("unknown action " + action + " (0 get, 1 set)");
        }
        String self = r.string("node id", 256);
        String text = r.string("slot map", 16 << 20);
        r.end();
        if (cluster == null) {
            error(id, "ERR this server does not run in cluster mode (start it with --cluster)");
            return;
        }
        io.rdmastore.client.cluster.SlotMap map;
        try {
            map = io.rdmastore.client.cluster.SlotMap.parse(text);
        } catch (IllegalArgumentException e) {
            error(id, "ERR bad slot map: " + e.getMessage());
            return;
        }
        Object placeholder = deferReply();
        cluster.install(map, self).whenComplete((v, err) -> {
            WireWriter out = new WireWriter(256);
            if (err == null) {
                out.header(ProtocolDescriptor.STATUS_OK, id);
            } else {
                Throwable cause = err instanceof java.util.concurrent.CompletionException && err.getCause() != null
                    ? err.getCause() : err;
                out.header(ProtocolDescriptor.STATUS_ERROR, id).rawString("ERR slot map refused: "
                    + cause.getMessage());
            }
            completeDeferred(placeholder, out.toByteArray());
        });
    }

    private static int flags(WireReader r, int known) {
        int flags = r.u8("flags");
        if ((flags & ~known) != 0) {
            throw new ProtocolException(String.format("unknown flags 0x%02x", flags & ~known));
        }
        return flags;
    }

    private static long saturatedAdd(long a, long b) {
        long s = a + b;
        return ((a ^ s) & (b ^ s)) < 0 ? (b < 0 ? Long.MIN_VALUE : Long.MAX_VALUE) : s;
    }

    private void set(WireReader r, WireWriter w) {
        int flags = flags(r, ProtocolDescriptor.SET_NX | ProtocolDescriptor.SET_XX);
        long ttl = r.i64("ttl");
        byte[] key = key(r);
        // read in place: the store copies the value out of the message while the call runs (no byte[] per SET,
        // which was nearly all a SET loop's garbage)
        MemorySegment value = r.slice("value", config.maxValueBytes());
        r.end();
        if (flags == (ProtocolDescriptor.SET_NX | ProtocolDescriptor.SET_XX)) {
            throw new ProtocolException("NX and XX flags exclude each other");
        }
        if (ttl < 0) {
            throw new ProtocolException("negative ttl " + ttl + " ms");
        }
        setOptions.reset().ifAbsent((flags & ProtocolDescriptor.SET_NX) != 0)
            .ifPresent((flags & ProtocolDescriptor.SET_XX) != 0)
            .expireAtMillis(ttl > 0 ? saturatedAdd(System.currentTimeMillis(), ttl) : -1);
        markStore();
        SetResult result = store.set(key, value, setOptions);
        if (!result.written()) {
            w.u8At(ProtocolDescriptor.TYPE_OFFSET, ProtocolDescriptor.STATUS_NULL);
        }
    }

    // ---- SET_LARGE (docs/protocol.md, "Large values") ----

    /** The registered memory SET_LARGE reads values into, kept between requests (one per connection). */
    private final java.util.concurrent.atomic.AtomicReference<PutBuffer> putBuffer =
        new java.util.concurrent.atomic.AtomicReference<>();

    /** Memory registered with this connection for one-sided reads of lent values. */
    private record PutBuffer(java.lang.foreign.Arena arena, MemorySegment segment,
                             io.rdmastore.transport.RegisteredMemory registration) {
        void close() {
            try {
                registration.close();
            } finally {
                arena.close();
            }
        }
    }

    /**
     * SET_LARGE: reads the client's value one-sided, then stores it as SET does; the reply keeps its place in the reply
     * order. A client on this host is read at once on this thread ({@code Connection.readNow}) into the block of the
     * store's memory that becomes the value ({@code Store.allocateValue}, {@code setAdopting}); otherwise into this
     * connection's registered buffer, the read completing on the transport's thread (it drives the worker), and the
     * value copied from there. So the store write runs where SET's does. Not taken in a replica set (a WAIT after it
     * must cover it, and the fencing of writes runs per request) or with the rendezvous threshold at 0: the client
     * sends SET.
     */
    private void setLarge(long id, WireReader r) {
        int flags = flags(r, ProtocolDescriptor.SET_NX | ProtocolDescriptor.SET_XX | ProtocolDescriptor.SET_PARTS);
        long ttl = r.i64("ttl");
        byte[] key = key(r);
        long length = r.i64("length");
        byte[] descriptor = r.bytes("descriptor", 64 * 1024);
        long progressAt = (flags & ProtocolDescriptor.SET_PARTS) != 0 ? r.i64("progressAt") : -1;
        r.end();
        if ((flags & ProtocolDescriptor.SET_PARTS) != 0 && (progressAt < length || progressAt < 0)) {
            throw new ProtocolException("progressAt " + progressAt + " lies within the value's " + length + " bytes");
        }
        if (flags == (ProtocolDescriptor.SET_NX | ProtocolDescriptor.SET_XX)) {
            throw new ProtocolException("NX and XX flags exclude each other");
        }
        if (ttl < 0) {
            throw new ProtocolException("negative ttl " + ttl + " ms");
        }
        if (length < 0 || length > config.maxValueBytes()) {
            error(id, "ERR value of " + length + " bytes outside 0.." + config.maxValueBytes()
                + " (max-value-bytes)");
            return;
        }
        if (server.replicaSet() != null || config.rendezvousThreshold() <= 0) {
            error(id, "ERR SET_LARGE unavailable here: send SET");
            return;
        }
        SetOptions options = new SetOptions().ifAbsent((flags & ProtocolDescriptor.SET_NX) != 0)
            .ifPresent((flags & ProtocolDescriptor.SET_XX) != 0)
            .expireAtMillis(ttl > 0 ? saturatedAdd(System.currentTimeMillis(), ttl) : -1);
        markStore();
        io.rdmastore.transport.RemoteMemory remote;
        try {
            remote = connection.remoteMemory(descriptor);
        } catch (RuntimeException e) {
            error(id, "ERR SET_LARGE descriptor not usable on this connection: " + e.getMessage());
            return;
        }
        // A client on this host is read at once, here, with one kernel copy, straight into the block of the store's
        // memory that becomes the value (as SET's bytes are copied and written here). Otherwise the value is read
        // one-sided into this connection's registered buffer, completing on the transport's thread, and stored from
        // there: the store's blocks are not registered with the transport.
        MemorySegment block;
        try {
            block = length == 0 ? null : store.allocateValue(length);
        } catch (StoreException e) {
            error(id, storeError(e));
            return;
        }
        Object placeholder = deferReply();
        MemorySegment direct = null;
        PutBuffer buf = null;
        java.util.concurrent.CompletableFuture<Void> read;
        try {
            if (progressAt >= 0) {
                // the client copies the value in parts after sending this, and counts the bytes it has copied
                if (block == null) {
                    buf = takePutBuffer(length);
                }
                readInParts(remote, progressAt, block != null ? block : buf.segment(), length);
                direct = block;
                read = java.util.concurrent.CompletableFuture.completedFuture(null);
            } else if (block != null && connection.readNow(remote, 0, block, 0, length)) {
                direct = block;
                read = java.util.concurrent.CompletableFuture.completedFuture(null);
            } else {
                if (block != null) {
                    store.freeValue(block);
                    block = null;
                }
                buf = takePutBuffer(length);
                read = length == 0 || connection.readNow(remote, 0, buf.segment(), 0, length)
                    ? java.util.concurrent.CompletableFuture.completedFuture(null)
                    : connection.read(remote, 0, buf.registration(), 0, length);
            }
        } catch (RuntimeException e) {
            if (block != null && direct == null) {
                store.freeValue(block);
            }
            // the deferred reply must still come, or every later reply of this connection would wait for it
            read = java.util.concurrent.CompletableFuture.failedFuture(e);
        }
        long issued = timing != null ? System.nanoTime() : 0;
        MemorySegment pulled = direct;
        PutBuffer into = buf;
        read.whenComplete((ok, err) -> {
            WireWriter out = new WireWriter(128);
            boolean kept = false;
            try {
                if (err != null) {
                    Throwable cause = err instanceof java.util.concurrent.CompletionException && err.getCause() != null
                        ? err.getCause() : err;
                    out.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(cause instanceof PartsFailure
                        ? "ERR SET_LARGE parts: " + cause.getMessage()
                        : "ERR SET_LARGE could not read the value: " + cause.getMessage());
                } else {
                    kept = true;
                    server.values().pulled(length, pulled != null, progressAt >= 0);
                    out.header(ProtocolDescriptor.STATUS_OK, id);
                    SetResult result;
                    if (pulled != null) {
                        // the entry takes the block the value was read into
                        result = store.setAdopting(key, pulled, options);
                    } else {
                        try {
                            // the log record is built straight from the pulled bytes; the buffer is reused after
                            result = store.set(key, into.segment().asSlice(0, length), options);
                        } finally {
                            putBackPutBuffer(into);
                        }
                    }
                    if (!result.written()) {
                        out.u8At(ProtocolDescriptor.TYPE_OFFSET, ProtocolDescriptor.STATUS_NULL);
                    }
                }
            } catch (StoreException e) {
                out.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(storeError(e));
            } catch (RuntimeException e) {
                LOG.warn("SET_LARGE from {} failed", connection.remoteAddress(), e);
                out.header(ProtocolDescriptor.STATUS_ERROR, id).rawString("ERR internal error in SET_LARGE: " + e);
            } finally {
                if (!kept && pulled != null) {
                    store.freeValue(pulled);
                }
                if (!kept && into != null) {
                    // a failed read may have left the buffer half written; it is not kept
                    into.close();
                }
            }
            long stored = timing != null ? System.nanoTime() : 0;
            completeDeferred(placeholder, out.toByteArray());
            if (timing != null) {
                // the read and the store write belong to Process, the deferred reply's send to Sink
                timing.addLater(ProtocolDescriptor.SET_LARGE, stored - issued, System.nanoTime() - stored);
            }
        });
    }

    /**
     * How long {@link #readInParts} waits for the client's next part before it gives up (the client then lends the
     * whole value again): a client descheduled for a few scheduler ticks still makes it.
     */
    private static final long PART_WAIT_NANOS = 50_000_000L;

    /** A SET_LARGE in parts that could not be read so: the client sends it again as a whole (docs/protocol.md). */
    private static final class PartsFailure extends RuntimeException {
        PartsFailure(String message) {
            super(message, null, false, false);
        }
    }

    /** The 8 bytes {@link #readInParts} reads the client's count into; this connection's reads are on one thread. */
    private MemorySegment progressWord;

    /**
     * Reads a value the client is still copying into the memory it lends (SET_LARGE with {@code SET_PARTS}): the
     * client counts the bytes copied so far in the 8 bytes at {@code progressAt} of that memory, each count stored
     * after the bytes it covers; each new count's bytes are read at once, so this read of one part runs while the
     * client copies the next, where a whole value's read would start after its whole copy (docs/decisions.md, "A
     * large SET is read while the client copies it"). Only where this connection reads the client's memory at once
     * ({@code Connection.readNow}: a client on this host); otherwise, or when the client's count stops for
     * {@link #PART_WAIT_NANOS}, a {@link PartsFailure}.
     */
    private void readInParts(io.rdmastore.transport.RemoteMemory remote, long progressAt, MemorySegment into,
                             long length) {
        if (progressWord == null) {
            progressWord = java.lang.foreign.Arena.ofAuto().allocate(8, 8);
        }
        MemorySegment word = progressWord;
        long done = 0;
        long deadline = System.nanoTime() + PART_WAIT_NANOS;
        while (done < length) {
            if (!connection.readNow(remote, progressAt, word, 0, 8)) {
                throw new PartsFailure("unavailable on this connection (its reads are not immediate): lend the "
                    + "whole value");
            }
            long ready = word.get(java.lang.foreign.ValueLayout.JAVA_LONG, 0);
            if (ready < done || ready > length) {
                throw new PartsFailure("the client's count " + ready + " lies outside " + done + ".." + length);
            }
            if (ready == done) {
                if (System.nanoTime() - deadline > 0) {
                    throw new PartsFailure("the client's count stayed at " + done + " of " + length + " bytes for "
                        + PART_WAIT_NANOS / 1_000_000 + " ms");
                }
                Thread.onSpinWait();
                continue;
            }
            // the count is read before the bytes it covers are (the client stored them before it)
            java.lang.invoke.VarHandle.fullFence();
            if (!connection.readNow(remote, done, into, done, ready - done)) {
                throw new PartsFailure("unavailable on this connection: lend the whole value");
            }
            done = ready;
            deadline = System.nanoTime() + PART_WAIT_NANOS;
        }
    }

    /** This connection's cached buffer when it holds {@code length} bytes, else a new one registered for it. */
    private PutBuffer takePutBuffer(long length) {
        PutBuffer b = putBuffer.getAndSet(null);
        if (b != null && b.segment().byteSize() >= length) {
            return b;
        }
        if (b != null) {
            b.close();
        }
        long size = Math.max(64 * 1024, Long.highestOneBit(Math.max(1, length - 1)) << 1);
        java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared();
        try {
            MemorySegment seg = arena.allocate(size, 4096);
            return new PutBuffer(arena, seg, connection.register(seg));
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /** Keeps {@code b} for the next SET_LARGE (up to 64 MiB, while open), or frees it. */
    private void putBackPutBuffer(PutBuffer b) {
        if (closed || b.segment().byteSize() > (64L << 20) || !putBuffer.compareAndSet(null, b)) {
            b.close();
        } else if (closed && putBuffer.compareAndSet(b, null)) {
            b.close();
        }
    }

    private static byte[][] keys(WireReader r, String what, long limit) {
        int n = r.i32(what + " count");
        // Each item needs at least its 4-byte length, so a count the message cannot hold is malformed.
        if (n < 0 || (long) n * 4 > r.remaining()) {
            throw new ProtocolException(what + " count " + n + " does not fit the " + r.remaining()
                + " remaining bytes");
        }
        if (n == 0) {
            throw new ProtocolException("at least one " + what + " is required");
        }
        byte[][] out = new byte[n][];
        for (int i = 0; i < n; i++) {
            out[i] = r.bytes(what, limit);
        }
        return out;
    }

    private static List<byte[]> pairs(WireReader r, String first, long firstLimit, String second, long secondLimit,
                                      boolean nonEmpty) {
        int n = r.i32("pair count");
        if (n < 0 || (long) n * 8 > r.remaining()) {
            throw new ProtocolException("pair count " + n + " does not fit the " + r.remaining() + " remaining bytes");
        }
        if (nonEmpty && n == 0) {
            throw new ProtocolException("at least one " + first + "/" + second + " pair is required");
        }
        List<byte[]> out = new ArrayList<>(n * 2);
        for (int i = 0; i < n; i++) {
            out.add(r.bytes(first, firstLimit));
            out.add(r.bytes(second, secondLimit));
        }
        return out;
    }

    private static String collection(WireReader r) {
        String name = r.string("collection name", MAX_COLLECTION_NAME);
        if (name.isEmpty()) {
            throw new ProtocolException("empty collection name");
        }
        return name;
    }

    /** Decodes and fully validates one length-prefixed BSON document. */
    private BsonDocument document(WireReader r, String what) {
        MemorySegment raw = r.slice(what, config.maxDocumentBytes());
        return parseDocument(raw, what);
    }

    static BsonDocument parseDocument(MemorySegment raw, String what) {
        long len = raw.byteSize();
        if (len < 5) {
            throw new BSONException(what + " of " + len + " bytes is shorter than the smallest BSON document (5)");
        }
        int declared = raw.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0);
        if (declared != len) {
            throw new BSONException(what + " declares " + declared + " bytes but " + len + " were sent");
        }
        ByteBuffer buffer = ByteBuffer.wrap(raw.toArray(ValueLayout.JAVA_BYTE)).order(ByteOrder.LITTLE_ENDIAN);
        try (BsonBinaryReader bson = new BsonBinaryReader(buffer)) {
            return CODEC.decode(bson, DECODE);
        }
    }

    private static void writeDocument(WireWriter w, BsonDocument d) {
        w.bytes(BsonValues.encode(d));
    }

    private void docInsert(WireReader r, WireWriter w) {
        String coll = collection(r);
        int n = r.i32("document count");
        if (n <= 0 || (long) n * 9 > r.remaining()) {
            throw new ProtocolException("document count " + n + " does not fit the " + r.remaining()
                + " remaining bytes");
        }
        List<BsonDocument> docs = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            docs.add(document(r, "document"));
        }
        r.end();
        markStore();
        List<BsonValue> ids = store.insertMany(coll, docs);
        w.i32(ids.size());
        for (BsonValue v : ids) {
            writeDocument(w, new BsonDocument("_id", v));
        }
    }

    /**
     * Holds this request's place in the reply order for a reply given later by {@link #completeDeferred}; called on
     * the transport thread inside {@code onMessage}, which then sends nothing for the request.
     */
    Object deferReply() {
        PendingReply placeholder = new PendingReply(null);
        synchronized (this) {
            queue.add(placeholder);
            queued = queue.size();
        }
        writer.reset();
        return placeholder;
    }

    /** Gives a deferred reply its bytes (any thread) and sends whatever is now ready, in order. */
    /**
     * A write this connection asked for was committed off its transport thread (a blob put) at log index
     * {@code index}: a WAIT sent after its reply covers it. Any thread.
     */
    synchronized void wroteAt(long index) {
        if (index > lastWriteIndex) {
            lastWriteIndex = index;
        }
    }

    void completeDeferred(Object placeholder, byte[] reply) {
        synchronized (this) {
            ((PendingReply) placeholder).bytes = reply;
            if (closed) {
                return;
            }
            queuedBytes += reply.length;
            drainLocked();
        }
    }

    /** SNAPSHOT runs in the store's background; its reply holds its place in the queue so later replies wait. */
    private void snapshot(long id) {
        PendingReply placeholder = new PendingReply(null);
        synchronized (this) {
            queue.add(placeholder);
            queued = queue.size();
        }
        store.snapshotAsync().whenComplete((path, err) -> {
            WireWriter w = new WireWriter(128);
            if (err == null) {
                w.header(ProtocolDescriptor.STATUS_OK, id).i64(store.lastSnapshotEpochMillis());
            } else {
                Throwable cause = err instanceof java.util.concurrent.CompletionException && err.getCause() != null
                    ? err.getCause() : err;
                LOG.warn("snapshot requested by {} failed", connection.remoteAddress(), cause);
                w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString("ERR snapshot failed: " + cause.getMessage());
            }
            synchronized (this) {
                placeholder.bytes = w.toByteArray();
                queuedBytes += placeholder.bytes.length;
                drainLocked();
            }
        });
        // The placeholder replaces the reply: mark the writer empty so send() offers nothing for this request.
        writer.reset();
    }

    // ---- sending ----

    private void send(WireWriter w) {
        if (w.position() == 0) {
            return;
        }
        if (queued == 0) {
            int status = connection.offer(w.message());
            if (status >= 0 || status == TransportStatus.CLOSED) {
                return;
            }
            if (status == TransportStatus.TOO_LARGE) {
                tooLarge(w);
                status = connection.offer(w.message());
                if (status >= 0 || status == TransportStatus.CLOSED) {
                    return;
                }
            }
        } else if (w.position() > connection.maxMessageLength()) {
            tooLarge(w);
        }
        synchronized (this) {
            byte[] copy = w.toByteArray();
            queue.add(new PendingReply(copy));
            queued = queue.size();
            queuedBytes += copy.length;
            if (queuedBytes > config.maxPendingReplyBytes() && queue.size() > 1) {
                LOG.info("closing {}: {} reply bytes queued for a client that does not read them (limit {})",
                    connection.remoteAddress(), queuedBytes, config.maxPendingReplyBytes());
                connection.close();
                return;
            }
            drainLocked();
        }
    }

    /** Replaces a reply the transport cannot carry with an error that it can. */
    private void tooLarge(WireWriter w) {
        MemorySegment m = w.message();
        long id = m.get(LONG, ProtocolDescriptor.REQUEST_ID_OFFSET);
        int size = w.position();
        w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString("ERR reply of " + size
            + " bytes exceeds the transport's maximum message of " + connection.maxMessageLength() + " bytes");
    }

    /** Offers queued replies in order until one is refused or not ready; schedules a retry if any remain. */
    private void drainLocked() {
        while (!queue.isEmpty()) {
            PendingReply p = queue.peek();
            if (p.bytes == null) {
                break;
            }
            int status = closed ? TransportStatus.CLOSED : connection.offer(MemorySegment.ofArray(p.bytes));
            if (status == TransportStatus.BACK_PRESSURED || status == TransportStatus.NOT_CONNECTED) {
                scheduleRetryLocked();
                return;
            }
            queue.poll();
            queuedBytes -= p.bytes.length;
            if (status == TransportStatus.CLOSED) {
                queue.clear();
                queuedBytes = 0;
            }
            queued = queue.size();
        }
        retryDelayMicros = 0;
    }

    private void scheduleRetryLocked() {
        if (retryScheduled) {
            return;
        }
        retryScheduled = true;
        retryDelayMicros = retryDelayMicros == 0 ? 50 : Math.min(retryDelayMicros * 2, 10_000);
        server.retryExecutor().schedule(() -> {
            synchronized (this) {
                retryScheduled = false;
                drainLocked();
            }
        }, retryDelayMicros, TimeUnit.MICROSECONDS);
    }

    @Override
    public void onClose(Connection c, Throwable cause) {
        closed = true;
        synchronized (holdLock) {
            if (held != null) {
                // a long command still runs on this session's state: close once it and the held requests are done
                closeDeferred = true;
                deferredCause = cause;
                return;
            }
        }
        finishClose(cause);
    }

    /**
     * Takes a long command ({@link io.rdmastore.server.resp.NativeCommands#isLong}) off the transport thread, which
     * serves every connection of its worker: from now on this connection's requests wait in {@link #held}, and once
     * {@link #handle} has finished it hands the request to the RESP face's long-command pool (docs/resp.md, "Long
     * commands off the event loop"), which runs it, sends its reply, then runs the held requests in order. False on the
     * pool itself, where the command just runs.
     */
    private boolean offloadCommand() {
        if (onPool) {
            return false;
        }
        synchronized (holdLock) {
            held = new ArrayDeque<>();
            heldBytes = 0;
        }
        offloadPending = true;
        return true;
    }

    /** The end of {@link #handle}: hands the long command's request to the pool (or runs it here when refused). */
    private void submitLong(byte[] request) {
        Runnable task = () -> runLong(request);
        if (!commands().offload(task)) {
            task.run();
        }
    }

    /**
     * The pool (this connection's requests are held meanwhile): the long command's request, run as any other (its
     * reply sent, its time recorded), then the held requests in order (a long one among them runs here too), then the
     * transport thread runs them again.
     */
    private void runLong(byte[] request) {
        onPool = true;
        try {
            if (!closed) {
                handle(MemorySegment.ofArray(request));
            }
        } finally {
            drainHeld();
        }
    }

    /** The pool: runs the held requests until none is left, then gives the connection back to its transport thread. */
    private void drainHeld() {
        while (true) {
            byte[] next;
            Throwable cause = null;
            synchronized (holdLock) {
                next = closed ? null : held.poll();
                if (next != null) {
                    heldBytes -= next.length;
                } else {
                    onPool = false;
                    held = null;
                    if (!closeDeferred) {
                        return;
                    }
                    closeDeferred = false;
                    cause = deferredCause;
                    deferredCause = null;
                }
            }
            if (next == null) {
                finishClose(cause);
                return;
            }
            handle(MemorySegment.ofArray(next));
        }
    }

    private void finishClose(Throwable cause) {
        synchronized (this) {
            queue.clear();
            queuedBytes = 0;
            queued = 0;
        }
        server.blobs().sessionClosed(this);
        server.values().sessionClosed(this);
        PutBuffer b = putBuffer.getAndSet(null);
        if (b != null) {
            b.close();
        }
        var running = commands;
        if (running != null) {
            running.close();
        }
        server.sessionClosed(this, cause);
    }

    /** Writes a hash as HGETALL's reply: the pair count, then field and value, each length-prefixed. */
    private static final class HashToWire implements Store.HashReader {
        private WireWriter w;

        @Override
        public void size(int pairs) {
            w.i32(pairs);
        }

        @Override
        public void pair(byte[] field, byte[] value) {
            w.bytes(field).bytes(value);
        }
    }
}
