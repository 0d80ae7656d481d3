package io.rdmastore.server.resp;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

/**
 * Transactions: MULTI / EXEC / DISCARD / WATCH / UNWATCH with Redis 7.0's semantics. After MULTI a command is checked
 * (name, arity, commands not allowed in a transaction) and queued with the reply {@code QUEUED}; an error at that point
 * makes EXEC answer {@code EXECABORT}. EXEC runs the queue inside {@link io.rdmastore.store.Store#exclusive} (every
 * shard's write lock): no other client's command, RESP or native, and no expiry sweep interleaves with it.
 *
 * <p>WATCH: the face keeps, per watched key, the connections watching it; the store's key listener marks them dirty
 * on any change of the key (a write by any face, a delete, an expiry, a FLUSHALL that removes it). EXEC checks the
 * flag, and whether a key that existed at WATCH has since expired unseen, under the same locks it runs the queue with,
 * so nothing can slip between the check and the run.
 *
 * <p>Threads: a connection's own state is touched on its event loop only; {@link #keyChanged} and {@link #flushing}
 * run on any writer's thread under store locks and only set volatile flags.
 */
final class RespMulti {
    private final RespFace face;
    /** Watched key to the connections watching it. */
    private final ConcurrentHashMap<Bytes, Set<RespConnection>> watched = new ConcurrentHashMap<>();

    RespMulti(RespFace face) {
        this.face = face;
    }

    boolean anyWatched() {
        return !watched.isEmpty();
    }

    /** The store's key listener: any thread, under the key's shard lock. */
    void keyChanged(Bytes k) {
        Set<RespConnection> s = watched.get(k);
        if (s != null) {
            for (RespConnection c : s) {
                c.watchDirty = true;
            }
        }
    }

    /** Before a FLUSHALL, under every shard lock: the watched keys that exist are touched. */
    void flushing(Predicate<byte[]> live) {
        for (Map.Entry<Bytes, Set<RespConnection>> e : watched.entrySet()) {
            if (live.test(e.getKey().b)) {
                for (RespConnection c : e.getValue()) {
                    c.watchDirty = true;
                }
            }
        }
    }

    /**
     * Called for every command before it runs. Returns true when it was handled here: queued (inside MULTI), or
     * refused because it may not be queued.
     */
    boolean queue(RespConnection c, RespWriter w, RespCommand cmd, byte[][] argv, int argc) {
        if (c.queued == null || c.inExec) {
            return false;
        }
        switch (cmd) {
            case EXEC, DISCARD, MULTI, WATCH, QUIT, RESET -> {
                return false;
            }
            case SAVE, WAIT -> {
                c.queueError = true;
                w.error("ERR Command not allowed inside a transaction");
                return true;
            }
            default -> {
                c.queued.add(Arrays.copyOf(argv, argc));
                w.simple("QUEUED");
                return true;
            }
        }
    }

    /** Whether a queued command may use more memory (EXEC under maxmemory aborts then). */
    boolean anyDenyoom(RespConnection c) {
        for (byte[][] q : c.queued) {
            RespCommand x = RespCommand.lookup(q[0]);
            if (x != null && x.denyoom) {
                return true;
            }
        }
        return false;
    }

    /** A command that failed its checks (unknown, wrong arity) inside MULTI makes EXEC abort. */
    static void queueFailed(RespConnection c) {
        if (c.queued != null && !c.inExec) {
            c.queueError = true;
        }
    }

    void execute(RespConnection c, RespWriter w, RespCommand cmd, byte[][] argv, int argc) {
        switch (cmd) {
            case MULTI -> {
                if (c.queued != null) {
                    w.error("ERR MULTI calls can not be nested");
                    return;
                }
                c.queued = new ArrayList<>();
                c.queueError = false;
                w.ok();
            }
            case DISCARD -> {
                if (c.queued == null) {
                    w.error("ERR DISCARD without MULTI");
                    return;
                }
                discard(c);
                w.ok();
            }
            case WATCH -> {
                if (c.queued != null) {
                    w.error("ERR WATCH inside MULTI is not allowed");
                    return;
                }
                for (int i = 1; i < argc; i++) {
                    watch(c, argv[i]);
                }
                w.ok();
            }
            case UNWATCH -> {
                unwatch(c);
                w.ok();
            }
            case EXEC -> exec(c, w);
            default -> w.error("ERR internal error: no handler for '" + cmd.lowerName + "'");
        }
    }

    private void watch(RespConnection c, byte[] key) {
        Bytes k = new Bytes(key.clone());
        if (c.watched.containsKey(k)) {
            return;
        }
        if (c.watched.isEmpty()) {
            // a first WATCH starts clean, even if a writer that saw an earlier watch set the flag late
            c.watchDirty = false;
        }
        watched.compute(k, (x, s) -> {
            Set<RespConnection> set = s != null ? s : ConcurrentHashMap.newKeySet();
            set.add(c);
            return set;
        });
        // registered first: a write from now on marks the client; whether the key exists is read after that
        c.watched.put(k, face.store.exists(key) > 0);
    }

    /** Forgets every watched key of {@code c} and its dirty flag. Its event loop. */
    void unwatch(RespConnection c) {
        if (!c.watched.isEmpty()) {
            for (Bytes k : c.watched.keySet()) {
                watched.computeIfPresent(k, (x, s) -> {
                    s.remove(c);
                    return s.isEmpty() ? null : s;
                });
            }
            c.watched.clear();
        }
        c.watchDirty = false;
    }

    /** Leaves MULTI and unwatches (DISCARD, RESET, a disconnect). */
    void discard(RespConnection c) {
        c.queued = null;
        c.queueError = false;
        unwatch(c);
    }

    private void exec(RespConnection c, RespWriter w) {
        if (c.queued == null) {
            w.error("ERR EXEC without MULTI");
            return;
        }
        var queue = c.queued;
        if (c.queueError) {
            discard(c);
            w.error("EXECABORT Transaction discarded because of previous errors.");
            return;
        }
        c.queued = null;
        c.inExec = true;
        try {
            boolean ran = face.store.exclusive(() -> {
                if (c.watchDirty || watchedExpired(c)) {
                    return false;
                }
                w.arrayHeader(queue.size());
                for (byte[][] q : queue) {
                    c.runCommand(q, q.length);
                }
                return true;
            });
            if (!ran) {
                w.nullArray();
            }
        } finally {
            c.inExec = false;
            unwatch(c);
        }
    }

    /** A key that existed at WATCH and is gone now without a write being seen: it expired (lazily). */
    private boolean watchedExpired(RespConnection c) {
        for (Map.Entry<Bytes, Boolean> e : c.watched.entrySet()) {
            if (e.getValue() && face.store.exists(e.getKey().b) == 0) {
                return true;
            }
        }
        return false;
    }
}
