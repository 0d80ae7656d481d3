package io.rdmastore.server.resp;

import io.rdmastore.store.Lists;
import io.rdmastore.store.ReadOnlyException;
import io.rdmastore.store.SortedSets;
import io.rdmastore.store.SortedSets.Scored;
import io.rdmastore.store.ValueType;
import io.rdmastore.store.WrongTypeException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * The blocking list commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP) and LMPOP, the blocking sorted set commands
 * (BZPOPMIN, BZPOPMAX, BZMPOP), and the registry of clients blocked on keys, Redis's way: a client that finds every key empty is parked ({@link RespConnection#block}: its later
 * commands wait, its event loop does not) in a FIFO queue per key. The store's key listener marks a key "ready" when a
 * client waits on it and any write changes it (a push by any face, an EXEC, a RENAME or RESTORE onto it); the ready
 * keys are then served in the order the clients blocked (a client waiting for a list skips a key that now holds a
 * sorted set, and the other way round): right after the RESP command that made them ready (before
 * its reply leaves, as Redis does), or, for writes from elsewhere (native protocol, expiry), by the face's unblock
 * thread. Serving pops on the client's behalf and hands the reply to the client's event loop
 * ({@link RespConnection#resume}). A time-out (float seconds, 0 = never) answers a null array; a disconnect drops the
 * client from every queue.
 *
 * <p>Threads: blocking, serving, time-outs and disconnects hold {@link #lock} (the registry's one lock; never taken
 * while holding a store lock, and the key listener, which runs under store locks, never takes it). The listener
 * methods ({@link #keyChanged}) may be called on any thread.
 */
final class RespBlocking {
    private static final Logger LOG = LoggerFactory.getLogger(RespBlocking.class);
    private static final String SYNTAX = "ERR syntax error";
    /** Depth of RESP command execution on this thread: ready keys found inside one are served after it. */
    private static final ThreadLocal<int[]> IN_COMMAND = ThreadLocal.withInitial(() -> new int[1]);

    private final RespFace face;
    private final Lists lists;
    private final SortedSets zsets;
    private final ReentrantLock lock = new ReentrantLock();
    /** Clients blocked per key, in the order they blocked. The deques are guarded by {@link #lock}. */
    private final ConcurrentHashMap<Bytes, ArrayDeque<Blocked>> byKey = new ConcurrentHashMap<>();
    private final Set<Bytes> readySet = ConcurrentHashMap.newKeySet();
    private final ConcurrentLinkedQueue<Bytes> readyQueue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger blockedCount = new AtomicInteger();
    private final AtomicBoolean dispatchScheduled = new AtomicBoolean();
    private final ExecutorService dispatcher = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "rdmastore-resp-unblock");
        t.setDaemon(true);
        return t;
    });

    /** POP/MOVE/MPOP: lists ({@code left}: from the head); ZPOP/ZMPOP: sorted sets ({@code left}: the minimum). */
    private enum Kind { POP, MOVE, MPOP, ZPOP, ZMPOP }

    /** One blocked command. Fields are written before it is published under {@link #lock}; {@code done} under it. */
    static final class Blocked {
        final RespConnection c;
        final Bytes[] keys;
        final Kind kind;
        final boolean left;
        final byte[] dest;
        final boolean toLeft;
        final long count;
        Future<?> timer;
        boolean done;

        private Blocked(RespConnection c, Bytes[] keys, Kind kind, boolean left, byte[] dest, boolean toLeft,
                        long count) {
            this.c = c;
            this.keys = keys;
            this.kind = kind;
            this.left = left;
            this.dest = dest;
            this.toLeft = toLeft;
            this.count = count;
        }
    }

    RespBlocking(RespFace face) {
        this.face = face;
        this.lists = face.store.lists();
        this.zsets = face.store.sortedSets();
    }

    /** Clients blocked on keys now (INFO blocked_clients). */
    int blockedClients() {
        return blockedCount.get();
    }

    /** Whether any client waits on a key (the store's listener copies keys only then). Any thread. */
    boolean anyBlocked() {
        return !byKey.isEmpty();
    }

    /** Stops the unblock thread (the face's shutdown). */
    void close() {
        dispatcher.shutdownNow();
    }

    // ---- the store's key listener: any thread, under the key's shard lock ----

    /** Marks {@code key} ready when a client waits on it. Cheap when nobody is blocked. */
    void keyChanged(byte[] key) {
        if (byKey.isEmpty()) {
            return;
        }
        Bytes k = new Bytes(key);
        if (byKey.containsKey(k) && readySet.add(k)) {
            readyQueue.add(k);
            if (IN_COMMAND.get()[0] == 0) {
                scheduleDispatch();
            }
        }
    }

    /** Around one RESP command's execution on an event loop (the connection's dispatch). */
    static void enterCommand() {
        IN_COMMAND.get()[0]++;
    }

    static void exitCommand() {
        IN_COMMAND.get()[0]--;
    }

    /** Whether a RESP command is running on this thread. */
    static boolean inCommand() {
        return IN_COMMAND.get()[0] > 0;
    }

    private void scheduleDispatch() {
        if (dispatchScheduled.compareAndSet(false, true)) {
            try {
                dispatcher.execute(() -> {
                    dispatchScheduled.set(false);
                    try {
                        serveReady();
                    } catch (RuntimeException e) {
                        LOG.warn("serving blocked clients failed", e);
                    }
                });
            } catch (java.util.concurrent.RejectedExecutionException e) {
                dispatchScheduled.set(false);
            }
        }
    }

    // ---- serving ----

    /**
     * Serves the clients blocked on keys made ready so far, in the order they blocked. Called after every RESP command
     * (cheap when nothing is ready) and by the unblock thread; the caller holds no store lock.
     */
    void serveReady() {
        if (readyQueue.isEmpty()) {
            return;
        }
        lock.lock();
        try {
            Bytes k;
            while ((k = readyQueue.poll()) != null) {
                readySet.remove(k);
                serveKey(k);
            }
        } finally {
            lock.unlock();
        }
    }

    private void serveKey(Bytes k) {
        ArrayDeque<Blocked> q = byKey.get(k);
        if (q == null) {
            return;
        }
        for (Blocked b : new ArrayList<>(q)) {
            if (b.done) {
                continue;
            }
            Consumer<RespWriter> reply;
            try {
                reply = serve(b, k);
            } catch (WrongTypeException e) {
                if (b.kind == Kind.MOVE && face.store.type(k.b) == ValueType.LIST) {
                    // the destination is not a list: this client gets the error, the element stays for the next
                    finish(b, w -> w.error(e.getMessage()));
                }
                // else the key holds the other kind of value than this client waits for: it keeps waiting, and a
                // client of that kind later in the queue may be served
                continue;
            } catch (RuntimeException e) {
                String m = RespConnection.errorText(e.getMessage());
                if (e instanceof ReadOnlyException) {
                    m = "READONLY You can't write against a read only replica.";
                }
                String text = m;
                finish(b, w -> w.error(text));
                continue;
            }
            if (reply == null) {
                return;
            }
            notifyServed(b, k.b);
            finish(b, reply);
        }
    }

    /** The keyspace events of a pop (or move) made for a blocked client, as the command itself would emit them. */
    private void notifyServed(Blocked b, byte[] key) {
        switch (b.kind) {
            case ZPOP, ZMPOP -> face.notify.served(RespNotify.ZSET, b.left ? "zpopmin" : "zpopmax", key, null, null);
            case POP, MPOP -> face.notify.served(RespNotify.LIST, b.left ? "lpop" : "rpop", key, null, null);
            default -> face.notify.served(RespNotify.LIST, b.left ? "lpop" : "rpop", key, b.dest,
                b.toLeft ? "lpush" : "rpush");
        }
    }

    /** Pops for {@code b} from {@code k}; the reply to send, or null when {@code k} has nothing for it. */
    private Consumer<RespWriter> serve(Blocked b, Bytes k) {
        byte[] key = k.b;
        switch (b.kind) {
            case POP -> {
                List<byte[]> got = lists.pop(key, b.left, 1);
                if (got == null || got.isEmpty()) {
                    return null;
                }
                byte[] v = got.getFirst();
                return w -> {
                    w.arrayHeader(2);
                    w.bulk(key);
                    w.bulk(v);
                };
            }
            case MPOP -> {
                List<byte[]> got = lists.pop(key, b.left, b.count);
                if (got == null || got.isEmpty()) {
                    return null;
                }
                return w -> mpopReply(w, key, got);
            }
            case ZPOP, ZMPOP -> {
                List<Scored> got = zsets.pop(key, b.kind == Kind.ZMPOP ? b.count : 1, !b.left);
                return got.isEmpty() ? null : zreply(b.kind, key, got);
            }
            default -> {
                byte[] v = lists.move(key, b.dest, b.left, b.toLeft);
                return v == null ? null : w -> w.bulk(v);
            }
        }
    }

    /** BZPOPMIN/BZPOPMAX: [key, member, score]; BZMPOP: [key, [[member, score], ...]]. Scores as RESP3 doubles. */
    private static Consumer<RespWriter> zreply(Kind kind, byte[] key, List<Scored> got) {
        if (kind == Kind.ZPOP) {
            Scored s = got.getFirst();
            return w -> {
                w.arrayHeader(3);
                w.bulk(key);
                w.bulk(s.member());
                RespZSets.score(w, s.score());
            };
        }
        return w -> {
            w.arrayHeader(2);
            w.bulk(key);
            w.arrayHeader(got.size());
            for (Scored s : got) {
                w.arrayHeader(2);
                w.bulk(s.member());
                RespZSets.score(w, s.score());
            }
        };
    }

    private void finish(Blocked b, Consumer<RespWriter> reply) {
        drop(b);
        b.c.resume(reply);
    }

    /** Removes {@code b} from every queue; the caller holds {@link #lock}. */
    private void drop(Blocked b) {
        b.done = true;
        blockedCount.decrementAndGet();
        if (b.timer != null) {
            b.timer.cancel(false);
        }
        for (Bytes k : b.keys) {
            ArrayDeque<Blocked> q = byKey.get(k);
            if (q != null) {
                q.remove(b);
                if (q.isEmpty()) {
                    byKey.remove(k);
                }
            }
        }
        if (b.c.blockedOn == b) {
            b.c.blockedOn = null;
        }
    }

    /** The connection closed: it leaves every queue. Its event loop. */
    void disconnected(RespConnection c) {
        if (c.blockedOn == null) {
            return;
        }
        lock.lock();
        try {
            Blocked b = c.blockedOn;
            if (b != null && !b.done) {
                drop(b);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * CLIENT UNBLOCK: ends the wait of the client with that id as a time-out would ({@code error}: with Redis's
     * UNBLOCKED error). True when it was blocked on keys.
     */
    boolean unblock(RespConnection c, boolean error, boolean inExec) {
        if (c == null) {
            return false;
        }
        Blocked b;
        if (inExec) {
            // EXEC holds every store lock, and a serving thread may hold this lock while it waits for a store lock:
            // inside EXEC, only an uncontended registry is used
            if (!lock.tryLock()) {
                return false;
            }
        } else {
            lock.lock();
        }
        try {
            b = c.blockedOn;
            if (b == null || b.done) {
                return false;
            }
            drop(b);
        } finally {
            lock.unlock();
        }
        b.c.resume(error ? w -> w.error("UNBLOCKED client unblocked via CLIENT UNBLOCK") : RespWriter::nullArray);
        return true;
    }

    private void timedOut(Blocked b) {
        lock.lock();
        try {
            if (b.done) {
                return;
            }
            drop(b);
        } finally {
            lock.unlock();
        }
        b.c.resume(RespWriter::nullArray);
    }

    // ---- the commands ----

    void execute(RespConnection c, RespWriter w, RespCommand cmd, byte[][] argv, int argc) {
        switch (cmd) {
            case BLPOP, BRPOP -> {
                long timeout = timeout(w, argv[argc - 1]);
                if (timeout < 0) {
                    return;
                }
                block(c, w, keys(argv, 1, argc - 1), Kind.POP, cmd == RespCommand.BLPOP, null, false, 1, timeout);
            }
            case BRPOPLPUSH -> {
                long timeout = timeout(w, argv[3]);
                if (timeout >= 0) {
                    blockMove(c, w, argv[1], argv[2], false, true, timeout);
                }
            }
            case BLMOVE -> {
                Boolean from = side(argv[3]);
                Boolean to = side(argv[4]);
                if (from == null || to == null) {
                    w.error(SYNTAX);
                    return;
                }
                long timeout = timeout(w, argv[5]);
                if (timeout >= 0) {
                    blockMove(c, w, argv[1], argv[2], from, to, timeout);
                }
            }
            case BLMPOP -> {
                long timeout = timeout(w, argv[1]);
                if (timeout >= 0) {
                    mpop(c, w, argv, argc, 2, timeout, false);
                }
            }
            case LMPOP -> mpop(c, w, argv, argc, 1, -1, false);
            case BZPOPMIN, BZPOPMAX -> {
                long timeout = timeout(w, argv[argc - 1]);
                if (timeout >= 0) {
                    block(c, w, keys(argv, 1, argc - 1), Kind.ZPOP, cmd == RespCommand.BZPOPMIN, null, false, 1,
                        timeout);
                }
            }
            case BZMPOP -> {
                long timeout = timeout(w, argv[1]);
                if (timeout >= 0) {
                    mpop(c, w, argv, argc, 2, timeout, true);
                }
            }
            default -> w.error("ERR internal error: no handler for '" + cmd.lowerName + "'");
        }
    }

    private static Bytes[] keys(byte[][] argv, int from, int to) {
        Set<Bytes> ks = new LinkedHashSet<>();
        for (int i = from; i < to; i++) {
            ks.add(new Bytes(argv[i]));
        }
        return ks.toArray(new Bytes[0]);
    }

    private static Boolean side(byte[] a) {
        return RespCommand.is(a, "LEFT") ? Boolean.TRUE : RespCommand.is(a, "RIGHT") ? Boolean.FALSE : null;
    }

    /**
     * LMPOP numkeys key... LEFT|RIGHT [COUNT n], BLMPOP timeout numkeys ..., and ({@code zset}) BZMPOP timeout
     * numkeys key... MIN|MAX [COUNT n]; {@code timeout} -1: no blocking.
     */
    private void mpop(RespConnection c, RespWriter w, byte[][] argv, int argc, int numkeysAt, long timeout,
                      boolean zset) {
        long numkeys = RespCommands.parseLong(c, argv[numkeysAt]) ? c.num : 0;
        if (numkeys < 1) {
            w.error("ERR numkeys should be greater than 0");
            return;
        }
        long whereAt = numkeysAt + Math.min(numkeys, argc) + 1;
        if (whereAt >= argc) {
            w.error(SYNTAX);
            return;
        }
        byte[] where = argv[(int) whereAt];
        Boolean left = zset ? (RespCommand.is(where, "MIN") ? Boolean.TRUE
            : RespCommand.is(where, "MAX") ? Boolean.FALSE : null) : side(where);
        if (left == null) {
            w.error(SYNTAX);
            return;
        }
        long count = -1;
        for (int j = (int) whereAt + 1; j < argc; j++) {
            if (count == -1 && RespCommand.is(argv[j], "COUNT") && j + 1 < argc) {
                j++;
                if (!RespCommands.parseLong(c, argv[j]) || c.num < 1) {
                    w.error("ERR count should be greater than 0");
                    return;
                }
                count = c.num;
            } else {
                w.error(SYNTAX);
                return;
            }
        }
        if (count == -1) {
            count = 1;
        }
        Bytes[] keys = keys(argv, numkeysAt + 1, (int) whereAt);
        if (timeout < 0) {
            for (Bytes k : keys) {
                List<byte[]> got = lists.pop(k.b, left, count);
                if (got != null && !got.isEmpty()) {
                    mpopReply(w, k.b, got);
                    return;
                }
            }
            w.nullArray();
            return;
        }
        block(c, w, keys, zset ? Kind.ZMPOP : Kind.MPOP, left, null, false, count, timeout);
    }

    private static void mpopReply(RespWriter w, byte[] key, List<byte[]> got) {
        w.arrayHeader(2);
        w.bulk(key);
        w.arrayHeader(got.size());
        for (byte[] v : got) {
            w.bulk(v);
        }
    }

    private void blockMove(RespConnection c, RespWriter w, byte[] src, byte[] dst, boolean fromLeft, boolean toLeft,
                           long timeout) {
        refuseOnSecondary();
        if (c.inExec) {
            byte[] v = lists.move(src, dst, fromLeft, toLeft);
            w.bulk(v);
            return;
        }
        Blocked b = new Blocked(c, new Bytes[] {new Bytes(src)}, Kind.MOVE, fromLeft, dst, toLeft, 1);
        lock.lock();
        try {
            register(b);
            byte[] v;
            try {
                v = lists.move(src, dst, fromLeft, toLeft);
            } catch (RuntimeException e) {
                unregisterNow(b);
                throw e;
            }
            if (v != null) {
                unregisterNow(b);
                w.bulk(v);
                return;
            }
            park(b, timeout);
        } finally {
            lock.unlock();
        }
    }

    /** BLPOP/BRPOP/BLMPOP: the first non-empty key in order, else the client blocks on all of them. */
    private void block(RespConnection c, RespWriter w, Bytes[] keys, Kind kind, boolean left, byte[] dest,
                       boolean toLeft, long count, long timeout) {
        refuseOnSecondary();
        if (c.inExec) {
            // inside MULTI a blocking command does not block (Redis): it answers as if timed out at once
            Consumer<RespWriter> r = tryKeys(keys, kind, left, count);
            if (r != null) {
                r.accept(w);
            } else {
                w.nullArray();
            }
            return;
        }
        Blocked b = new Blocked(c, keys, kind, left, dest, toLeft, count);
        lock.lock();
        try {
            // registered before the pops are tried: a push in between finds the client and marks its key ready
            register(b);
            Consumer<RespWriter> r;
            try {
                r = tryKeys(keys, kind, left, count);
            } catch (RuntimeException e) {
                unregisterNow(b);
                throw e;
            }
            if (r != null) {
                unregisterNow(b);
                r.accept(w);
                return;
            }
            park(b, timeout);
        } finally {
            lock.unlock();
        }
    }

    private Consumer<RespWriter> tryKeys(Bytes[] keys, Kind kind, boolean left, long count) {
        if (kind == Kind.ZPOP || kind == Kind.ZMPOP) {
            for (Bytes k : keys) {
                List<Scored> got = zsets.pop(k.b, kind == Kind.ZMPOP ? count : 1, !left);
                if (!got.isEmpty()) {
                    return zreply(kind, k.b, got);
                }
            }
            return null;
        }
        for (Bytes k : keys) {
            List<byte[]> got = lists.pop(k.b, left, kind == Kind.MPOP ? count : 1);
            if (got != null && !got.isEmpty()) {
                byte[] key = k.b;
                if (kind == Kind.MPOP) {
                    return w -> mpopReply(w, key, got);
                }
                byte[] v = got.getFirst();
                return w -> {
                    w.arrayHeader(2);
                    w.bulk(key);
                    w.bulk(v);
                };
            }
        }
        return null;
    }

    private void register(Blocked b) {
        for (Bytes k : b.keys) {
            byKey.computeIfAbsent(k, x -> new ArrayDeque<>()).addLast(b);
        }
        blockedCount.incrementAndGet();
    }

    private void unregisterNow(Blocked b) {
        drop(b);
    }

    /** The client waits; the caller holds {@link #lock} and has registered it. */
    private void park(Blocked b, long timeoutMillis) {
        RespConnection c = b.c;
        c.blockedOn = b;
        c.block();
        if (timeoutMillis > 0) {
            b.timer = c.schedule(() -> timedOut(b), timeoutMillis);
        }
    }

    private void refuseOnSecondary() {
        if (!face.store.writesAllowed()) {
            throw new ReadOnlyException("READONLY You can't write against a read only replica.");
        }
    }

    /**
     * Redis's time-out argument: seconds as a long double (decimal, exponent or hex, as strtold reads it), to whole
     * milliseconds rounded up; 0 is "for ever". Writes the error and returns -1 when it is not valid.
     */
    static long timeout(RespWriter w, byte[] arg) {
        String s = new String(arg, StandardCharsets.US_ASCII);
        BigDecimal seconds;
        try {
            if (s.isEmpty() || Character.isWhitespace(s.charAt(0)) || s.endsWith("d") || s.endsWith("D")
                || s.endsWith("f") || s.endsWith("F")) {
                throw new NumberFormatException(s);
            }
            String t = s.startsWith("+") || s.startsWith("-") ? s.substring(1) : s;
            boolean neg = s.startsWith("-");
            if (t.equalsIgnoreCase("inf") || t.equalsIgnoreCase("infinity")) {
                w.error(neg ? "ERR timeout is negative" : "ERR timeout is out of range");
                return -1;
            }
            if (t.startsWith("0x") || t.startsWith("0X")) {
                seconds = new BigDecimal(new java.math.BigInteger(t.substring(2), 16));
            } else {
                seconds = new BigDecimal(t);
            }
            if (neg) {
                seconds = seconds.negate();
            }
        } catch (NumberFormatException e) {
            w.error("ERR timeout is not a float or out of range");
            return -1;
        }
        BigDecimal millis = seconds.multiply(BigDecimal.valueOf(1000)).setScale(0, java.math.RoundingMode.CEILING);
        if (millis.compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
            w.error("ERR timeout is out of range");
            return -1;
        }
        if (millis.signum() < 0) {
            w.error("ERR timeout is negative");
            return -1;
        }
        long ms = millis.longValueExact();
        if (ms > Long.MAX_VALUE - System.currentTimeMillis()) {
            w.error("ERR timeout is out of range");
            return -1;
        }
        return ms;
    }
}
