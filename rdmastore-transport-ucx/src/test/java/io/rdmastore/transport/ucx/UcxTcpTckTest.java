package io.rdmastore.transport.ucx;

import io.rdmastore.transport.Network;

/** The transport conformance suite over UCX's own tcp wire, with transport "ucx" required. */
class UcxTcpTckTest extends UcxShmTckTest {
    @Override
    protected Network newServerNetwork() {
        return UcxTckNetworks.Tcp.server();
    }

    @Override
    protected Network newClientNetwork() {
        return UcxTckNetworks.Tcp.client();
    }

    @Override
    protected String networkFactoryClass() {
        return UcxTckNetworks.Tcp.class.getName();
    }
}
