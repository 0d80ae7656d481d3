package io.rdmastore.server.resp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.WireWriter;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The native protocol's data-type commands (opcodes 41-49, docs/protocol.md): each runs through the RESP face's own
 * command implementation ({@link RespCommands}, {@link RespMulti}, {@link RespBlocking}, {@link RespPubSub}) on a
 * {@link RespConnection} that has no channel, and its RESP3 reply is re-encoded as a native value. So lists, sets,
 * sorted sets, transactions and pub/sub have one implementation for both faces, with the same keyspace events, WATCH
 * marks, blocked-client wake-ups and pub/sub registry (a RESP PUBLISH reaches a native subscriber and the reverse).
 *
 * <p>A blocking pop runs on a connection of its own (one per call), so several may wait at once on one native
 * connection without holding the requests behind them: its reply is sent when it completes, through
 * {@link Sink#late}, with its request id, possibly after replies to later requests. A WATCH gets a connection of its
 * own too (its id is what a TRANSACTION names), so clients that share one native connection between threads keep
 * their watches apart.
 *
 * <p>Threads: {@link #execute}, {@link #transaction}, {@link #watch}, {@link #unwatch}, {@link #subscribe} run on the
 * native connection's transport thread, or on the long-command pool while the session holds its later requests behind
 * a long command, never concurrently; {@link #close} once, after the last of them. The sink is called on any thread.
 */
public final class NativeCommands {
    /** Where replies that leave outside the request order go. Implementations are thread-safe. */
    public interface Sink {
        /** A complete reply message to a blocking command, sent when it completed; {@code writeIndex} its write. */
        void late(byte[] message, long writeIndex);

        /** A complete push message; a subscriber with more than {@code limitBytes} unsent (0: no limit) is closed. */
        void push(byte[] message, long limitBytes);

        /** Runs the time-outs of blocking commands. */
        ScheduledExecutorService scheduler();
    }

    /** Most WATCH ids one connection may hold at once: each holds a connection's worth of state. */
    static final int MAX_WATCHES = 1024;
    private static final byte[] MULTI = "MULTI".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] EXEC = "EXEC".getBytes(StandardCharsets.US_ASCII);

    private final RespFace face;
    private final Sink sink;
    private final long maxKeyBytes;
    private final Host host = new Host();
    /** Runs commands, transactions without WATCH, and holds the subscriptions; transport thread only. */
    private final RespConnection conn;
    /** Blocking commands waiting for a key; removed by the thread that answers them. */
    private final Set<RespConnection> waiting = ConcurrentHashMap.newKeySet();
    /** WATCH id to the connection holding its watched keys; transport thread only. */
    private final Map<Long, RespConnection> watches = new HashMap<>();
    private long nextWatch;
    private volatile boolean closed;

    /** A session's commands on {@code face}; keys over {@code maxKeyBytes} are refused, as native keys are. */
    public NativeCommands(RespFace face, long clientId, long maxKeyBytes, Sink sink) {
        this.face = face;
        this.sink = sink;
        this.maxKeyBytes = maxKeyBytes;
        this.conn = new RespConnection(face, clientId, true, host);
    }

    /**
     * COMMAND / COMMAND_READ: runs {@code argv} and writes the reply message (header included) into {@code w}; returns
     * false when a blocking command parked, in which case {@code w} is left empty and the reply comes through the sink.
     */
    public boolean execute(long id, byte[][] argv, boolean readOnly, WireWriter w) {
        RespCommand cmd = RespCommand.lookup(argv[0]);
        String refused = refusal(cmd, argv, readOnly);
        if (refused != null) {
            w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(refused);
            return true;
        }
        if (contains(cmd.flags, "blocking")) {
            Waiter parkable = new Waiter(id);
            RespConnection waiter = new RespConnection(face, conn.id, true, parkable);
            run(waiter, argv);
            if (parkable.parked) {
                w.reset();
                return false;
            }
            reply(waiter, id, w);
            return true;
        }
        run(conn, argv);
        reply(conn, id, w);
        return true;
    }

    /**
     * Whether {@code argv} is a long command by the RESP face's rule ({@link RespLongCommands}: KEYS, SMEMBERS,
     * HGETALL, SORT, ... of at least {@code longCommandElements} elements), which the session runs off its transport
     * thread.
     */
    public boolean isLong(byte[][] argv) {
        return argv.length > 0 && face.longCommands.isLong(argv, argv.length);
    }

    /** Runs {@code task} on the RESP face's long-command pool; false when the pool refused it (server stopping). */
    public boolean offload(Runnable task) {
        return face.longCommands.submit(task);
    }

    /**
     * TRANSACTION: MULTI, the commands and EXEC on the WATCH's connection ({@code watch} 0: none) and writes EXEC's reply
     * (an array of values, nil when a watched key changed, or EXECABORT).
     */
    public void transaction(long id, long watch, List<byte[][]> commands, WireWriter w) {
        RespConnection c = conn;
        if (watch != 0) {
            c = watches.remove(watch);
            if (c == null) {
                w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString("ERR unknown watch id " + watch
                    + " (not WATCHed on this connection, or already used by a TRANSACTION or UNWATCH)");
                return;
            }
        }
        for (byte[][] argv : commands) {
            String refused = refusal(RespCommand.lookup(argv[0]), argv, false);
            if (refused != null) {
                face.multi.discard(c);
                w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString("EXECABORT Transaction discarded: " + refused);
                return;
            }
        }
        if (!face.store.writesAllowed() && anyWrite(commands)) {
            // refused whole, as a replica refuses MULTI's writes when they are queued: nothing runs, the client fails over
            face.multi.discard(c);
            w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(face.store.readOnlyReason());
            return;
        }
        String misrouted = face.cluster() == null ? null : route(commands);
        if (misrouted != null) {
            face.multi.discard(c);
            w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(misrouted);
            return;
        }
        run(c, new byte[][] {MULTI});
        for (byte[][] argv : commands) {
            run(c, argv);
        }
        discardOutput(c);
        run(c, new byte[][] {EXEC});
        reply(c, id, w);
    }

    private static boolean anyWrite(List<byte[][]> commands) {
        for (byte[][] argv : commands) {
            RespCommand cmd = RespCommand.lookup(argv[0]);
            if (cmd != null && cmd.write) {
                return true;
            }
        }
        return false;
    }

    /**
     * Cluster mode: a transaction runs only where every key it names is served (as Redis Cluster checks MULTI's
     * commands when they are queued): CROSSSLOT when its keys are in several slots, the redirect when the slot is
     * another node's; null when it may run here.
     */
    private String route(List<byte[][]> commands) {
        int slot = -1;
        boolean write = false;
        for (byte[][] argv : commands) {
            RespCommand cmd = RespCommand.lookup(argv[0]);
            if (cmd == null || cmd.firstKey <= 0 || !cmd.arityOk(argv.length)) {
                continue;
            }
            write |= cmd.write;
            int last = Math.min(cmd.lastKey >= 0 ? cmd.lastKey : argv.length + cmd.lastKey, argv.length - 1);
            for (int i = cmd.firstKey; i <= last; i += cmd.step) {
                int s = io.rdmastore.client.cluster.HashSlot.of(argv[i]);
                if (slot >= 0 && s != slot) {
                    return "CROSSSLOT Keys in request don't hash to the same slot";
                }
                slot = s;
            }
        }
        return slot < 0 ? null : face.cluster().redirect(slot, write, true);
    }

    /** WATCH: registers the keys on a connection of their own; writes the id a TRANSACTION names. */
    public void watch(long id, byte[][] keys, WireWriter w) {
        for (byte[] k : keys) {
            if (k.length > maxKeyBytes) {
                w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString("ERR key of " + k.length
                    + " bytes exceeds limit of " + maxKeyBytes + " bytes");
                return;
            }
        }
        if (watches.size() >= MAX_WATCHES) {
            w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString("ERR too many open watches on this connection ("
                + MAX_WATCHES + "): run or UNWATCH them");
            return;
        }
        RespConnection c = new RespConnection(face, conn.id, true, host);
        byte[][] argv = new byte[keys.length + 1][];
        argv[0] = "WATCH".getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(keys, 0, argv, 1, keys.length);
        run(c, argv);
        if (c.w.out != null && c.w.out.isReadable() && c.w.out.getByte(c.w.out.readerIndex()) == '-') {
            reply(c, id, w);
            face.multi.discard(c);
            return;
        }
        discardOutput(c);
        long watchId = ++nextWatch;
        watches.put(watchId, c);
        w.header(ProtocolDescriptor.STATUS_OK, id).i64(watchId);
    }

    /** UNWATCH: forgets a watch id; false when it was not known. */
    public boolean unwatch(long watch) {
        RespConnection c = watches.remove(watch);
        if (c == null) {
            return false;
        }
        face.multi.discard(c);
        return true;
    }

    /**
     * SUBSCRIBE / PSUBSCRIBE ({@code pattern}) or their UNSUBSCRIBE forms ({@code names} empty: all); writes the number
     * of subscriptions the connection holds afterwards. Messages then arrive through {@link Sink#push}.
     */
    public void subscribe(long id, byte[][] names, boolean pattern, boolean unsubscribe, WireWriter w) {
        String name = (unsubscribe ? "UN" : "") + "SUBSCRIBE";
        byte[][] argv = new byte[names.length + 1][];
        argv[0] = ((pattern ? "P" : "") + (unsubscribe ? "UN" : "") + "SUBSCRIBE").getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(names, 0, argv, 1, names.length);
        if (!unsubscribe && names.length == 0) {
            w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString("ERR " + name + " needs at least one name");
            return;
        }
        run(conn, argv);
        discardOutput(conn);
        w.header(ProtocolDescriptor.STATUS_OK, id).i64(conn.channels.size() + conn.patterns.size());
    }

    /** The connection closed: its blocked commands, watches and subscriptions end. Once. */
    public void close() {
        closed = true;
        face.disconnected(conn);
        for (RespConnection c : watches.values()) {
            face.multi.discard(c);
        }
        watches.clear();
        for (RespConnection c : waiting) {
            face.blocking.disconnected(c);
        }
        waiting.clear();
        discardOutput(conn);
    }

    // ---- running ----

    /** One command with the RESP face's handling; blocked clients it made ready are served before it returns. */
    private void run(RespConnection c, byte[][] argv) {
        run(face, c, argv);
    }

    /** Runs {@code argv} on a connection without a channel, then serves the blocked clients it made ready. */
    static void run(RespFace face, RespConnection c, byte[][] argv) {
        RespBlocking.enterCommand();
        try {
            c.runCommand(argv, argv.length);
        } finally {
            RespBlocking.exitCommand();
        }
        face.blocking.serveReady();
    }

    /**
     * Why the native protocol does not run this command, or null: the data-type groups, PUBLISH, PUBSUB and a few
     * harmless server commands only; not the connection, server administration, cluster, scripting, transaction and
     * subscription commands, which have opcodes of their own or belong to an administrator.
     */
    String refusal(RespCommand cmd, byte[][] argv, boolean readOnly) {
        String name = new String(argv[0], StandardCharsets.UTF_8);
        if (cmd == null) {
            return "ERR unknown command '" + name + "'";
        }
        boolean allowed = switch (cmd.group) {
            case "string", "hash", "list", "set", "sorted-set", "bitmap" -> true;
            case "keyspace" -> cmd != RespCommand.MIGRATE;
            case "pubsub" -> cmd == RespCommand.PUBLISH || cmd == RespCommand.PUBSUB;
            default -> cmd == RespCommand.PING || cmd == RespCommand.ECHO || cmd == RespCommand.DBSIZE
                || cmd == RespCommand.TIME;
        };
        if (!allowed) {
            return "ERR '" + cmd.lowerName + "' cannot be sent as a native COMMAND (" + switch (cmd.group) {
                case "transactions" -> "use the TRANSACTION and WATCH opcodes";
                case "pubsub" -> "use the SUBSCRIBE opcodes";
                default -> "only data-type commands are";
            } + ")";
        }
        if (readOnly && !contains(cmd.flags, "readonly") && cmd != RespCommand.PING && cmd != RespCommand.ECHO
            && cmd != RespCommand.TIME && cmd != RespCommand.PUBSUB) {
            return "ERR '" + cmd.lowerName + "' is not a read-only command: send it as COMMAND";
        }
        if (cmd.firstKey > 0 && cmd.arityOk(argv.length)) {
            int last = cmd.lastKey >= 0 ? cmd.lastKey : argv.length + cmd.lastKey;
            for (int i = cmd.firstKey; i <= Math.min(last, argv.length - 1); i += cmd.step) {
                if (argv[i].length > maxKeyBytes) {
                    return "ERR key of " + argv[i].length + " bytes exceeds limit of " + maxKeyBytes + " bytes";
                }
            }
        }
        return null;
    }

    private static boolean contains(String[] flags, String flag) {
        for (String f : flags) {
            if (f.equals(flag)) {
                return true;
            }
        }
        return false;
    }

    private static void discardOutput(RespConnection c) {
        ByteBuf o = c.w.out;
        c.w.out = null;
        if (o != null) {
            o.release();
        }
    }

    /** Moves {@code c}'s RESP reply into {@code w} as a native reply to {@code id}, and frees it. */
    private static void reply(RespConnection c, long id, WireWriter w) {
        ByteBuf o = c.w.out;
        c.w.out = null;
        try {
            encode(o, id, ProtocolDescriptor.STATUS_OK, w);
        } finally {
            if (o != null) {
                o.release();
            }
        }
    }

    /** A RESP reply (or none: nil) as a native message: an error reply gets the ERROR status. */
    static void encode(ByteBuf resp, long id, byte status, WireWriter w) {
        if (resp == null || !resp.isReadable()) {
            w.header(status, id).u8(ProtocolDescriptor.VALUE_NIL);
            return;
        }
        int at = resp.readerIndex();
        if (resp.getByte(at) == '-') {
            String error = line(resp, at + 1);
            if (error.startsWith("ASK ")) {
                // a native client has no ASKING: it retries TRYAGAIN until the slot's move ends, as for native opcodes
                error = "TRYAGAIN slot " + error.substring(4, error.indexOf(' ', 4) > 0 ? error.indexOf(' ', 4)
                    : error.length()) + " is migrating";
            }
            w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(error);
            return;
        }
        w.header(status, id);
        value(resp, at, w);
    }

    private static String line(ByteBuf b, int from) {
        int cr = b.indexOf(from, b.writerIndex(), (byte) '\r');
        return b.toString(from, cr - from, StandardCharsets.UTF_8);
    }

    private static long number(ByteBuf b, int from) {
        return Long.parseLong(line(b, from));
    }

    /** After the CRLF that ends the line starting at {@code from}. */
    private static int next(ByteBuf b, int from) {
        return b.indexOf(from, b.writerIndex(), (byte) '\r') + 2;
    }

    /** Re-encodes the RESP3 value at {@code at}; returns where the next one starts. */
    private static int value(ByteBuf b, int at, WireWriter w) {
        byte type = b.getByte(at);
        int body = at + 1;
        switch (type) {
            case '+' -> {
                w.u8(ProtocolDescriptor.VALUE_STATUS).string(line(b, body));
                return next(b, body);
            }
            case '-' -> {
                w.u8(ProtocolDescriptor.VALUE_ERROR).string(line(b, body));
                return next(b, body);
            }
            case ':' -> {
                w.u8(ProtocolDescriptor.VALUE_INTEGER).i64(number(b, body));
                return next(b, body);
            }
            case '#' -> {
                w.u8(ProtocolDescriptor.VALUE_INTEGER).i64(b.getByte(body) == 't' ? 1 : 0);
                return next(b, body);
            }
            case ',' -> {
                String s = line(b, body);
                double d = switch (s) {
                    case "inf" -> Double.POSITIVE_INFINITY;
                    case "-inf" -> Double.NEGATIVE_INFINITY;
                    case "nan" -> Double.NaN;
                    default -> Double.parseDouble(s);
                };
                w.u8(ProtocolDescriptor.VALUE_DOUBLE).i64(Double.doubleToRawLongBits(d));
                return next(b, body);
            }
            case '_' -> {
                w.u8(ProtocolDescriptor.VALUE_NIL);
                return next(b, body);
            }
            case '(' -> {
                w.u8(ProtocolDescriptor.VALUE_BULK).bytes(line(b, body).getBytes(StandardCharsets.US_ASCII));
                return next(b, body);
            }
            case '$', '=' -> {
                long n = number(b, body);
                int data = next(b, body);
                if (n < 0) {
                    w.u8(ProtocolDescriptor.VALUE_NIL);
                    return data;
                }
                // a verbatim string starts with its 3-letter format and a colon
                int skip = type == '=' ? 4 : 0;
                byte[] v = new byte[(int) n - skip];
                b.getBytes(data + skip, v);
                w.u8(ProtocolDescriptor.VALUE_BULK).bytes(v);
                return data + (int) n + 2;
            }
            case '*', '~', '>', '%' -> {
                long n = number(b, body);
                int i = next(b, body);
                if (n < 0) {
                    w.u8(ProtocolDescriptor.VALUE_NIL);
                    return i;
                }
                long items = type == '%' ? 2 * n : n;
                w.u8(ProtocolDescriptor.VALUE_ARRAY).i32((int) items);
                for (long k = 0; k < items; k++) {
                    i = value(b, i, w);
                }
                return i;
            }
            case '|' -> {
                // attributes annotate the value that follows; a native client has no use for them
                long n = number(b, body);
                int i = next(b, body);
                WireWriter skipped = new WireWriter(64);
                for (long k = 0; k < 2 * n; k++) {
                    i = value(b, i, skipped);
                }
                return value(b, i, w);
            }
            default -> throw new IllegalStateException("unexpected RESP type '" + (char) type + "' in a reply");
        }
    }

    /** A reply or push written by {@code body} on a fresh RESP3 writer, as a complete native message. */
    private static byte[] message(Consumer<RespWriter> body, long id, byte status) {
        RespWriter rw = new RespWriter();
        rw.proto = 3;
        rw.out = Unpooled.buffer(256);
        try {
            body.accept(rw);
            WireWriter w = new WireWriter(rw.out.readableBytes() + 64);
            encode(rw.out, id, status, w);
            return w.toByteArray();
        } finally {
            rw.out.release();
        }
    }

    /** The session connection's and the watches' host: pushes go to the sink; they never block. */
    private final class Host implements RespConnection.Host {
        @Override
        public void blocked(RespConnection c) {
            // only blocking commands park, and those run on a Waiter; WAIT and CLIENT PAUSE are refused above
            throw new IllegalStateException("a native session's connection cannot block");
        }

        @Override
        public void resumed(RespConnection c, Consumer<RespWriter> reply) {
        }

        @Override
        public void pushed(RespConnection c, Consumer<RespWriter> msg) {
            if (!closed) {
                sink.push(message(msg, ProtocolDescriptor.UNSOLICITED_REQUEST_ID, ProtocolDescriptor.STATUS_PUSH),
                    face.pubsub.outputLimit());
            }
        }

        @Override
        public Future<?> schedule(Runnable task, long millis) {
            return sink.scheduler().schedule(task, millis, TimeUnit.MILLISECONDS);
        }
    }

    /** The host of one blocking command: its reply goes out with its request id when it completes. */
    private final class Waiter implements RespConnection.Host {
        final long id;
        /** Set on the transport thread while the command runs, read there after it. */
        boolean parked;

        Waiter(long id) {
            this.id = id;
        }

        @Override
        public void blocked(RespConnection c) {
            parked = true;
            waiting.add(c);
        }

        @Override
        public void resumed(RespConnection c, Consumer<RespWriter> reply) {
            waiting.remove(c);
            if (!closed) {
                sink.late(message(reply, id, ProtocolDescriptor.STATUS_OK), io.rdmastore.store.Store.lastCommitIndex());
            }
        }

        @Override
        public void pushed(RespConnection c, Consumer<RespWriter> message) {
        }

        @Override
        public Future<?> schedule(Runnable task, long millis) {
            return sink.scheduler().schedule(task, millis, TimeUnit.MILLISECONDS);
        }
    }
}
