/**
 * The TCP transport provider ({@link io.rdmastore.transport.tcp.TcpTransport}): Netty 4.1 on epoll where available,
 * NIO otherwise. The connecting side first sends the 4-byte preface {@code "RDMS"}; a listener that sees other bytes
 * hands the connection to a foreign protocol (the RESP face) or answers {@code -ERR ... bad preface} and closes. After
 * the preface every frame is {@code [length:int32 big-endian][type:int8][body:length bytes]}, where {@code length}
 * counts the body only and a length below 0 or above the limit closes the connection after an ERROR frame. Types:
 * 0 MESSAGE (the application's message), 1 READ_REQUEST {@code [requestId:int64][regionId:int32][offset:int64]
 * [length:int32]}, 2 READ_RESPONSE {@code [requestId:int64][status:int8][bytes | error text]}, 3 WRITE_REQUEST
 * {@code [requestId:int64][regionId:int32][offset:int64][bytes]}, 4 WRITE_RESPONSE {@code [requestId:int64]
 * [status:int8][error text]}, 5 ERROR {@code [reason text]} (the sender closes next). One-sided reads and writes are
 * emulated with these control frames, in chunks (1 MiB by default, a few in flight per operation), served by the
 * region owner's event loop from registered memory without the application; a region descriptor is
 * {@code ['T'][regionId:int32][length:int64]}. Messages and control frames share the socket in order.
 */
package io.rdmastore.transport.tcp;
