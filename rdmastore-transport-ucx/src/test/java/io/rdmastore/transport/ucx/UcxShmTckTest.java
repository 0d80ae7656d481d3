package io.rdmastore.transport.ucx;

import io.rdmastore.transport.ConnectOptions;
import io.rdmastore.transport.Network;
import io.rdmastore.transport.tck.TransportTck;

/** The transport conformance suite over UCX shared memory (posix, cma), with transport "ucx" required. */
class UcxShmTckTest extends TransportTck {
    @Override
    protected Network newServerNetwork() {
        return UcxTckNetworks.Shm.server();
    }

    @Override
    protected Network newClientNetwork() {
        return UcxTckNetworks.Shm.client();
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
        return UcxTckNetworks.Shm.class.getName();
    }
}
