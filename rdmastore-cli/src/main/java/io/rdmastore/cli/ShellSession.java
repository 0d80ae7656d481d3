package io.rdmastore.cli;

import io.rdmastore.client.DocumentCollection;
import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreException;
import io.rdmastore.client.SetOptions;
import io.rdmastore.client.UpdateResult;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import org.bson.BsonArray;
import org.bson.BsonDocument;
import org.bson.BsonValue;
import org.bson.json.JsonMode;
import org.bson.json.JsonParseException;
import org.bson.json.JsonWriterSettings;

/**
 * The shell's commands, shared by the interactive shell, piped mode and one-shot mode: {@link #run(List)} executes one
 * command given as words and prints its reply, redis-cli style ({@code "value"}, {@code (integer) 1}, {@code (nil)})
 * or raw (the bare value, for scripts).
 *
 * <p>The connection is opened on the first command that needs the server and kept; a lost connection is re-opened by
 * the client on the next call. Threads: one thread at a time. The session owns its client and closes it.
 */
final class ShellSession implements AutoCloseable {
    /** What {@link #run} tells its caller. */
    enum Outcome { OK, ERROR, QUIT }

    /** One command: its name, its argument synopsis, a one-line summary, and how many arguments it takes. */
    record Spec(String name, String args, String summary, int minArgs, int maxArgs, boolean needsServer) {
        String usage() {
            return args.isEmpty() ? name : name + " " + args;
        }
    }

    /** Every command, in help order. {@code maxArgs} -1 means no limit. */
    static final List<Spec> COMMANDS = List.of(
        new Spec("ping", "", "Checks the server answers: PONG", 0, 0, true),
        new Spec("get", "<key>", "The value of a key, or (nil)", 1, 1, true),
        new Spec("set", "<key> <value> [ex <seconds> | px <millis>] [nx | xx]",
            "Sets a key; ex/px give it a time to live, nx only if absent, xx only if present", 2, 6, true),
        new Spec("del", "<key> [key ...]", "Deletes keys; replies how many existed", 1, -1, true),
        new Spec("exists", "<key> [key ...]", "How many of the keys exist", 1, -1, true),
        new Spec("expire", "<key> <seconds>", "Sets a key's time to live; 1 if the key exists", 2, 2, true),
        new Spec("ttl", "<key>", "Seconds to live: -1 no expiry, -2 no such key", 1, 1, true),
        new Spec("pttl", "<key>", "Milliseconds to live: -1 no expiry, -2 no such key", 1, 1, true),
        new Spec("incr", "<key>", "Adds 1 to an integer value (a missing key counts as 0)", 1, 1, true),
        new Spec("incrby", "<key> <delta>", "Adds delta to an integer value", 2, 2, true),
        new Spec("decr", "<key>", "Subtracts 1 from an integer value", 1, 1, true),
        new Spec("decrby", "<key> <delta>", "Subtracts delta from an integer value", 2, 2, true),
        new Spec("mget", "<key> [key ...]", "The values of several keys", 1, -1, true),
        new Spec("mset", "<key> <value> [key value ...]", "Sets several keys at once, atomically", 2, -1, true),
        new Spec("hset", "<key> <field> <value> [field value ...]", "Sets hash fields; replies how many were new",
            3, -1, true),
        new Spec("hget", "<key> <field>", "The value of a hash field, or (nil)", 2, 2, true),
        new Spec("hgetall", "<key>", "Every field and value of a hash", 1, 1, true),
        new Spec("hdel", "<key> <field> [field ...]", "Deletes hash fields; replies how many existed", 2, -1, true),
        new Spec("doc", "insert|find|update|delete|count|index|dropindex|indexes <collection> ...",
            "Documents (JSON): 'help doc' for the forms", 1, -1, true),
        new Spec("info", "[section]", "Server, store, latency and connection statistics", 0, 1, true),
        new Spec("snapshot", "", "Writes a snapshot now (the log can then be truncated)", 0, 0, true),
        new Spec("transport", "", "Which transport this connection uses, and why", 0, 0, true),
        new Spec("help", "[command]", "Lists the commands, or shows one command's forms", 0, 1, false),
        new Spec("quit", "", "Leaves the shell (also: exit, Ctrl-D)", 0, 0, false));

    /** The forms of {@code doc}, shown by {@code help doc}. */
    static final List<String> DOC_FORMS = List.of(
        "doc insert <collection> <json>                      inserts a document (or a [list] of them); prints _id",
        "doc find <collection> [filter] [limit <n>]           documents matching a filter, e.g. {\"age\": {\"$gt\": 30}}",
        "doc update <collection> <filter> <update> [--many] [--upsert]   e.g. {\"$set\": {\"age\": 37}}",
        "doc delete <collection> <filter> [--many]            deletes the first (or every) match",
        "doc count <collection> [filter]                      counts matching documents",
        "doc index <collection> <field>                       indexes a field (dotted path) for equality filters",
        "doc dropindex <collection> <field>                   drops a field's index",
        "doc indexes <collection>                             the indexed fields (_id always)");

    private static final Map<String, Spec> BY_NAME = new LinkedHashMap<>();

    static {
        for (Spec s : COMMANDS) {
            BY_NAME.put(s.name(), s);
        }
        BY_NAME.put("exit", BY_NAME.get("quit"));
    }

    private static final JsonWriterSettings JSON = JsonWriterSettings.builder().outputMode(JsonMode.RELAXED).build();

    private final Supplier<RdmaStoreClient> connector;
    private final PrintWriter out;
    private final boolean raw;
    private RdmaStoreClient client;

    /**
     * @param connector opens the connection when a command first needs it; throws {@link RdmaStoreException} or
     *     {@link UserException} when it cannot
     * @param out where replies and errors are printed; not closed by the session
     * @param raw bare values for scripts instead of redis-cli's quoting
     */
    ShellSession(Supplier<RdmaStoreClient> connector, PrintWriter out, boolean raw) {
        this.connector = connector;
        this.out = out;
        this.raw = raw;
    }

    /** Command names for completion, including {@code exit}. */
    static List<String> commandNames() {
        return new ArrayList<>(BY_NAME.keySet());
    }

    /** The client, connecting first if needed. */
    RdmaStoreClient client() {
        if (client == null) {
            client = connector.get();
        }
        return client;
    }

    /** Whether a connection has been opened. */
    boolean connected() {
        return client != null;
    }

    /**
     * Runs one command and prints its reply, or prints {@code (error) ...} for a bad command, a server error or a lost
     * connection. Never throws for anything a user can cause.
     */
    Outcome run(List<String> words) {
        if (words.isEmpty()) {
            return Outcome.OK;
        }
        try {
            return execute(words);
        } catch (UserException | RdmaStoreException | IllegalArgumentException | ArithmeticException e) {
            error(e.getMessage());
            return Outcome.ERROR;
        } finally {
            out.flush();
        }
    }

    /** Splits {@code line} (quotes, JSON) and runs it; see {@link #run(List)}. */
    Outcome runLine(String line) {
        List<String> words;
        try {
            words = Tokenizer.split(line);
        } catch (UserException e) {
            error(e.getMessage());
            out.flush();
            return Outcome.ERROR;
        }
        return run(words);
    }

    private void error(String message) {
        out.println("(error) " + message);
    }

    private Outcome execute(List<String> words) {
        String name = words.get(0).toLowerCase(Locale.ROOT);
        Spec spec = BY_NAME.get(name);
        if (spec == null) {
            throw new UserException("unknown command '" + words.get(0) + "'; type 'help' for the list");
        }
        List<String> a = words.subList(1, words.size());
        if (a.size() < spec.minArgs() || (spec.maxArgs() >= 0 && a.size() > spec.maxArgs())) {
            throw new UserException("wrong number of arguments for '" + spec.name() + "'; usage: " + spec.usage());
        }
        switch (name) {
            case "quit", "exit" -> {
                return Outcome.QUIT;
            }
            case "help" -> help(a.isEmpty() ? null : a.get(0));
            case "ping" -> status(client().ping());
            case "get" -> bulk(client().get(a.get(0)));
            case "set" -> set(a);
            case "del" -> integer(client().del(a.toArray(String[]::new)));
            case "exists" -> integer(client().exists(a.toArray(String[]::new)));
            case "expire" -> integer(client().expire(a.get(0), Duration.ofSeconds(number("seconds", a.get(1))))
                ? 1 : 0);
            case "ttl" -> {
                long ms = client().pttl(a.get(0));
                integer(ms < 0 ? ms : (ms + 500) / 1000);
            }
            case "pttl" -> integer(client().pttl(a.get(0)));
            case "incr" -> integer(client().incr(a.get(0)));
            case "incrby" -> integer(client().incrBy(a.get(0), number("delta", a.get(1))));
            case "decr" -> integer(client().incrBy(a.get(0), -1));
            case "decrby" -> integer(client().incrBy(a.get(0), Math.negateExact(number("delta", a.get(1)))));
            case "mget" -> list(client().mget(a.toArray(String[]::new)));
            case "mset" -> {
                if (a.size() % 2 != 0) {
                    throw new UserException("wrong number of arguments for 'mset': keys and values must pair up");
                }
                Map<String, String> m = new LinkedHashMap<>();
                for (int i = 0; i < a.size(); i += 2) {
                    m.put(a.get(i), a.get(i + 1));
                }
                client().mset(m);
                status("OK");
            }
            case "hset" -> {
                if ((a.size() - 1) % 2 != 0) {
                    throw new UserException("wrong number of arguments for 'hset': fields and values must pair up");
                }
                List<byte[]> fv = new ArrayList<>();
                for (String s : a.subList(1, a.size())) {
                    fv.add(s.getBytes(StandardCharsets.UTF_8));
                }
                integer(client().hset(a.get(0).getBytes(StandardCharsets.UTF_8), fv));
            }
            case "hget" -> bulk(client().hget(a.get(0), a.get(1)));
            case "hgetall" -> {
                List<String> flat = new ArrayList<>();
                client().hgetAll(a.get(0)).forEach((f, v) -> {
                    flat.add(f);
                    flat.add(v);
                });
                list(flat);
            }
            case "hdel" -> integer(client().hdel(a.get(0), a.subList(1, a.size()).toArray(String[]::new)));
            case "doc" -> doc(a);
            case "info" -> info(a.isEmpty() ? null : a.get(0));
            case "snapshot" -> status("OK, snapshot written at " + Instant.ofEpochMilli(client().snapshot()));
            case "transport" -> {
                RdmaStoreClient c = client();
                out.println(c.transport() + ": " + c.transportReason());
            }
            default -> throw new UserException("unknown command '" + name + "'");
        }
        return Outcome.OK;
    }

    private void set(List<String> a) {
        SetOptions o = SetOptions.NONE;
        for (int i = 2; i < a.size(); i++) {
            String opt = a.get(i).toLowerCase(Locale.ROOT);
            switch (opt) {
                case "ex", "px" -> {
                    if (i + 1 >= a.size()) {
                        throw new UserException("set: '" + opt + "' needs a number");
                    }
                    long n = number(opt.equals("ex") ? "seconds" : "milliseconds", a.get(++i));
                    if (n <= 0) {
                        throw new UserException("set: invalid expire time " + n + " (must be positive)");
                    }
                    o = o.withTtl(opt.equals("ex") ? Duration.ofSeconds(n) : Duration.ofMillis(n));
                }
                case "nx" -> o = new SetOptions(o.ttlMillis(), true, o.ifPresent());
                case "xx" -> o = new SetOptions(o.ttlMillis(), o.ifAbsent(), true);
                default -> throw new UserException("set: unknown option '" + a.get(i)
                    + "' (expected ex <seconds>, px <millis>, nx or xx); quote values that contain spaces");
            }
        }
        if (client().set(a.get(0), a.get(1), o)) {
            status("OK");
        } else {
            bulk(null);
        }
    }

    private void doc(List<String> a) {
        String sub = a.get(0).toLowerCase(Locale.ROOT);
        List<String> r = a.subList(1, a.size());
        switch (sub) {
            case "insert" -> {
                docArgs(sub, r, 2, 2, "doc insert <collection> <json>");
                BsonValue v = json("document", r.get(1), true);
                if (v.isArray()) {
                    List<BsonDocument> docs = new ArrayList<>();
                    for (BsonValue d : v.asArray()) {
                        if (!d.isDocument()) {
                            throw new UserException("doc insert: every element of the list must be a document");
                        }
                        docs.add(d.asDocument());
                    }
                    List<BsonValue> ids = client().collection(r.get(0)).insertMany(docs);
                    if (!raw) {
                        out.println("inserted " + ids.size() + " document" + (ids.size() == 1 ? "" : "s"));
                    }
                    for (BsonValue id : ids) {
                        out.println(idJson(id));
                    }
                } else {
                    BsonValue id = client().collection(r.get(0)).insertOne(v.asDocument());
                    out.println(raw ? idJson(id) : "inserted _id " + idJson(id));
                }
            }
            case "find" -> {
                BsonDocument filter = new BsonDocument();
                int limit = 0;
                int i = 1;
                if (r.isEmpty()) {
                    throw new UserException("usage: doc find <collection> [filter] [limit <n>]");
                }
                if (i < r.size() && !r.get(i).equalsIgnoreCase("limit")) {
                    filter = json("filter", r.get(i++), false).asDocument();
                }
                if (i < r.size()) {
                    if (!r.get(i).equalsIgnoreCase("limit") || i + 2 != r.size()) {
                        throw new UserException("usage: doc find <collection> [filter] [limit <n>]");
                    }
                    long n = number("limit", r.get(i + 1));
                    if (n < 0 || n > Integer.MAX_VALUE) {
                        throw new UserException("limit must be between 0 (all) and " + Integer.MAX_VALUE + ": " + n);
                    }
                    limit = (int) n;
                }
                List<BsonDocument> docs = client().collection(r.get(0)).find(filter, limit);
                for (BsonDocument d : docs) {
                    out.println(d.toJson(JSON));
                }
                if (!raw) {
                    out.println("(" + docs.size() + " document" + (docs.size() == 1 ? "" : "s") + ")");
                }
            }
            case "update" -> {
                List<String> plain = flags(r, "--many", "--upsert");
                docArgs(sub, plain, 3, 3, "doc update <collection> <filter> <update> [--many] [--upsert]");
                BsonDocument filter = json("filter", plain.get(1), false).asDocument();
                BsonDocument update = json("update", plain.get(2), false).asDocument();
                boolean many = r.contains("--many");
                boolean upsert = r.contains("--upsert");
                UpdateResult u = many ? client().collection(plain.get(0)).updateMany(filter, update, upsert)
                    : client().collection(plain.get(0)).updateOne(filter, update, upsert);
                out.println("matched " + u.matched() + ", modified " + u.modified()
                    + (u.upsertedId() != null ? ", upserted _id " + idJson(u.upsertedId()) : ""));
            }
            case "delete" -> {
                List<String> plain = flags(r, "--many");
                docArgs(sub, plain, 2, 2, "doc delete <collection> <filter> [--many]");
                BsonDocument filter = json("filter", plain.get(1), false).asDocument();
                integer(r.contains("--many") ? client().collection(plain.get(0)).deleteMany(filter)
                    : client().collection(plain.get(0)).deleteOne(filter));
            }
            case "count" -> {
                docArgs(sub, r, 1, 2, "doc count <collection> [filter]");
                BsonDocument filter = r.size() > 1 ? json("filter", r.get(1), false).asDocument() : new BsonDocument();
                integer(client().collection(r.get(0)).countDocuments(filter));
            }
            case "index", "dropindex" -> {
                docArgs(sub, r, 2, 2, "doc " + sub + " <collection> <field>");
                DocumentCollection coll = client().collection(r.get(0));
                String field = r.get(1);
                boolean create = sub.equals("index");
                boolean changed = create ? coll.createIndex(field) : coll.dropIndex(field);
                if (raw) {
                    integer(changed ? 1 : 0);
                } else if (create) {
                    out.println("index on " + field + (changed ? " created" : " exists already"));
                } else {
                    out.println(changed ? "index on " + field + " dropped" : "no index on " + field);
                }
            }
            case "indexes" -> {
                docArgs(sub, r, 1, 1, "doc indexes <collection>");
                for (String f : client().collection(r.get(0)).listIndexes()) {
                    out.println(f);
                }
            }
            default -> throw new UserException("unknown doc command '" + a.get(0)
                + "' (expected insert, find, update, delete, count, index, dropindex or indexes); type 'help doc'");
        }
    }

    /** The arguments of {@code r} that are not one of {@code allowed}; any other {@code --word} is an error. */
    private static List<String> flags(List<String> r, String... allowed) {
        List<String> plain = new ArrayList<>();
        for (String s : r) {
            if (s.startsWith("--")) {
                if (!Arrays.asList(allowed).contains(s)) {
                    throw new UserException("unknown flag '" + s + "' (allowed: " + String.join(", ", allowed) + ")");
                }
            } else {
                plain.add(s);
            }
        }
        return plain;
    }

    private static void docArgs(String sub, List<String> r, int min, int max, String usage) {
        if (r.size() < min || r.size() > max) {
            throw new UserException("wrong number of arguments for 'doc " + sub + "'; usage: " + usage
                + " (a JSON argument with spaces must be one word: start it with { or quote it)");
        }
    }

    private static BsonValue json(String what, String text, boolean listAllowed) {
        String t = text.trim();
        try {
            if (listAllowed && t.startsWith("[")) {
                return BsonArray.parse(t);
            }
            if (!t.startsWith("{")) {
                throw new UserException(what + " must be a JSON document like {\"name\": \"ada\"}: '" + text + "'");
            }
            return BsonDocument.parse(t);
        } catch (JsonParseException | org.bson.BSONException | IllegalArgumentException e) {
            throw new UserException("bad JSON in " + what + ": " + e.getMessage() + ": '" + text + "'");
        }
    }

    private static String idJson(BsonValue id) {
        return new BsonDocument("_id", id).toJson(JSON).replaceFirst("^\\{\"_id\": ", "").replaceFirst("}$", "");
    }

    private void info(String section) {
        String text = client().info();
        if (section == null) {
            out.print(text.replace("\r\n", "\n"));
            return;
        }
        boolean in = false;
        boolean found = false;
        for (String line : text.split("\r?\n")) {
            if (line.startsWith("# ")) {
                in = line.substring(2).trim().equalsIgnoreCase(section);
                found |= in;
            }
            if (in) {
                out.println(line);
            }
        }
        if (!found) {
            throw new UserException("no INFO section '" + section + "' (sections: server, connection, store,"
                + " latency)");
        }
    }

    private void help(String topic) {
        if (topic == null) {
            out.println("Commands (values with spaces go in quotes; JSON may be typed as is):");
            for (Spec s : COMMANDS) {
                out.printf("  %-60s %s%n", s.usage(), s.summary());
            }
            out.println("Type 'help <command>' for one command. Tab completes command names.");
            return;
        }
        Spec s = BY_NAME.get(topic.toLowerCase(Locale.ROOT));
        if (s == null) {
            throw new UserException("no such command '" + topic + "'; type 'help' for the list");
        }
        out.println("usage: " + s.usage());
        out.println("  " + s.summary());
        if (s.name().equals("doc")) {
            for (String f : DOC_FORMS) {
                out.println("  " + f);
            }
        }
    }

    private static long number(String what, String s) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new UserException(what + " must be an integer: '" + s + "'");
        }
    }

    private void status(String s) {
        out.println(s);
    }

    private void integer(long n) {
        out.println(raw ? Long.toString(n) : "(integer) " + n);
    }

    private void bulk(Object v) {
        String s = v == null ? null : v instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : v.toString();
        if (raw) {
            out.println(s == null ? "" : s);
        } else {
            out.println(s == null ? "(nil)" : quote(s));
        }
    }

    private void list(List<?> values) {
        if (values.isEmpty()) {
            out.println(raw ? "" : "(empty array)");
            return;
        }
        for (int i = 0; i < values.size(); i++) {
            Object v = values.get(i);
            String s = v == null ? null : v instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : v.toString();
            if (raw) {
                out.println(s == null ? "" : s);
            } else {
                out.println((i + 1) + ") " + (s == null ? "(nil)" : quote(s)));
            }
        }
    }

    /** redis-cli's quoting: printable text in double quotes, everything else escaped. */
    static String quote(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20 || c == 0x7f) {
                        b.append(String.format("\\x%02x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    @Override
    public void close() {
        if (client != null) {
            client.close();
            client = null;
        }
    }
}
