package io.rdmastore.transport.tcp;

import io.netty.channel.unix.FileDescriptor;
import io.netty.channel.unix.Socket;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * A second descriptor of a socket ({@code dup(2)}), owned by the connection that writes on it from callers' threads.
 * Netty closes its own descriptor on its event loop whenever the channel closes; a caller writing through that number
 * at the same moment could write into whatever file or socket reuses it. Through a descriptor of its own the
 * connection writes to this socket or fails, and closes it under the same monitor its writers hold.
 */
final class SocketDup {
    private static final MethodHandle DUP;
    private static final Throwable UNAVAILABLE;

    static {
        MethodHandle dup = null;
        Throwable cause = null;
        try {
            Linker linker = Linker.nativeLinker();
            dup = linker.downcallHandle(linker.defaultLookup().find("dup").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        } catch (Throwable t) {
            // no native access (--illegal-native-access=deny) or no libc symbol: callers hand frames to the loop
            cause = t;
        }
        DUP = dup;
        UNAVAILABLE = cause;
    }

    private SocketDup() {
    }

    /** A new descriptor of {@code fd}'s socket, or null when none can be made (the reason is logged by the caller). */
    static Socket of(FileDescriptor fd) {
        if (DUP == null || !fd.isOpen()) {
            return null;
        }
        try {
            int copy = (int) DUP.invokeExact(fd.intValue());
            return copy >= 0 ? new Socket(copy) : null;
        } catch (Throwable t) {
            return null;
        }
    }

    /** Why {@link #of} always returns null here, or null. */
    static Throwable unavailabilityCause() {
        return UNAVAILABLE;
    }
}
