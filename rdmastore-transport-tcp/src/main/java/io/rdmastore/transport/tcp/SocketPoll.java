package io.rdmastore.transport.tcp;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * {@code poll(2)} on one or two descriptors, for threads that wait for a socket themselves ({@link SocketReader}).
 * One instance per waiting role: its {@code struct pollfd} array is not shared.
 */
final class SocketPoll {
    static final short POLLIN = 0x1;
    private static final short POLLERR = 0x8;
    private static final short POLLHUP = 0x10;
    private static final MethodHandle POLL;
    private static final Throwable UNAVAILABLE;

    static {
        MethodHandle poll = null;
        Throwable cause = null;
        try {
            Linker linker = Linker.nativeLinker();
            poll = linker.downcallHandle(linker.defaultLookup().find("poll").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_INT));
        } catch (Throwable t) {
            // no native access or no libc symbol: connections keep reading on their event loop
            cause = t;
        }
        POLL = poll;
        UNAVAILABLE = cause;
    }

    /** {@code struct pollfd {int fd; short events; short revents;}}, one or two of them. */
    private final MemorySegment fds;
    private final int count;

    /** Waits for {@code first} and, when not negative, {@code second} to become readable. */
    SocketPoll(int first, int second) {
        count = second >= 0 ? 2 : 1;
        fds = Arena.ofAuto().allocate(8L * count, 8);
        fds.set(ValueLayout.JAVA_INT, 0, first);
        fds.set(ValueLayout.JAVA_SHORT, 4, POLLIN);
        if (count == 2) {
            fds.set(ValueLayout.JAVA_INT, 8, second);
            fds.set(ValueLayout.JAVA_SHORT, 12, POLLIN);
        }
    }

    static boolean available() {
        return POLL != null;
    }

    static Throwable unavailabilityCause() {
        return UNAVAILABLE;
    }

    /**
     * Blocks until a descriptor is readable (or hung up, or failed), or {@code timeoutMillis} pass (negative: no
     * limit). Returns a bit set: 1 when the first descriptor is ready, 2 when the second is; 0 after the time-out or a
     * signal.
     */
    int await(int timeoutMillis) {
        fds.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
        if (count == 2) {
            fds.set(ValueLayout.JAVA_SHORT, 14, (short) 0);
        }
        int n;
        try {
            n = (int) POLL.invokeExact(fds, (long) count, timeoutMillis);
        } catch (Throwable t) {
            throw new IllegalStateException("poll failed", t);
        }
        if (n <= 0) {
            // 0: timed out; -1: EINTR (a signal) or a bad descriptor, which the next read reports
            return 0;
        }
        int ready = 0;
        short mask = POLLIN | POLLERR | POLLHUP;
        if ((fds.get(ValueLayout.JAVA_SHORT, 6) & mask) != 0) {
            ready |= 1;
        }
        if (count == 2 && (fds.get(ValueLayout.JAVA_SHORT, 14) & mask) != 0) {
            ready |= 2;
        }
        return ready;
    }
}
