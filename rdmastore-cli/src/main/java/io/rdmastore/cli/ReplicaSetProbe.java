package io.rdmastore.cli;

import io.rdmastore.client.ClientConfig;
import io.rdmastore.client.PeerChannel;
import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.WireReader;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.bson.BsonArray;
import org.bson.BsonBoolean;
import org.bson.BsonDocument;
import org.bson.BsonInt64;
import org.bson.BsonNull;
import org.bson.BsonString;
import org.bson.BsonValue;
import org.bson.json.JsonMode;
import org.bson.json.JsonWriterSettings;

/**
 * Asks the members of a replica set who they are -- the native ROLE opcode (role, term, primary, the member list) and
 * the {@code # Replication} section of INFO (offsets, the primary's view of each secondary, each link's transport) --
 * over one {@link PeerChannel} per member, and renders what they say as a table or JSON. Used by {@code replica-set
 * status} and {@code replica-set demo}.
 *
 * <p>Threads: one thread at a time; the channels it opens are closed by {@link #close()}. A member that does not answer
 * within the time-out is reported as unreachable, never waited for longer.
 */
final class ReplicaSetProbe implements AutoCloseable {
    /** ROLE's role codes. */
    static final int STANDALONE = 0;
    static final int PRIMARY = 1;
    static final int SECONDARY = 2;
    static final int NO_PRIMARY = 3;
    private static final long STRING_LIMIT = 1 << 16;

    /** A ROLE reply: the member's role, its term, the set, itself, the primary it knows of, and every member. */
    record Role(int code, long term, String setName, String selfId, String primaryId, String primaryAddress,
                Map<String, String> members) {
        /** primary, secondary, "no primary" (a member between elections) or standalone. */
        String roleName() {
            return switch (code) {
                case STANDALONE -> "standalone";
                case PRIMARY -> "primary";
                case SECONDARY -> "secondary";
                default -> "no primary";
            };
        }
    }

    /**
     * What one member said; {@code role} is null when it could not be asked ({@code error} says why), and
     * {@code replication} is empty when its INFO has no replication section.
     */
    record Member(String id, String address, Role role, Map<String, String> replication, String error) {
        boolean reachable() {
            return role != null;
        }

        String field(String name) {
            return replication.get(name);
        }
    }

    /** Every member's answer; {@code primary} is the member that says it is primary (highest term), or null. */
    record Status(String setName, List<Member> members, Member primary) {
    }

    private final String transport;
    private final String password;
    private final Duration timeout;
    private final Map<String, PeerChannel> channels = new HashMap<>();

    /**
     * @param transport how to reach the members: tcp, ucx or auto
     * @param password the members' password, or null
     * @param timeout the limit of each call to a member
     */
    ReplicaSetProbe(String transport, String password, Duration timeout) {
        this.transport = transport;
        this.password = password;
        this.timeout = timeout;
    }

    /** The channel to {@code host:port}, opened on first use; it reconnects by itself after its member restarts. */
    PeerChannel channel(String address) {
        return channels.computeIfAbsent(address, a -> {
            int colon = a.lastIndexOf(':');
            if (colon <= 0) {
                throw new UserException("'" + a + "' is not HOST:PORT");
            }
            int port;
            try {
                port = Integer.parseInt(a.substring(colon + 1));
            } catch (NumberFormatException e) {
                throw new UserException("'" + a + "' has a bad port", e);
            }
            return PeerChannel.open(new ClientConfig(a.substring(0, colon), port, transport, password, timeout));
        });
    }

    /** Closes the channel to {@code address}, so the next call connects afresh. */
    void drop(String address) {
        PeerChannel c = channels.remove(address);
        if (c != null) {
            c.close();
        }
    }

    /**
     * ROLE of the member at {@code address}.
     *
     * @throws RuntimeException (a client exception) when it cannot be reached or does not answer in time
     */
    Role role(String address) {
        PeerChannel c = channel(address);
        return c.await(c.call(ProtocolDescriptor.ROLE, w -> { }, (st, r) -> decodeRole(r), timeout), timeout);
    }

    private static Role decodeRole(WireReader r) {
        int code = r.u8("role");
        long term = r.i64("term");
        String set = r.string("setName", STRING_LIMIT);
        String self = r.string("selfId", STRING_LIMIT);
        String primary = r.string("primaryId", STRING_LIMIT);
        String primaryAddress = r.string("primaryAddress", STRING_LIMIT);
        int n = r.i32("count");
        Map<String, String> members = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            String id = r.string("id", STRING_LIMIT);
            members.put(id, r.string("address", STRING_LIMIT));
        }
        return new Role(code, term, set, self, primary, primaryAddress, members);
    }

    /** The INFO text of the member at {@code address}. */
    String info(String address) {
        PeerChannel c = channel(address);
        return c.await(c.call(ProtocolDescriptor.INFO, w -> { }, (st, r) -> r.restString(), timeout), timeout);
    }

    /** The {@code name:value} lines of INFO's {@code # Replication} section; empty when there is none. */
    static Map<String, String> replicationSection(String info) {
        Map<String, String> m = new LinkedHashMap<>();
        boolean in = false;
        for (String line : info.split("\r?\n")) {
            if (line.startsWith("#")) {
                in = line.substring(1).trim().equalsIgnoreCase("replication");
            } else if (in) {
                int colon = line.indexOf(':');
                if (colon > 0) {
                    m.put(line.substring(0, colon), line.substring(colon + 1));
                }
            }
        }
        return m;
    }

    /** {@code id=n2,ip=127.0.0.1,offset=7} as a map. */
    static Map<String, String> fields(String slaveLine) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String kv : slaveLine.split(",")) {
            int eq = kv.indexOf('=');
            if (eq > 0) {
                m.put(kv.substring(0, eq), kv.substring(eq + 1));
            }
        }
        return m;
    }

    /** Asks one member (ROLE, then INFO); an unreachable member comes back with its error. */
    Member probe(String id, String address) {
        boolean known = id != null && !id.isEmpty() && !id.startsWith("?");
        Role role;
        try {
            role = role(address);
        } catch (RuntimeException e) {
            drop(address);
            return new Member(known ? id : "?", address, null, Map.of(), describe(e));
        }
        String name = known ? id : role.selfId();
        Map<String, String> repl;
        try {
            repl = replicationSection(info(address));
        } catch (RuntimeException e) {
            drop(address);
            return new Member(name, address, role, Map.of(), "INFO failed: " + describe(e));
        }
        return new Member(name, address, role, repl, null);
    }

    /**
     * Asks every member in {@code targets} (id to {@code host:port}; an id starting with {@code ?} is unknown and
     * taken from the member's ROLE).
     */
    Status status(Map<String, String> targets) {
        List<Member> members = new ArrayList<>();
        targets.forEach((id, address) -> members.add(probe(id, address)));
        Member primary = null;
        String setName = null;
        for (Member m : members) {
            if (m.reachable() && setName == null && !m.role().setName().isEmpty()) {
                setName = m.role().setName();
            }
            if (m.reachable() && m.role().code() == PRIMARY
                && (primary == null || m.role().term() > primary.role().term())) {
                primary = m;
            }
        }
        return new Status(setName, members, primary);
    }

    /**
     * The member list as the member at {@code address} knows it (its ROLE).
     *
     * @throws UserException when it cannot be reached or is not a member of a replica set
     */
    Map<String, String> discover(String address) {
        Role r;
        try {
            r = role(address);
        } catch (RuntimeException e) {
            drop(address);
            throw new UserException("cannot ask " + address + " for its replica set: " + describe(e)
                + " -- is a member running there? (or name the members with --members)", e);
        }
        if (r.code() == STANDALONE) {
            throw new UserException(address + " is a standalone server, not a member of a replica set (start members"
                + " with 'rdmastore server --replica-set NAME --node-id ID --members ID=HOST:PORT,...')");
        }
        return r.members();
    }

    static String describe(Throwable e) {
        String m = e.getMessage();
        return m == null || m.isBlank() ? e.getClass().getSimpleName() : m;
    }

    @Override
    public void close() {
        for (PeerChannel c : channels.values()) {
            c.close();
        }
        channels.clear();
    }

    // ---- rendering ----

    /** One member as the status table shows it: what it says, completed with what the primary says about it. */
    record Row(String id, String address, String role, Long term, Long offset, Long commitIndex, Long lagRecords,
               Long lagMillis, boolean lagCoarse, String linkTransport, String linkReason, String linkStatus,
               String error) {
    }

    /** The rows of {@code s}, in the order of its members. */
    static List<Row> rows(Status s) {
        Map<String, Map<String, String>> seenByPrimary = new HashMap<>();
        Map<String, String> reasonByPrimary = new HashMap<>();
        if (s.primary() != null) {
            Map<String, String> pr = s.primary().replication();
            pr.forEach((k, v) -> {
                if (k.matches("slave\\d+")) {
                    Map<String, String> f = fields(v);
                    seenByPrimary.put(f.get("id"), f);
                    String reason = pr.get(k + "_transport_reason");
                    if (reason != null) {
                        reasonByPrimary.put(f.get("id"), reason);
                    }
                }
            });
        }
        Long primaryOffset = s.primary() == null ? null : number(s.primary().field("master_repl_offset"));
        List<Row> rows = new ArrayList<>();
        for (Member m : s.members()) {
            if (!m.reachable()) {
                rows.add(new Row(m.id(), m.address(), "unreachable", null, null, null, null, null, false, null, null,
                    "down", m.error()));
                continue;
            }
            Long offset = number(m.field("master_repl_offset"));
            Long commit = number(m.field("commit_index"));
            if (m == s.primary()) {
                String slaves = m.field("connected_slaves");
                rows.add(new Row(m.id(), m.address(), "primary", m.role().term(), offset, commit, 0L, 0L, false, null,
                    null, slaves == null ? "-" : slaves + " secondaries pulling", m.error()));
                continue;
            }
            Map<String, String> view = seenByPrimary.getOrDefault(m.id(), Map.of());
            Long lagRecords = number(view.get("lag_records"));
            if (lagRecords == null && primaryOffset != null && offset != null) {
                lagRecords = Math.max(0, primaryOffset - offset);
            }
            Long lagMillis = number(view.get("lag_ms"));
            boolean coarse = false;
            if (lagMillis == null && number(view.get("lag")) != null) {
                // the primary reports whole seconds since the secondary's last pull
                lagMillis = number(view.get("lag")) * 1000;
                coarse = true;
            }
            String transport = m.field("master_link_transport");
            if (transport == null || transport.isEmpty()) {
                transport = view.get("transport");
            }
            String reason = m.field("master_link_transport_reason");
            if (reason == null || reason.isEmpty()) {
                reason = reasonByPrimary.get(m.id());
            }
            String status = m.field("master_link_status");
            String state = view.get("state");
            String link = status == null ? (state == null ? "-" : state)
                : status + (state != null ? " (primary sees it " + state + ")" : "");
            String role = m.role().roleName();
            rows.add(new Row(m.id(), m.address(), role, m.role().term(), offset, commit, lagRecords, lagMillis, coarse,
                transport, reason, link, m.error()));
        }
        return rows;
    }

    private static Long number(String s) {
        if (s == null || s.isEmpty()) {
            return null;
        }
        try {
            return Long.parseLong(s.trim());
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** The status as a table, with a headline naming the primary and a line per unreachable member's error. */
    static void printTable(Status s, PrintWriter out) {
        List<Row> rows = rows(s);
        long reachable = s.members().stream().filter(Member::reachable).count();
        out.println("replica set " + (s.setName() == null ? "?" : s.setName()) + ": " + (s.primary() == null
            ? "NO PRIMARY" : "primary " + s.primary().id() + " at " + s.primary().address() + ", term "
            + s.primary().role().term()) + "; " + reachable + " of " + s.members().size() + " members reachable");
        String[] head = {"member", "address", "role", "term", "offset", "lag rec", "lag ms", "link", "link status"};
        List<String[]> cells = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        for (Row r : rows) {
            String lagMs = r.lagMillis() == null ? "-" : r.lagCoarse() && r.lagMillis() == 0 ? "<1000"
                : String.format(Locale.ROOT, "%,d", r.lagMillis());
            cells.add(new String[] {r.id(), r.address(), r.role(), str(r.term()), str(r.offset()),
                str(r.lagRecords()), lagMs, r.linkTransport() == null ? "-" : r.linkTransport(), r.linkStatus()});
            if (r.error() != null) {
                notes.add(r.id() + ": " + r.error());
            } else if (r.linkReason() != null && !r.linkReason().isEmpty()) {
                notes.add(r.id() + " pulls over " + r.linkTransport() + ": " + r.linkReason());
            }
        }
        for (Member m : s.members()) {
            String blob = m.reachable() && m != s.primary() ? m.field("blob_last_path") : null;
            if (blob != null && !blob.isEmpty() && !blob.equals("none yet")) {
                notes.add(m.id() + " received its last blob: " + blob + " (" + m.field("blobs_staged")
                    + " staged by puts, " + m.field("blobs_pulled") + " pulled from another member)");
            }
        }
        table(out, head, cells, 3);
        for (String n : notes) {
            out.println("  " + n);
        }
        if (rows.stream().anyMatch(Row::lagCoarse)) {
            out.println("  (lag ms: time since the secondary's last pull as the primary reports it, in whole seconds)");
        }
        out.flush();
    }

    private static String str(Long v) {
        return v == null ? "-" : String.format(Locale.ROOT, "%,d", v);
    }

    /** A Markdown-style table; columns from {@code firstNumeric} on are right-aligned. */
    static void table(PrintWriter out, String[] head, List<String[]> cells, int firstNumeric) {
        int[] width = new int[head.length];
        for (int i = 0; i < head.length; i++) {
            width[i] = head[i].length();
            for (String[] c : cells) {
                width[i] = Math.max(width[i], c[i].length());
            }
        }
        out.println(line(head, width, firstNumeric));
        StringBuilder sep = new StringBuilder("|");
        for (int i = 0; i < head.length; i++) {
            sep.append(i >= firstNumeric && i < firstNumeric + 4 ? "-".repeat(width[i] + 1) + ":|"
                : "-".repeat(width[i] + 2) + "|");
        }
        out.println(sep);
        for (String[] c : cells) {
            out.println(line(c, width, firstNumeric));
        }
    }

    private static String line(String[] c, int[] width, int firstNumeric) {
        StringBuilder b = new StringBuilder("|");
        for (int i = 0; i < c.length; i++) {
            String pad = " ".repeat(width[i] - c[i].length());
            boolean right = i >= firstNumeric && i < firstNumeric + 4;
            b.append(' ').append(right ? pad + c[i] : c[i] + pad).append(" |");
        }
        return b.toString();
    }

    /** The status as one JSON document (relaxed extended JSON, indented). */
    static String json(Status s) {
        BsonDocument d = new BsonDocument();
        d.append("replicaSet", s.setName() == null ? BsonNull.VALUE : new BsonString(s.setName()));
        d.append("ok", BsonBoolean.valueOf(s.primary() != null));
        d.append("primary", s.primary() == null ? BsonNull.VALUE : new BsonDocument("id",
            new BsonString(s.primary().id())).append("address", new BsonString(s.primary().address()))
            .append("term", new BsonInt64(s.primary().role().term())));
        BsonArray members = new BsonArray();
        for (Row r : rows(s)) {
            members.add(new BsonDocument("id", jsonString(r.id())).append("address", jsonString(r.address()))
                .append("reachable", BsonBoolean.valueOf(!r.role().equals("unreachable")))
                .append("role", jsonString(r.role())).append("term", jsonNumber(r.term())).append("offset", jsonNumber(r.offset()))
                .append("commitIndex", jsonNumber(r.commitIndex())).append("lagRecords", jsonNumber(r.lagRecords()))
                .append("lagMillis", jsonNumber(r.lagMillis())).append("lagMillisWholeSeconds", BsonBoolean.valueOf(
                    r.lagCoarse())).append("linkTransport", jsonString(r.linkTransport()))
                .append("linkTransportReason", jsonString(r.linkReason())).append("linkStatus", jsonString(r.linkStatus()))
                .append("error", jsonString(r.error())));
        }
        d.append("members", members);
        return d.toJson(JsonWriterSettings.builder().outputMode(JsonMode.RELAXED).indent(true).build());
    }

    private static BsonValue jsonString(String v) {
        return v == null ? BsonNull.VALUE : new BsonString(v);
    }

    private static BsonValue jsonNumber(Long v) {
        return v == null ? BsonNull.VALUE : new BsonInt64(v);
    }
}
