package io.rdmastore.cli;

import io.rdmastore.client.PeerChannel;
import io.rdmastore.client.protocol.ProtocolDescriptor;
import io.rdmastore.server.replication.ReplicaSetConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code rdmastore replica-set demo}: a failover, watched. Starts three members as processes on free loopback ports
 * with their data in a temporary directory, waits for a primary, writes keys acknowledged by a majority (WAIT after
 * each batch on the same connection), shows the status table, SIGKILLs the primary, measures the time until a new
 * primary accepts a majority write, reads every acknowledged key back from the new primary and from the surviving
 * secondary, restarts the old member and watches it rejoin as a secondary, then stops everything and deletes the
 * directory.
 *
 * <p>Every wait is bounded, by its own limit and by {@code --timeout} for the whole run. The members are stopped and the
 * directory deleted on every way out: the normal end, an error, and (through a shutdown hook) Ctrl-C or SIGTERM of this
 * process. Threads: one call at a time; the shutdown hook only kills the members and deletes the directory.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, versionProvider = Main.Version.class, sortOptions = false,
    description = {"Starts a replica set of three member processes on this machine (free loopback ports, temporary"
        + " data dir), writes keys with majority acknowledgement, kills the primary (SIGKILL), times the failover,"
        + " checks that no acknowledged write was lost, restarts the old primary and shows it rejoin as a secondary."
        + " About 15 s; stops every member and deletes the directory at the end.",
        "Exit code 0 when no acknowledged write was lost and the old primary rejoined, 1 otherwise."})
final class ReplicaSetDemoCommand extends MemberDemo implements Callable<Integer> {
    static final String SET_NAME = "demo";
    private static final int BATCH = 100;
    private static final Duration CALL = Duration.ofSeconds(5);
    /** A JVM starts in a few seconds; on a machine busy with builds it can take a minute or more. */
    private static final Duration MEMBER_START = Duration.ofSeconds(90);

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Option(names = "--transport", paramLabel = "T", defaultValue = "auto",
        description = "Transport of the members, between each other and to this client: auto (ucx where it works,"
            + " default) | tcp | ucx (every member must have UCX).")
    String transport;
    @Option(names = "--keys", paramLabel = "N", defaultValue = "1000",
        description = "Keys written before the failover (default ${DEFAULT-VALUE}).")
    int keys;
    @Option(names = "--timeout", paramLabel = "TIME", defaultValue = "120s",
        description = "Limit of the whole demo (default ${DEFAULT-VALUE}); the members are stopped when it is up.")
    String timeout;


    @Override
    public Integer call() throws IOException, InterruptedException {
        Main.quietLogs();
        transport = Values.oneOf("--transport", transport, "auto", "tcp", "ucx");
        if (keys < 1 || keys > 1_000_000) {
            throw new UserException("--keys must be between 1 and 1000000");
        }
        return runWithMembers("replica-set-demo", spec.commandLine().getOut(), timeout, dir -> {
            try (ReplicaSetProbe probe = new ReplicaSetProbe(transport, null, CALL)) {
                return run(dir, probe);
            }
        });
    }

    private int run(Path dir, ReplicaSetProbe probe) throws InterruptedException {
        List<Integer> ports = MemberProcess.freePorts(3, ReplicaSetConfig.DEFAULT_RAFT_PORT_OFFSET);
        String list = "n1=127.0.0.1:" + ports.get(0) + ",n2=127.0.0.1:" + ports.get(1) + ",n3=127.0.0.1:"
            + ports.get(2);
        out.println("rdmastore replica-set demo: three members on 127.0.0.1, data and logs in " + dir
            + " (deleted at the end)");
        for (int i = 0; i < 3; i++) {
            String id = "n" + (i + 1);
            Path data = dir.resolve(id);
            members.add(new MemberProcess(id, ports.get(i), data, dir.resolve(id + ".log"), List.of("--replica-set",
                SET_NAME, "--node-id", id, "--members", list, "--bind", "127.0.0.1", "--data-dir", data.toString(),
                "--fsync", "everysec", "--transport", transport, "--idle-strategy", "adaptive")));
        }
        progress("starting 3 members; each runs: rdmastore server --replica-set " + SET_NAME + " --node-id nI"
            + " --members " + list + " --transport " + transport + " --data-dir DIR/nI");
        for (MemberProcess m : members) {
            m.launch();
        }
        for (MemberProcess m : members) {
            m.awaitReady(remaining(MEMBER_START));
            progress(m.id() + " serves on " + m.address() + " (pid " + m.pid() + ", elections on port "
                + (m.port() + ReplicaSetConfig.DEFAULT_RAFT_PORT_OFFSET) + ")");
        }
        Map<String, String> targets = new LinkedHashMap<>();
        members.forEach(m -> targets.put(m.id(), m.address()));

        Elected first = awaitPrimary(probe, members, 0, Duration.ofSeconds(30));
        if (first == null) {
            out.println("(error) no primary was elected within 30 s; the members' logs:");
            members.forEach(m -> out.println(m.logTail(10)));
            return 1;
        }
        progress("primary elected: " + first.member().id() + " (term " + first.term() + ")");

        long w0 = System.nanoTime();
        List<String> writtenTo = new ArrayList<>();
        List<String> acked = writeKeys(probe, first, writtenTo);
        progress(String.format(Locale.ROOT, "wrote %d keys to %s in batches of %d, each batch followed by WAIT(majority)"
            + " on the same connection: %d acknowledged by a majority (%.0f ms)", keys, String.join(", then ",
            writtenTo), BATCH, acked.size(), (System.nanoTime() - w0) / 1e6));
        if (acked.isEmpty()) {
            out.println("(error) no write was acknowledged by a majority; nothing to check");
            return 1;
        }
        out.println();
        ReplicaSetProbe.Status before = probe.status(targets);
        ReplicaSetProbe.printTable(before, out);
        out.println();

        // the primary now, which is not always the one elected first: a loaded machine may have re-elected meanwhile
        Elected current = before.primary() != null ? new Elected(member(before.primary().id()),
            before.primary().role().term()) : awaitPrimary(probe, members, 0, Duration.ofSeconds(30));
        if (current == null) {
            out.println("(error) no primary to kill: none was found within 30 s");
            return 1;
        }
        MemberProcess primary = current.member();
        long oldPid = primary.pid();
        long killedAt = System.nanoTime();
        primary.kill();
        progress("SIGKILL " + primary.id() + " (pid " + oldPid + "), the primary (term " + current.term() + ")");
        probe.drop(primary.address());
        List<MemberProcess> survivors = members.stream().filter(m -> m != primary).toList();
        Failover f = failover(probe, survivors, current.term(), killedAt);
        if (f == null) {
            out.println("(error) no new primary accepted a majority write within 30 s of the kill");
            return 1;
        }
        MemberProcess secondary = survivors.stream().filter(m -> m != f.primary()).findFirst().orElseThrow();
        progress(String.format(Locale.ROOT, "new primary: %s (term %d), elected %.0f ms after the kill; it accepted a"
            + " write acknowledged by a majority %.0f ms after the kill", f.primary().id(), f.term(), f.electedMillis(),
            f.writeMillis()));

        int lostOnPrimary = readBack(probe.channel(f.primary().address()), acked, Duration.ZERO);
        // the surviving secondary acknowledged the new primary's majority write, so it holds every earlier record;
        // the short grace covers applying what it has received
        int lostOnSecondary = readBack(probe.channel(secondary.address()), acked, Duration.ofSeconds(3));
        progress("read back " + acked.size() + " acknowledged keys from " + f.primary().id() + " (new primary): "
            + (acked.size() - lostOnPrimary) + " intact; from " + secondary.id() + " (secondary): "
            + (acked.size() - lostOnSecondary) + " intact");
        int lost = Math.max(lostOnPrimary, lostOnSecondary);
        out.println(lost + " of " + acked.size() + " acknowledged writes lost");
        out.flush();

        primary.launch();
        primary.awaitReady(remaining(MEMBER_START));
        long r0 = System.nanoTime();
        progress("restarted " + primary.id() + " on its data directory (pid " + primary.pid() + ")");
        String rejoin = awaitRejoin(probe, primary, f.primary(), Duration.ofSeconds(30));
        if (rejoin != null) {
            progress(String.format(Locale.ROOT, "%s rejoined as a secondary of %s %.0f ms after it served again; %s",
                primary.id(), f.primary().id(), (System.nanoTime() - r0) / 1e6, rejoin));
        } else {
            out.println("(error) " + primary.id() + " did not rejoin as a caught-up secondary within 30 s");
        }
        out.println();
        ReplicaSetProbe.printTable(probe.status(targets), out);
        out.println();
        return lost == 0 && rejoin != null ? 0 : 1;
    }

    private record Elected(MemberProcess member, long term) {
    }

    /** Polls ROLE of {@code candidates} until one is primary in a term above {@code afterTerm}; null at the limit. */
    private Elected awaitPrimary(ReplicaSetProbe probe, List<MemberProcess> candidates, long afterTerm, Duration limit)
        throws InterruptedException {
        long end = System.nanoTime() + remaining(limit).toNanos();
        while (System.nanoTime() - end < 0) {
            for (MemberProcess m : candidates) {
                try {
                    ReplicaSetProbe.Role r = probe.role(m.address());
                    if (r.code() == ReplicaSetProbe.PRIMARY && r.term() > afterTerm) {
                        return new Elected(m, r.term());
                    }
                } catch (RuntimeException e) {
                    probe.drop(m.address());
                }
            }
            Thread.sleep(20);
        }
        return null;
    }

    private MemberProcess member(String id) {
        return members.stream().filter(m -> m.id().equals(id)).findFirst().orElseThrow();
    }

    /**
     * SETs {@code demo:NNNNNN} in pipelined batches, each followed by WAIT(-1 = majority) on the same connection. A
     * batch that fails (the primary stepped down, a majority did not answer in time) is written again to the primary
     * found then, at most five times in all.
     *
     * @param writtenTo gets the id of every member written to, in order
     * @return the keys whose SETs and WAIT succeeded in one attempt of their batch: acknowledged by a majority
     */
    private List<String> writeKeys(ReplicaSetProbe probe, Elected first, List<String> writtenTo)
        throws InterruptedException {
        List<String> acked = new ArrayList<>();
        MemberProcess writer = first.member();
        writtenTo.add(writer.id());
        int failures = 0;
        for (int from = 0; from < keys; ) {
            PeerChannel c = probe.channel(writer.address());
            List<String> batch = new ArrayList<>();
            List<CompletableFuture<Object>> sets = new ArrayList<>();
            for (int i = from; i < Math.min(keys, from + BATCH); i++) {
                String key = key(i);
                byte[] k = key.getBytes(StandardCharsets.UTF_8);
                byte[] v = value(key).getBytes(StandardCharsets.UTF_8);
                batch.add(key);
                sets.add(c.call(ProtocolDescriptor.SET, w -> w.u8(0).i64(0).bytes(k).bytes(v), (st, r) -> Boolean.TRUE,
                    CALL));
            }
            CompletableFuture<Long> wait = c.call(ProtocolDescriptor.WAIT, w -> w.i32(-1).i64(CALL.toMillis()),
                (st, r) -> r.i64("replicas"), CALL);
            String failure = null;
            for (int i = 0; i < sets.size(); i++) {
                try {
                    c.await(sets.get(i), CALL);
                } catch (RuntimeException e) {
                    failure = failure != null ? failure : "SET " + batch.get(i) + ": " + ReplicaSetProbe.describe(e);
                }
            }
            try {
                c.await(wait, CALL);
            } catch (RuntimeException e) {
                failure = failure != null ? failure : "WAIT: " + ReplicaSetProbe.describe(e);
            }
            if (failure == null) {
                acked.addAll(batch);
                from += BATCH;
                continue;
            }
            if (++failures > 5) {
                out.println("(error) keys " + batch.getFirst() + ".." + batch.getLast() + " failed five times; the last:"
                    + " " + failure + "; stopping the writes");
                break;
            }
            progress("keys " + batch.getFirst() + ".." + batch.getLast() + " not acknowledged (" + failure + "); asking"
                + " the members for the primary and writing them again");
            probe.drop(writer.address());
            Elected e = awaitPrimary(probe, members, 0, Duration.ofSeconds(30));
            if (e == null) {
                out.println("(error) no primary within 30 s; stopping the writes");
                break;
            }
            if (e.member() != writer) {
                writer = e.member();
                writtenTo.add(writer.id());
            }
        }
        return acked;
    }

    private record Failover(MemberProcess primary, long term, double electedMillis, double writeMillis) {
    }

    /**
     * Asks the survivors until one is primary in a newer term and accepts a SET acknowledged by a majority (WAIT -1);
     * null after 30 s.
     */
    private Failover failover(ReplicaSetProbe probe, List<MemberProcess> survivors, long oldTerm, long killedAt)
        throws InterruptedException {
        long end = System.nanoTime() + remaining(Duration.ofSeconds(30)).toNanos();
        double elected = -1;
        byte[] k = "demo:after-failover".getBytes(StandardCharsets.UTF_8);
        while (System.nanoTime() - end < 0) {
            Elected e = awaitPrimary(probe, survivors, oldTerm, Duration.ofNanos(Math.max(0, end - System.nanoTime())));
            if (e == null) {
                return null;
            }
            if (elected < 0) {
                elected = (System.nanoTime() - killedAt) / 1e6;
            }
            PeerChannel c = probe.channel(e.member().address());
            byte[] v = ("written by the new primary " + e.member().id()).getBytes(StandardCharsets.UTF_8);
            try {
                CompletableFuture<Object> set = c.call(ProtocolDescriptor.SET, w -> w.u8(0).i64(0).bytes(k).bytes(v),
                    (st, r) -> Boolean.TRUE, CALL);
                CompletableFuture<Long> wait = c.call(ProtocolDescriptor.WAIT, w -> w.i32(-1).i64(2000),
                    (st, r) -> r.i64("replicas"), CALL);
                c.await(set, CALL);
                c.await(wait, CALL);
                return new Failover(e.member(), e.term(), elected, (System.nanoTime() - killedAt) / 1e6);
            } catch (RuntimeException notYet) {
                // NOTPRIMARY while it finishes taking over, or a majority not yet caught up: ask again
                Thread.sleep(20);
            }
        }
        return null;
    }

    /**
     * GETs every key of {@code acked} from one member and counts those missing or wrong, asking again for up to
     * {@code grace} while some are.
     */
    private int readBack(PeerChannel c, List<String> acked, Duration grace) throws InterruptedException {
        long end = System.nanoTime() + grace.toNanos();
        List<String> bad = acked;
        while (true) {
            List<String> stillBad = new ArrayList<>();
            for (int from = 0; from < bad.size(); from += BATCH) {
                List<String> batch = bad.subList(from, Math.min(bad.size(), from + BATCH));
                List<CompletableFuture<String>> gets = new ArrayList<>();
                for (String key : batch) {
                    byte[] k = key.getBytes(StandardCharsets.UTF_8);
                    gets.add(c.call(ProtocolDescriptor.GET, w -> w.bytes(k), (st, r) ->
                        st == ProtocolDescriptor.STATUS_NULL ? null : new String(r.rest(), StandardCharsets.UTF_8),
                        CALL));
                }
                for (int i = 0; i < batch.size(); i++) {
                    String got;
                    try {
                        got = c.await(gets.get(i), CALL);
                    } catch (RuntimeException e) {
                        got = null;
                    }
                    if (!value(batch.get(i)).equals(got)) {
                        stillBad.add(batch.get(i));
                    }
                }
            }
            bad = stillBad;
            if (bad.isEmpty() || System.nanoTime() - end >= 0) {
                if (!bad.isEmpty()) {
                    out.println("(error) missing or wrong: " + bad.stream().limit(10).collect(Collectors.joining(" "))
                        + (bad.size() > 10 ? " ..." : ""));
                }
                return bad.size();
            }
            Thread.sleep(100);
        }
    }

    /**
     * Waits until {@code member} says it is a secondary of {@code primary} with its link up and its offset at the
     * primary's; returns a description of that, or null at the limit.
     */
    private String awaitRejoin(ReplicaSetProbe probe, MemberProcess member, MemberProcess primary, Duration limit)
        throws InterruptedException {
        long end = System.nanoTime() + remaining(limit).toNanos();
        while (System.nanoTime() - end < 0) {
            ReplicaSetProbe.Member m = probe.probe(member.id(), member.address());
            ReplicaSetProbe.Member p = probe.probe(primary.id(), primary.address());
            if (m.reachable() && p.reachable() && m.role().code() == ReplicaSetProbe.SECONDARY
                && primary.id().equals(m.role().primaryId())) {
                String offset = m.field("master_repl_offset");
                String primaryOffset = p.field("master_repl_offset");
                String link = m.field("master_link_status");
                if (offset == null || primaryOffset == null) {
                    // an INFO without a replication section: ROLE is all there is to go by
                    return "its ROLE names " + primary.id() + " as the primary (term " + m.role().term() + ")";
                }
                if ("up".equals(link) && offset.equals(primaryOffset)) {
                    return "its link is up and it is caught up at offset " + offset;
                }
            }
            Thread.sleep(50);
        }
        return null;
    }

    static String key(int i) {
        return String.format(Locale.ROOT, "demo:%06d", i);
    }

    static String value(String key) {
        return "value of " + key;
    }
}
