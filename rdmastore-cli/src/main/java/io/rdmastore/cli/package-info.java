/**
 * The {@code rdmastore} command-line tool: a picocli launcher ({@link io.rdmastore.cli.Main}) whose subcommands run a
 * server, an interactive or one-shot shell against one, a check of the machine's transports ({@code doctor}), an
 * offline log check, a self-contained demo that compares the transports side by side, the replica-set flows (a status
 * table of every member, and a demo that kills a primary and counts lost writes), and the benchmarks. Commands run
 * on the thread that calls {@code CommandLine.execute}; they write to the command line's configured writers so tests
 * can capture everything a user sees.
 */
package io.rdmastore.cli;
