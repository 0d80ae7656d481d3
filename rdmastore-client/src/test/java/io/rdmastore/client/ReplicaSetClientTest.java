package io.rdmastore.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.client.protocol.WireReader;
import io.rdmastore.client.protocol.WireWriter;
import java.lang.foreign.MemorySegment;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.bson.BsonDocument;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The replica-set client against three scripted members on loopback ({@link ScriptedMember}): discovery, write
 * concern, linearizable reads, read preference, failover and what is (not) retried, and that a single-host client
 * sends exactly what it sent before replica sets.
 */
@Timeout(60)
class ReplicaSetClientTest {
    private List<ScriptedMember> members = List.of();

    @AfterEach
    void stop() {
        for (ScriptedMember m : members) {
            m.close();
        }
    }

    private String seeds(int... indexes) {
        StringBuilder b = new StringBuilder();
        for (int i : indexes) {
            b.append(b.isEmpty() ? "" : ",").append(members.get(i).address());
        }
        return b.toString();
    }

    private RdmaStoreClient connect(String hosts, String params) {
        return RdmaStoreClient.connect("rdmastore://" + hosts + "?transport=tcp&timeout=2s&" + params);
    }

    private long total(byte opcode) {
        return members.stream().mapToLong(m -> m.count(opcode)).sum();
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void discoveryFindsThePrimaryFromAnySeed() throws Exception {
        members = ScriptedMember.replicaSet(1);
        for (int seed : new int[] {0, 2, 1}) {
            try (RdmaStoreClient client = connect(seeds(seed), "replicaSet=rs0")) {
                assertEquals(members.get(1).address(), client.primary(), "seed n" + seed);
                Topology t = client.topology();
                assertEquals("rs0", t.setName());
                assertEquals("n1", t.primaryId());
                assertEquals(3, t.members().size());
                assertTrue(client.set("k" + seed, "v"));
            }
        }
        assertEquals(3, members.get(1).count(ProtocolDescriptor.SET));
        assertEquals(0, members.get(0).count(ProtocolDescriptor.SET) + members.get(2).count(ProtocolDescriptor.SET));

        int dead;
        try (ServerSocket s = new ServerSocket(0)) {
            dead = s.getLocalPort();
        }
        try (RdmaStoreClient client = connect("127.0.0.1:" + dead + "," + seeds(2), "replicaSet=rs0")) {
            assertEquals(members.get(1).address(), client.primary(), "a dead first seed is skipped");
        }
        try (RdmaStoreClient client = RdmaStoreClient.builder().seeds(seeds(0)).replicaSet("rs0").transport("tcp")
            .timeout(Duration.ofSeconds(2)).connect()) {
            assertEquals(members.get(1).address(), client.primary(), "builder seeds");
        }
    }

    @Test
    void aWrongSetNameOrNoPrimaryFailsWithinTheBound() {
        members = ScriptedMember.replicaSet(0);
        long t0 = System.nanoTime();
        RdmaStoreConnectionException wrong = assertThrows(RdmaStoreConnectionException.class,
            () -> RdmaStoreClient.connect("rdmastore://" + seeds(0, 1)
                + "?transport=tcp&timeout=300ms&replicaSet=other"));
        assertTrue(wrong.getMessage().contains("belongs to replica set 'rs0', not 'other'"), wrong.getMessage());
        for (ScriptedMember m : members) {
            m.role = ProtocolDescriptor.ROLE_NO_PRIMARY;
        }
        RdmaStoreConnectionException none = assertThrows(RdmaStoreConnectionException.class,
            () -> RdmaStoreClient.connect("rdmastore://" + seeds(0) + "?transport=tcp&timeout=300ms&replicaSet=rs0"));
        assertTrue(none.getMessage().contains("no primary yet"), none.getMessage());
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms < 5000, "two bounded discoveries took " + ms + " ms");
        assertTrue(members.get(0).count(ProtocolDescriptor.ROLE) >= 2, "discovery retried with back-off");
    }

    @Test
    void majorityWritesPipelineAWaitAndSurfaceItsTimeout() throws Exception {
        members = ScriptedMember.replicaSet(0);
        ScriptedMember primary = members.get(0);
        // the SET's reply is held until the next request arrives: only a pipelined WAIT lets the call finish
        primary.holdForFollowUp = true;
        try (RdmaStoreClient client = connect(seeds(0, 1, 2), "replicaSet=rs0&w=majority&wtimeout=250ms")) {
            assertTrue(client.set("k", "v"));
            List<Integer> ops = primary.opcodes();
            assertEquals(List.of((int) ProtocolDescriptor.SET, (int) ProtocolDescriptor.WAIT),
                ops.subList(ops.size() - 2, ops.size()));
            byte[] wait = primary.requests(ProtocolDescriptor.WAIT).get(0);
            WireReader r = new WireReader().wrap(MemorySegment.ofArray(wait), ProtocolDescriptor.HEADER_LENGTH);
            assertEquals(-1, r.i32("numReplicas"));
            assertEquals(250, r.i64("timeoutMillis"));
            r.end();

            primary.holdForFollowUp = false;
            primary.waitError = "TIMEOUT write concern not satisfied within 250 ms (1 of 3 members)";
            RdmaStoreWriteConcernException e = assertThrows(RdmaStoreWriteConcernException.class,
                () -> client.set("k", "v2"));
            assertTrue(e.getMessage().contains("TIMEOUT write concern not satisfied within 250 ms (1 of 3 members)"),
                e.getMessage());
            assertTrue(e.outcomeUnknown());
            ExecutionException async = assertThrows(ExecutionException.class,
                () -> client.hsetAsync(utf8("h"), List.of(utf8("f"), utf8("v"))).get(10, TimeUnit.SECONDS));
            assertTrue(async.getCause() instanceof RdmaStoreWriteConcernException, String.valueOf(async.getCause()));
            assertThrows(RdmaStoreWriteConcernException.class,
                () -> client.collection("c").insertOne(BsonDocument.parse("{a: 1}")));
            assertEquals(2, total(ProtocolDescriptor.SET), "a write concern failure is not retried");
            assertEquals(4, primary.count(ProtocolDescriptor.WAIT));
            assertEquals("v2", client.get("k"), "the write was applied on the primary");
            assertEquals(4, primary.count(ProtocolDescriptor.WAIT), "reads send no WAIT");
        }
    }

    @Test
    void writeConcernPerCallView() {
        members = ScriptedMember.replicaSet(2);
        ScriptedMember primary = members.get(2);
        try (RdmaStoreClient client = connect(seeds(0), "replicaSet=rs0")) {
            client.set("a", "1");
            client.collection("c").insertOne(BsonDocument.parse("{a: 1}"));
            assertEquals(0, primary.count(ProtocolDescriptor.WAIT), "w=1 sends no WAIT");
            RdmaStoreClient majority =
                client.withWriteConcern(WriteConcern.MAJORITY.withWtimeout(Duration.ofMillis(700)));
            majority.set("a", "2");
            majority.hset("h", "f", "v");
            majority.collection("c").insertOne(BsonDocument.parse("{a: 2}"));
            assertEquals("2", majority.get("a"));
            majority.del("a");
            assertEquals(4, primary.count(ProtocolDescriptor.WAIT), "one WAIT per write, none for the read");
            assertTrue(majority.blobs().delete(utf8("blob")));
            List<Integer> ops = primary.opcodes();
            assertEquals(List.of((int) ProtocolDescriptor.BLOB_DEL, (int) ProtocolDescriptor.WAIT),
                ops.subList(ops.size() - 2, ops.size()), "blob writes wait for a majority too");
            byte[] wait = primary.requests(ProtocolDescriptor.WAIT).get(0);
            WireReader r = new WireReader().wrap(MemorySegment.ofArray(wait), ProtocolDescriptor.HEADER_LENGTH);
            assertEquals(-1, r.i32("numReplicas"));
            assertEquals(700, r.i64("timeoutMillis"));
            client.set("b", "1");
            assertEquals(5, primary.count(ProtocolDescriptor.WAIT), "the view does not change its client");
        }
    }

    @Test
    void notPrimaryRediscoversAndRetriesTheWriteOnceOnTheNewPrimary() throws Exception {
        members = ScriptedMember.replicaSet(0);
        try (RdmaStoreClient client = connect(seeds(0, 1, 2), "replicaSet=rs0")) {
            assertEquals(members.get(0).address(), client.primary());
            ScriptedMember.makePrimary(members, 1);
            assertTrue(client.set("k", "v"));
            assertEquals(1, members.get(0).count(ProtocolDescriptor.SET), "refused with NOTPRIMARY");
            assertEquals(1, members.get(1).count(ProtocolDescriptor.SET), "retried exactly once on the new primary");
            assertEquals(0, members.get(2).count(ProtocolDescriptor.SET));
            assertArrayEquals(utf8("v"), members.get(1).strings.get("k"));
            assertEquals(members.get(1).address(), client.primary());
            assertEquals("n1", client.topology().primaryId());

            ScriptedMember.makePrimary(members, 2);
            assertEquals(true, client.setAsync(utf8("k2"), utf8("v")).get(10, TimeUnit.SECONDS));
            assertEquals(1, members.get(1).count(ProtocolDescriptor.SET) - 1, "refused by the old primary");
            assertEquals(1, members.get(2).count(ProtocolDescriptor.SET), "async write retried on n2");
            assertEquals(members.get(2).address(), client.primary());

            ScriptedMember.makePrimary(members, 0);
            client.collection("c").insertOne(BsonDocument.parse("{a: 1}"));
            assertEquals(1, members.get(2).count(ProtocolDescriptor.DOC_INSERT));
            assertEquals(1, members.get(0).count(ProtocolDescriptor.DOC_INSERT), "documents fail over too");
        }
    }

    @Test
    void pipelinedWritesRefusedByADeposedPrimaryAreRetriedInOrder() throws Exception {
        members = ScriptedMember.replicaSet(0);
        try (RdmaStoreClient client = connect(seeds(0, 1, 2), "replicaSet=rs0")) {
            assertEquals(members.get(0).address(), client.primary());
            for (int round = 1; round <= 6; round++) {
                int next = round % 3;
                ScriptedMember.makePrimary(members, next);
                String key = "o" + round;
                List<java.util.concurrent.CompletableFuture<Boolean>> writes = new java.util.ArrayList<>();
                for (int i = 0; i < 20; i++) {
                    writes.add(client.setAsync(utf8(key), utf8(Integer.toString(i))));
                }
                for (var f : writes) {
                    assertTrue(f.get(10, TimeUnit.SECONDS));
                }
                ScriptedMember primary = members.get(next);
                List<String> values = new java.util.ArrayList<>();
                for (byte[] m : primary.requests(ProtocolDescriptor.SET)) {
                    WireReader r = new WireReader().wrap(MemorySegment.ofArray(m), ProtocolDescriptor.HEADER_LENGTH);
                    r.u8("flags");
                    r.i64("ttl");
                    if (new String(r.bytes("key", 100), StandardCharsets.UTF_8).equals(key)) {
                        values.add(new String(r.bytes("value", 100), StandardCharsets.UTF_8));
                    }
                }
                List<String> expected = new java.util.ArrayList<>();
                for (int i = 0; i < 20; i++) {
                    expected.add(Integer.toString(i));
                }
                assertEquals(expected, values, "round " + round + ": each write applied once, in the order sent");
                assertEquals("19", client.get(key));
            }
        }
    }

    @Test
    void aWriteWhoseConnectionDropsIsOutcomeUnknownAndNotRetried() throws Exception {
        members = ScriptedMember.replicaSet(0);
        ScriptedMember primary = members.get(0);
        primary.dropKeys.add("drop");
        try (RdmaStoreClient client = connect(seeds(0, 1, 2), "replicaSet=rs0")) {
            RdmaStoreConnectionException e = assertThrows(RdmaStoreConnectionException.class,
                () -> client.set("drop", "v"));
            assertTrue(e.outcomeUnknown(), e.getMessage());
            assertTrue(e.getMessage().contains("outcome unknown"), e.getMessage());
            ExecutionException async = assertThrows(ExecutionException.class,
                () -> client.setAsync(utf8("drop"), utf8("v")).get(10, TimeUnit.SECONDS));
            assertTrue(async.getCause() instanceof RdmaStoreConnectionException c && c.outcomeUnknown(),
                String.valueOf(async.getCause()));
            assertEquals(2, total(ProtocolDescriptor.SET), "each sent write went out once and was not retried");
            RdmaStoreTimeoutException late = assertThrows(RdmaStoreTimeoutException.class,
                () -> client.withTimeout(Duration.ofMillis(200)).set("silent", "v"));
            assertTrue(late.outcomeUnknown(), late.getMessage());
            assertEquals(3, total(ProtocolDescriptor.SET), "a timed-out write is not retried");

            // a read whose connection drops is safe to repeat: it is retried and answers
            primary.strings.put("r", utf8("value"));
            primary.dropKeys.add("r");
            assertEquals("value", client.get("r"));
            assertEquals(2, primary.count(ProtocolDescriptor.GET));
            assertTrue(client.set("ok", "v"), "the client reconnected");
        }
    }

    @Test
    void aSingleHostWriteThatDropsIsOutcomeUnknownToo() {
        members = ScriptedMember.replicaSet(0);
        members.get(0).role = ProtocolDescriptor.ROLE_STANDALONE;
        members.get(0).dropKeys.add("drop");
        try (RdmaStoreClient client = connect(seeds(0), "")) {
            RdmaStoreConnectionException e = assertThrows(RdmaStoreConnectionException.class,
                () -> client.set("drop", "v"));
            assertTrue(e.outcomeUnknown(), e.getMessage());
            members.get(0).dropKeys.add("r");
            RdmaStoreConnectionException read = assertThrows(RdmaStoreConnectionException.class, () -> client.get("r"));
            assertFalse(read.outcomeUnknown(), "a read changes nothing");
        }
    }

    @Test
    void linearizableReadsSendAReadFence() throws Exception {
        members = ScriptedMember.replicaSet(0);
        ScriptedMember primary = members.get(0);
        primary.strings.put("k", utf8("v0"));
        members.get(1).strings.put("k", utf8("v1"));
        primary.holdForFollowUp = true;
        try (RdmaStoreClient client = connect(seeds(0, 1, 2), "replicaSet=rs0&readConcern=linearizable")) {
            assertEquals("v0", client.get("k"));
            List<Integer> ops = primary.opcodes();
            assertEquals(List.of((int) ProtocolDescriptor.GET, (int) ProtocolDescriptor.READ_FENCE),
                ops.subList(ops.size() - 2, ops.size()));
            byte[] fence = primary.requests(ProtocolDescriptor.READ_FENCE).get(0);
            WireReader r = new WireReader().wrap(MemorySegment.ofArray(fence), ProtocolDescriptor.HEADER_LENGTH);
            assertEquals(2000, r.i64("timeoutMillis"));
            r.end();
            primary.holdForFollowUp = false;
            assertEquals(0, primary.count(ProtocolDescriptor.WAIT), "reads send no WAIT");

            // the fence finds that n0 was deposed: the read is repeated on the new primary
            ScriptedMember.makePrimary(members, 1);
            assertEquals("v1", client.get("k"));
            assertEquals(1, members.get(1).count(ProtocolDescriptor.READ_FENCE));

            members.get(1).fenceError = "TIMEOUT primary not confirmed by a majority within 2000 ms";
            RdmaStoreTimeoutException t = assertThrows(RdmaStoreTimeoutException.class, () -> client.get("k"));
            assertTrue(t.getMessage().contains("TIMEOUT primary not confirmed"), t.getMessage());
            assertFalse(t.outcomeUnknown());
        }
    }

    @Test
    void secondaryReadPreferenceReadsFromASecondary() {
        members = ScriptedMember.replicaSet(0);
        for (ScriptedMember m : members) {
            m.strings.put("k", utf8(m.id));
        }
        try (RdmaStoreClient client = connect(seeds(0, 1, 2), "replicaSet=rs0&readPreference=secondary")) {
            String v = client.get("k");
            assertTrue(v.equals("n1") || v.equals("n2"), v);
            assertEquals(0, members.get(0).count(ProtocolDescriptor.GET), "the primary serves no read");
            assertTrue(client.set("w", "1"));
            assertEquals(1, members.get(0).count(ProtocolDescriptor.SET), "writes go to the primary");
            assertFalse(client.topology().secondaryAddress().isEmpty());
            assertEquals(members.get(0).address(), client.primary());
        }
        // secondaryPreferred with no secondary reachable reads from the primary
        members.get(1).close();
        members.get(2).close();
        try (RdmaStoreClient client = connect(seeds(0), "replicaSet=rs0&readPreference=secondaryPreferred")) {
            assertEquals("n0", client.get("k"));
            assertEquals("", client.topology().secondaryAddress());
        }
        try (RdmaStoreClient strict = RdmaStoreClient.connect("rdmastore://" + seeds(0)
            + "?transport=tcp&timeout=300ms&replicaSet=rs0&readPreference=secondary")) {
            RdmaStoreConnectionException e = assertThrows(RdmaStoreConnectionException.class, () -> strict.get("k"));
            assertTrue(e.getMessage().contains("no secondary"), e.getMessage());
            assertEquals(1, members.get(0).count(ProtocolDescriptor.GET), "no read went to the primary");
        }
    }

    @Test
    void aSingleHostSendsNothingNew() {
        members = ScriptedMember.replicaSet(0);
        ScriptedMember server = members.get(0);
        server.role = ProtocolDescriptor.ROLE_STANDALONE;
        try (RdmaStoreClient client = connect(seeds(0), "")) {
            client.set("k", "v");
            client.get("k");
            client.hset("h", "f", "v");
            client.del("k");
        }
        WireWriter w = new WireWriter(64);
        List<byte[]> expected = List.of(
            w.header(ProtocolDescriptor.PING, 1).toByteArray(),
            w.header(ProtocolDescriptor.SET, 2).u8(0).i64(0).bytes(utf8("k")).bytes(utf8("v")).toByteArray(),
            w.header(ProtocolDescriptor.GET, 3).bytes(utf8("k")).toByteArray(),
            w.header(ProtocolDescriptor.HSET, 4).bytes(utf8("h")).i32(1).bytes(utf8("f")).bytes(utf8("v"))
                .toByteArray(),
            w.header(ProtocolDescriptor.DEL, 5).i32(1).bytes(utf8("k")).toByteArray());
        assertEquals(expected.size(), server.received.size(), "requests: " + server.opcodes());
        for (int i = 0; i < expected.size(); i++) {
            assertArrayEquals(expected.get(i), server.received.get(i), "request " + i);
        }
    }
}
