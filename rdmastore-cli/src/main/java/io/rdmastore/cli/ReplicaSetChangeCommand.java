package io.rdmastore.cli;

import io.rdmastore.client.ClientConfig;
import io.rdmastore.client.PeerChannel;
import io.rdmastore.client.RdmaStoreException;
import io.rdmastore.client.protocol.ProtocolDescriptor;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code rdmastore replica-set add|remove}: changes a set's members at run time through any running member (native
 * opcode REPLICA_SET_CONFIG); the change is answered once the control plane committed it. Threads: one call at a time.
 */
final class ReplicaSetChangeCommand {
    private ReplicaSetChangeCommand() {
    }

    /** Options both subcommands share: which running member to ask. */
    static class Target {
        @Option(names = "--help", usageHelp = true, description = "Shows this help and exits (-h is the host).")
        boolean help;
        @Option(names = {"-h", "--host"}, paramLabel = "HOST", defaultValue = "127.0.0.1",
            description = "A running member's host (default ${DEFAULT-VALUE}).")
        String host;
        @Option(names = {"-p", "--port"}, paramLabel = "PORT", defaultValue = "7379",
            description = "That member's port (default ${DEFAULT-VALUE}).")
        int port;
        @Option(names = {"-a", "--password"}, paramLabel = "PW", description = "The members' password (or set the"
            + " environment variable " + ServerCommand.PASSWORD_ENV + ").")
        String password;
        @Option(names = "--timeout", paramLabel = "TIME", defaultValue = "30s",
            description = "How long to wait for the change to commit (default ${DEFAULT-VALUE}).")
        String timeout;

        int change(CommandLine.Model.CommandSpec spec, int action, String id, String address, String done) {
            Main.quietLogs();
            PrintWriter out = spec.commandLine().getOut();
            String pw = password != null ? password : System.getenv(ServerCommand.PASSWORD_ENV);
            Duration t = Values.duration("--timeout", timeout);
            try (PeerChannel ch = PeerChannel.open(new ClientConfig(host, port, "tcp",
                pw == null || pw.isEmpty() ? null : pw, t))) {
                ch.await(ch.call(ProtocolDescriptor.REPLICA_SET_CONFIG, w -> w.u8(action).string(id).string(address),
                    (st, r) -> null, t), t);
                out.println(done);
                out.flush();
                return 0;
            } catch (RdmaStoreException e) {
                spec.commandLine().getErr().println("rdmastore replica-set " + (action == 1 ? "add" : "remove") + ": "
                    + e.getMessage());
                spec.commandLine().getErr().flush();
                return 1;
            }
        }
    }

    @Command(name = "add", versionProvider = Main.Version.class, sortOptions = false,
        description = {"Adds a member to a running replica set. Start it first with 'rdmastore server --replica-set"
            + " NAME --node-id ID --members ... --join'; it then catches up by itself (a snapshot, then the oplog)."})
    static final class Add extends Target implements Callable<Integer> {
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;
        @Option(names = "--id", required = true, paramLabel = "ID", description = "The new member's id.")
        String id;
        @Option(names = "--address", required = true, paramLabel = "HOST:PORT",
            description = "The new member's client address (its Ratis port is that port + 10000).")
        String address;

        @Override
        public Integer call() {
            return change(spec, 1, id, address, "added " + id + " at " + address
                + "; 'rdmastore replica-set status' shows it catch up");
        }
    }

    @Command(name = "remove", versionProvider = Main.Version.class, sortOptions = false,
        description = {"Removes a member from a running replica set; majorities are counted on the others from then on,"
            + " and the removed member can be stopped."})
    static final class Remove extends Target implements Callable<Integer> {
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;
        @Option(names = "--id", required = true, paramLabel = "ID", description = "The member to remove.")
        String id;

        @Override
        public Integer call() {
            return change(spec, 2, id, "", "removed " + id);
        }
    }
}
