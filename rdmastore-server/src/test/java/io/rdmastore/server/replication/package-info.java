/**
 * Tools for the replica-set fault tests: {@link io.rdmastore.server.replication.History} records what concurrent
 * clients did, {@link io.rdmastore.server.replication.LinearizabilityChecker} decides whether that history is
 * linearizable per key, {@link io.rdmastore.server.replication.ReplicaSetProcesses} runs member servers as real
 * processes that a test can kill, pause, resume and wipe, and {@link io.rdmastore.server.replication.Workload} drives
 * concurrent single-key reads and writes against them. The tests here test the tools themselves.
 */
package io.rdmastore.server.replication;
