package io.netty.channel.epoll;

import io.netty.channel.Channel;

import java.io.IOException;

/**
 * Stops an epoll channel's event loop from ever reading its socket, for a connection whose bytes other threads read
 * (rdmastore's tcp client with caller reads). {@code autoRead(false)} alone leaves {@code EPOLLRDHUP} registered, and
 * on that event Netty reads whatever is left on the socket, racing the threads that own the reads; the flag can only be
 * cleared from this package. Event loop only.
 */
public final class EpollReadsOff {
    private EpollReadsOff() {
    }

    /** Whether {@code channel} is an epoll channel whose loop will no longer read it. */
    public static boolean apply(Channel channel) {
        if (!(channel instanceof AbstractEpollChannel c) || !c.eventLoop().inEventLoop()) {
            return false;
        }
        c.config().setAutoRead(false);
        try {
            c.clearFlag(Native.EPOLLRDHUP);
            c.clearEpollIn();
            return true;
        } catch (IOException | RuntimeException | LinkageError e) {
            c.config().setAutoRead(true);
            return false;
        }
    }
}
