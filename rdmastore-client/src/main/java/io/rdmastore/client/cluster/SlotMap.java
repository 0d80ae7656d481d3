package io.rdmastore.client.cluster;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Which shard owns each of the 16384 hash slots, and where each shard's members are, at one epoch. A newer map has a
 * higher epoch; a node keeps the highest it was given, so a node that answers with a stale map is corrected by the
 * epoch (docs/cluster.md).
 *
 * <p>Text form (what {@link #encode()} writes and {@link #parse(String)} reads; also what nodes persist):
 * <pre>
 * epoch 3
 * shard rs0 0-5460 n1=10.0.0.1:7379,n2=10.0.0.2:7379
 * shard rs1 5461-10922,12000 n4=10.0.0.4:7379
 * </pre>
 * A shard's slots are ranges {@code a-b} or single slots, comma-separated ({@code -} for none); its members are
 * {@code id=host:port}, the first being the member to send clients to when nothing better is known (the shard's
 * primary when the map was made). Ids and shard names are free of blanks, {@code =} and {@code ,}.
 *
 * <p>Threads: immutable; any thread.
 */
public final class SlotMap {
    /** One member of a shard: its id (the replica-set member id, or its address) and its client address. */
    public record Node(String id, String host, int port) {
        public Node {
            checkName(id, "node id");
            Objects.requireNonNull(host, "host");
            if (host.isEmpty() || host.contains(" ") || port < 1 || port > 65535) {
                throw new IllegalArgumentException("bad node address " + host + ":" + port);
            }
        }

        /** {@code host:port}, as MOVED replies carry it. */
        public String address() {
            return host + ":" + port;
        }
    }

    /** An inclusive range of slots. */
    public record Range(int from, int to) {
        public Range {
            if (from < 0 || to >= HashSlot.SLOTS || from > to) {
                throw new IllegalArgumentException("bad slot range " + from + "-" + to);
            }
        }

        public int count() {
            return to - from + 1;
        }

        @Override
        public String toString() {
            return from == to ? Integer.toString(from) : from + "-" + to;
        }
    }

    /** A shard: a name (its replica set's, or one the CLI gave a single node), its slots and its members. */
    public record Shard(String name, List<Range> ranges, List<Node> nodes) {
        public Shard {
            checkName(name, "shard name");
            ranges = List.copyOf(ranges);
            nodes = List.copyOf(nodes);
            if (nodes.isEmpty()) {
                throw new IllegalArgumentException("shard " + name + " has no members");
            }
        }

        public int slotCount() {
            int n = 0;
            for (Range r : ranges) {
                n += r.count();
            }
            return n;
        }

        /** The member to send clients to when nothing better is known. */
        public Node first() {
            return nodes.get(0);
        }
    }

    /** The map of a node that is in no cluster yet: epoch 0, no shards, no slot served. */
    public static final SlotMap EMPTY = new SlotMap(0, List.of());

    private final long epoch;
    private final List<Shard> shards;
    /** Owner of each slot as an index into {@link #shards}, -1 when unassigned. */
    private final short[] owner = new short[HashSlot.SLOTS];

    public SlotMap(long epoch, List<Shard> shards) {
        if (epoch < 0) {
            throw new IllegalArgumentException("epoch must be >= 0, was " + epoch);
        }
        this.epoch = epoch;
        this.shards = List.copyOf(shards);
        if (this.shards.size() > Short.MAX_VALUE) {
            throw new IllegalArgumentException("too many shards: " + this.shards.size());
        }
        Arrays.fill(owner, (short) -1);
        Set<String> names = new HashSet<>();
        Set<String> ids = new HashSet<>();
        for (int i = 0; i < this.shards.size(); i++) {
            Shard s = this.shards.get(i);
            if (!names.add(s.name())) {
                throw new IllegalArgumentException("shard " + s.name() + " appears twice");
            }
            for (Node n : s.nodes()) {
                if (!ids.add(n.id())) {
                    throw new IllegalArgumentException("node " + n.id() + " appears twice");
                }
            }
            for (Range r : s.ranges()) {
                for (int slot = r.from(); slot <= r.to(); slot++) {
                    if (owner[slot] >= 0) {
                        throw new IllegalArgumentException("slot " + slot + " is given to both "
                            + this.shards.get(owner[slot]).name() + " and " + s.name());
                    }
                    owner[slot] = (short) i;
                }
            }
        }
    }

    public long epoch() {
        return epoch;
    }

    public List<Shard> shards() {
        return shards;
    }

    /** The shard owning {@code slot}, or null when no shard serves it. */
    public Shard owner(int slot) {
        int i = owner[slot];
        return i < 0 ? null : shards.get(i);
    }

    /** The number of slots some shard serves. */
    public int assignedSlots() {
        int n = 0;
        for (short o : owner) {
            if (o >= 0) {
                n++;
            }
        }
        return n;
    }

    /** The shard named {@code name}, or null. */
    public Shard shard(String name) {
        for (Shard s : shards) {
            if (s.name().equals(name)) {
                return s;
            }
        }
        return null;
    }

    /** The shard that has a member with this id, or null. */
    public Shard shardOfNode(String nodeId) {
        for (Shard s : shards) {
            for (Node n : s.nodes()) {
                if (n.id().equals(nodeId)) {
                    return s;
                }
            }
        }
        return null;
    }

    /** Splits all slots into {@code n} contiguous ranges as redis-cli does: 0-5460, 5461-10922, 10923-16383 for 3. */
    public static List<Range> evenRanges(int n) {
        if (n < 1 || n > HashSlot.SLOTS) {
            throw new IllegalArgumentException("cannot split the slots into " + n + " shards");
        }
        List<Range> out = new ArrayList<>(n);
        double per = (double) HashSlot.SLOTS / n;
        int first = 0;
        for (int i = 0; i < n; i++) {
            int last = i == n - 1 ? HashSlot.SLOTS - 1 : (int) Math.round((i + 1) * per) - 1;
            out.add(new Range(first, last));
            first = last + 1;
        }
        return out;
    }

    /** The text form (see the class comment). */
    public String encode() {
        StringBuilder sb = new StringBuilder(64 + 64 * shards.size());
        sb.append("epoch ").append(epoch).append('\n');
        for (Shard s : shards) {
            sb.append("shard ").append(s.name()).append(' ');
            if (s.ranges().isEmpty()) {
                sb.append('-');
            }
            for (int i = 0; i < s.ranges().size(); i++) {
                sb.append(i == 0 ? "" : ",").append(s.ranges().get(i));
            }
            sb.append(' ');
            for (int i = 0; i < s.nodes().size(); i++) {
                Node n = s.nodes().get(i);
                sb.append(i == 0 ? "" : ",").append(n.id()).append('=').append(n.address());
            }
            sb.append('\n');
        }
        return sb.toString();
    }

    /**
     * Reads the text form.
     *
     * @throws IllegalArgumentException with the reason when the text is not a valid map
     */
    public static SlotMap parse(String text) {
        long epoch = -1;
        List<Shard> shards = new ArrayList<>();
        for (String raw : text.split("\n")) {
            String line = raw.strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split("\\s+");
            if (f[0].equals("epoch") && f.length == 2 && epoch < 0) {
                try {
                    epoch = Long.parseLong(f[1]);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("bad epoch in '" + line + "'");
                }
            } else if (f[0].equals("shard") && f.length == 4) {
                shards.add(new Shard(f[1], parseRanges(f[2]), parseNodes(f[3])));
            } else {
                throw new IllegalArgumentException("cannot read slot map line '" + line + "'");
            }
        }
        if (epoch < 0) {
            throw new IllegalArgumentException("slot map without an epoch line");
        }
        return new SlotMap(epoch, shards);
    }

    private static List<Range> parseRanges(String s) {
        List<Range> out = new ArrayList<>();
        if (s.equals("-")) {
            return out;
        }
        for (String part : s.split(",")) {
            int dash = part.indexOf('-');
            try {
                if (dash < 0) {
                    int slot = Integer.parseInt(part);
                    out.add(new Range(slot, slot));
                } else {
                    out.add(new Range(Integer.parseInt(part.substring(0, dash)),
                        Integer.parseInt(part.substring(dash + 1))));
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("bad slot range '" + part + "'");
            }
        }
        return out;
    }

    private static List<Node> parseNodes(String s) {
        List<Node> out = new ArrayList<>();
        for (String part : s.split(",")) {
            int eq = part.indexOf('=');
            int colon = part.lastIndexOf(':');
            if (eq <= 0 || colon <= eq + 1) {
                throw new IllegalArgumentException("bad member '" + part + "' (id=host:port)");
            }
            try {
                out.add(new Node(part.substring(0, eq), part.substring(eq + 1, colon),
                    Integer.parseInt(part.substring(colon + 1))));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("bad port in '" + part + "'");
            }
        }
        return out;
    }

    private static void checkName(String name, String what) {
        Objects.requireNonNull(name, what);
        if (name.isEmpty() || name.equals("-")) {
            throw new IllegalArgumentException(what + " must not be empty");
        }
        for (int i = 0; i < name.length(); i++) {
            char ch = name.charAt(i);
            if (ch <= ' ' || ch == '=' || ch == ',') {
                throw new IllegalArgumentException(what + " '" + name + "' holds a blank, '=' or ','");
            }
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SlotMap m && m.epoch == epoch && m.shards.equals(shards);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(epoch) * 31 + shards.hashCode();
    }

    @Override
    public String toString() {
        return "SlotMap{epoch " + epoch + ", " + shards.size() + " shards, " + assignedSlots() + " slots}";
    }
}
