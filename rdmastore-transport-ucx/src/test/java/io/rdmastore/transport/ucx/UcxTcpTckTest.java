package io.rdmastore.transport.ucx;

import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.tck.TransportTck;

/** The transport conformance suite over UCX's own tcp wire, with transport "ucx" required. */
class UcxTcpTckTest extends TransportTck {
    @Override
    protected Network newServerNetwork() {
        return UcxTckNetworks.Tcp.server();
    }

    @Override
    protected Network newClientNetwork() {
        return UcxTckNetworks.Tcp.client();
    }

    @Override
    protected ConnectOptions connectOptions() {
        return ConnectOptions.DEFAULT.withTransport("ucx");
    }

    @Override
    protected String expectedTransport() {
        return "ucx";
    }

    @Override
    protected String networkFactoryClass() {
        return UcxTckNetworks.Tcp.class.getName();
    }
}
