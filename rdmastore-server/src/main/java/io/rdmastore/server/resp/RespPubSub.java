package io.rdmastore.server.resp;

import io.rdmastore.store.Glob;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Pub/sub: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, PUBSUB CHANNELS | NUMSUB | NUMPAT, and keyspace
 * notifications ({@code notify-keyspace-events}). A message is encoded on each subscriber's own event loop (RESP2
 * array or RESP3 push, by the subscriber's protocol) and written at once; a subscriber whose unread messages pass the
 * pub/sub output limit ({@code client-output-buffer-limit}'s {@code pubsub} hard limit, 32 MB by default) is
 * disconnected, as Redis does, so a slow subscriber cannot make the server buffer without bound.
 *
 * <p>Threads: the registries are concurrent maps; a connection's own subscription sets are touched on its event loop
 * only. PUBLISH may run on any event loop.
 */
final class RespPubSub {
    private static final byte[] MESSAGE = "message".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] PMESSAGE = "pmessage".getBytes(StandardCharsets.US_ASCII);

    private final RespFace face;
    private final ConcurrentHashMap<Bytes, Set<RespConnection>> channels = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Bytes, Set<RespConnection>> patterns = new ConcurrentHashMap<>();

    RespPubSub(RespFace face) {
        this.face = face;
    }

    void execute(RespConnection c, RespWriter w, RespCommand cmd, byte[][] argv, int argc) {
        switch (cmd) {
            case SUBSCRIBE -> {
                for (int i = 1; i < argc; i++) {
                    Bytes ch = new Bytes(argv[i]);
                    if (c.channels.add(ch)) {
                        add(channels, ch, c);
                    }
                    reply(c, w, "subscribe", ch.b);
                }
            }
            case PSUBSCRIBE -> {
                for (int i = 1; i < argc; i++) {
                    Bytes p = new Bytes(argv[i]);
                    if (c.patterns.add(p)) {
                        add(patterns, p, c);
                    }
                    reply(c, w, "psubscribe", p.b);
                }
            }
            case UNSUBSCRIBE -> unsubscribe(c, w, argv, argc, false);
            case PUNSUBSCRIBE -> unsubscribe(c, w, argv, argc, true);
            case PUBLISH -> w.integer(publish(argv[1], argv[2]));
            case PUBSUB -> pubsub(w, argv, argc);
            default -> w.error("ERR internal error: no handler for '" + cmd.lowerName + "'");
        }
    }

    private static void add(ConcurrentHashMap<Bytes, Set<RespConnection>> map, Bytes k, RespConnection c) {
        map.compute(k, (x, s) -> {
            Set<RespConnection> set = s != null ? s : ConcurrentHashMap.newKeySet();
            set.add(c);
            return set;
        });
    }

    private static void remove(ConcurrentHashMap<Bytes, Set<RespConnection>> map, Bytes k, RespConnection c) {
        map.computeIfPresent(k, (x, s) -> {
            s.remove(c);
            return s.isEmpty() ? null : s;
        });
    }

    private static void reply(RespConnection c, RespWriter w, String kind, byte[] name) {
        w.pushHeader(3);
        w.bulk(kind);
        if (name == null) {
            w.nullBulk();
        } else {
            w.bulk(name);
        }
        w.integer(c.channels.size() + c.patterns.size());
    }

    private void unsubscribe(RespConnection c, RespWriter w, byte[][] argv, int argc, boolean pattern) {
        Set<Bytes> mine = pattern ? c.patterns : c.channels;
        var map = pattern ? patterns : channels;
        String kind = pattern ? "punsubscribe" : "unsubscribe";
        List<Bytes> names = new ArrayList<>();
        if (argc == 1) {
            names.addAll(mine);
            if (names.isEmpty()) {
                reply(c, w, kind, null);
                return;
            }
        } else {
            for (int i = 1; i < argc; i++) {
                names.add(new Bytes(argv[i]));
            }
        }
        for (Bytes n : names) {
            if (mine.remove(n)) {
                remove(map, n, c);
            }
            reply(c, w, kind, n.b);
        }
    }

    /** Every subscription of {@code c} ends (RESET, disconnect). Its event loop. */
    void unsubscribeAll(RespConnection c) {
        for (Bytes n : c.channels) {
            remove(channels, n, c);
        }
        for (Bytes n : c.patterns) {
            remove(patterns, n, c);
        }
        c.channels.clear();
        c.patterns.clear();
    }

    /** Delivers a message to every subscriber of {@code channel} and every matching pattern; how many got it. */
    long publish(byte[] channel, byte[] message) {
        long n = 0;
        Set<RespConnection> subs = channels.get(new Bytes(channel));
        if (subs != null) {
            for (RespConnection s : subs) {
                s.push(w -> {
                    w.pushHeader(3);
                    w.bulk(MESSAGE);
                    w.bulk(channel);
                    w.bulk(message);
                });
                n++;
            }
        }
        if (!patterns.isEmpty()) {
            for (Map.Entry<Bytes, Set<RespConnection>> e : patterns.entrySet()) {
                byte[] p = e.getKey().b;
                if (!Glob.matches(p, channel)) {
                    continue;
                }
                for (RespConnection s : e.getValue()) {
                    s.push(w -> {
                        w.pushHeader(4);
                        w.bulk(PMESSAGE);
                        w.bulk(p);
                        w.bulk(channel);
                        w.bulk(message);
                    });
                    n++;
                }
            }
        }
        return n;
    }

    boolean anySubscriber() {
        return !channels.isEmpty() || !patterns.isEmpty();
    }

    private void pubsub(RespWriter w, byte[][] argv, int argc) {
        String sub = new String(argv[1], StandardCharsets.UTF_8).toLowerCase(java.util.Locale.ROOT);
        switch (sub) {
            case "channels" -> {
                if (argc > 3) {
                    w.error("ERR Unknown subcommand or wrong number of arguments for 'channels'. Try PUBSUB HELP.");
                    return;
                }
                List<byte[]> out = new ArrayList<>();
                for (Bytes ch : channels.keySet()) {
                    if (argc == 2 || Glob.matches(argv[2], ch.b)) {
                        out.add(ch.b);
                    }
                }
                w.arrayHeader(out.size());
                for (byte[] b : out) {
                    w.bulk(b);
                }
            }
            case "numsub" -> {
                // a flat array in RESP3 too, as Redis 7.0 sends it
                w.arrayHeader(2L * (argc - 2));
                for (int i = 2; i < argc; i++) {
                    Set<RespConnection> s = channels.get(new Bytes(argv[i]));
                    w.bulk(argv[i]);
                    w.integer(s == null ? 0 : s.size());
                }
            }
            case "numpat" -> {
                if (argc != 2) {
                    w.error("ERR Unknown subcommand or wrong number of arguments for 'numpat'. Try PUBSUB HELP.");
                    return;
                }
                w.integer(patterns.size());
            }
            case "help" -> {
                String[] lines = {
                    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                    "CHANNELS [<pattern>]",
                    "    Return the currently active channels matching a <pattern> (default: '*').",
                    "NUMPAT",
                    "    Return number of subscriptions to patterns.",
                    "NUMSUB [<channel> ...]",
                    "    Return the number of subscribers for the specified channels, excluding",
                    "    pattern subscriptions(default: no channels).",
                    "HELP",
                    "    Prints this help."};
                w.arrayHeader(lines.length);
                for (String l : lines) {
                    w.simple(l);
                }
            }
            default -> w.error("ERR unknown subcommand '" + new String(argv[1], StandardCharsets.UTF_8)
                + "'. Try PUBSUB HELP.");
        }
    }

    /** Commands whose replies are pushes, sent even under CLIENT REPLY OFF. */
    static boolean pushesOnly(byte[] name) {
        RespCommand cmd = RespCommand.lookup(name);
        return cmd == RespCommand.SUBSCRIBE || cmd == RespCommand.PSUBSCRIBE || cmd == RespCommand.UNSUBSCRIBE
            || cmd == RespCommand.PUNSUBSCRIBE;
    }

    /** RESP2 subscribed mode: the commands a client with subscriptions may still send. */
    static boolean allowedSubscribed(RespCommand cmd) {
        return switch (cmd) {
            case SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PING, QUIT, RESET -> true;
            default -> false;
        };
    }

    /** The pub/sub output limit in bytes: the hard limit of the {@code pubsub} class, 0 for none. */
    long outputLimit() {
        String v = face.settings.get("client-output-buffer-limit");
        Object[] cached = limitCache;
        if (cached != null && cached[0] == v) {
            return (Long) cached[1];
        }
        long limit = parseLimit(v);
        limitCache = new Object[] {v, limit};
        return limit;
    }

    /** The last {@code client-output-buffer-limit} value parsed and its pubsub limit; any thread, racy but exact. */
    private volatile Object[] limitCache;

    private static long parseLimit(String v) {
        if (v == null) {
            return 32L << 20;
        }
        String[] parts = v.trim().split("\\s+");
        for (int i = 0; i + 1 < parts.length; i++) {
            if (parts[i].equalsIgnoreCase("pubsub")) {
                long bytes = RespCommands.parseMemory(parts[i + 1]);
                return Math.max(0, bytes);
            }
        }
        return 32L << 20;
    }
}
