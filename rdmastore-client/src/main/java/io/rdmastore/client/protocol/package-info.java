/**
 * The native protocol's byte layout, shared by the client and the server: {@link
 * io.rdmastore.client.protocol.ProtocolDescriptor} names every opcode, status and offset, {@link
 * io.rdmastore.client.protocol.WireWriter} encodes into a reusable buffer and {@link
 * io.rdmastore.client.protocol.WireReader} decodes a received message in place. Every request and reply is one
 * transport message, big-endian, described in docs/protocol.md; keeping the layout in one package lets both ends
 * compile against the same constants.
 */
package io.rdmastore.client.protocol;
