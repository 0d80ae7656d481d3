/**
 * The UCX provider (JUCX 1.12 over the system's libucp): RDMA verbs on InfiniBand and RoCE, shared memory on one host,
 * UCX's TCP otherwise. A connection is upgraded from a carrier (TCP) connection: both sides exchange worker addresses
 * in HELLO, create endpoints from them, and swap ring descriptors over the carrier, which then stays open as the
 * liveness channel. Messages travel as frames written with one one-sided put into the receiver's ring
 * ({@link io.rdmastore.transport.ucx.RingDescriptor}); an active-message variant exists for comparison. One thread
 * drives each worker ({@link io.rdmastore.transport.ucx.UcxTransport}).
 */
package io.rdmastore.transport.ucx;
