package io.rdmastore.client;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The commands of one transaction, queued by the body given to {@link RdmaStoreClient#transaction} and sent as one
 * TRANSACTION request: the server runs them one after the other as one EXEC, with no other client's command between
 * them, logged as one record. Each method queues one Redis command; the transaction's result has one value per command
 * in order (see {@link RdmaStoreClient#transaction} for the types). Arguments may be {@code byte[]}, {@link String}
 * (UTF-8), or numbers (their decimal text).
 *
 * <p>Threads: not thread-safe; use it inside the body only.
 */
public final class Transaction {
    private final List<byte[][]> commands = new ArrayList<>();

    Transaction() {
    }

    /** Queues any data-type command, e.g. {@code command("LMOVE", "a", "b", "LEFT", "RIGHT")}. */
    public Transaction command(Object... args) {
        if (args.length == 0) {
            throw new IllegalArgumentException("a command needs at least its name");
        }
        byte[][] argv = new byte[args.length][];
        for (int i = 0; i < args.length; i++) {
            argv[i] = arg(args[i]);
        }
        commands.add(argv);
        return this;
    }

    public Transaction set(Object key, Object value) {
        return command("SET", key, value);
    }

    public Transaction get(Object key) {
        return command("GET", key);
    }

    public Transaction del(Object key) {
        return command("DEL", key);
    }

    public Transaction incr(Object key) {
        return command("INCR", key);
    }

    public Transaction incrBy(Object key, long delta) {
        return command("INCRBY", key, delta);
    }

    public Transaction hset(Object key, Object field, Object value) {
        return command("HSET", key, field, value);
    }

    public Transaction lpush(Object key, Object... values) {
        return command(prepend("LPUSH", key, values));
    }

    public Transaction rpush(Object key, Object... values) {
        return command(prepend("RPUSH", key, values));
    }

    public Transaction lpop(Object key) {
        return command("LPOP", key);
    }

    public Transaction rpop(Object key) {
        return command("RPOP", key);
    }

    public Transaction lrange(Object key, long start, long stop) {
        return command("LRANGE", key, start, stop);
    }

    public Transaction sadd(Object key, Object... members) {
        return command(prepend("SADD", key, members));
    }

    public Transaction srem(Object key, Object... members) {
        return command(prepend("SREM", key, members));
    }

    public Transaction zadd(Object key, double score, Object member) {
        return command("ZADD", key, score, member);
    }

    public Transaction zincrby(Object key, double delta, Object member) {
        return command("ZINCRBY", key, delta, member);
    }

    List<byte[][]> commands() {
        return commands;
    }

    static Object[] prepend(String name, Object key, Object[] rest) {
        Object[] all = new Object[rest.length + 2];
        all[0] = name;
        all[1] = key;
        System.arraycopy(rest, 0, all, 2, rest.length);
        return all;
    }

    /** One argument's bytes: arrays as they are, text as UTF-8, numbers and enums as their text. */
    static byte[] arg(Object a) {
        Objects.requireNonNull(a, "argument must not be null");
        if (a instanceof byte[] b) {
            return b;
        }
        if (a instanceof Double d) {
            return score(d).getBytes(StandardCharsets.US_ASCII);
        }
        return a.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** A score or bound as Redis reads it: {@code inf}, {@code -inf}, or the shortest exact decimal. */
    static String score(double d) {
        if (Double.isInfinite(d)) {
            return d > 0 ? "+inf" : "-inf";
        }
        if (d == Math.rint(d) && Math.abs(d) < 1e15) {
            return Long.toString((long) d);
        }
        return Double.toString(d);
    }
}
