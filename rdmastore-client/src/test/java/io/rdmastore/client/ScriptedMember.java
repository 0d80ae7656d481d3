package io.rdmastore.client;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.WireReader;
import io.rdmastore.client.protocol.WireWriter;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.Listener;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.tcp.TcpTransport;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.bson.BsonDocument;
import org.bson.BsonInt32;

/**
 * One fake member of a replica set on loopback, built on the transport SPI: it answers ROLE from the roles the test
 * sets, refuses writes with NOTPRIMARY unless it is the primary (or standalone), keeps strings in a map, and records
 * every request it receives. Scripted behaviours: WAIT and READ_FENCE replies, holding a reply until the next request
 * of the connection arrives (which proves the client pipelined it), closing the connection on chosen keys.
 *
 * <p>Threads: requests run on the transport's I/O thread; the test thread sets the script through volatile fields.
 */
final class ScriptedMember implements AutoCloseable {
    final String id;
    final List<ScriptedMember> group;
    volatile String setName = "rs0";
    volatile int role = ProtocolDescriptor.ROLE_SECONDARY;
    volatile long term = 1;
    /** Null: WAIT answers OK with 1 acked; else the error text it answers. */
    volatile String waitError;
    /** Null: READ_FENCE answers OK; else the error text it answers. */
    volatile String fenceError;
    /** Hold the reply to a SET or GET until the connection's next request arrives, then send both. */
    volatile boolean holdForFollowUp;
    /** Keys on which SET, and the first GET, close the connection instead of replying (SET "silent" never replies). */
    final List<String> dropKeys = new CopyOnWriteArrayList<>();
    final Map<String, byte[]> strings = new ConcurrentHashMap<>();
    /** Every request received, copied, in order of arrival. */
    final List<byte[]> received = new CopyOnWriteArrayList<>();
    final AtomicInteger connections = new AtomicInteger();

    private final TcpTransport tcp = new TcpTransport();
    private final Network network = new Network(new Network.Context().carrier(tcp));
    private final Listener listener;

    ScriptedMember(String id, List<ScriptedMember> group) {
        this.id = id;
        this.group = group;
        this.listener = network.listen(new InetSocketAddress("127.0.0.1", 0), c -> {
            connections.incrementAndGet();
            return new Script();
        });
    }

    /** Three members n0, n1, n2 of set rs0, n{@code primary} the primary, the others secondaries. */
    static List<ScriptedMember> replicaSet(int primary) {
        List<ScriptedMember> group = new CopyOnWriteArrayList<>();
        for (int i = 0; i < 3; i++) {
            group.add(new ScriptedMember("n" + i, group));
        }
        makePrimary(group, primary);
        return group;
    }

    /** Makes member {@code index} the primary of a new term, the others secondaries. */
    static void makePrimary(List<ScriptedMember> group, int index) {
        long next = group.stream().mapToLong(m -> m.term).max().orElse(0) + 1;
        for (int i = 0; i < group.size(); i++) {
            ScriptedMember m = group.get(i);
            m.term = next;
            m.role = i == index ? ProtocolDescriptor.ROLE_PRIMARY : ProtocolDescriptor.ROLE_SECONDARY;
        }
    }

    int port() {
        return listener.localAddress().getPort();
    }

    String address() {
        return "127.0.0.1:" + port();
    }

    /** Opcodes received, in order. */
    List<Integer> opcodes() {
        List<Integer> out = new ArrayList<>();
        for (byte[] m : received) {
            out.add(m[0] & 0xFF);
        }
        return out;
    }

    /** How many requests with {@code opcode} were received. */
    long count(byte opcode) {
        return received.stream().filter(m -> m[0] == opcode).count();
    }

    /** The requests with {@code opcode}, whole. */
    List<byte[]> requests(byte opcode) {
        return received.stream().filter(m -> m[0] == opcode).toList();
    }

    private ScriptedMember primary() {
        for (ScriptedMember m : group) {
            if (m.role == ProtocolDescriptor.ROLE_PRIMARY) {
                return m;
            }
        }
        return null;
    }

    private boolean acceptsWrites() {
        return role == ProtocolDescriptor.ROLE_PRIMARY || role == ProtocolDescriptor.ROLE_STANDALONE;
    }

    private String notPrimary() {
        ScriptedMember p = primary();
        return "NOTPRIMARY this member is a secondary; the primary is "
            + (p == null ? "unknown" : p.id + " at " + p.address());
    }

    private final class Script implements MessageHandler {
        private byte[] held;

        @Override
        public void onMessage(Connection c, MemorySegment m) {
            received.add(m.toArray(ValueLayout.JAVA_BYTE));
            WireReader r = new WireReader().wrap(m, 0);
            byte op = (byte) r.u8("op");
            long id = r.i64("id");
            WireWriter w = new WireWriter(256);
            byte[] heldBefore = held;
            held = null;
            switch (op) {
                case ProtocolDescriptor.PING -> w.header(ProtocolDescriptor.STATUS_OK, id).rawString("PONG");
                case ProtocolDescriptor.ROLE -> role(w.header(ProtocolDescriptor.STATUS_OK, id));
                case ProtocolDescriptor.SET -> {
                    r.u8("flags");
                    r.i64("ttl");
                    String key = new String(r.bytes("key", 1 << 20), StandardCharsets.UTF_8);
                    byte[] value = r.bytes("value", 1 << 20);
                    if (!acceptsWrites()) {
                        w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(notPrimary());
                    } else if (dropKeys.contains(key)) {
                        c.close();
                        return;
                    } else if (key.equals("silent")) {
                        return;
                    } else {
                        strings.put(key, value);
                        w.header(ProtocolDescriptor.STATUS_OK, id);
                        if (holdForFollowUp) {
                            held = w.toByteArray();
                            return;
                        }
                    }
                }
                case ProtocolDescriptor.GET -> {
                    String key = new String(r.bytes("key", 1 << 20), StandardCharsets.UTF_8);
                    if (dropKeys.contains(key) && droppedGetKeys.add(key)) {
                        c.close();
                        return;
                    }
                    byte[] v = strings.get(key);
                    if (v == null) {
                        w.header(ProtocolDescriptor.STATUS_NULL, id);
                    } else {
                        w.header(ProtocolDescriptor.STATUS_OK, id).raw(v);
                    }
                    if (holdForFollowUp) {
                        held = w.toByteArray();
                        return;
                    }
                }
                case ProtocolDescriptor.WAIT -> {
                    String e = waitError;
                    if (!acceptsWrites()) {
                        w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(notPrimary());
                    } else if (e != null) {
                        w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(e);
                    } else {
                        w.header(ProtocolDescriptor.STATUS_OK, id).i64(1);
                    }
                }
                case ProtocolDescriptor.READ_FENCE -> {
                    String e = fenceError;
                    if (e != null) {
                        w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(e);
                    } else if (!acceptsWrites()) {
                        w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(notPrimary());
                    } else {
                        w.header(ProtocolDescriptor.STATUS_OK, id);
                    }
                }
                case ProtocolDescriptor.DOC_INSERT -> {
                    if (!acceptsWrites()) {
                        w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(notPrimary());
                    } else {
                        r.bytes("collection", 1024);
                        int n = r.i32("count");
                        w.header(ProtocolDescriptor.STATUS_OK, id).i32(n);
                        for (int i = 0; i < n; i++) {
                            r.bytes("doc", 1 << 20);
                            w.bytes(Bson.encode(new BsonDocument("_id", new BsonInt32(i))));
                        }
                    }
                }
                default -> {
                    boolean write = ClientCore.isWrite(op);
                    if (write && !acceptsWrites()) {
                        w.header(ProtocolDescriptor.STATUS_ERROR, id).rawString(notPrimary());
                    } else {
                        w.header(ProtocolDescriptor.STATUS_OK, id).i64(1);
                    }
                }
            }
            if (heldBefore != null) {
                c.offer(MemorySegment.ofArray(heldBefore));
            }
            c.offer(w.message());
        }
    }

    /** GET keys that already closed a connection once (each closes only the first time, so a retry gets a value). */
    private final java.util.Set<String> droppedGetKeys = ConcurrentHashMap.newKeySet();

    private void role(WireWriter w) {
        ScriptedMember p = primary();
        w.u8(role).i64(term).string(setName).string(id).string(p == null ? "" : p.id)
            .string(p == null ? "" : p.address()).i32(group.size());
        for (ScriptedMember m : group) {
            w.string(m.id).string(m.address());
        }
    }

    @Override
    public void close() {
        listener.close();
        network.close();
        tcp.close();
    }
}
