package io.rdmastore.server.replication;

import io.rdmastore.server.replication.ControlPlane.Member;
import io.rdmastore.server.replication.ControlPlane.Primary;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.proto.RaftProtos.RaftConfigurationProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroupMemberId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;

/**
 * What the replica set agreed on: the member list (with data ports), the last announced primary, and in a cluster the
 * slot map and the migration states of its slots. Each Ratis log
 * entry of ours is one record ({@link #encode}); applying it changes {@link #state()}. No snapshots: the control log
 * grows by a few entries per failover or membership change, and a restarted member replays it.
 *
 * <p>Threads: Ratis applies entries on its state machine updater thread, one at a time; {@link #state()} is a volatile
 * read from any thread. The event callbacks run on Ratis threads and only hand a wake-up to the control plane.
 */
final class ControlStateMachine extends BaseStateMachine {
    static final byte VERSION = 1;
    static final byte INIT_MEMBERS = 1;
    static final byte ADD_MEMBER = 2;
    static final byte REMOVE_MEMBER = 3;
    static final byte ANNOUNCE_PRIMARY = 4;
    /** Changes nothing; a member with wiped storage writes one to make the leader resend the log (see ControlPlane). */
    static final byte NOOP = 5;
    /** The sharded cluster's slot map (docs/cluster.md): kept when its epoch is higher than the one held. */
    static final byte SET_SLOT_MAP = 6;
    /**
     * A slot's migration state (CLUSTER SETSLOT MIGRATING/IMPORTING/STABLE) under the slot map's epoch: refused
     * under any other epoch; a map of a higher epoch ends every state recorded under the one before.
     */
    static final byte SET_SLOT_STATE = 7;

    /** The reply of an applied record; anything else is the reason it was refused. */
    static final ByteString OK = ByteString.EMPTY;

    /** Applied state: an immutable pair swapped whole. */
    record State(List<Member> members, Primary primary, long slotMapEpoch, String slotMap,
                 Map<Integer, ControlPlane.SlotMigration> slotMigrations) {
        static final State EMPTY = new State(List.of(), null, -1, null, Map.of());

        State with(List<Member> newMembers, Primary newPrimary) {
            return new State(newMembers, newPrimary, slotMapEpoch, slotMap, slotMigrations);
        }
    }

    private volatile State state = State.EMPTY;
    private final Runnable onEvent;

    /** @param onEvent run on a Ratis thread after each applied record and each leader or configuration event; must not block */
    ControlStateMachine(Runnable onEvent) {
        this.onEvent = onEvent;
    }

    State state() {
        return state;
    }

    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext trx) {
        final LogEntryProto entry = trx.getLogEntry();
        final ByteString reply;
        try {
            reply = apply(entry.getStateMachineLogEntry().getLogData());
        } catch (IOException | RuntimeException e) {
            // A record we cannot read must not stop the replica set: it is answered as refused on every member alike.
            updateLastAppliedTermIndex(entry.getTerm(), entry.getIndex());
            return CompletableFuture.completedFuture(Message.valueOf("bad control record: " + e));
        }
        updateLastAppliedTermIndex(entry.getTerm(), entry.getIndex());
        onEvent.run();
        return CompletableFuture.completedFuture(Message.valueOf(reply));
    }

    private ByteString apply(ByteString data) throws IOException {
        final DataInputStream in = new DataInputStream(data.newInput());
        final byte version = in.readByte();
        if (version != VERSION) {
            return refuse("unknown record version " + version);
        }
        final State current = state;
        final byte type = in.readByte();
        switch (type) {
            case INIT_MEMBERS -> {
                final int count = in.readInt();
                final List<Member> members = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    members.add(readMember(in));
                }
                if (current.members().isEmpty()) {
                    state = current.with(List.copyOf(members), current.primary());
                }
                return OK;
            }
            case ADD_MEMBER -> {
                final Member member = readMember(in);
                final List<Member> members = new ArrayList<>(current.members().size() + 1);
                boolean replaced = false;
                for (Member m : current.members()) {
                    if (m.id().equals(member.id())) {
                        members.add(member);
                        replaced = true;
                    } else {
                        members.add(m);
                    }
                }
                if (!replaced) {
                    members.add(member);
                }
                state = current.with(List.copyOf(members), current.primary());
                return OK;
            }
            case REMOVE_MEMBER -> {
                final String id = in.readUTF();
                final List<Member> members = new ArrayList<>(current.members());
                members.removeIf(m -> m.id().equals(id));
                state = current.with(List.copyOf(members), current.primary());
                return OK;
            }
            case ANNOUNCE_PRIMARY -> {
                final Primary primary = new Primary(in.readUTF(), in.readLong());
                final Primary last = current.primary();
                // Primary terms only move forward; one term has one primary (announcing it again is harmless).
                if (last != null && (primary.term() < last.term()
                    || primary.term() == last.term() && !primary.id().equals(last.id()))) {
                    return refuse("primary " + primary + " refused: " + last + " was announced already");
                }
                state = current.with(current.members(), primary);
                return OK;
            }
            case NOOP -> {
                return OK;
            }
            case SET_SLOT_MAP -> {
                final long epoch = in.readLong();
                final byte[] text = new byte[in.readInt()];
                in.readFully(text);
                final String map = new String(text, StandardCharsets.UTF_8);
                // Epochs only move forward; the same epoch again is harmless only with the same map.
                if (epoch < current.slotMapEpoch() || epoch == current.slotMapEpoch() && !map.equals(current.slotMap())) {
                    return refuse("slot map of epoch " + epoch + " refused: epoch " + current.slotMapEpoch()
                        + " is held already");
                }
                // a new map settles the moves begun under the old one (the same map again changes nothing)
                state = new State(current.members(), current.primary(), epoch, map,
                    epoch == current.slotMapEpoch() ? current.slotMigrations() : Map.of());
                return OK;
            }
            case SET_SLOT_STATE -> {
                final long epoch = in.readLong();
                final int slot = in.readInt();
                final byte kind = in.readByte();
                final String peer = in.readUTF();
                if (epoch != current.slotMapEpoch()) {
                    return refuse("slot " + slot + " state under epoch " + epoch + " refused: the slot map's epoch is "
                        + current.slotMapEpoch());
                }
                final Map<Integer, ControlPlane.SlotMigration> next = new HashMap<>(current.slotMigrations());
                if (kind == ControlPlane.SlotMigration.STABLE) {
                    next.remove(slot);
                } else {
                    next.put(slot, new ControlPlane.SlotMigration(slot, kind, peer));
                }
                state = new State(current.members(), current.primary(), epoch, current.slotMap(), Map.copyOf(next));
                return OK;
            }
            default -> {
                return refuse("unknown record type " + type);
            }
        }
    }

    private static ByteString refuse(String reason) {
        return ByteString.copyFrom(reason, StandardCharsets.UTF_8);
    }

    // Ratis tells of a new leader here, and of step-downs through the leader events; the control plane re-reads
    // the whole view from DivisionInfo on each of them, so a missed or reordered call costs nothing.

    @Override
    public void notifyLeaderChanged(RaftGroupMemberId groupMemberId, RaftPeerId newLeaderId) {
        onEvent.run();
    }

    @Override
    public void notifyLeaderReady() {
        onEvent.run();
    }

    @Override
    public void notifyNotLeader(Collection<TransactionContext> pendingEntries) {
        onEvent.run();
    }

    @Override
    public void notifyConfigurationChanged(long term, long index, RaftConfigurationProto newRaftConfiguration) {
        onEvent.run();
    }

    // ---- records ----

    static ByteString initMembers(List<Member> members) {
        return encode(INIT_MEMBERS, out -> {
            out.writeInt(members.size());
            for (Member m : members) {
                writeMember(out, m);
            }
        });
    }

    static ByteString addMember(Member member) {
        return encode(ADD_MEMBER, out -> writeMember(out, member));
    }

    static ByteString removeMember(String id) {
        return encode(REMOVE_MEMBER, out -> out.writeUTF(id));
    }

    static ByteString announcePrimary(Primary primary) {
        return encode(ANNOUNCE_PRIMARY, out -> {
            out.writeUTF(primary.id());
            out.writeLong(primary.term());
        });
    }

    static ByteString setSlotMap(long epoch, String map) {
        return encode(SET_SLOT_MAP, out -> {
            final byte[] text = map.getBytes(StandardCharsets.UTF_8);
            out.writeLong(epoch);
            out.writeInt(text.length);
            out.write(text);
        });
    }

    static ByteString setSlotState(long epoch, int slot, byte kind, String peer) {
        return encode(SET_SLOT_STATE, out -> {
            out.writeLong(epoch);
            out.writeInt(slot);
            out.writeByte(kind);
            out.writeUTF(peer);
        });
    }

    static ByteString noop() {
        return encode(NOOP, out -> { });
    }

    private interface Body {
        void write(DataOutputStream out) throws IOException;
    }

    private static ByteString encode(byte type, Body body) {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION);
            out.writeByte(type);
            body.write(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return ByteString.copyFrom(bytes.toByteArray());
    }

    private static void writeMember(DataOutputStream out, Member m) throws IOException {
        out.writeUTF(m.id());
        out.writeUTF(m.host());
        out.writeInt(m.dataPort());
        out.writeInt(m.raftPort());
    }

    private static Member readMember(DataInputStream in) throws IOException {
        return new Member(in.readUTF(), in.readUTF(), in.readInt(), in.readInt());
    }
}
