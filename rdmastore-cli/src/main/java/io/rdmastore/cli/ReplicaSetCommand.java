package io.rdmastore.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code rdmastore replica-set <status|demo|add|remove>}: the user flows of replica sets. Threads: one call at a time.
 */
@Command(name = "replica-set", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
    description = {"Replica sets: members of one set elect a primary, which takes the writes; the secondaries"
        + " replicate them and one takes over when the primary fails.",
        "Start members with 'rdmastore server --replica-set NAME --node-id ID --members ID=HOST:PORT,...'."},
    subcommands = {ReplicaSetStatusCommand.class, ReplicaSetDemoCommand.class, ReplicaSetChangeCommand.Add.class,
        ReplicaSetChangeCommand.Remove.class},
    footer = {"", "Start with 'rdmastore replica-set demo': three members on this machine, a failover, no lost write."})
final class ReplicaSetCommand implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }
}
