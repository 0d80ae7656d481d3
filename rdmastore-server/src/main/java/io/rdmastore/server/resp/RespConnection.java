package io.rdmastore.server.resp;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.rdmastore.store.SetOptions;
import io.rdmastore.store.ReadOnlyException;
import io.rdmastore.store.Store;
import io.rdmastore.store.StoreException;
import io.rdmastore.store.WriteBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Arrays;
import java.util.function.Function;

/**
 * One RESP client connection: decodes pipelined requests (multibulk and inline) in a loop, runs each command at once,
 * encodes every reply of a read batch into one buffer and flushes it once at {@code channelReadComplete}. Framing
 * errors get Redis's error text, then the connection is closed after the reply is written; commands that came before
 * the bad bytes in the same batch are answered first, as Redis does.
 *
 * <p>Threads: a Netty handler, confined to its channel's event loop; {@link #describe()} and the counters it reads may
 * be called from any thread (they read fields written by the loop without locks, which is good enough for CLIENT LIST).
 * Buffers: the handler owns its cumulation buffer and releases every inbound buffer it is given.
 */
final class RespConnection extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(RespConnection.class);

    /** Redis's PROTO_INLINE_MAX_SIZE: the longest inline request or length line. */
    static final int INLINE_MAX = 64 * 1024;
    /** Write out (without flushing) when one batch's replies grow past this, to bound memory. */
    private static final int OUT_HIGH_WATER = 1 << 20;
    /** Replies were written (at the high-water mark) but not flushed yet. */
    private boolean written;
    /** Replies wait for the end of the event loop's turn ({@link RespTurn}). Event loop only. */
    boolean inTurn;

    private final RespFace face;
    final long id;
    final long createdMillis = System.currentTimeMillis();
    final RespWriter w = new RespWriter();

    private ChannelHandlerContext ctx;
    private ByteBuf cum;
    private boolean closing;

    // decoder state, kept across reads so a large argument is not re-parsed
    private boolean inMultibulk;
    private long multibulkRemaining;
    private long bulkLen = -1;
    byte[][] argv = new byte[8][];
    int argc;

    // session state, read by CLIENT and INFO
    volatile boolean authenticated;
    volatile String name = "";
    volatile String libName = "";
    volatile String libVersion = "";
    // written by the event loop per command, read racily by CLIENT LIST on other loops: staleness is harmless
    String lastCommand = "NULL";
    /** A command waits for its reply (WAIT): no further command of this client runs until it has it. Event loop only. */
    private boolean blocked;
    /**
     * A long command runs on the face's pool ({@link RespLongCommands}): no further command of this client runs, and
     * the loop leaves {@code w} to the pool thread until {@link #longDone}. Event loop only.
     */
    private boolean offloaded;
    /** While offloaded: the replies of the commands before the long one, not flushed yet. Event loop only. */
    private ByteBuf heldOut;
    /** While offloaded: the long command's reply is dropped (CLIENT REPLY OFF or SKIP). Event loop only. */
    private boolean longSilenced;
    /** While offloaded: pub/sub messages that arrived, written after the long command's reply. Event loop only. */
    private java.util.List<java.util.function.Consumer<RespWriter>> heldPushes;
    /** Oplog index of this client's last write: what WAIT waits for. Event loop only. */
    long lastWriteIndex;
    long lastInteractionMillis = createdMillis;
    private long commandsInBatch;
    volatile long commandsTotal;
    volatile String remote = "?";

    /** MULTI: the commands queued (null outside MULTI), whether one failed its checks, and EXEC running them. */
    java.util.List<byte[][]> queued;
    boolean queueError;
    boolean inExec;
    /** WATCHed keys, each with whether it existed at WATCH; event loop only. */
    final java.util.Map<Bytes, Boolean> watched = new java.util.HashMap<>();
    /** A watched key changed since WATCH; set by any writer's thread (the store's key listener). */
    volatile boolean watchDirty;
    /** The blocking list command this client waits in, or null; guarded by the blocking registry's lock. */
    RespBlocking.Blocked blockedOn;
    /** Pub/sub subscriptions; event loop only. */
    final java.util.Set<Bytes> channels = new java.util.LinkedHashSet<>();
    final java.util.Set<Bytes> patterns = new java.util.LinkedHashSet<>();

    /** CLIENT REPLY OFF / SKIP (the next command) / ON (this command's OK is sent); event loop only. */
    boolean replyOff;
    boolean skipNext;
    boolean replyTurnedOn;

    /** READONLY was sent: in cluster mode a secondary of the slot's shard serves this client's reads. */
    boolean replicaReads;
    /** ASKING was the previous command: the next one may use a slot being imported here. Event loop only. */
    boolean asking;
    /** The shared lock of a migrating slot the current command holds; released when it returns. Event loop only. */
    java.util.concurrent.locks.Lock slotLock;

    /** The command being run, set once its arity and authentication passed; null for a rejected one. */
    RespCommand current;

    // per-connection scratch for the commands, so the hot path allocates nothing for them
    long num;
    final SetOptions setOptions = new SetOptions();
    final Function<MemorySegment, Boolean> getReader = seg -> {
        if (seg == null) {
            w.nullBulk();
            return Boolean.FALSE;
        }
        w.bulk(seg);
        return Boolean.TRUE;
    };
    volatile String local = "?";

    /**
     * What a connection without a Netty channel does where a channel's connection would use its event loop: it serves
     * a native-protocol session ({@link NativeCommands}). Its methods may be called on any thread.
     */
    interface Host {
        /** A blocking command parked (RESP's {@link #block}); on the thread that ran it. */
        void blocked(RespConnection c);

        /** The parked command's reply is ready (RESP's {@link #resume}); any thread, possibly under the registry lock. */
        void resumed(RespConnection c, java.util.function.Consumer<RespWriter> reply);

        /** A pub/sub message for this connection (RESP's {@link #push}); any thread. */
        void pushed(RespConnection c, java.util.function.Consumer<RespWriter> message);

        /** Runs {@code task} after {@code millis} on a thread of the host's (a parked command's time-out). */
        java.util.concurrent.Future<?> schedule(Runnable task, long millis);
    }

    /** Non-null when this connection serves a native session instead of a channel; then it speaks RESP3. */
    private final Host host;

    RespConnection(RespFace face, long id, boolean authenticated) {
        this(face, id, authenticated, null);
    }

    /**
     * A connection without a channel, for {@code host} (native sessions): authenticated, RESP3 (typed doubles and
     * nulls), and served by a cluster's secondaries for reads like native requests.
     */
    RespConnection(RespFace face, long id, boolean authenticated, Host host) {
        this.face = face;
        this.id = id;
        this.authenticated = authenticated;
        this.host = host;
        if (face != null) {
            w.errorSink = face::countError;
        }
        if (host != null) {
            w.proto = 3;
            replicaReads = true;
        }
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        remote = format(ctx.channel().remoteAddress());
        local = format(ctx.channel().localAddress());
        String refusal = face.admit();
        if (refusal != null) {
            // Redis's answer to one client too many: the error, then the close; nothing the client sent is read.
            closing = true;
            LOG.info("refusing RESP client at {}: {}", remote, refusal);
            ctx.writeAndFlush(ctx.alloc().buffer().writeBytes(("-" + refusal + "\r\n")
                .getBytes(java.nio.charset.StandardCharsets.US_ASCII))).addListener(ChannelFutureListener.CLOSE);
            return;
        }
        face.register(this);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        face.unregister(this);
        face.disconnected(this);
        releaseCumulation();
        super.channelInactive(ctx);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        face.unregister(this);
        face.disconnected(this);
        releaseCumulation();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ByteBuf in)) {
            ctx.fireChannelRead(msg);
            return;
        }
        if (closing) {
            in.release();
            return;
        }
        lastInteractionMillis = System.currentTimeMillis();
        cum = cumulate(cum, in);
        // One write(2) of the log for the whole turn's worth of commands of all clients (fsync everysec), before any
        // reply leaves: the batch stays open until the turn ends (RespTurn).
        WriteBatch.begin();
        try {
            decode();
        } catch (RuntimeException e) {
            LOG.warn("RESP client {} at {}: internal error, closing the connection", id, remote, e);
            protocolError("ERR internal error: " + e);
        } finally {
            ByteBuf c = cum;
            if (c != null) {
                if (!c.isReadable()) {
                    c.release();
                    cum = null;
                } else {
                    c.discardSomeReadBytes();
                }
            }
            writeAtHighWater();
        }
    }

    /**
     * Appends {@code in} to the cumulation. Memory follows the bytes received, never the bytes announced: a buffer too
     * small is replaced by one twice the size of what it holds (at most what the argument being read still needs), so
     * a 512 MB argument costs about 30 copies in all and a client that announces it and sends 100 bytes costs little.
     */
    private ByteBuf cumulate(ByteBuf c, ByteBuf in) {
        if (c == null) {
            return in;
        }
        try {
            if (c.writableBytes() < in.readableBytes() || c.refCnt() != 1 || c.isReadOnly()) {
                long need = (long) c.readableBytes() + in.readableBytes();
                long cap = Math.max(need, 2 * need);
                if (bulkLen >= 0) {
                    cap = Math.min(cap, Math.max(need, bulkLen + 2 + INLINE_MAX));
                }
                ByteBuf bigger = ctx.alloc().ioBuffer((int) Math.min(Integer.MAX_VALUE - 16, cap));
                bigger.writeBytes(c);
                c.release();
                c = bigger;
            }
            c.writeBytes(in);
            return c;
        } finally {
            in.release();
        }
    }

    /**
     * Hands the log writes the batch's replies depend on to the OS ({@code close}: and closes the batch). When that
     * fails, none of the batch's replies may leave: they are dropped and the connection is closed.
     */
    private boolean endBatch(boolean close) {
        try {
            if (close) {
                WriteBatch.end();
            } else {
                WriteBatch.flush();
            }
            return true;
        } catch (RuntimeException e) {
            LOG.warn("RESP client {} at {}: the log write failed ({}); closing without the replies", id, remote,
                e.toString());
            if (close) {
                WriteBatch.end();
            }
            dropReplies();
            return false;
        }
    }

    /** The log write the replies depend on failed: they never leave, and the connection closes. */
    private void dropReplies() {
        ByteBuf o = takeReplies();
        if (o != null) {
            o.release();
        }
        closing = true;
        ctx.close();
    }

    /** Passes a batch's replies on when they grow past the high-water mark; closes a client that does not read them. */
    private void writeAtHighWater() {
        if (!offloaded && w.out != null && w.out.readableBytes() > OUT_HIGH_WATER) {
            if (!endBatch(false)) {
                return;
            }
            ctx.write(w.out, ctx.voidPromise());
            w.out = null;
            written = true;
            checkOutputLimit();
        }
    }

    /** Closes a client whose unread replies pass {@code maxOutputBytes}. Event loop only. */
    private void checkOutputLimit() {
        var pending = ctx.channel().unsafe().outboundBuffer();
        long limit = face.maxOutputBytes();
        if (pending != null && limit > 0 && pending.totalPendingWriteBytes() > limit && !closing) {
            LOG.info("RESP client {} at {}: {} reply bytes not read by the client exceed the limit of {}, closing",
                id, remote, pending.totalPendingWriteBytes(), limit);
            closing = true;
            ctx.close();
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        if (commandsInBatch > 0) {
            face.commandsProcessed(commandsInBatch);
            commandsTotal += commandsInBatch;
            commandsInBatch = 0;
        }
        RespTurn.defer(this, ctx.executor());
    }

    /**
     * Event loop, at the end of the turn: flushes the replies once the turn's log write reached the OS ({@code
     * written}); when it failed, none of them may leave: they are dropped and the connection is closed.
     */
    void endTurn(boolean written) {
        if (!written) {
            dropReplies();
            return;
        }
        if (closing) {
            return;
        }
        flushReplies();
        if (!ctx.channel().isWritable()) {
            // The client is not reading its replies: stop reading its requests until it does (Netty's back-pressure).
            ctx.channel().config().setAutoRead(false);
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) throws Exception {
        if (ctx.channel().isWritable() && !closing && !blocked && !offloaded) {
            ctx.channel().config().setAutoRead(true);
        }
        super.channelWritabilityChanged(ctx);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        LOG.debug("RESP client {} at {}: {}", id, remote, cause.toString());
        ctx.close();
    }

    private void flushReplies() {
        // a reply leaves only after the log write it depends on (the turn's batch may still be open)
        if (!endBatch(false)) {
            return;
        }
        ByteBuf o = takeReplies();
        if (o != null) {
            if (o.isReadable()) {
                ctx.writeAndFlush(o, ctx.voidPromise());
                written = false;
            } else {
                o.release();
            }
        }
        if (written) {
            // replies passed on at the high-water mark (a large GET) still wait for their flush
            written = false;
            ctx.flush();
        }
    }

    private void releaseCumulation() {
        if (cum != null) {
            cum.release();
            cum = null;
        }
        // while a long command runs, w.out is its thread's; longDone releases it
        ByteBuf o = takeReplies();
        if (o != null) {
            o.release();
        }
        heldPushes = null;
    }

    /** The replies the event loop may send now, taken from the connection; null when none. Event loop only. */
    private ByteBuf takeReplies() {
        ByteBuf o;
        if (offloaded) {
            o = heldOut;
            heldOut = null;
        } else {
            o = w.out;
            w.out = null;
        }
        return o;
    }

    /**
     * Holds this client's later commands until {@link #resume} gives the current command its reply (Redis's blocked
     * client). Event loop only.
     */
    void block() {
        blocked = true;
        if (host != null) {
            host.blocked(this);
            return;
        }
        ctx.channel().config().setAutoRead(false);
    }

    /**
     * Any thread: on the event loop, writes the blocked command's reply, then runs the commands that arrived
     * meanwhile.
     */
    void resume(java.util.function.Consumer<RespWriter> reply) {
        if (host != null) {
            blocked = false;
            host.resumed(this, reply);
            return;
        }
        ctx.executor().execute(() -> {
            if (!blocked) {
                return;
            }
            blocked = false;
            if (closing) {
                return;
            }
            reply.accept(out());
            decodeBuffered();
            flushReplies();
            if (!blocked && !offloaded && ctx.channel().isWritable()) {
                ctx.channel().config().setAutoRead(true);
            }
        });
    }

    /** Runs {@code task} on this connection's event loop after {@code millis} (a blocked command's time-out). */
    java.util.concurrent.Future<?> schedule(Runnable task, long millis) {
        if (host != null) {
            return host.schedule(task, millis);
        }
        return ctx.executor().schedule(task, millis, java.util.concurrent.TimeUnit.MILLISECONDS);
    }

    /**
     * Any thread: writes an out-of-band message (pub/sub) on the event loop and flushes it. A subscriber whose unread
     * bytes pass the pub/sub output limit is disconnected (Redis's client-output-buffer-limit pubsub).
     */
    void push(java.util.function.Consumer<RespWriter> message) {
        if (host != null) {
            host.pushed(this, message);
            return;
        }
        ctx.executor().execute(() -> {
            if (closing || !ctx.channel().isActive()) {
                return;
            }
            if (offloaded) {
                // after the running long command's reply, as a single-threaded server would order them
                if (heldPushes == null) {
                    heldPushes = new java.util.ArrayList<>();
                }
                heldPushes.add(message);
                return;
            }
            message.accept(out());
            flushReplies();
            checkPubSubLimit();
        });
    }

    /** Closes a subscriber whose unread bytes pass the pub/sub output limit. Event loop only. */
    private void checkPubSubLimit() {
        var pending = ctx.channel().unsafe().outboundBuffer();
        long limit = face.pubsub.outputLimit();
        if (pending != null && limit > 0 && pending.totalPendingWriteBytes() > limit) {
            LOG.info("RESP client {} at {}: {} pub/sub bytes not read by the client exceed the limit of {}, "
                + "closing", id, remote, pending.totalPendingWriteBytes(), limit);
            closing = true;
            ctx.close();
        }
    }

    /** The reply buffer for the current batch; created on first use. */
    RespWriter out() {
        if (w.out == null) {
            w.out = ctx != null ? ctx.alloc().ioBuffer(512) : io.netty.buffer.Unpooled.buffer(512);
        }
        return w;
    }

    /** Closes the connection once the replies written so far are flushed (QUIT). */
    void closeAfterReply() {
        if (host != null) {
            return;
        }
        endBatch(false);
        closing = true;
        ByteBuf o = w.out;
        w.out = null;
        ctx.writeAndFlush(o != null ? o : ctx.alloc().buffer(0)).addListener(ChannelFutureListener.CLOSE);
    }

    /** Closes without waiting (CLIENT KILL from another connection). */
    void kill() {
        if (host != null) {
            return;
        }
        ctx.channel().eventLoop().execute(() -> {
            closing = true;
            ctx.close();
        });
    }

    RespFace face() {
        return face;
    }

    boolean isClosing() {
        return closing;
    }

    String transportName() {
        return "tcp";
    }

    private void protocolError(String message) {
        out().error(message);
        closeAfterReply();
        face.protocolErrors.increment();
        LOG.debug("RESP client {} at {}: {}", id, remote, message);
    }

    // ---- decoding ----

    private void decode() {
        ByteBuf b = cum;
        while (!closing && !blocked && !offloaded && b.isReadable()) {
            if (!inMultibulk) {
                if (b.getByte(b.readerIndex()) == '*') {
                    int r = multibulkHeader(b);
                    if (r <= 0) {
                        if (r < 0) {
                            return;
                        }
                        continue;
                    }
                } else {
                    if (!inline(b)) {
                        return;
                    }
                    continue;
                }
            }
            if (!multibulkArgs(b)) {
                return;
            }
            dispatch();
        }
    }

    /** Returns 1 when a multibulk with arguments began, 0 when an empty one was skipped, -1 to wait or on error. */
    private int multibulkHeader(ByteBuf b) {
        int start = b.readerIndex();
        int cr = b.indexOf(start, b.writerIndex(), (byte) '\r');
        if (cr < 0) {
            if (b.readableBytes() > INLINE_MAX) {
                protocolError("ERR Protocol error: too big mbulk count string");
            }
            return -1;
        }
        if (cr + 1 >= b.writerIndex()) {
            return -1;
        }
        long n = parseLong(b, start + 1, cr);
        if (n == Long.MIN_VALUE || n > Integer.MAX_VALUE) {
            protocolError("ERR Protocol error: invalid multibulk length");
            return -1;
        }
        if (n > 10 && !authenticated) {
            protocolError("ERR Protocol error: unauthenticated multibulk length");
            return -1;
        }
        b.readerIndex(cr + 2);
        if (n <= 0) {
            return 0;
        }
        inMultibulk = true;
        multibulkRemaining = n;
        argc = 0;
        bulkLen = -1;
        return 1;
    }

    /** Reads bulk arguments; true when the command is complete. */
    private boolean multibulkArgs(ByteBuf b) {
        while (multibulkRemaining > 0) {
            if (bulkLen < 0) {
                int start = b.readerIndex();
                int cr = b.indexOf(start, b.writerIndex(), (byte) '\r');
                if (cr < 0) {
                    if (b.readableBytes() > INLINE_MAX) {
                        protocolError("ERR Protocol error: too big bulk count string");
                    }
                    return false;
                }
                if (cr + 1 >= b.writerIndex()) {
                    return false;
                }
                byte first = b.getByte(start);
                if (first != '$') {
                    protocolError("ERR Protocol error: expected '$', got '" + (char) (first & 0xFF) + "'");
                    return false;
                }
                long n = parseLong(b, start + 1, cr);
                if (n == Long.MIN_VALUE || n < 0 || n > face.maxBulkLength()) {
                    protocolError("ERR Protocol error: invalid bulk length");
                    return false;
                }
                if (n > 16384 && !authenticated) {
                    protocolError("ERR Protocol error: unauthenticated bulk length");
                    return false;
                }
                b.readerIndex(cr + 2);
                bulkLen = n;
            }
            if (b.readableBytes() < bulkLen + 2) {
                return false;
            }
            byte[] arg = new byte[(int) bulkLen];
            b.readBytes(arg);
            // Like Redis, the two bytes after the data are skipped without looking at them.
            b.skipBytes(2);
            addArg(arg);
            bulkLen = -1;
            multibulkRemaining--;
        }
        inMultibulk = false;
        return true;
    }

    /** Parses one inline command; false when more bytes are needed or the connection is closing. */
    private boolean inline(ByteBuf b) {
        int start = b.readerIndex();
        int lf = b.indexOf(start, b.writerIndex(), (byte) '\n');
        if (lf < 0) {
            if (b.readableBytes() > INLINE_MAX) {
                protocolError("ERR Protocol error: too big inline request");
            }
            return false;
        }
        int end = lf > start && b.getByte(lf - 1) == '\r' ? lf - 1 : lf;
        byte[] line = new byte[end - start];
        b.getBytes(start, line);
        b.readerIndex(lf + 1);
        argc = 0;
        if (!splitInline(line)) {
            protocolError("ERR Protocol error: unbalanced quotes in request");
            return false;
        }
        if (argc > 0) {
            dispatch();
        }
        return true;
    }

    private void dispatch() {
        commandsInBatch++;
        boolean silence = (replyOff || skipNext) && !RespPubSub.pushesOnly(argv[0]);
        skipNext = false;
        if (mayOffload() && face.longCommands.isLong(argv, argc) && offload(silence)) {
            return;
        }
        int mark = silence ? out().out.writerIndex() : 0;
        RespBlocking.enterCommand();
        try {
            runCommand(argv, argc);
        } finally {
            RespBlocking.exitCommand();
        }
        if (silence && !replyTurnedOn && w.out != null && !closing) {
            w.out.writerIndex(Math.min(mark, w.out.writerIndex()));
        }
        replyTurnedOn = false;
        Arrays.fill(argv, 0, argc, null);
        argc = 0;
        // clients blocked on keys this command pushed to are served before its reply leaves, as in Redis
        face.blocking.serveReady();
        writeAtHighWater();
    }

    /**
     * Whether the command being dispatched may leave the event loop: a channel's connection (a native session's has
     * its own rules), authenticated (NOAUTH is cheap), outside MULTI/EXEC (queued commands are cheap; an EXEC runs on
     * the loop whole) and not in RESP2's subscribed mode (where the command is refused).
     */
    private boolean mayOffload() {
        return host == null && authenticated && queued == null && !inExec
            && (w.resp3() || (channels.isEmpty() && patterns.isEmpty()));
    }

    /**
     * Event loop: hands the dispatched command to the long-command pool and stops running this client's commands until
     * {@link #longDone}; the replies so far stay the loop's ({@link #heldOut}). False when the pool refused it (the
     * server is stopping); the command then runs here.
     */
    private boolean offload(boolean silence) {
        byte[][] args = argv;
        int n = argc;
        offloaded = true;
        longSilenced = silence;
        heldOut = w.out;
        w.out = null;
        if (!face.longCommands.submit(() -> runLong(args, n))) {
            offloaded = false;
            w.out = heldOut;
            heldOut = null;
            return false;
        }
        // a fresh array for the commands decoded after this one; the pool thread owns args
        argv = new byte[Math.max(8, args.length)][];
        argc = 0;
        ctx.channel().config().setAutoRead(false);
        return true;
    }

    /** The long-command pool thread: runs the command as dispatch would, then hands its reply to the event loop. */
    private void runLong(byte[][] args, int n) {
        try {
            RespBlocking.enterCommand();
            try {
                runCommand(args, n);
            } finally {
                RespBlocking.exitCommand();
            }
            face.blocking.serveReady();
        } catch (RuntimeException | Error e) {
            LOG.warn("RESP client {} at {}: long command {} failed", id, remote, lastCommand, e);
            out().error("ERR internal error: " + e);
        } finally {
            ByteBuf r = w.out;
            w.out = null;
            try {
                ctx.executor().execute(() -> longDone(r));
            } catch (java.util.concurrent.RejectedExecutionException e) {
                // the event loop has stopped: the connection is gone
                if (r != null) {
                    r.release();
                }
            }
        }
    }

    /**
     * Event loop: the long command is done. Its reply follows the replies held before it and precedes the pub/sub
     * messages that arrived meanwhile; then the commands that arrived meanwhile run, and reading resumes.
     */
    private void longDone(ByteBuf reply) {
        ByteBuf before = heldOut;
        heldOut = null;
        offloaded = false;
        java.util.List<java.util.function.Consumer<RespWriter>> pushes = heldPushes;
        heldPushes = null;
        boolean drop = longSilenced && !replyTurnedOn;
        replyTurnedOn = false;
        if (closing || !ctx.channel().isActive()) {
            release(before);
            release(reply);
            return;
        }
        // the log writes of the commands before the long one (the loop's batch) go out before any of these replies
        if (!endBatch(false)) {
            release(before);
            release(reply);
            return;
        }
        if (before != null) {
            ctx.write(before, ctx.voidPromise());
            written = true;
        }
        if (reply != null && !drop && reply.isReadable()) {
            ctx.write(reply, ctx.voidPromise());
            written = true;
            checkOutputLimit();
            if (closing) {
                return;
            }
        } else {
            release(reply);
        }
        if (pushes != null) {
            for (var m : pushes) {
                m.accept(out());
            }
        }
        decodeBuffered();
        if (closing) {
            return;
        }
        flushReplies();
        if (pushes != null) {
            checkPubSubLimit();
        }
        if (!blocked && !offloaded && ctx.channel().isWritable()) {
            ctx.channel().config().setAutoRead(true);
        }
    }

    /** Runs the commands that arrived while this client waited (blocked or offloaded); event loop only. */
    private void decodeBuffered() {
        if (cum != null && cum.isReadable()) {
            try {
                decode();
            } catch (RuntimeException e) {
                protocolError("ERR internal error: " + e);
            }
            ByteBuf c = cum;
            if (c != null && !c.isReadable()) {
                c.release();
                cum = null;
            }
        }
    }

    private static void release(ByteBuf b) {
        if (b != null) {
            b.release();
        }
    }

    /**
     * Runs one command (also each command of an EXEC) with the error handling and statistics of every command: a
     * store error becomes the error reply, anything unexpected an internal error, and the connection lives on.
     */
    void runCommand(byte[][] argv, int argc) {
        long started = System.nanoTime();
        long errorsBefore = w.errors;
        RespCommand outer = current;
        current = null;
        // Only a replica set's WAIT needs the index of this client's last write.
        boolean replicated = face.replicaSet() != null;
        long indexBefore = replicated ? Store.lastCommitIndex() : 0;
        face.notify.begin();
        try {
            face.commands.execute(this, argv, argc);
            face.notify.done(current, argv, argc);
            if (replicated) {
                long indexAfter = Store.lastCommitIndex();
                if (indexAfter != indexBefore) {
                    lastWriteIndex = indexAfter;
                }
            }
        } catch (ReadOnlyException e) {
            // A replica set's secondary: Redis's text, so clients (and Sentinel-aware ones) react as to a replica.
            String m = String.valueOf(e.getMessage());
            if (host != null) {
                // a native client fails over on NOTPRIMARY, as for its other writes
                out().error(m.startsWith("NOTPRIMARY") ? m : face.store.readOnlyReason());
            } else {
                out().error(m.startsWith("NOREPLICAS") ? m
                    : "READONLY You can't write against a read only replica.");
            }
        } catch (StoreException e) {
            out().error(errorText(e.getMessage()));
        } catch (RuntimeException e) {
            // A bug or an unexpected store failure: the client gets an error, the connection and server live on.
            LOG.warn("RESP client {} at {}: command {} failed", id, remote, lastCommand, e);
            out().error("ERR internal error: " + e);
        }
        if (slotLock != null) {
            slotLock.unlock();
            slotLock = null;
        }
        asking = current == RespCommand.ASKING;
        RespCommand cmd = current;
        if (cmd != null) {
            int i = cmd.ordinal();
            face.commandCalls[i].increment();
            face.commandMicros[i].add((System.nanoTime() - started) / 1000);
            if (w.errors != errorsBefore) {
                face.commandFailed[i].increment();
            }
        } else {
            face.commandsRejected.increment();
        }
        if (inExec) {
            current = outer;
        }
    }

    /** Store messages carry Redis's text; those without an error code ("WRONGTYPE ...") get "ERR ". */
    static String errorText(String m) {
        if (m == null || m.isEmpty()) {
            return "ERR unknown error";
        }
        int sp = m.indexOf(' ');
        if (sp > 0) {
            boolean code = true;
            for (int i = 0; i < sp && code; i++) {
                char ch = m.charAt(i);
                code = ch >= 'A' && ch <= 'Z';
            }
            if (code) {
                return m;
            }
        }
        return "ERR " + m;
    }

    private void addArg(byte[] arg) {
        if (argc == argv.length) {
            argv = Arrays.copyOf(argv, argv.length * 2);
        }
        argv[argc++] = arg;
    }

    /**
     * Splits an inline line the way Redis's sdssplitargs does: blanks separate arguments, double quotes allow escapes
     * (\n \r \t \b \a \\ \" \xHH), single quotes allow \'; a closing quote must be followed by a blank or the end.
     */
    private boolean splitInline(byte[] line) {
        int i = 0;
        int n = line.length;
        ByteArrayOutputStream cur = new ByteArrayOutputStream();
        while (true) {
            while (i < n && isSpace(line[i])) {
                i++;
            }
            if (i >= n) {
                return true;
            }
            cur.reset();
            boolean inDq = false;
            boolean inSq = false;
            boolean done = false;
            while (!done) {
                if (inDq) {
                    if (i >= n) {
                        return false;
                    }
                    byte c = line[i];
                    if (c == '\\' && i + 3 < n && line[i + 1] == 'x' && hex(line[i + 2]) >= 0 && hex(line[i + 3]) >= 0) {
                        cur.write(hex(line[i + 2]) * 16 + hex(line[i + 3]));
                        i += 3;
                    } else if (c == '\\' && i + 1 < n) {
                        i++;
                        byte e = line[i];
                        cur.write(switch (e) {
                            case 'n' -> '\n';
                            case 'r' -> '\r';
                            case 't' -> '\t';
                            case 'b' -> '\b';
                            case 'a' -> 7;
                            default -> e;
                        });
                    } else if (c == '"') {
                        if (i + 1 < n && !isSpace(line[i + 1])) {
                            return false;
                        }
                        done = true;
                    } else {
                        cur.write(c);
                    }
                } else if (inSq) {
                    if (i >= n) {
                        return false;
                    }
                    byte c = line[i];
                    if (c == '\\' && i + 1 < n && line[i + 1] == '\'') {
                        i++;
                        cur.write('\'');
                    } else if (c == '\'') {
                        if (i + 1 < n && !isSpace(line[i + 1])) {
                            return false;
                        }
                        done = true;
                    } else {
                        cur.write(c);
                    }
                } else {
                    if (i >= n) {
                        done = true;
                        break;
                    }
                    byte c = line[i];
                    if (isSpace(c)) {
                        done = true;
                    } else if (c == '"') {
                        inDq = true;
                    } else if (c == '\'') {
                        inSq = true;
                    } else {
                        cur.write(c);
                    }
                }
                if (i < n) {
                    i++;
                }
            }
            addArg(cur.toByteArray());
        }
    }

    private static boolean isSpace(byte c) {
        return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == 0x0B || c == '\f' || c == 0;
    }

    private static int hex(byte c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    }

    /** Strict decimal parse of {@code b[from, to)} as Redis's string2ll; Long.MIN_VALUE when not a number. */
    static long parseLong(ByteBuf b, int from, int to) {
        int len = to - from;
        if (len <= 0 || len > 20) {
            return Long.MIN_VALUE;
        }
        boolean neg = false;
        int i = from;
        if (b.getByte(i) == '-') {
            neg = true;
            i++;
            if (i == to) {
                return Long.MIN_VALUE;
            }
        }
        if (b.getByte(i) == '0' && to - i > 1) {
            return Long.MIN_VALUE;
        }
        long v = 0;
        for (; i < to; i++) {
            int d = b.getByte(i) - '0';
            if (d < 0 || d > 9) {
                return Long.MIN_VALUE;
            }
            if (v > (Long.MAX_VALUE - d) / 10) {
                return Long.MIN_VALUE;
            }
            v = v * 10 + d;
        }
        return neg ? -v : v;
    }

    private static String format(SocketAddress a) {
        if (a instanceof InetSocketAddress i) {
            return i.getAddress().getHostAddress() + ":" + i.getPort();
        }
        return String.valueOf(a);
    }
}
