/**
 * The replica set's control plane: {@link io.rdmastore.server.replication.ControlPlane} embeds an Apache Ratis
 * server per member, whose agreed state is the member list (with data ports) and the last announced primary; Ratis
 * elects the leader and tells each member who leads in which term. Ratis carries no data: the oplog stream and
 * catch-up (the data plane, in this package too) run over rdmastore's own transports. Settings are one
 * {@link io.rdmastore.server.replication.ControlConfig}; docs/replication.md says what is held where and why.
 */
package io.rdmastore.server.replication;
