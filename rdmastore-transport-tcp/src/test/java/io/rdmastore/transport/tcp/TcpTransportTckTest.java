package io.rdmastore.transport.tcp;

import io.rdmastore.transport.Network;
import io.rdmastore.transport.tck.TransportTck;

/** The transport conformance suite over the TCP provider. */
class TcpTransportTckTest extends TransportTck {
    @Override
    protected Network newServerNetwork() {
        return TcpTckNetworks.server();
    }

    @Override
    protected Network newClientNetwork() {
        return TcpTckNetworks.client();
    }

    @Override
    protected String expectedTransport() {
        return TcpTransport.NAME;
    }

    @Override
    protected String networkFactoryClass() {
        return TcpTckNetworks.class.getName();
    }
}
