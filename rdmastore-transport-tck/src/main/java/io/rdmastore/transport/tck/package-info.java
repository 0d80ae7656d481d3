/**
 * The transport conformance suite: {@link io.rdmastore.transport.tck.TransportTck} is an abstract JUnit 5 class that
 * each provider's tests subclass in a few lines. It works only through {@link io.rdmastore.transport.Network} and the
 * SPI, so every provider (tcp, ucx) is held to the same contract: ordered intact messages, back-pressure without loss,
 * one-sided reads and writes with bounds checks, many connections, orderly and abrupt closes (a killed peer process),
 * bad bytes on the listener's port, and concurrent senders.
 */
package io.rdmastore.transport.tck;
