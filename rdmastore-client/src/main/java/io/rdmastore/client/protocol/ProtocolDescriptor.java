package io.rdmastore.client.protocol;

/**
 * Byte layout of the native protocol (docs/protocol.md). Every request is one message
 * {@code [opcode:u8][requestId:i64][body]}, every reply one message {@code [status:u8][requestId:i64][body]}; all
 * integers are big-endian. Byte strings in bodies are {@code [length:i32][bytes]}; a length of -1 in a reply means
 * "absent" (nil).
 *
 * <p>Threads: constants only; safe everywhere.
 */
public final class ProtocolDescriptor {
    /** Protocol version, bumped on any incompatible layout change. */
    public static final int VERSION = 1;

    /** Offset of the opcode (requests) or the status (replies). */
    public static final int TYPE_OFFSET = 0;
    /** Offset of the request id. */
    public static final int REQUEST_ID_OFFSET = 1;
    /** Length of the header; the body starts here. */
    public static final int HEADER_LENGTH = 9;

    // ---- opcodes ----
    public static final byte PING = 1;
    public static final byte GET = 2;
    public static final byte SET = 3;
    public static final byte DEL = 4;
    public static final byte EXISTS = 5;
    public static final byte PEXPIRE = 6;
    public static final byte PTTL = 7;
    public static final byte INCRBY = 8;
    public static final byte HSET = 9;
    public static final byte HGET = 10;
    public static final byte HGETALL = 11;
    public static final byte HDEL = 12;
    public static final byte MGET = 13;
    public static final byte MSET = 14;
    public static final byte DOC_INSERT = 15;
    public static final byte DOC_FIND = 16;
    public static final byte DOC_UPDATE = 17;
    public static final byte DOC_DELETE = 18;
    public static final byte DOC_COUNT = 19;
    public static final byte INFO = 20;
    public static final byte SNAPSHOT = 21;
    /** Put a blob the server pulls from the client's registered buffer (docs/blobs.md). */
    public static final byte BLOB_PUT = 22;
    /** Lease a blob's registered view for one one-sided transfer. */
    public static final byte BLOB_GET = 23;
    /** End a lease taken by BLOB_GET. */
    public static final byte BLOB_GET_DONE = 24;
    /** Delete a blob. */
    public static final byte BLOB_DEL = 25;
    /** The member's role in its replica set and where the primary is (docs/replication.md). */
    public static final byte ROLE = 26;
    /** Wait until this connection's writes are on N secondaries, or (N = -1) on a majority of the set. */
    public static final byte WAIT = 27;
    /** Confirm with a majority that this member is still the primary: the read before it is then linearizable. */
    public static final byte READ_FENCE = 28;
    /** Administration: add (1) or remove (2) a member of the replica set at run time (docs/replication.md). */
    public static final byte REPLICA_SET_CONFIG = 29;
    /** Between members: a new primary asks for a member's position and its promise to refuse older terms. */
    public static final byte REPL_PREPARE = 30;
    /** Between members: a secondary pulls oplog frames after its position and acknowledges what it holds. */
    public static final byte REPL_FETCH = 31;
    /** Between members: a snapshot for a member that must resynchronise. */
    public static final byte REPL_SNAPSHOT = 32;
    /** Between members: a chunk of a snapshot or a blob file. */
    public static final byte REPL_READ = 33;
    /** Between members: the terms of a range of oplog indexes, to find where two logs diverged. */
    public static final byte REPL_TERMS = 34;
    /**
     * A replica receives a blob ahead of the record that names it: it pulls the sender's lent buffer (a client's, or
     * the previous pipeline member's while that is still arriving) and keeps it under a token (docs/blobs.md).
     */
    public static final byte BLOB_STAGE = 35;
    /** The sender of a progressive BLOB_STAGE now holds this many bytes of the blob. */
    public static final byte BLOB_STAGE_PROGRESS = 36;
    /** Between members: a blob version's length, CRC and token, and (asked) a lease of it for one-sided reads. */
    public static final byte REPL_BLOB_LEND = 37;
    /**
     * Cluster administration (docs/cluster.md): action 0 asks for this node's slot map, action 1 installs a newer
     * one. Numbered apart from the range above, so it is named in {@link #opcodeName} by itself.
     */
    public static final byte CLUSTER_MAP = 40;
    /** One more than the highest opcode of the contiguous range (CLUSTER_MAP is apart). */
    public static final int OPCODE_LIMIT = 38;

    // ---- data-type commands (41-49): Redis commands run by the server's one command implementation ----
    /**
     * A Redis data-type command (lists, sets, sorted sets, strings, hashes, keys, PUBLISH) as an argument array:
     * {@code count:i32, count x bytes}; the reply body is one {@link #VALUE_NIL value}. Blocking pops answer when they
     * complete, possibly after replies to later requests (docs/protocol.md).
     */
    public static final byte COMMAND = 41;
    /** As {@link #COMMAND}, restricted to read-only commands: a replica-set client may send it to a secondary. */
    public static final byte COMMAND_READ = 42;
    /** Commands run atomically as one EXEC: {@code watch:i64 (0 none), n:i32, n x (count:i32, count x bytes)}. */
    public static final byte TRANSACTION = 43;
    /** WATCH keys for a later TRANSACTION on this connection: {@code count:i32, count x key}; replies a watch id. */
    public static final byte WATCH = 44;
    /** Forget a watch id that no TRANSACTION used: {@code watch:i64}. */
    public static final byte UNWATCH = 45;
    /** Subscribe this connection to channels: {@code count:i32, count x channel}; replies subscriptions:i64. */
    public static final byte SUBSCRIBE = 46;
    /** Subscribe this connection to channel patterns (glob); as SUBSCRIBE. */
    public static final byte PSUBSCRIBE = 47;
    /** End channel subscriptions ({@code count} 0: all); replies the subscriptions left:i64. */
    public static final byte UNSUBSCRIBE = 48;
    /** End pattern subscriptions ({@code count} 0: all); replies the subscriptions left:i64. */
    public static final byte PUNSUBSCRIBE = 49;
    /**
     * Resharding (docs/cluster.md, "How keys move"): a source node lent a batch of DUMPed keys of one slot; the target
     * pulls it one-sided and applies it as ASKING + RESTORE ... REPLACE. {@code slot:i32, count:i32, length:i64,
     * crc32c:i32, descriptor:bytes, waitReplicas:i32, timeoutMillis:i64}; replies applied:i64.
     */
    public static final byte MIGRATE_PULL = 50;
    /**
     * GET that may answer with a rendezvous (docs/protocol.md, "Large values"): {@code key:bytes, n:i32, n x
     * leaseId:i64} (leases of earlier replies this client is done with). Reply: NULL, or {@code kind:u8} then either
     * {@link #VALUE_INLINE} and the value (the rest), or {@link #VALUE_LENT} and {@code leaseId:i64, length:i64,
     * descriptor:bytes}: the client reads the value one-sided and names the lease in a later request.
     */
    public static final byte GET_LARGE = 51;
    /** End value leases of GET_LARGE: {@code n:i32, n x leaseId:i64}; replies the number ended:i64. */
    public static final byte VALUE_RELEASE = 52;
    /**
     * SET whose value the server reads one-sided from the client's registered memory (docs/protocol.md, "Large
     * values"): {@code flags:u8, ttl:i64, key:bytes, length:i64, descriptor:bytes}. Reply as SET's. The client keeps
     * the memory unchanged until the reply. Refused with {@code ERR SET_LARGE unavailable} where the server does not
     * take it (a replica set, rendezvous off): the client then sends SET.
     */
    public static final byte SET_LARGE = 53;
    /**
     * Create (action {@link #INDEX_CREATE}) or drop ({@link #INDEX_DROP}) a collection's equality index on a field:
     * {@code collection:string, action:u8, field:string}; replies changed:u8 (0: it existed / did not exist).
     */
    public static final byte DOC_INDEX = 54;
    /** A collection's indexed fields: {@code collection:string}; replies {@code count:i32, count x field:string}. */
    public static final byte DOC_INDEXES = 55;

    /** DOC_INDEX action: create the index. */
    public static final int INDEX_CREATE = 1;
    /** DOC_INDEX action: drop the index. */
    public static final int INDEX_DROP = 2;

    /** GET_LARGE reply kind: the value follows inline. */
    public static final int VALUE_INLINE = 0;
    /** GET_LARGE reply kind: the value is lent for one one-sided read. */
    public static final int VALUE_LENT = 1;

    // ---- reply statuses ----
    /** Success; the body depends on the opcode. */
    public static final byte STATUS_OK = 0;
    /** Success with no value (missing key, NX/XX condition not met); empty body. */
    public static final byte STATUS_NULL = 1;
    /** Failure; the body is a UTF-8 message starting with an error code ("ERR", "WRONGTYPE", ...). */
    public static final byte STATUS_ERROR = 2;
    /**
     * A message the server pushes unasked to a subscribed connection, with request id {@link #UNSOLICITED_REQUEST_ID};
     * the body is one value: an array {@code ["message", channel, message]} or
     * {@code ["pmessage", pattern, channel, message]}.
     */
    public static final byte STATUS_PUSH = 3;

    // ---- values: the reply body of COMMAND and TRANSACTION, [type:u8][...] ----
    /** No value (a missing key, a null array); nothing follows. */
    public static final int VALUE_NIL = 0;
    /** {@code i64}. */
    public static final int VALUE_INTEGER = 1;
    /** {@code i64} holding the IEEE 754 bits of a double (a score). */
    public static final int VALUE_DOUBLE = 2;
    /** {@code bytes}. */
    public static final int VALUE_BULK = 3;
    /** {@code string}: a status such as {@code OK}. */
    public static final int VALUE_STATUS = 4;
    /** {@code count:i32, count x value}. */
    public static final int VALUE_ARRAY = 5;
    /** {@code string}: an error inside an array (a transaction's failed command). */
    public static final int VALUE_ERROR = 6;

    /** Request id of a reply the server sends unasked, just before it closes the connection (e.g. too many clients). */
    public static final long UNSOLICITED_REQUEST_ID = 0;

    // ---- SET flags ----
    /** Only set when the key does not exist. */
    public static final int SET_NX = 1;
    /** Only set when the key exists. */
    public static final int SET_XX = 2;
    /**
     * SET_LARGE only: the client copies the value into the memory it lends after sending the request, counting the
     * bytes copied in an i64 at {@code progressAt} of that memory (a field after the descriptor); the server reads
     * each part as it is counted (docs/protocol.md, "Large values").
     */
    public static final int SET_PARTS = 4;

    // ---- DOC_UPDATE / DOC_DELETE flags ----
    /** Apply to every matching document instead of the first. */
    public static final int DOC_MANY = 1;
    /** Insert when nothing matches (DOC_UPDATE only). */
    public static final int DOC_UPSERT = 2;

    // ---- ROLE reply: role:u8 ----
    /** Not part of a replica set; accepts writes. */
    public static final int ROLE_STANDALONE = 0;
    /** The elected primary; accepts writes. */
    public static final int ROLE_PRIMARY = 1;
    /** A secondary; serves reads, refuses writes with {@code NOTPRIMARY}. */
    public static final int ROLE_SECONDARY = 2;
    /** No primary yet: an election or a catch-up is in progress. */
    public static final int ROLE_NO_PRIMARY = 3;

    /** WAIT's numReplicas asking for a majority of members (the primary counts). */
    public static final int WAIT_MAJORITY = -1;

    private static final String[] NAMES = {
        "0", "PING", "GET", "SET", "DEL", "EXISTS", "PEXPIRE", "PTTL", "INCRBY", "HSET", "HGET", "HGETALL", "HDEL",
        "MGET", "MSET", "DOC_INSERT", "DOC_FIND", "DOC_UPDATE", "DOC_DELETE", "DOC_COUNT", "INFO", "SNAPSHOT",
        "BLOB_PUT", "BLOB_GET", "BLOB_GET_DONE", "BLOB_DEL", "ROLE", "WAIT", "READ_FENCE", "REPLICA_SET_CONFIG", "REPL_PREPARE",
        "REPL_FETCH", "REPL_SNAPSHOT", "REPL_READ", "REPL_TERMS", "BLOB_STAGE", "BLOB_STAGE_PROGRESS", "REPL_BLOB_LEND"
    };

    private static final String[] COMMAND_NAMES = {
        "COMMAND", "COMMAND_READ", "TRANSACTION", "WATCH", "UNWATCH", "SUBSCRIBE", "PSUBSCRIBE", "UNSUBSCRIBE",
        "PUNSUBSCRIBE"
    };

    private ProtocolDescriptor() {
    }

    /** The opcode's name, or {@code "0x.."} for an unknown one. */
    public static String opcodeName(int opcode) {
        int op = opcode & 0xFF;
        if (op == CLUSTER_MAP) {
            return "CLUSTER_MAP";
        }
        if (op == MIGRATE_PULL) {
            return "MIGRATE_PULL";
        }
        if (op == GET_LARGE) {
            return "GET_LARGE";
        }
        if (op == VALUE_RELEASE) {
            return "VALUE_RELEASE";
        }
        if (op == SET_LARGE) {
            return "SET_LARGE";
        }
        if (op == DOC_INDEX) {
            return "DOC_INDEX";
        }
        if (op == DOC_INDEXES) {
            return "DOC_INDEXES";
        }
        if (op >= COMMAND && op <= PUNSUBSCRIBE) {
            return COMMAND_NAMES[op - COMMAND];
        }
        return op > 0 && op < OPCODE_LIMIT ? NAMES[op] : String.format("0x%02x", op);
    }
}
