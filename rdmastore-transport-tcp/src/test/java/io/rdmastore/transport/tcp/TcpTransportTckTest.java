package io.rdmastore.transport.tcp;

import io.rdmastore.transport.Network;
import io.rdmastore.transport.tck.TransportTck;
import org.junit.jupiter.api.AfterAll;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The transport conformance suite over the TCP provider. */
class TcpTransportTckTest extends TransportTck {
    static {
        NettyLeaks.install();
    }

    @AfterAll
    static void noBufferLeaked() throws InterruptedException {
        assertEquals(List.of(), NettyLeaks.collect(), "Netty buffers leaked");
    }

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
