package io.rdmastore.server.resp;

import io.rdmastore.store.Glob;
import io.rdmastore.store.NoSuchKeyException;
import io.rdmastore.store.ScanResult;
import io.rdmastore.store.SetOptions;
import io.rdmastore.store.SetResult;
import io.rdmastore.store.Store;
import io.rdmastore.store.StoreStats;
import io.rdmastore.store.ValueType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Runs one parsed command and writes its reply, with Redis's semantics and error texts. Stateless apart from the face
 * it serves: per-connection scratch state (parsed numbers, SET options) lives in {@link RespConnection}.
 *
 * <p>Threads: any event loop may call {@link #execute} at once for different connections. Buffers: {@code argv}
 * belongs to the connection; arguments are passed to the store, which copies what it keeps.
 */
final class RespCommands {
    private static final Logger LOG = LoggerFactory.getLogger(RespCommands.class);
    private static final String NOT_INTEGER = "ERR value is not an integer or out of range";
    private static final String SYNTAX = "ERR syntax error";
    static final String OOM = "OOM command not allowed when used memory > 'maxmemory'.";
    private static final byte[] DEFAULT_USER = "default".getBytes(StandardCharsets.US_ASCII);

    private final RespFace face;
    private final Store store;
    private final RespMore more;
    private final RespSort sort;

    RespCommands(RespFace face) {
        this.face = face;
        this.store = face.store;
        this.more = new RespMore(face);
        this.sort = new RespSort(face);
    }

    void execute(RespConnection c, byte[][] argv, int argc) {
        RespCommand cmd = RespCommand.lookup(argv[0]);
        RespWriter w = c.out();
        if (cmd == null) {
            RespMulti.queueFailed(c);
            w.error(unknownCommand(argv, argc));
            return;
        }
        c.lastCommand = cmd.lowerName;
        if (!cmd.arityOk(argc)) {
            RespMulti.queueFailed(c);
            w.error(wrongArgs(cmd.lowerName));
            return;
        }
        if (!c.authenticated && !cmd.noAuth) {
            RespMulti.queueFailed(c);
            w.error("NOAUTH Authentication required.");
            return;
        }
        boolean subscribed = !c.channels.isEmpty() || !c.patterns.isEmpty();
        if (subscribed && !w.resp3() && !RespPubSub.allowedSubscribed(cmd)) {
            w.error("ERR Can't execute '" + cmd.lowerName + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT"
                + " / RESET are allowed in this context");
            return;
        }
        if (cmd.denyoom && face.overMaxmemory()) {
            face.evictIfNeeded();
        }
        if (cmd.denyoom && face.overMaxmemory()) {
            RespMulti.queueFailed(c);
            w.error(OOM);
            return;
        }
        if (cmd == RespCommand.EXEC && c.queued != null && !c.queueError && face.overMaxmemory()
            && face.multi.anyDenyoom(c)) {
            face.multi.discard(c);
            w.error("EXECABORT Transaction discarded because of: " + OOM.substring(0));
            return;
        }
        if (face.multi.queue(c, w, cmd, argv, argc)) {
            return;
        }
        c.current = cmd;
        var cluster = face.cluster();
        if (cluster != null && cmd.firstKey > 0 && !RespCluster.route(cluster, c, w, cmd, argv, argc)) {
            return;
        }
        switch (cmd) {
            case PING -> {
                if (argc > 2) {
                    w.error(wrongArgs("ping"));
                } else if (subscribed && !w.resp3()) {
                    // RESP2 subscribed mode: PING answers as a pub/sub message does
                    w.arrayHeader(2);
                    w.bulk("pong");
                    w.bulk(argc == 2 ? argv[1] : new byte[0]);
                } else if (argc == 2) {
                    w.bulk(argv[1]);
                } else {
                    w.simple("PONG");
                }
            }
            case ECHO -> w.bulk(argv[1]);
            case AUTH -> auth(c, w, argv, argc);
            case HELLO -> hello(c, w, argv, argc);
            case QUIT -> {
                w.ok();
                c.closeAfterReply();
            }
            case SELECT -> {
                if (!parseLong(c, argv[1]) || c.num < Integer.MIN_VALUE || c.num > Integer.MAX_VALUE) {
                    w.error(NOT_INTEGER);
                } else if (c.num != 0) {
                    w.error("ERR DB index is out of range");
                } else {
                    w.ok();
                }
            }
            case CLIENT -> client(c, w, argv, argc);
            case INFO -> w.verbatim(info(c, argv, argc));
            case CONFIG -> config(w, argv, argc);
            case COMMAND -> command(w, argv, argc);
            case DBSIZE -> w.integer(store.size());
            case FLUSHDB, FLUSHALL -> {
                if (argc > 2 || (argc == 2 && !RespCommand.is(argv[1], "ASYNC") && !RespCommand.is(argv[1], "SYNC"))) {
                    w.error(SYNTAX);
                } else {
                    store.flushAll();
                    w.ok();
                }
            }
            case TIME -> {
                long micros = currentMicros();
                w.arrayHeader(2);
                w.bulkDecimal(micros / 1_000_000);
                w.bulkDecimal(micros % 1_000_000);
            }
            case SAVE -> {
                store.snapshot();
                w.ok();
            }
            case BGSAVE -> {
                if (argc == 2 && !RespCommand.is(argv[1], "SCHEDULE")) {
                    w.error(SYNTAX);
                } else {
                    store.snapshotAsync().whenComplete((p, e) -> {
                        if (e != null) {
                            LOG.warn("BGSAVE failed", e);
                        }
                    });
                    w.simple("Background saving started");
                }
            }
            case LASTSAVE -> w.integer(store.lastSnapshotEpochMillis() / 1000);
            case ROLE -> RespReplication.role(face, w);
            case WAIT -> RespReplication.await(face, c, w, argv);
            case READONLY, READWRITE -> {
                c.replicaReads = cmd == RespCommand.READONLY;
                w.ok();
            }
            case CLUSTER -> RespCluster.cluster(face, c, w, argv, argc);
            case ASKING -> w.ok();
            case MIGRATE -> RespCluster.migrate(face, c, w, argv, argc);
            case SENTINEL -> RespReplication.sentinel(face, w, argv, argc);
            case SET -> set(c, w, argv, argc);
            case GET -> get(c, w, argv[1]);
            case GETDEL -> w.bulk(store.getDel(argv[1]));
            case GETEX -> getex(c, w, argv, argc);
            case SETNX -> w.integer(store.set(argv[1], argv[2], c.setOptions.reset().ifAbsent(true)).written() ? 1 : 0);
            case SETEX, PSETEX -> {
                if (!parseLong(c, argv[2])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                long at = expireAt(c.num, cmd == RespCommand.SETEX ? 1000 : 1, false);
                if (c.num <= 0 || at < 0) {
                    w.error("ERR invalid expire time in '" + cmd.lowerName + "' command");
                    return;
                }
                store.set(argv[1], argv[3], c.setOptions.reset().expireAtMillis(at));
                w.ok();
            }
            case MGET -> {
                List<byte[]> values = store.mget(Arrays.copyOfRange(argv, 1, argc));
                w.arrayHeader(values.size());
                for (byte[] v : values) {
                    w.bulk(v);
                }
            }
            case MSET, MSETNX -> {
                if ((argc & 1) == 0) {
                    w.error(wrongArgs(cmd.lowerName));
                    return;
                }
                boolean done = store.mset(Arrays.asList(argv).subList(1, argc), cmd == RespCommand.MSETNX);
                if (cmd == RespCommand.MSET) {
                    w.ok();
                } else {
                    w.integer(done ? 1 : 0);
                }
            }
            case INCR -> w.integer(store.incrBy(argv[1], 1));
            case DECR -> w.integer(store.incrBy(argv[1], -1));
            case INCRBY, DECRBY -> {
                if (!parseLong(c, argv[2])) {
                    w.error(NOT_INTEGER);
                } else if (cmd == RespCommand.DECRBY && c.num == Long.MIN_VALUE) {
                    w.error("ERR decrement would overflow");
                } else {
                    w.integer(store.incrBy(argv[1], cmd == RespCommand.DECRBY ? -c.num : c.num));
                }
            }
            case INCRBYFLOAT -> {
                if (RespMore.infinite(argv[2])) {
                    // Redis parses inf as a long double and then refuses the sum
                    store.strlen(argv[1]);
                    w.error("ERR increment would produce NaN or Infinity");
                } else {
                    w.bulk(store.incrByFloat(argv[1], ascii(argv[2])));
                }
            }
            case APPEND -> w.integer(store.append(argv[1], argv[2]));
            case STRLEN -> w.integer(store.strlen(argv[1]));
            case GETRANGE -> {
                if (!parseLong(c, argv[2])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                long start = c.num;
                if (!parseLong(c, argv[3])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                w.bulk(store.getRange(argv[1], start, c.num));
            }
            case SETRANGE -> {
                if (!parseLong(c, argv[2])) {
                    w.error(NOT_INTEGER);
                } else if (c.num < 0) {
                    w.error("ERR offset is out of range");
                } else if (argv[3].length > 0 && c.num > face.maxBulkLength() - argv[3].length) {
                    w.error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
                } else {
                    w.integer(store.setRange(argv[1], c.num, argv[3]));
                }
            }
            case DEL, UNLINK -> w.integer(store.delete(Arrays.copyOfRange(argv, 1, argc)));
            case EXISTS -> w.integer(store.exists(Arrays.copyOfRange(argv, 1, argc)));
            case TYPE -> w.simple(store.type(argv[1]).redisName());
            case EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT -> expire(c, w, cmd, argv, argc);
            case TTL, PTTL -> {
                long ms = store.pttl(argv[1]);
                w.integer(ms < 0 || cmd == RespCommand.PTTL ? ms : (ms + 500) / 1000);
            }
            case PERSIST -> w.integer(store.persist(argv[1]) ? 1 : 0);
            case RENAME, RENAMENX -> {
                try {
                    boolean done = store.rename(argv[1], argv[2], cmd == RespCommand.RENAMENX);
                    if (cmd == RespCommand.RENAME) {
                        w.ok();
                    } else {
                        w.integer(done ? 1 : 0);
                    }
                } catch (NoSuchKeyException e) {
                    w.error("ERR no such key");
                }
            }
            case KEYS -> array(w, store.keys(pattern(argv[1])));
            case SCAN -> scan(c, w, argv, argc, false);
            case RANDOMKEY -> w.bulk(store.randomKey());
            case HSET, HMSET -> {
                if ((argc & 1) != 0) {
                    w.error(wrongArgs(cmd.lowerName));
                    return;
                }
                long added = store.hset(argv[1], Arrays.asList(argv).subList(2, argc));
                if (cmd == RespCommand.HSET) {
                    w.integer(added);
                } else {
                    w.ok();
                }
            }
            case HSETNX -> w.integer(store.hsetnx(argv[1], argv[2], argv[3]) ? 1 : 0);
            case HGET -> w.bulk(store.hget(argv[1], argv[2]));
            case HMGET -> array(w, store.hmget(argv[1], Arrays.copyOfRange(argv, 2, argc)));
            case HGETALL -> store.hgetAll(argv[1], new Store.HashReader() {
                // straight from the store's arrays into the reply, under the shard's read lock
                @Override
                public void size(int pairs) {
                    w.mapHeader(pairs);
                }

                @Override
                public void pair(byte[] field, byte[] value) {
                    w.bulk(field);
                    w.bulk(value);
                }
            });
            case HDEL -> w.integer(store.hdel(argv[1], Arrays.copyOfRange(argv, 2, argc)));
            case HEXISTS -> w.integer(store.hexists(argv[1], argv[2]) ? 1 : 0);
            case HLEN -> w.integer(store.hlen(argv[1]));
            case HKEYS -> array(w, store.hkeys(argv[1]));
            case HVALS -> array(w, store.hvals(argv[1]));
            case HINCRBY -> {
                if (!parseLong(c, argv[3])) {
                    w.error(NOT_INTEGER);
                } else {
                    w.integer(store.hincrBy(argv[1], argv[2], c.num));
                }
            }
            case HINCRBYFLOAT -> {
                if (RespMore.infinite(argv[3])) {
                    w.error("ERR value is NaN or Infinity");
                } else {
                    w.bulk(store.hincrByFloat(argv[1], argv[2], ascii(argv[3])));
                }
            }
            case HSCAN -> scan(c, w, argv, argc, true);
            case BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP, LMPOP, BZPOPMIN, BZPOPMAX, BZMPOP ->
                face.blocking.execute(c, w, cmd, argv, argc);
            case MULTI, EXEC, DISCARD, WATCH, UNWATCH -> face.multi.execute(c, w, cmd, argv, argc);
            case SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, PUBSUB ->
                face.pubsub.execute(c, w, cmd, argv, argc);
            case SORT, SORT_RO -> sort.execute(c, w, cmd, argv, argc);
            default -> more.execute(c, w, cmd, argv, argc);
        }
    }

    // ---- connection ----

    private void auth(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        if (argc > 3) {
            w.error(SYNTAX);
            return;
        }
        String pw = face.password();
        if (argc == 2 && pw == null) {
            w.error("ERR AUTH <password> called without any password configured for the default user. "
                + "Are you sure your configuration is correct?");
            return;
        }
        if (checkCredentials(argc == 3 ? argv[1] : DEFAULT_USER, argv[argc - 1])) {
            c.authenticated = true;
            w.ok();
        } else {
            w.error("WRONGPASS invalid username-password pair or user is disabled.");
        }
    }

    private boolean checkCredentials(byte[] user, byte[] pass) {
        if (!Arrays.equals(user, DEFAULT_USER)) {
            return false;
        }
        String pw = face.password();
        // Without requirepass the default user is "nopass": any password is accepted, as in Redis.
        return pw == null || MessageDigest.isEqual(pw.getBytes(StandardCharsets.UTF_8), pass);
    }

    private void hello(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        int proto = w.proto;
        if (argc >= 2) {
            if (!parseLong(c, argv[1]) || c.num < Integer.MIN_VALUE || c.num > Integer.MAX_VALUE) {
                w.error("ERR Protocol version is not an integer or out of range");
                return;
            }
            if (c.num != 2 && c.num != 3) {
                w.error("NOPROTO unsupported protocol version");
                return;
            }
            proto = (int) c.num;
        }
        byte[] user = null;
        byte[] pass = null;
        String name = null;
        for (int i = 2; i < argc; i++) {
            int more = argc - i - 1;
            if (RespCommand.is(argv[i], "AUTH") && more >= 2) {
                user = argv[i + 1];
                pass = argv[i + 2];
                i += 2;
            } else if (RespCommand.is(argv[i], "SETNAME") && more >= 1) {
                name = utf8(argv[i + 1]);
                i++;
            } else {
                w.error("ERR Syntax error in HELLO option '" + utf8(argv[i]) + "'");
                return;
            }
        }
        if (user != null && !checkCredentials(user, pass)) {
            w.error("WRONGPASS invalid username-password pair or user is disabled.");
            return;
        }
        if (user == null && !c.authenticated) {
            w.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> "
                + "AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol "
                + "version at the same time");
            return;
        }
        if (name != null && !validName(name)) {
            w.error("ERR Client names cannot contain spaces, newlines or special characters.");
            return;
        }
        if (user != null) {
            c.authenticated = true;
        }
        if (name != null) {
            c.name = name;
        }
        w.proto = proto;
        w.mapHeader(7);
        w.bulk("server");
        w.bulk("redis");
        w.bulk("version");
        w.bulk(RespFace.REDIS_VERSION);
        w.bulk("proto");
        w.integer(proto);
        w.bulk("id");
        w.integer(c.id);
        w.bulk("mode");
        w.bulk(face.cluster() != null ? "cluster" : "standalone");
        w.bulk("role");
        w.bulk("master");
        w.bulk("modules");
        w.arrayHeader(0);
    }

    private void client(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        byte[] sub = argv[1];
        if (RespCommand.is(sub, "ID") && argc == 2) {
            w.integer(c.id);
        } else if (RespCommand.is(sub, "GETNAME") && argc == 2) {
            if (c.name.isEmpty()) {
                w.nullBulk();
            } else {
                w.bulk(c.name);
            }
        } else if (RespCommand.is(sub, "SETNAME") && argc == 3) {
            String name = utf8(argv[2]);
            if (!validName(name)) {
                w.error("ERR Client names cannot contain spaces, newlines or special characters.");
            } else {
                c.name = name;
                w.ok();
            }
        } else if (RespCommand.is(sub, "SETINFO") && argc == 4) {
            String value = utf8(argv[3]);
            if (!validName(value)) {
                w.error("ERR " + utf8(argv[2]) + " cannot contain spaces, newlines or special characters.");
            } else if (RespCommand.is(argv[2], "LIB-NAME")) {
                c.libName = value;
                w.ok();
            } else if (RespCommand.is(argv[2], "LIB-VER")) {
                c.libVersion = value;
                w.ok();
            } else {
                w.error("ERR Unrecognized option '" + utf8(argv[2]) + "'");
            }
        } else if (RespCommand.is(sub, "UNBLOCK") && (argc == 3 || argc == 4)) {
            if (!parseLong(c, argv[2])) {
                w.error(NOT_INTEGER);
                return;
            }
            boolean error = false;
            if (argc == 4) {
                if (RespCommand.is(argv[3], "ERROR")) {
                    error = true;
                } else if (!RespCommand.is(argv[3], "TIMEOUT")) {
                    w.error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
                    return;
                }
            }
            w.integer(face.blocking.unblock(face.client(c.num), error, c.inExec) ? 1 : 0);
        } else if (RespCommand.is(sub, "REPLY") && argc == 3) {
            if (RespCommand.is(argv[2], "ON")) {
                c.replyOff = false;
                c.replyTurnedOn = true;
                w.ok();
            } else if (RespCommand.is(argv[2], "OFF")) {
                c.replyOff = true;
            } else if (RespCommand.is(argv[2], "SKIP")) {
                if (!c.replyOff) {
                    c.skipNext = true;
                }
            } else {
                w.error(SYNTAX);
            }
        } else if (RespCommand.is(sub, "INFO") && argc == 2) {
            w.verbatim(clientLine(c) + "\n");
        } else if (RespCommand.is(sub, "LIST")) {
            clientList(c, w, argv, argc);
        } else if (RespCommand.is(sub, "HELP") && argc == 2) {
            help(w, "CLIENT", "ID", "    Return the ID of the current connection.", "GETNAME",
                "    Return the name of the current connection.", "SETNAME <name>",
                "    Assign the name <name> to the current connection.", "SETINFO <LIB-NAME|LIB-VER> <value>",
                "    Set client library name or version.", "INFO", "    Return information about the current client.",
                "LIST [TYPE NORMAL|NATIVE] [ID <id> [<id> ...]]",
                "    Return information about client connections, with their transport.");
        } else if (isKnown(sub, "ID", "GETNAME", "SETNAME", "SETINFO", "INFO", "HELP")) {
            w.error(wrongArgs("client|" + utf8(sub).toLowerCase(Locale.ROOT)));
        } else {
            w.error("ERR unknown subcommand '" + truncate(utf8(sub)) + "'. Try CLIENT HELP.");
        }
    }

    private void clientList(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        String type = null;
        List<Long> ids = null;
        for (int i = 2; i < argc; i++) {
            if (RespCommand.is(argv[i], "TYPE") && i + 1 < argc) {
                type = utf8(argv[++i]).toLowerCase(Locale.ROOT);
                if (!type.equals("normal") && !type.equals("native") && !type.equals("master")
                    && !type.equals("replica") && !type.equals("pubsub")) {
                    w.error("ERR Unknown client type '" + utf8(argv[i]) + "'");
                    return;
                }
            } else if (RespCommand.is(argv[i], "ID") && i + 1 < argc) {
                ids = new ArrayList<>();
                for (i++; i < argc; i++) {
                    if (!parseLong(c, argv[i]) || c.num <= 0) {
                        w.error("ERR Invalid client ID");
                        return;
                    }
                    ids.add(c.num);
                }
            } else {
                w.error(SYNTAX);
                return;
            }
        }
        StringBuilder sb = new StringBuilder();
        if (type == null || type.equals("normal")) {
            for (RespConnection x : face.clients()) {
                if (ids == null || ids.contains(x.id)) {
                    sb.append(clientLine(x)).append('\n');
                }
            }
        }
        if (type == null || type.equals("native")) {
            for (RespFace.NativeClient n : face.nativeClients()) {
                if (ids == null || ids.contains(n.id())) {
                    sb.append("id=").append(n.id()).append(" addr=").append(n.address()).append(" laddr=")
                        .append(n.localAddress()).append(" fd=-1 name=").append(n.name()).append(" age=")
                        .append(n.ageSeconds()).append(" idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 cmd=NULL")
                        .append(" user=default resp=0 lib-name=rdmastore-native lib-ver= transport=")
                        .append(n.transport());
                    if (n.detail() != null && !n.detail().isEmpty()) {
                        sb.append(" transport-detail=").append(n.detail().replace(' ', '_'));
                    }
                    sb.append('\n');
                }
            }
        }
        w.verbatim(sb.toString());
    }

    private static String clientLine(RespConnection x) {
        long now = System.currentTimeMillis();
        return "id=" + x.id + " addr=" + x.remote + " laddr=" + x.local + " fd=-1 name=" + x.name
            + " age=" + (now - x.createdMillis) / 1000 + " idle=" + (now - x.lastInteractionMillis) / 1000
            + " flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 cmd=" + x.lastCommand + " user=default resp=" + x.w.proto
            + " lib-name=" + x.libName + " lib-ver=" + x.libVersion + " transport=" + x.transportName();
    }

    // ---- server ----

    private void config(RespWriter w, byte[][] argv, int argc) {
        byte[] sub = argv[1];
        if (RespCommand.is(sub, "GET")) {
            if (argc < 3) {
                w.error(wrongArgs("config|get"));
                return;
            }
            Map<String, String> all = face.configAll();
            Map<String, String> hits = new LinkedHashMap<>();
            for (int i = 2; i < argc; i++) {
                byte[] p = utf8(argv[i]).toLowerCase(Locale.ROOT).getBytes(StandardCharsets.UTF_8);
                for (Map.Entry<String, String> e : all.entrySet()) {
                    if (Glob.matches(p, e.getKey().getBytes(StandardCharsets.UTF_8))) {
                        hits.put(e.getKey(), e.getValue());
                    }
                }
            }
            w.mapHeader(hits.size());
            for (Map.Entry<String, String> e : hits.entrySet()) {
                w.bulk(e.getKey());
                w.bulk(e.getValue());
            }
        } else if (RespCommand.is(sub, "SET")) {
            if (argc < 4 || (argc & 1) != 0) {
                w.error(wrongArgs("config|set"));
                return;
            }
            for (int i = 2; i < argc; i += 2) {
                String name = utf8(argv[i]).toLowerCase(Locale.ROOT);
                String err = face.configSet(name, utf8(argv[i + 1]));
                if (err != null) {
                    w.error("ERR " + (err.startsWith("Unknown option") ? err
                        : "CONFIG SET failed (possibly related to argument '" + name + "') - " + err));
                    return;
                }
            }
            w.ok();
        } else if (RespCommand.is(sub, "RESETSTAT") && argc == 2) {
            face.resetStats();
            w.ok();
        } else if (RespCommand.is(sub, "HELP") && argc == 2) {
            help(w, "CONFIG", "GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
                "SET <directive> <value>", "    Set the configuration <directive> to <value>.", "RESETSTAT",
                "    Reset statistics reported by the INFO command.");
        } else if (RespCommand.is(sub, "REWRITE")) {
            w.error("ERR The server is running without a config file");
        } else {
            w.error("ERR unknown subcommand '" + truncate(utf8(sub)) + "'. Try CONFIG HELP.");
        }
    }

    private void command(RespWriter w, byte[][] argv, int argc) {
        if (argc == 1) {
            RespCommand[] all = RespCommand.all();
            w.arrayHeader(all.length);
            for (RespCommand x : all) {
                commandInfo(w, x);
            }
            return;
        }
        byte[] sub = argv[1];
        if (RespCommand.is(sub, "COUNT") && argc == 2) {
            w.integer(RespCommand.count());
        } else if (RespCommand.is(sub, "LIST") && argc == 2) {
            RespCommand[] all = RespCommand.all();
            w.arrayHeader(all.length);
            for (RespCommand x : all) {
                w.bulk(x.lowerName);
            }
        } else if (RespCommand.is(sub, "INFO")) {
            w.arrayHeader(argc == 2 ? RespCommand.count() : argc - 2);
            if (argc == 2) {
                for (RespCommand x : RespCommand.all()) {
                    commandInfo(w, x);
                }
            }
            for (int i = 2; i < argc; i++) {
                RespCommand x = RespCommand.lookup(argv[i]);
                if (x == null) {
                    w.nullArray();
                } else {
                    commandInfo(w, x);
                }
            }
        } else if (RespCommand.is(sub, "DOCS")) {
            List<RespCommand> list = new ArrayList<>();
            if (argc == 2) {
                list.addAll(Arrays.asList(RespCommand.all()));
            }
            for (int i = 2; i < argc; i++) {
                RespCommand x = RespCommand.lookup(argv[i]);
                if (x != null) {
                    list.add(x);
                }
            }
            w.mapHeader(list.size());
            for (RespCommand x : list) {
                w.bulk(x.lowerName);
                w.mapHeader(3);
                w.bulk("summary");
                w.bulk(x.summary);
                w.bulk("since");
                w.bulk("1.0.0");
                w.bulk("group");
                w.bulk(x.group.equals("keyspace") ? "generic" : x.group);
            }
        } else if (RespCommand.is(sub, "HELP") && argc == 2) {
            help(w, "COMMAND", "(no subcommand)", "    Return details about all commands.", "COUNT",
                "    Return the total number of commands.", "DOCS [<command-name> ...]",
                "    Return documentary information about commands.", "INFO [<command-name> ...]",
                "    Return details about the given commands.", "LIST", "    Return the names of all commands.");
        } else {
            w.error("ERR unknown subcommand '" + truncate(utf8(sub)) + "'. Try COMMAND HELP.");
        }
    }

    private static void commandInfo(RespWriter w, RespCommand x) {
        w.arrayHeader(10);
        w.bulk(x.lowerName);
        w.integer(x.arity);
        w.setHeader(x.flags.length);
        for (String f : x.flags) {
            w.simple(f);
        }
        w.integer(x.firstKey);
        w.integer(x.lastKey);
        w.integer(x.step);
        w.setHeader(1);
        w.simple("@" + x.group);
        w.setHeader(0);
        w.arrayHeader(0);
        w.arrayHeader(0);
    }

    private static void help(RespWriter w, String name, String... lines) {
        w.arrayHeader(lines.length + 3);
        w.simple(name + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
        for (String l : lines) {
            w.simple(l);
        }
        w.simple("HELP");
        w.simple("    Print this help.");
    }

    private String info(RespConnection c, byte[][] argv, int argc) {
        List<String> wanted = new ArrayList<>();
        for (int i = 1; i < argc; i++) {
            wanted.add(utf8(argv[i]).toLowerCase(Locale.ROOT));
        }
        boolean all = wanted.isEmpty() || wanted.contains("all") || wanted.contains("everything")
            || wanted.contains("default");
        // as in Redis, the default set leaves out commandstats
        boolean everything = wanted.contains("all") || wanted.contains("everything");
        Map<String, Map<String, String>> extra = face.extraInfo();
        Map<String, Map<String, String>> sections = new LinkedHashMap<>();
        long now = System.currentTimeMillis();
        long uptime = (now - face.startMillis) / 1000;
        StoreStats st = store.stats();

        Map<String, String> server = new LinkedHashMap<>();
        server.put("redis_version", RespFace.REDIS_VERSION);
        server.put("rdmastore_version", face.version);
        server.put("redis_mode", "standalone");
        server.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
            + System.getProperty("os.arch"));
        server.put("arch_bits", "64");
        server.put("process_id", Long.toString(ProcessHandle.current().pid()));
        server.put("java_version", System.getProperty("java.version"));
        // Without a configured port, the port this client reached is the server's port.
        server.put("tcp_port", face.port() != 0 ? Integer.toString(face.port())
            : c.local.substring(c.local.lastIndexOf(':') + 1));
        server.put("uptime_in_seconds", Long.toString(uptime));
        server.put("uptime_in_days", Long.toString(uptime / 86400));
        sections.put("server", server);

        Map<String, String> clients = new LinkedHashMap<>();
        int nativeCount = face.nativeClients().size();
        clients.put("connected_clients", Integer.toString(face.connectedClients() + nativeCount));
        clients.put("connected_resp_clients", Integer.toString(face.connectedClients()));
        clients.put("connected_native_clients", Integer.toString(nativeCount));
        clients.put("blocked_clients", Integer.toString(face.blocking.blockedClients()));
        sections.put("clients", clients);

        Map<String, String> memory = new LinkedHashMap<>();
        Runtime rt = Runtime.getRuntime();
        long heap = rt.totalMemory() - rt.freeMemory();
        long used = heap + st.usedOffHeapBytes();
        memory.put("used_memory", Long.toString(used));
        memory.put("used_memory_human", human(used));
        memory.put("used_memory_heap", Long.toString(heap));
        memory.put("used_memory_offheap", Long.toString(st.usedOffHeapBytes()));
        memory.put("large_value_mapped_bytes", Long.toString(st.largeValueMappedBytes()));
        memory.put("maxmemory", Long.toString(rt.maxMemory()));
        memory.put("maxmemory_policy", "noeviction");
        sections.put("memory", memory);

        Map<String, String> persistence = new LinkedHashMap<>();
        persistence.put("loading", "0");
        persistence.put("rdb_changes_since_last_save", Long.toString(st.changesSinceLastSave()));
        persistence.put("rdb_bgsave_in_progress", st.snapshotInProgress() ? "1" : "0");
        persistence.put("rdb_last_save_time", Long.toString(st.lastSnapshotEpochMillis() / 1000));
        persistence.put("aof_enabled", "1");
        persistence.put("aof_current_size", Long.toString(st.logBytes()));
        persistence.put("appendfsync", String.valueOf(st.fsync()).toLowerCase(Locale.ROOT));
        persistence.put("log_append_waits", Long.toString(st.logAppendWaits()));
        persistence.put("blob_files", Integer.toString(store.blobs().count()));
        persistence.put("blob_bytes", Long.toString(store.blobs().bytes()));
        persistence.put("blob_threshold", Long.toString(store.blobs().config().thresholdBytes()));
        sections.put("persistence", persistence);

        Map<String, String> stats = new LinkedHashMap<>();
        stats.put("total_connections_received", Long.toString(face.connectionsReceived.sum()));
        stats.put("total_commands_processed", Long.toString(face.commandsProcessed.sum()));
        stats.put("keyspace_hits", Long.toString(face.keyspaceHits.sum()));
        stats.put("keyspace_misses", Long.toString(face.keyspaceMisses.sum()));
        stats.put("total_error_replies", Long.toString(face.errorReplies.sum()));
        stats.put("resp_protocol_errors", Long.toString(face.protocolErrors.sum()));
        stats.put("long_commands_offloaded", Long.toString(face.longCommands.offloaded.sum()));
        stats.put("migrate_cached_sockets", "0");
        sections.put("stats", stats);

        Map<String, String> replication = new LinkedHashMap<>();
        if (face.replicaSet() != null) {
            replication.putAll(face.replicaSet().info());
        } else {
            RespInfo.replication(replication);
        }
        sections.put("replication", replication);

        Map<String, String> cpu = new LinkedHashMap<>();
        RespInfo.cpu(cpu);
        sections.put("cpu", cpu);

        if (everything || wanted.contains("commandstats")) {
            Map<String, String> commandStats = new LinkedHashMap<>();
            RespInfo.commandStats(face, commandStats);
            sections.put("commandstats", commandStats);
        }

        Map<String, String> errorStats = new LinkedHashMap<>();
        RespInfo.errorStats(face, errorStats);
        sections.put("errorstats", errorStats);

        Map<String, String> keyspace = new LinkedHashMap<>();
        if (st.keys() > 0) {
            keyspace.put("db0", "keys=" + st.keys() + ",expires=" + st.expires() + ",avg_ttl=0");
        }
        sections.put("keyspace", keyspace);

        Map<String, String> rdma = new LinkedHashMap<>();
        rdma.put("resp_connections", Integer.toString(face.connectedClients()));
        Map<String, Integer> byTransport = new LinkedHashMap<>();
        byTransport.put("tcp", face.connectedClients());
        for (RespFace.NativeClient n : face.nativeClients()) {
            byTransport.merge(n.transport(), 1, Integer::sum);
        }
        for (Map.Entry<String, Integer> e : byTransport.entrySet()) {
            rdma.put("connections_" + e.getKey(), e.getValue().toString());
        }
        rdma.put("documents", Long.toString(st.documents()));
        rdma.put("collections", Long.toString(st.collections()));
        sections.put("rdmastore", rdma);

        for (Map.Entry<String, Map<String, String>> e : extra.entrySet()) {
            sections.computeIfAbsent(e.getKey().toLowerCase(Locale.ROOT), k -> new LinkedHashMap<>())
                .putAll(e.getValue());
        }
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, Map<String, String>> e : sections.entrySet()) {
            if (!all && !wanted.contains(e.getKey())) {
                continue;
            }
            if (!sb.isEmpty()) {
                sb.append("\r\n");
            }
            String title = Character.toUpperCase(e.getKey().charAt(0)) + e.getKey().substring(1);
            sb.append("# ").append(title).append("\r\n");
            for (Map.Entry<String, String> f : e.getValue().entrySet()) {
                sb.append(f.getKey()).append(':').append(f.getValue()).append("\r\n");
            }
        }
        return sb.toString();
    }

    private static String human(long bytes) {
        if (bytes < 1024) {
            return bytes + "B";
        }
        String[] units = {"K", "M", "G", "T"};
        double v = bytes;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format(Locale.ROOT, "%.2f%s", v, units[u]);
    }

    // ---- strings ----

    private void get(RespConnection c, RespWriter w, byte[] key) {
        Boolean hit = store.readValue(key, c.getReader);
        if (hit == Boolean.TRUE) {
            face.keyspaceHits.increment();
        } else {
            face.keyspaceMisses.increment();
        }
    }

    private void set(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        SetOptions o = c.setOptions.reset();
        boolean nx = false;
        boolean xx = false;
        boolean get = false;
        boolean keep = false;
        boolean hasExpire = false;
        for (int i = 3; i < argc; i++) {
            byte[] a = argv[i];
            boolean next = i + 1 < argc;
            if (RespCommand.is(a, "NX") && !xx) {
                nx = true;
            } else if (RespCommand.is(a, "XX") && !nx) {
                xx = true;
            } else if (RespCommand.is(a, "GET")) {
                get = true;
            } else if (RespCommand.is(a, "KEEPTTL") && !hasExpire) {
                keep = true;
            } else if (!keep && !hasExpire && next && (RespCommand.is(a, "EX") || RespCommand.is(a, "PX")
                || RespCommand.is(a, "EXAT") || RespCommand.is(a, "PXAT"))) {
                if (!parseLong(c, argv[++i])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                boolean seconds = (a[0] | 0x20) == 'e';
                boolean absolute = a.length == 4;
                long at = expireAt(c.num, seconds ? 1000 : 1, absolute);
                if (c.num <= 0 || at <= 0) {
                    w.error("ERR invalid expire time in 'set' command");
                    return;
                }
                o.expireAtMillis(at);
                hasExpire = true;
            } else {
                w.error(SYNTAX);
                return;
            }
        }
        o.ifAbsent(nx).ifPresent(xx).returnOld(get).keepTtl(keep);
        SetResult r = store.set(argv[1], argv[2], o);
        if (get) {
            w.bulk(r.oldValue());
        } else if (r.written()) {
            w.ok();
        } else {
            w.nullBulk();
        }
    }

    private void getex(RespConnection c, RespWriter w, byte[][] argv, int argc) {
        long at = Store.TTL_KEEP;
        boolean seen = false;
        for (int i = 2; i < argc; i++) {
            byte[] a = argv[i];
            if (RespCommand.is(a, "PERSIST") && !seen) {
                at = Store.TTL_PERSIST;
                seen = true;
            } else if (!seen && i + 1 < argc && (RespCommand.is(a, "EX") || RespCommand.is(a, "PX")
                || RespCommand.is(a, "EXAT") || RespCommand.is(a, "PXAT"))) {
                if (!parseLong(c, argv[++i])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                at = expireAt(c.num, (a[0] | 0x20) == 'e' ? 1000 : 1, a.length == 4);
                if (c.num <= 0 || at <= 0) {
                    w.error("ERR invalid expire time in 'getex' command");
                    return;
                }
                seen = true;
            } else {
                w.error(SYNTAX);
                return;
            }
        }
        w.bulk(store.getEx(argv[1], at));
    }

    /** Epoch millis for an expire argument, or -1 when it overflows. */
    private static long expireAt(long value, long unitMillis, boolean absolute) {
        long ms;
        try {
            ms = Math.multiplyExact(value, unitMillis);
            return absolute ? ms : Math.addExact(ms, System.currentTimeMillis());
        } catch (ArithmeticException e) {
            return -1;
        }
    }

    // ---- keys ----

    private void expire(RespConnection c, RespWriter w, RespCommand cmd, byte[][] argv, int argc) {
        if (!parseLong(c, argv[2])) {
            w.error(NOT_INTEGER);
            return;
        }
        long value = c.num;
        boolean nx = false;
        boolean xx = false;
        boolean gt = false;
        boolean lt = false;
        for (int i = 3; i < argc; i++) {
            if (RespCommand.is(argv[i], "NX")) {
                nx = true;
            } else if (RespCommand.is(argv[i], "XX")) {
                xx = true;
            } else if (RespCommand.is(argv[i], "GT")) {
                gt = true;
            } else if (RespCommand.is(argv[i], "LT")) {
                lt = true;
            } else {
                w.error("ERR Unsupported option " + utf8(argv[i]));
                return;
            }
        }
        if (nx && (xx || gt || lt)) {
            w.error("ERR NX and XX, GT or LT options at the same time are not compatible");
            return;
        }
        if (gt && lt) {
            w.error("ERR GT and LT options at the same time are not compatible");
            return;
        }
        boolean seconds = cmd == RespCommand.EXPIRE || cmd == RespCommand.EXPIREAT;
        boolean absolute = cmd == RespCommand.EXPIREAT || cmd == RespCommand.PEXPIREAT;
        long at;
        try {
            at = Math.multiplyExact(value, seconds ? 1000L : 1L);
            if (!absolute) {
                at = Math.addExact(at, System.currentTimeMillis());
            }
        } catch (ArithmeticException e) {
            w.error("ERR invalid expire time in '" + cmd.lowerName + "' command");
            return;
        }
        if (nx || xx || gt || lt) {
            long current = store.expireTime(argv[1]);
            if (current == -2) {
                w.integer(0);
                return;
            }
            boolean hasTtl = current >= 0;
            // No TTL counts as an infinite one, as in Redis: GT never applies to it, LT always does.
            if ((nx && hasTtl) || (xx && !hasTtl) || (gt && (!hasTtl || at <= current))
                || (lt && hasTtl && at >= current)) {
                w.integer(0);
                return;
            }
        }
        // A time at or before now deletes the key (the store does that for a past time).
        w.integer(store.expireAt(argv[1], Math.max(at, 1)) ? 1 : 0);
    }

    private void scan(RespConnection c, RespWriter w, byte[][] argv, int argc, boolean hash) {
        int first = hash ? 3 : 2;
        byte[] cursorArg = argv[first - 1];
        long cursor;
        if (!parseUnsigned(c, cursorArg)) {
            w.error("ERR invalid cursor");
            return;
        }
        cursor = c.num;
        String match = null;
        int count = 10;
        ValueType type = null;
        boolean impossibleType = false;
        for (int i = first; i < argc; i++) {
            boolean next = i + 1 < argc;
            if (RespCommand.is(argv[i], "MATCH") && next) {
                match = pattern(argv[++i]);
                if (match.equals("*")) {
                    match = null;
                }
            } else if (RespCommand.is(argv[i], "COUNT") && next) {
                if (!parseLong(c, argv[++i])) {
                    w.error(NOT_INTEGER);
                    return;
                }
                if (c.num < 1) {
                    w.error(SYNTAX);
                    return;
                }
                count = (int) Math.min(c.num, 1_000_000);
            } else if (!hash && RespCommand.is(argv[i], "TYPE") && next) {
                String t = utf8(argv[++i]).toLowerCase(Locale.ROOT);
                switch (t) {
                    case "string" -> type = ValueType.STRING;
                    case "hash" -> type = ValueType.HASH;
                    case "set" -> type = ValueType.SET;
                    case "list" -> type = ValueType.LIST;
                    case "zset" -> type = ValueType.ZSET;
                    default -> impossibleType = true;
                }
            } else {
                w.error(SYNTAX);
                return;
            }
        }
        w.arrayHeader(2);
        if (impossibleType) {
            // A type this store cannot hold (list, set, ...): Redis would walk the keyspace and return nothing.
            w.bulk("0");
            w.arrayHeader(0);
            return;
        }
        ScanResult r = hash ? store.hscan(argv[1], cursor, match, count) : store.scan(cursor, match, count, type);
        w.bulk(Long.toUnsignedString(r.nextCursor()));
        array(w, r.keys());
    }

    // ---- helpers ----

    private static void array(RespWriter w, List<byte[]> items) {
        w.arrayHeader(items.size());
        for (byte[] b : items) {
            w.bulk(b);
        }
    }

    static String unknownCommand(byte[][] argv, int argc) {
        StringBuilder args = new StringBuilder();
        for (int i = 1; i < argc && args.length() < 128; i++) {
            String a = utf8(argv[i]);
            int room = 128 - args.length();
            args.append('\'').append(a, 0, Math.min(a.length(), room)).append("' ");
        }
        String name = utf8(argv[0]);
        return "ERR unknown command '" + (name.length() > 128 ? name.substring(0, 128) : name)
            + "', with args beginning with: " + args;
    }

    static String wrongArgs(String name) {
        return "ERR wrong number of arguments for '" + name + "' command";
    }

    private static boolean isKnown(byte[] sub, String... names) {
        for (String n : names) {
            if (RespCommand.is(sub, n)) {
                return true;
            }
        }
        return false;
    }

    private static String truncate(String s) {
        return s.length() > 128 ? s.substring(0, 128) : s;
    }

    private static boolean validName(String name) {
        for (int i = 0; i < name.length(); i++) {
            char ch = name.charAt(i);
            if (ch < '!' || ch > '~') {
                return false;
            }
        }
        return true;
    }

    /** Parses a signed decimal into {@code c.num} with Redis's strictness; false when it is not one. */
    static boolean parseLong(RespConnection c, byte[] a) {
        int n = a.length;
        if (n == 0 || n > 20) {
            return false;
        }
        int i = 0;
        boolean neg = a[0] == '-';
        if (neg) {
            i = 1;
            if (n == 1) {
                return false;
            }
        }
        if (a[i] == '0' && n - i > 1) {
            return false;
        }
        long v = 0;
        for (; i < n; i++) {
            int d = a[i] - '0';
            if (d < 0 || d > 9) {
                return false;
            }
            // Accumulate negatively so that Long.MIN_VALUE parses.
            if (v < (Long.MIN_VALUE + d) / 10) {
                return false;
            }
            v = v * 10 - d;
        }
        if (!neg) {
            if (v == Long.MIN_VALUE) {
                return false;
            }
            v = -v;
        }
        c.num = v;
        return true;
    }

    /** Parses an unsigned 64-bit cursor into {@code c.num}. */
    static boolean parseUnsigned(RespConnection c, byte[] a) {
        if (a.length == 0 || a.length > 20) {
            return false;
        }
        for (byte b : a) {
            if (b < '0' || b > '9') {
                return false;
            }
        }
        try {
            c.num = Long.parseUnsignedLong(ascii(a));
            return true;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    /** Parses Redis memory values: 1gb, 512mb, 64k, 1024. Returns -1 when malformed. */
    static long parseMemory(String s) {
        String v = s.trim().toLowerCase(Locale.ROOT);
        long mul = 1;
        String[][] units = {{"gb", "1073741824"}, {"mb", "1048576"}, {"kb", "1024"}, {"g", "1000000000"},
            {"m", "1000000"}, {"k", "1000"}, {"b", "1"}};
        for (String[] u : units) {
            if (v.endsWith(u[0])) {
                mul = Long.parseLong(u[1]);
                v = v.substring(0, v.length() - u[0].length());
                break;
            }
        }
        try {
            return Math.multiplyExact(Long.parseLong(v), mul);
        } catch (NumberFormatException | ArithmeticException e) {
            return -1;
        }
    }

    private static String pattern(byte[] a) {
        return new String(a, StandardCharsets.UTF_8);
    }

    static String utf8(byte[] a) {
        return new String(a, StandardCharsets.UTF_8);
    }

    private static String ascii(byte[] a) {
        return new String(a, StandardCharsets.ISO_8859_1);
    }

    private static long currentMicros() {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000 + now.getNano() / 1000;
    }
}
