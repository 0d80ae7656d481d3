package io.rdmastore.server.resp;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Keyspace notifications ({@code notify-keyspace-events}, Redis's flags K E g $ l s h z x e t m d n A): after a RESP
 * command, every key the store reports as changed during it (the store's key listener) gets the command's event,
 * published on {@code __keyspace@0__:<key>} (K) and {@code __keyevent@0__:<event>} (E); a key deleted because its
 * time to live passed gets {@code expired}, whoever deleted it (the expiry sweep or a write that found it expired).
 * A command that changed nothing (SREM of a missing member) sends nothing, as in Redis, because nothing was reported.
 * Writes through the native protocol send no events (they are not Redis commands).
 *
 * <p>Threads: {@link #flags} is set by CONFIG SET on any event loop; the listener methods run on the writer's thread
 * under store locks and only publish (which hands messages to the subscribers' event loops).
 */
final class RespNotify {
    static final int GENERIC = 1;
    static final int STRING = 1 << 1;
    static final int LIST = 1 << 2;
    static final int SET = 1 << 3;
    static final int HASH = 1 << 4;
    static final int ZSET = 1 << 5;
    static final int EXPIRED = 1 << 6;
    static final int EVICTED = 1 << 7;
    static final int STREAM = 1 << 8;
    static final int KEY_MISS = 1 << 9;
    static final int MODULE = 1 << 10;
    static final int NEW = 1 << 11;
    static final int KEYSPACE = 1 << 12;
    static final int KEYEVENT = 1 << 13;
    static final int ALL = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

    /** Keys changed by the RESP command running on this thread. */
    private static final ThreadLocal<List<byte[]>> CHANGED = ThreadLocal.withInitial(ArrayList::new);

    private final RespFace face;
    volatile int flags;

    RespNotify(RespFace face) {
        this.face = face;
    }

    /** Redis's flag string to bits; -1 when a character is not a flag. */
    static int parse(String s) {
        int f = 0;
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case 'A' -> f |= ALL;
                case 'g' -> f |= GENERIC;
                case '$' -> f |= STRING;
                case 'l' -> f |= LIST;
                case 's' -> f |= SET;
                case 'h' -> f |= HASH;
                case 'z' -> f |= ZSET;
                case 'x' -> f |= EXPIRED;
                case 'e' -> f |= EVICTED;
                case 't' -> f |= STREAM;
                case 'm' -> f |= KEY_MISS;
                case 'd' -> f |= MODULE;
                case 'n' -> f |= NEW;
                case 'K' -> f |= KEYSPACE;
                case 'E' -> f |= KEYEVENT;
                default -> {
                    return -1;
                }
            }
        }
        return f;
    }

    /** Bits to Redis's canonical flag string (what CONFIG GET shows). */
    static String format(int f) {
        StringBuilder b = new StringBuilder();
        if ((f & ALL) == ALL) {
            b.append('A');
        } else {
            char[] chars = {'g', '$', 'l', 's', 'h', 'z', 'x', 'e', 't', 'd', 'n'};
            int[] bits = {GENERIC, STRING, LIST, SET, HASH, ZSET, EXPIRED, EVICTED, STREAM, MODULE, NEW};
            for (int i = 0; i < chars.length; i++) {
                if ((f & bits[i]) != 0) {
                    b.append(chars[i]);
                }
            }
        }
        if ((f & KEYSPACE) != 0) {
            b.append('K');
        }
        if ((f & KEYEVENT) != 0) {
            b.append('E');
        }
        if ((f & KEY_MISS) != 0) {
            b.append('m');
        }
        return b.toString();
    }

    /** The store's key listener. Any thread, under the key's shard lock. */
    void keyChanged(byte[] key, boolean expired) {
        int f = flags;
        if (f == 0) {
            return;
        }
        if (expired) {
            emit(f, EXPIRED, "expired", key);
        } else if (RespBlocking.inCommand()) {
            CHANGED.get().add(key);
        }
    }

    /** A key created by a write (class n: RESP commands only, as the other events). */
    void created(byte[] key) {
        int f = flags;
        if ((f & NEW) != 0 && RespBlocking.inCommand()) {
            emit(f, NEW, "new", key);
        }
    }

    /** A key evicted for maxmemory. */
    void evicted(byte[] key) {
        int f = flags;
        if (f != 0) {
            emit(f, EVICTED, "evicted", key);
        }
    }

    /**
     * A client blocked on {@code key} was served (Redis's serveClientBlockedOnList and its sorted-set twin): the pop's
     * event ({@code lpop}, {@code rpop}, {@code zpopmin}, {@code zpopmax}) on the key, {@code del} when that emptied
     * it, and for a move the push's event ({@code lpush}, {@code rpush}) on the destination.
     */
    void served(int type, String pop, byte[] key, byte[] dest, String push) {
        int f = flags;
        if (f == 0) {
            return;
        }
        emit(f, type, pop, key);
        if (dest != null) {
            emit(f, LIST, push, dest);
        }
        if (face.store.exists(key) == 0) {
            emit(f, GENERIC, "del", key);
        }
    }

    /** Before a RESP command runs on this thread. */
    void begin() {
        if (flags != 0) {
            CHANGED.get().clear();
        }
    }

    /** After a RESP command: its events for the keys it changed. */
    void done(RespCommand cmd, byte[][] argv, int argc) {
        int f = flags;
        if (f == 0 || cmd == null) {
            return;
        }
        List<byte[]> changed = CHANGED.get();
        if (changed.isEmpty()) {
            return;
        }
        Set<Bytes> keys = new LinkedHashSet<>();
        for (byte[] k : changed) {
            keys.add(new Bytes(k));
        }
        changed.clear();
        for (Bytes k : keys) {
            events(f, cmd, argv, argc, k.b);
        }
    }

    private void events(int f, RespCommand cmd, byte[][] argv, int argc, byte[] key) {
        boolean first = argc > 1 && Arrays.equals(argv[1], key);
        String name = cmd.lowerName;
        int type = switch (cmd.group) {
            case "string", "bitmap" -> STRING;
            case "list" -> LIST;
            case "set" -> SET;
            case "hash" -> HASH;
            case "sorted-set", "zset" -> ZSET;
            default -> GENERIC;
        };
        switch (cmd) {
            case SET, SETNX, GETSET, MSET, MSETNX -> name = "set";
            case SETEX, PSETEX -> {
                emit(f, STRING, "set", key);
                emit(f, GENERIC, "expire", key);
                return;
            }
            case INCR, DECR, INCRBY, DECRBY -> name = "incrby";
            case BITOP -> name = "set";
            case DEL, UNLINK, GETDEL -> {
                type = GENERIC;
                name = "del";
            }
            case EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT -> name = face.store.exists(key) > 0 ? "expire" : "del";
            case RENAME, RENAMENX -> name = first ? "rename_from" : "rename_to";
            case COPY -> name = "copy_to";
            case LPUSHX -> name = "lpush";
            case RPUSHX -> name = "rpush";
            case BLPOP -> name = "lpop";
            case BRPOP -> name = "rpop";
            case LMOVE, BLMOVE -> name = first ? (RespCommand.is(argv[3], "LEFT") ? "lpop" : "rpop")
                : (RespCommand.is(argv[4], "LEFT") ? "lpush" : "rpush");
            case RPOPLPUSH, BRPOPLPUSH -> name = first ? "rpop" : "lpush";
            case LMPOP, BLMPOP -> name = leftArg(argv, argc) ? "lpop" : "rpop";
            case SMOVE -> name = first ? "srem" : "sadd";
            case SORT -> {
                // only the STORE destination changes
                emit(f, LIST, "sortstore", key);
                return;
            }
            case HMSET, HSETNX -> name = "hset";
            case ZINCRBY -> name = "zincr";
            case ZADD -> name = zaddIncr(argv, argc) ? "zincr" : "zadd";
            case BZPOPMIN -> name = "zpopmin";
            case BZPOPMAX -> name = "zpopmax";
            case ZMPOP, BZMPOP -> name = zmpopMax(argv, argc, cmd == RespCommand.ZMPOP ? 1 : 2) ? "zpopmax" : "zpopmin";
            default -> { }
        }
        if (cmd == RespCommand.SET) {
            emit(f, type, name, key);
            for (int i = 3; i < argc; i++) {
                if (RespCommand.is(argv[i], "EX") || RespCommand.is(argv[i], "PX") || RespCommand.is(argv[i], "EXAT")
                    || RespCommand.is(argv[i], "PXAT")) {
                    emit(f, GENERIC, "expire", key);
                }
            }
            return;
        }
        boolean container = type == LIST || type == SET || type == HASH || type == ZSET;
        if (container && face.store.exists(key) == 0) {
            // the command emptied the key (or stored an empty result): Redis reports the removal too
            if (!cmd.lowerName.endsWith("store")) {
                emit(f, type, name, key);
            }
            emit(f, GENERIC, "del", key);
            return;
        }
        emit(f, type, name, key);
    }

    /** ZADD's leading options include INCR. */
    private static boolean zaddIncr(byte[][] argv, int argc) {
        for (int i = 2; i < argc; i++) {
            byte[] a = argv[i];
            if (RespCommand.is(a, "INCR")) {
                return true;
            }
            if (!RespCommand.is(a, "NX") && !RespCommand.is(a, "XX") && !RespCommand.is(a, "GT")
                && !RespCommand.is(a, "LT") && !RespCommand.is(a, "CH")) {
                return false;
            }
        }
        return false;
    }

    /** (B)ZMPOP's MIN|MAX word (after numkeys keys) is MAX. */
    private static boolean zmpopMax(byte[][] argv, int argc, int numkeysAt) {
        long n;
        try {
            n = Long.parseLong(new String(argv[numkeysAt], StandardCharsets.US_ASCII));
        } catch (NumberFormatException e) {
            return false;
        }
        long at = numkeysAt + n + 1;
        return n > 0 && at < argc && RespCommand.is(argv[(int) at], "MAX");
    }

    private static boolean leftArg(byte[][] argv, int argc) {
        for (int i = 2; i < argc; i++) {
            if (RespCommand.is(argv[i], "LEFT")) {
                return true;
            }
            if (RespCommand.is(argv[i], "RIGHT")) {
                return false;
            }
        }
        return true;
    }

    private void emit(int f, int type, String event, byte[] key) {
        if ((f & type) == 0) {
            return;
        }
        byte[] ev = event.getBytes(StandardCharsets.US_ASCII);
        if ((f & KEYSPACE) != 0) {
            face.pubsub.publish(concat("__keyspace@0__:", key), ev);
        }
        if ((f & KEYEVENT) != 0) {
            face.pubsub.publish(concat("__keyevent@0__:", ev), key);
        }
    }

    private static byte[] concat(String prefix, byte[] tail) {
        byte[] p = prefix.getBytes(StandardCharsets.US_ASCII);
        byte[] out = Arrays.copyOf(p, p.length + tail.length);
        System.arraycopy(tail, 0, out, p.length, tail.length);
        return out;
    }
}
