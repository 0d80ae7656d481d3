/**
 * The transport SPI: one API over every wire rdmastore runs on. A {@link io.rdmastore.transport.Connection} carries
 * framed messages and one-sided reads and writes of {@link io.rdmastore.transport.RegisteredMemory}; a
 * {@link io.rdmastore.transport.CarrierTransport} (TCP) owns the port, and an
 * {@link io.rdmastore.transport.UpgradeTransport} (UCX) moves a connection that the carrier bootstrapped onto a faster
 * wire. {@link io.rdmastore.transport.Network} negotiates which one a connection uses and says why. This module depends
 * on nothing outside the JDK.
 */
package io.rdmastore.transport;
