/**
 * The standalone rdmastore server: {@link io.rdmastore.server.RdmaStoreServer} opens the store, listens on one port
 * for the native protocol (over TCP or an upgraded UCX connection) and the RESP face, and executes each native request
 * inline on the transport thread that received it, replying in request order on that connection. Configuration is one
 * {@link io.rdmastore.server.ServerConfig}; the wire layout is in docs/protocol.md and
 * {@code io.rdmastore.client.protocol.ProtocolDescriptor}.
 */
package io.rdmastore.server;
