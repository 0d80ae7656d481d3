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

    // ---- reply statuses ----
    /** Success; the body depends on the opcode. */
    public static final byte STATUS_OK = 0;
    /** Success with no value (missing key, NX/XX condition not met); empty body. */
    public static final byte STATUS_NULL = 1;
    /** Failure; the body is a UTF-8 message starting with an error code ("ERR", "WRONGTYPE", ...). */
    public static final byte STATUS_ERROR = 2;

    /** Request id of a reply the server sends unasked, just before it closes the connection (e.g. too many clients). */
    public static final long UNSOLICITED_REQUEST_ID = 0;

    // ---- SET flags ----
    /** Only set when the key does not exist. */
    public static final int SET_NX = 1;
    /** Only set when the key exists. */
    public static final int SET_XX = 2;

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

    private ProtocolDescriptor() {
    }

    /** The opcode's name, or {@code "0x.."} for an unknown one. */
    public static String opcodeName(int opcode) {
        int op = opcode & 0xFF;
        if (op == CLUSTER_MAP) {
            return "CLUSTER_MAP";
        }
        return op > 0 && op < OPCODE_LIMIT ? NAMES[op] : String.format("0x%02x", op);
    }
}
