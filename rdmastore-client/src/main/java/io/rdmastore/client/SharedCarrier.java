package io.rdmastore.client;

import io.rdmastore.transport.CarrierTransport;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.ConnectionHandler;
import io.rdmastore.transport.Listener;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.Transport;
import io.rdmastore.transport.TransportException;
import io.rdmastore.transport.Transports;

import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * The TCP carrier shared by every client of this JVM, as Lettuce shares its event loops: 32 clients use one I/O thread
 * group instead of 32. Reference-counted: built by the first client, shut down when the last one closes.
 *
 * <p>Threads: thread-safe.
 */
final class SharedCarrier implements CarrierTransport {
    private static final Object LOCK = new Object();
    private static CarrierTransport shared;
    private static int users;

    private final CarrierTransport carrier;
    private boolean closed;

    private SharedCarrier(CarrierTransport carrier) {
        this.carrier = carrier;
    }

    /** A handle on the shared carrier; close it once. */
    static SharedCarrier acquire() {
        synchronized (LOCK) {
            if (shared == null) {
                Transport t = Transports.load(Transports.TCP);
                if (!(t instanceof CarrierTransport c)) {
                    t.close();
                    throw new RdmaStoreException(Transports.TCP + " is not a carrier transport");
                }
                shared = c;
            }
            users++;
            return new SharedCarrier(shared);
        }
    }

    @Override
    public void close() {
        synchronized (LOCK) {
            if (closed) {
                return;
            }
            closed = true;
            if (--users == 0) {
                shared = null;
                carrier.close();
            }
        }
    }

    @Override
    public Listener listen(InetSocketAddress bind, ConnectionHandler handler) {
        throw new TransportException("a client's carrier does not listen");
    }

    @Override
    public Connection connect(InetSocketAddress address, MessageHandler handler, Duration timeout) {
        return carrier.connect(address, handler, timeout);
    }

    @Override
    public String name() {
        return carrier.name();
    }

    @Override
    public boolean isAvailable() {
        return carrier.isAvailable();
    }

    @Override
    public Throwable unavailabilityCause() {
        return carrier.unavailabilityCause();
    }
}
