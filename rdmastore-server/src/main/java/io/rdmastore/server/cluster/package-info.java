/**
 * Cluster mode (docs/cluster.md): {@link io.rdmastore.server.cluster.ClusterNode} holds this node's copy of the slot
 * map (in its replica set's control plane, or in a file for a one-node shard), says which slots this node serves and
 * where to send a client for the others ({@code MOVED}), and installs newer maps handed to it by
 * {@code rdmastore cluster create}.
 */
package io.rdmastore.server.cluster;
