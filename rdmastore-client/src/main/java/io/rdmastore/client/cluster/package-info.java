/**
 * The sharded cluster's shared vocabulary, used by the server, the CLI and the Java client alike: {@link
 * io.rdmastore.client.cluster.HashSlot} maps a key to one of Redis's 16384 hash slots, and {@link
 * io.rdmastore.client.cluster.SlotMap} says which shard owns each slot and where its members are (docs/cluster.md).
 * Everything here is immutable or stateless, so any thread may use it.
 */
package io.rdmastore.client.cluster;
