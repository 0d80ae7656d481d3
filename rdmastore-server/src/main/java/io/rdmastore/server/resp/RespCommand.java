package io.rdmastore.server.resp;

import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * The command table: every command the RESP face knows, with Redis's arity convention (positive: exact argument count
 * including the name; negative: at least that many), flags and key positions for {@code COMMAND}, and a one-line
 * summary for {@code COMMAND DOCS}. {@link #lookup(byte[])} finds a command by its name in any letter case without
 * allocating.
 *
 * <p>Threads: immutable after class initialization; any thread may read it.
 */
enum RespCommand {
    PING(-1, "fast", 0, 0, 0, "connection", "Returns the server's liveliness response."),
    ECHO(2, "fast", 0, 0, 0, "connection", "Returns the given string."),
    AUTH(-2, "noscript loading stale fast no-auth", 0, 0, 0, "connection", "Authenticates the connection."),
    HELLO(-1, "noscript loading stale fast no-auth", 0, 0, 0, "connection", "Handshakes with the server."),
    QUIT(-1, "fast no-auth", 0, 0, 0, "connection", "Closes the connection."),
    SELECT(2, "loading stale fast", 0, 0, 0, "connection", "Changes the selected database."),
    CLIENT(-2, "noscript loading stale", 0, 0, 0, "connection", "A container for client connection commands."),
    INFO(-1, "loading stale", 0, 0, 0, "server", "Returns information and statistics about the server."),
    CONFIG(-2, "admin noscript loading stale", 0, 0, 0, "server", "A container for server configuration commands."),
    COMMAND(-1, "loading stale", 0, 0, 0, "server", "Returns detailed information about all commands."),
    DBSIZE(1, "readonly fast", 0, 0, 0, "server", "Returns the number of keys in the database."),
    FLUSHDB(-1, "write", 0, 0, 0, "server", "Removes all keys from the current database."),
    FLUSHALL(-1, "write", 0, 0, 0, "server", "Removes all keys from all databases."),
    TIME(1, "loading stale fast", 0, 0, 0, "server", "Returns the server time."),
    SAVE(1, "admin noscript", 0, 0, 0, "server", "Synchronously saves the database(s) to disk."),
    BGSAVE(-1, "admin noscript", 0, 0, 0, "server", "Asynchronously saves the database(s) to disk."),
    LASTSAVE(1, "loading stale fast", 0, 0, 0, "server", "Returns the Unix timestamp of the last successful save."),
    ROLE(1, "noscript loading stale fast", 0, 0, 0, "server", "Returns the replication role."),
    WAIT(3, "noscript", 0, 0, 0, "generic", "Blocks until this connection's writes reach that many replicas."),
    READONLY(1, "loading stale fast", 0, 0, 0, "cluster", "Enables read-only queries on a replica."),
    READWRITE(1, "loading stale fast", 0, 0, 0, "cluster", "Disables read-only queries on a replica."),
    CLUSTER(-2, "admin noscript loading stale", 0, 0, 0, "cluster", "A container for Redis Cluster commands."),
    MIGRATE(-6, "write", 0, 0, 0, "keyspace", "Atomically moves keys to another node (cluster resharding)."),
    ASKING(1, "fast", 0, 0, 0, "cluster", "Signals that a cluster client is following an -ASK redirect."),
    SENTINEL(-2, "admin noscript loading stale", 0, 0, 0, "sentinel", "Sentinel's discovery calls for a replica set."),
    SET(-3, "write denyoom", 1, 1, 1, "string", "Sets the string value of a key, ignoring its type."),
    GET(2, "readonly fast", 1, 1, 1, "string", "Returns the string value of a key."),
    GETDEL(2, "write fast", 1, 1, 1, "string", "Returns the string value of a key after deleting the key."),
    GETEX(-2, "write fast", 1, 1, 1, "string", "Returns the string value of a key after setting its expiration time."),
    SETNX(3, "write denyoom fast", 1, 1, 1, "string", "Set the string value of a key only when the key doesn't exist."),
    SETEX(4, "write denyoom", 1, 1, 1, "string", "Sets the string value and expiration time of a key."),
    PSETEX(4, "write denyoom", 1, 1, 1, "string", "Sets the string value and expiration time in milliseconds."),
    MGET(-2, "readonly fast", 1, -1, 1, "string", "Atomically returns the string values of one or more keys."),
    MSET(-3, "write denyoom", 1, -1, 2, "string", "Atomically creates or modifies the string values of keys."),
    MSETNX(-3, "write denyoom", 1, -1, 2, "string", "Sets the values of keys only when none of the keys exist."),
    INCR(2, "write denyoom fast", 1, 1, 1, "string", "Increments the integer value of a key by one."),
    INCRBY(3, "write denyoom fast", 1, 1, 1, "string", "Increments the integer value of a key by a number."),
    INCRBYFLOAT(3, "write denyoom fast", 1, 1, 1, "string", "Increment the floating point value of a key."),
    DECR(2, "write denyoom fast", 1, 1, 1, "string", "Decrements the integer value of a key by one."),
    DECRBY(3, "write denyoom fast", 1, 1, 1, "string", "Decrements a number from the integer value of a key."),
    APPEND(3, "write denyoom fast", 1, 1, 1, "string", "Appends a string to the value of a key."),
    STRLEN(2, "readonly fast", 1, 1, 1, "string", "Returns the length of a string value."),
    GETRANGE(4, "readonly", 1, 1, 1, "string", "Returns a substring of the string stored at a key."),
    SETRANGE(4, "write denyoom", 1, 1, 1, "string", "Overwrites a part of a string value with another by an offset."),
    DEL(-2, "write", 1, -1, 1, "keyspace", "Deletes one or more keys."),
    UNLINK(-2, "write fast", 1, -1, 1, "keyspace", "Asynchronously deletes one or more keys."),
    EXISTS(-2, "readonly fast", 1, -1, 1, "keyspace", "Determines whether one or more keys exist."),
    TYPE(2, "readonly fast", 1, 1, 1, "keyspace", "Determines the type of value stored at a key."),
    EXPIRE(-3, "write fast", 1, 1, 1, "keyspace", "Sets the expiration time of a key in seconds."),
    PEXPIRE(-3, "write fast", 1, 1, 1, "keyspace", "Sets the expiration time of a key in milliseconds."),
    EXPIREAT(-3, "write fast", 1, 1, 1, "keyspace", "Sets the expiration time of a key to a Unix timestamp."),
    PEXPIREAT(-3, "write fast", 1, 1, 1, "keyspace", "Sets the expiration time of a key to a Unix ms timestamp."),
    TTL(2, "readonly fast", 1, 1, 1, "keyspace", "Returns the expiration time in seconds of a key."),
    PTTL(2, "readonly fast", 1, 1, 1, "keyspace", "Returns the expiration time in milliseconds of a key."),
    PERSIST(2, "write fast", 1, 1, 1, "keyspace", "Removes the expiration time of a key."),
    RENAME(3, "write", 1, 2, 1, "keyspace", "Renames a key and overwrites the destination."),
    RENAMENX(3, "write fast", 1, 2, 1, "keyspace", "Renames a key only when the target key name doesn't exist."),
    KEYS(2, "readonly", 0, 0, 0, "keyspace", "Returns all key names that match a pattern."),
    SCAN(-2, "readonly", 0, 0, 0, "keyspace", "Iterates over the key names in the database."),
    RANDOMKEY(1, "readonly", 0, 0, 0, "keyspace", "Returns a random key name from the database."),
    HSET(-4, "write denyoom fast", 1, 1, 1, "hash", "Creates or modifies the value of a field in a hash."),
    HSETNX(4, "write denyoom fast", 1, 1, 1, "hash", "Sets the value of a field in a hash only when the field doesn't exist."),
    HGET(3, "readonly fast", 1, 1, 1, "hash", "Returns the value of a field in a hash."),
    HMSET(-4, "write denyoom fast", 1, 1, 1, "hash", "Sets the values of multiple fields."),
    HMGET(-3, "readonly fast", 1, 1, 1, "hash", "Returns the values of all fields in a hash."),
    HGETALL(2, "readonly", 1, 1, 1, "hash", "Returns all fields and values in a hash."),
    HDEL(-3, "write fast", 1, 1, 1, "hash", "Deletes one or more fields and their values from a hash."),
    HEXISTS(3, "readonly fast", 1, 1, 1, "hash", "Determines whether a field exists in a hash."),
    HLEN(2, "readonly fast", 1, 1, 1, "hash", "Returns the number of fields in a hash."),
    HKEYS(2, "readonly", 1, 1, 1, "hash", "Returns all fields in a hash."),
    HVALS(2, "readonly", 1, 1, 1, "hash", "Returns all values in a hash."),
    HINCRBY(4, "write denyoom fast", 1, 1, 1, "hash", "Increments the integer value of a field in a hash by a number."),
    HINCRBYFLOAT(4, "write denyoom fast", 1, 1, 1, "hash", "Increments the floating point value of a field by a number."),
    HSCAN(-3, "readonly", 1, 1, 1, "hash", "Iterates over fields and values of a hash."),
    HRANDFIELD(-2, "readonly", 1, 1, 1, "hash", "Returns one or more random fields from a hash."),
    HSTRLEN(3, "readonly fast", 1, 1, 1, "hash", "Returns the length of the value of a field."),
    GETSET(3, "write denyoom fast", 1, 1, 1, "string", "Returns the previous string value of a key after setting it."),
    LCS(-3, "readonly", 1, 2, 1, "string", "Finds the longest common substring."),
    SETBIT(4, "write denyoom", 1, 1, 1, "bitmap", "Sets or clears the bit at offset of the string value."),
    GETBIT(3, "readonly fast", 1, 1, 1, "bitmap", "Returns a bit value by offset."),
    BITCOUNT(-2, "readonly", 1, 1, 1, "bitmap", "Counts the number of set bits (population counting) in a string."),
    BITPOS(-3, "readonly", 1, 1, 1, "bitmap", "Finds the first set (1) or clear (0) bit in a string."),
    BITOP(-4, "write denyoom", 2, -1, 1, "bitmap", "Performs bitwise operations on multiple strings."),
    COPY(-3, "write denyoom", 1, 2, 1, "keyspace", "Copies the value of a key to a new key."),
    EXPIRETIME(2, "readonly fast", 1, 1, 1, "keyspace", "Returns the expiration time of a key as a Unix timestamp."),
    PEXPIRETIME(2, "readonly fast", 1, 1, 1, "keyspace", "Returns the expiration time of a key as a Unix ms timestamp."),
    TOUCH(-2, "readonly fast", 1, -1, 1, "keyspace", "Returns the number of existing keys out of those specified."),
    OBJECT(-2, "readonly", 2, 2, 1, "keyspace", "A container for object introspection commands."),
    MEMORY(-2, "readonly", 0, 0, 0, "server", "A container for memory diagnostics commands."),
    FUNCTION(-2, "noscript", 0, 0, 0, "scripting", "A container for function commands."),
    RESET(1, "noscript loading stale fast no-auth", 0, 0, 0, "connection", "Resets the connection."),
    DUMP(2, "readonly", 1, 1, 1, "keyspace", "Returns a serialized representation of the value stored at a key."),
    RESTORE(-4, "write denyoom", 1, 1, 1, "keyspace", "Creates a key from the serialized representation of a value."),
    BLPOP(-3, "write noscript blocking", 1, -2, 1, "list", "Removes and returns the first element in a list; blocks."),
    BRPOP(-3, "write noscript blocking", 1, -2, 1, "list", "Removes and returns the last element in a list; blocks."),
    BRPOPLPUSH(4, "write denyoom noscript blocking", 1, 2, 1, "list", "Pops an element, pushes it to another list; blocks."),
    BLMOVE(6, "write denyoom noscript blocking", 1, 2, 1, "list", "Pops an element, pushes it to another list; blocks."),
    BLMPOP(-5, "write blocking", 0, 0, 0, "list", "Pops elements from the first non-empty list; blocks."),
    LMPOP(-4, "write", 0, 0, 0, "list", "Returns multiple elements from a list after removing them."),
    MULTI(1, "noscript loading stale fast", 0, 0, 0, "transactions", "Starts a transaction."),
    EXEC(1, "noscript loading stale skip-slowlog", 0, 0, 0, "transactions", "Executes all commands in a transaction."),
    DISCARD(1, "noscript loading stale fast", 0, 0, 0, "transactions", "Discards a transaction."),
    WATCH(-2, "noscript loading stale fast", 1, -1, 1, "transactions", "Monitors changes to keys to abort a transaction."),
    UNWATCH(1, "noscript loading stale fast", 0, 0, 0, "transactions", "Forgets about watched keys of a transaction."),
    SUBSCRIBE(-2, "pubsub noscript loading stale", 0, 0, 0, "pubsub", "Listens for messages published to channels."),
    UNSUBSCRIBE(-1, "pubsub noscript loading stale", 0, 0, 0, "pubsub", "Stops listening to messages posted to channels."),
    PSUBSCRIBE(-2, "pubsub noscript loading stale", 0, 0, 0, "pubsub", "Listens for messages published to channels matching patterns."),
    PUNSUBSCRIBE(-1, "pubsub noscript loading stale", 0, 0, 0, "pubsub", "Stops listening to messages posted to channels matching patterns."),
    PUBLISH(3, "pubsub loading stale fast", 0, 0, 0, "pubsub", "Posts a message to a channel."),
    PUBSUB(-2, "pubsub loading stale", 0, 0, 0, "pubsub", "A container for Pub/Sub commands."),
    SORT(-2, "write denyoom", 1, 1, 1, "keyspace", "Sorts the elements in a list or a set, optionally storing the result."),
    SORT_RO(-2, "readonly", 1, 1, 1, "keyspace", "Returns the sorted elements of a list or a set."),
    SADD(-3, "write denyoom fast", 1, 1, 1, "set", "Adds one or more members to a set."),
    SREM(-3, "write fast", 1, 1, 1, "set", "Removes one or more members from a set."),
    SMEMBERS(2, "readonly", 1, 1, 1, "set", "Returns all members of a set."),
    SISMEMBER(3, "readonly fast", 1, 1, 1, "set", "Determines whether a member belongs to a set."),
    SMISMEMBER(-3, "readonly fast", 1, 1, 1, "set", "Determines whether multiple members belong to a set."),
    SCARD(2, "readonly fast", 1, 1, 1, "set", "Returns the number of members in a set."),
    SPOP(-2, "write fast", 1, 1, 1, "set", "Returns one or more random members from a set after removing them."),
    SRANDMEMBER(-2, "readonly", 1, 1, 1, "set", "Get one or multiple random members from a set."),
    SMOVE(4, "write fast", 1, 2, 1, "set", "Moves a member from one set to another."),
    SINTER(-2, "readonly", 1, -1, 1, "set", "Returns the intersect of multiple sets."),
    SUNION(-2, "readonly", 1, -1, 1, "set", "Returns the union of multiple sets."),
    SDIFF(-2, "readonly", 1, -1, 1, "set", "Returns the difference of multiple sets."),
    SINTERSTORE(-3, "write denyoom", 1, -1, 1, "set", "Stores the intersect of multiple sets in a key."),
    SUNIONSTORE(-3, "write denyoom", 1, -1, 1, "set", "Stores the union of multiple sets in a key."),
    SDIFFSTORE(-3, "write denyoom", 1, -1, 1, "set", "Stores the difference of multiple sets in a key."),
    SINTERCARD(-3, "readonly", 0, 0, 0, "set", "Returns the number of members of the intersect of multiple sets."),
    SSCAN(-3, "readonly", 1, 1, 1, "set", "Iterates over members of a set."),
    ZADD(-4, "write denyoom fast", 1, 1, 1, "sorted-set", "Adds members to a sorted set, or updates their scores."),
    ZINCRBY(4, "write denyoom fast", 1, 1, 1, "sorted-set", "Increments the score of a member in a sorted set."),
    ZREM(-3, "write fast", 1, 1, 1, "sorted-set", "Removes one or more members from a sorted set."),
    ZCARD(2, "readonly fast", 1, 1, 1, "sorted-set", "Returns the number of members in a sorted set."),
    ZSCORE(3, "readonly fast", 1, 1, 1, "sorted-set", "Returns the score of a member in a sorted set."),
    ZMSCORE(-3, "readonly fast", 1, 1, 1, "sorted-set", "Returns the score of one or more members in a sorted set."),
    ZRANK(3, "readonly fast", 1, 1, 1, "sorted-set", "Returns the index of a member in a sorted set by ascending scores."),
    ZREVRANK(3, "readonly fast", 1, 1, 1, "sorted-set", "Returns the index of a member by descending scores."),
    ZCOUNT(4, "readonly fast", 1, 1, 1, "sorted-set", "Returns the count of members with scores within a range."),
    ZLEXCOUNT(4, "readonly fast", 1, 1, 1, "sorted-set", "Returns the number of members within a lexicographical range."),
    ZRANGE(-4, "readonly", 1, 1, 1, "sorted-set", "Returns members in a sorted set within a range of indexes."),
    ZRANGESTORE(-5, "write denyoom", 1, 2, 1, "sorted-set", "Stores a range of members from a sorted set in a key."),
    ZREVRANGE(-4, "readonly", 1, 1, 1, "sorted-set", "Returns members within a range of indexes in reverse order."),
    ZRANGEBYSCORE(-4, "readonly", 1, 1, 1, "sorted-set", "Returns members in a sorted set within a range of scores."),
    ZREVRANGEBYSCORE(-4, "readonly", 1, 1, 1, "sorted-set", "Returns members within a range of scores in reverse order."),
    ZRANGEBYLEX(-4, "readonly", 1, 1, 1, "sorted-set", "Returns members within a lexicographical range."),
    ZREVRANGEBYLEX(-4, "readonly", 1, 1, 1, "sorted-set", "Returns members within a lexicographical range, reversed."),
    ZREMRANGEBYRANK(4, "write", 1, 1, 1, "sorted-set", "Removes members in a sorted set within a range of indexes."),
    ZREMRANGEBYSCORE(4, "write", 1, 1, 1, "sorted-set", "Removes members in a sorted set within a range of scores."),
    ZREMRANGEBYLEX(4, "write", 1, 1, 1, "sorted-set", "Removes members in a sorted set within a lexicographical range."),
    ZPOPMIN(-2, "write fast", 1, 1, 1, "sorted-set", "Returns the lowest-scoring members after removing them."),
    ZPOPMAX(-2, "write fast", 1, 1, 1, "sorted-set", "Returns the highest-scoring members after removing them."),
    ZMPOP(-4, "write", 0, 0, 0, "sorted-set", "Returns the lowest- or highest-scoring members of the first non-empty set."),
    BZPOPMIN(-3, "write noscript blocking fast", 1, -2, 1, "sorted-set", "Removes and returns the member with the lowest score; blocks."),
    BZPOPMAX(-3, "write noscript blocking fast", 1, -2, 1, "sorted-set", "Removes and returns the member with the highest score; blocks."),
    BZMPOP(-5, "write blocking", 0, 0, 0, "sorted-set", "Removes and returns members of the first non-empty sorted set; blocks."),
    ZRANDMEMBER(-2, "readonly", 1, 1, 1, "sorted-set", "Returns one or more random members from a sorted set."),
    ZSCAN(-3, "readonly", 1, 1, 1, "sorted-set", "Iterates over members and scores of a sorted set."),
    ZUNIONSTORE(-4, "write denyoom", 1, 1, 1, "sorted-set", "Stores the union of multiple sorted sets in a key."),
    ZINTERSTORE(-4, "write denyoom", 1, 1, 1, "sorted-set", "Stores the intersect of multiple sorted sets in a key."),
    ZDIFFSTORE(-4, "write denyoom", 1, 1, 1, "sorted-set", "Stores the difference of multiple sorted sets in a key."),
    ZUNION(-3, "readonly", 0, 0, 0, "sorted-set", "Returns the union of multiple sorted sets."),
    ZINTER(-3, "readonly", 0, 0, 0, "sorted-set", "Returns the intersect of multiple sorted sets."),
    ZDIFF(-3, "readonly", 0, 0, 0, "sorted-set", "Returns the difference between multiple sorted sets."),
    ZINTERCARD(-3, "readonly", 0, 0, 0, "sorted-set", "Returns the number of members of the intersect of sorted sets."),
    LPUSH(-3, "write denyoom fast", 1, 1, 1, "list", "Prepends one or more elements to a list."),
    RPUSH(-3, "write denyoom fast", 1, 1, 1, "list", "Appends one or more elements to a list."),
    LPUSHX(-3, "write denyoom fast", 1, 1, 1, "list", "Prepends elements to a list only when the list exists."),
    RPUSHX(-3, "write denyoom fast", 1, 1, 1, "list", "Appends elements to a list only when the list exists."),
    LPOP(-2, "write fast", 1, 1, 1, "list", "Returns the first elements in a list after removing it."),
    RPOP(-2, "write fast", 1, 1, 1, "list", "Returns and removes the last elements of a list."),
    LLEN(2, "readonly fast", 1, 1, 1, "list", "Returns the length of a list."),
    LRANGE(4, "readonly", 1, 1, 1, "list", "Returns a range of elements from a list."),
    LINDEX(3, "readonly", 1, 1, 1, "list", "Returns an element from a list by its index."),
    LSET(4, "write denyoom", 1, 1, 1, "list", "Sets the value of an element in a list by its index."),
    LTRIM(4, "write", 1, 1, 1, "list", "Removes elements from both ends a list."),
    LREM(4, "write", 1, 1, 1, "list", "Removes elements from a list."),
    LINSERT(5, "write denyoom", 1, 1, 1, "list", "Inserts an element before or after another element in a list."),
    LPOS(-3, "readonly", 1, 1, 1, "list", "Returns the index of matching elements in a list."),
    LMOVE(5, "write denyoom", 1, 2, 1, "list", "Returns an element after popping it from one list and pushing it."),
    RPOPLPUSH(3, "write denyoom", 1, 2, 1, "list", "Returns the last element of a list after moving it to another.");

    private static final RespCommand[] VALUES = values();
    private static final int TABLE_BITS = 9;
    private static final RespCommand[] TABLE = new RespCommand[1 << TABLE_BITS];

    static {
        for (RespCommand c : VALUES) {
            int slot = hash(c.upper, c.upper.length) & (TABLE.length - 1);
            while (TABLE[slot] != null) {
                slot = (slot + 1) & (TABLE.length - 1);
            }
            TABLE[slot] = c;
        }
    }

    final int arity;
    final String[] flags;
    final int firstKey;
    final int lastKey;
    final int step;
    final String group;
    final String summary;
    final String lowerName;
    final boolean noAuth;
    final boolean write;
    /** May use more memory: refused while used memory is over {@code maxmemory}. */
    final boolean denyoom;
    private final byte[] upper;

    RespCommand(int arity, String flags, int firstKey, int lastKey, int step, String group, String summary) {
        this.arity = arity;
        this.flags = flags.split(" ");
        this.firstKey = firstKey;
        this.lastKey = lastKey;
        this.step = step;
        this.group = group;
        this.summary = summary;
        this.lowerName = name().toLowerCase(Locale.ROOT);
        this.noAuth = flags.contains("no-auth");
        this.write = flags.startsWith("write");
        this.denyoom = flags.contains("denyoom");
        this.upper = name().getBytes(StandardCharsets.US_ASCII);
    }

    /** Whether {@code argc} (name included) fits this command's arity. */
    boolean arityOk(int argc) {
        return arity > 0 ? argc == arity : argc >= -arity;
    }

    /** The command named {@code name} in any letter case, or null. */
    static RespCommand lookup(byte[] name) {
        int len = name.length;
        if (len == 0 || len > 16) {
            return null;
        }
        int slot = hash(name, len) & (TABLE.length - 1);
        RespCommand c;
        while ((c = TABLE[slot]) != null) {
            if (equalsIgnoreCase(c.upper, name)) {
                return c;
            }
            slot = (slot + 1) & (TABLE.length - 1);
        }
        return null;
    }

    static int count() {
        return VALUES.length;
    }

    static RespCommand[] all() {
        return VALUES.clone();
    }

    private static int hash(byte[] b, int len) {
        int h = len;
        for (int i = 0; i < len; i++) {
            h = h * 31 + (b[i] & 0xDF);
        }
        return h ^ (h >>> 11);
    }

    /** ASCII case-insensitive compare; {@code upper} is already upper case. */
    static boolean equalsIgnoreCase(byte[] upper, byte[] b) {
        if (upper.length != b.length) {
            return false;
        }
        for (int i = 0; i < b.length; i++) {
            int x = b[i];
            if (x >= 'a' && x <= 'z') {
                x -= 32;
            }
            if (x != upper[i]) {
                return false;
            }
        }
        return true;
    }

    /** Case-insensitive comparison of an argument with an upper-case ASCII keyword. */
    static boolean is(byte[] arg, String upperKeyword) {
        if (arg.length != upperKeyword.length()) {
            return false;
        }
        for (int i = 0; i < arg.length; i++) {
            int x = arg[i];
            if (x >= 'a' && x <= 'z') {
                x -= 32;
            }
            if (x != upperKeyword.charAt(i)) {
                return false;
            }
        }
        return true;
    }
}
