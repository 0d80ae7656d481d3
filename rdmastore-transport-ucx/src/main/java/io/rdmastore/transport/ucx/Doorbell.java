package io.rdmastore.transport.ucx;

import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ThreadLocalRandom;

/**
 * How a sleeping agent is woken by a peer on the same host: a flag word the sleeper publishes, and a datagram socket it
 * sleeps on.
 *
 * <p>Ring frames arrive as one-sided puts, which raise no event the receiver could sleep on (UCX 1.13's shared-memory
 * wires do not signal an armed worker's event descriptor for them either: 0 of 40 requests woke one). So each
 * transport owns: a 64-byte {@code memfd} whose first word says "my agent is asleep", which peers on this host map
 * read-only through {@code /proc/<pid>/fd/<n>}; and an abstract-namespace Unix datagram socket. An agent about to sleep
 * sets its flag, looks at its rings once more, then waits in {@code poll(2)} on the socket for at most a millisecond. A
 * sender that has put a frame (or a credit) reads the peer's flag, a plain memory load, and only when it is set sends
 * one byte to the peer's socket. Both sides order their store before their load with a full fence (the flag is written
 * volatile; the put enqueues with an atomic), so either the sleeper sees the frame on its last look or the sender sees
 * the flag: a wake-up is not lost. One that is (a put queued behind a full FIFO, a peer on another host) costs at most
 * the millisecond time-out, which is what the fixed back-off strategy paid for every message.
 *
 * <p>Who can ring: the socket's abstract name is random and only given to peers in the capability; a stray datagram
 * only wakes the agent early. The peer's flag is mapped only for peers on this host in this pid namespace whose memory
 * the transport may read anyway ({@link UcxTransport#crossMemoryReads}): the same trust as cross-memory attach.
 *
 * <p>Threads: {@link #sleep(int)} on the agent; the rest on any thread.
 */
final class Doorbell implements AutoCloseable {
    private static final int AF_UNIX = 1;
    private static final int SOCK_DGRAM = 2;
    private static final int SOCK_NONBLOCK = 2048;
    private static final int SOCK_CLOEXEC = 524288;
    private static final int MSG_DONTWAIT = 0x40;
    private static final int MFD_CLOEXEC = 1;
    private static final short POLLIN = 1;
    private static final int FLAG_BYTES = 64;
    private static final MethodHandle SOCKET;
    private static final MethodHandle BIND;
    private static final MethodHandle SENDTO;
    private static final MethodHandle RECV;
    private static final MethodHandle POLL;
    private static final MethodHandle MEMFD_CREATE;
    private static final MethodHandle FTRUNCATE;
    private static final MethodHandle CLOSE;

    static {
        MethodHandle[] h = new MethodHandle[8];
        try {
            Linker linker = Linker.nativeLinker();
            var libc = linker.defaultLookup();
            ValueLayout i = ValueLayout.JAVA_INT;
            ValueLayout l = ValueLayout.JAVA_LONG;
            ValueLayout a = ValueLayout.ADDRESS;
            h[0] = linker.downcallHandle(libc.find("socket").orElseThrow(), FunctionDescriptor.of(i, i, i, i));
            h[1] = linker.downcallHandle(libc.find("bind").orElseThrow(), FunctionDescriptor.of(i, i, a, i));
            h[2] = linker.downcallHandle(libc.find("sendto").orElseThrow(), FunctionDescriptor.of(l, i, a, l, i, a, i));
            h[3] = linker.downcallHandle(libc.find("recv").orElseThrow(), FunctionDescriptor.of(l, i, a, l, i));
            h[4] = linker.downcallHandle(libc.find("poll").orElseThrow(), FunctionDescriptor.of(i, a, l, i));
            h[5] = linker.downcallHandle(libc.find("memfd_create").orElseThrow(), FunctionDescriptor.of(i, a, i));
            h[6] = linker.downcallHandle(libc.find("ftruncate").orElseThrow(), FunctionDescriptor.of(i, i, l));
            h[7] = linker.downcallHandle(libc.find("close").orElseThrow(), FunctionDescriptor.of(i, i));
        } catch (RuntimeException | LinkageError e) {
            h = new MethodHandle[8];
        }
        SOCKET = h[0];
        BIND = h[1];
        SENDTO = h[2];
        RECV = h[3];
        POLL = h[4];
        MEMFD_CREATE = h[5];
        FTRUNCATE = h[6];
        CLOSE = h[7];
    }

    private final int socket;
    private final int memfd;
    private final byte[] name;
    private final UnsafeBuffer flag;
    private final MemorySegment pollFd;
    private final MemorySegment scratch;
    private final MemorySegment selfAddress;
    private final int selfAddressLength;
    private volatile boolean closed;
    /** Rings this process sent to peers (for tests and doctor). */
    final java.util.concurrent.atomic.AtomicLong ringsSent = new java.util.concurrent.atomic.AtomicLong();

    private Doorbell(int socket, int memfd, byte[] name, UnsafeBuffer flag) {
        this.socket = socket;
        this.memfd = memfd;
        this.name = name;
        this.flag = flag;
        // freed with this object: clients make a transport (and a doorbell) per client, so nothing global
        Arena arena = Arena.ofAuto();
        this.pollFd = arena.allocate(8, 4);
        pollFd.set(ValueLayout.JAVA_INT, 0, socket);
        pollFd.set(ValueLayout.JAVA_SHORT, 4, POLLIN);
        this.scratch = arena.allocate(64);
        this.selfAddress = arena.allocate(110);
        this.selfAddressLength = sockaddr(selfAddress, name);
    }

    /** This process's doorbell, or null where the calls cannot be made (not Linux, no memfd, sockets refused). */
    static Doorbell open() {
        if (SOCKET == null) {
            return null;
        }
        int sock = -1;
        int fd = -1;
        try (Arena arena = Arena.ofConfined()) {
            sock = (int) SOCKET.invokeExact(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (sock < 0) {
                return null;
            }
            byte[] name = ("rdmastore-doorbell-" + ProcessHandle.current().pid() + "-"
                + Long.toHexString(ThreadLocalRandom.current().nextLong())).getBytes(StandardCharsets.US_ASCII);
            MemorySegment addr = arena.allocate(110);
            int len = sockaddr(addr, name);
            if ((int) BIND.invokeExact(sock, addr, len) != 0) {
                closeFd(sock);
                return null;
            }
            fd = (int) MEMFD_CREATE.invokeExact(arena.allocateFrom("rdmastore-doorbell"), MFD_CLOEXEC);
            if (fd < 0 || (int) FTRUNCATE.invokeExact(fd, (long) FLAG_BYTES) != 0) {
                closeFd(sock);
                closeFd(fd);
                return null;
            }
            MappedByteBuffer map;
            try (FileChannel ch = FileChannel.open(Path.of("/proc/self/fd/" + fd), StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
                map = ch.map(FileChannel.MapMode.READ_WRITE, 0, FLAG_BYTES);
            }
            return new Doorbell(sock, fd, name, new UnsafeBuffer(map));
        } catch (Throwable t) {
            closeFd(sock);
            closeFd(fd);
            return null;
        }
    }

    /** What a peer needs to ring this doorbell: {@code [memfd:4][name length:1][name]}, for the capability. */
    byte[] address() {
        return ByteBuffer.allocate(5 + name.length).putInt(memfd).put((byte) name.length).put(name).array();
    }

    /** Marks the agent asleep (true) or awake. The store is followed by a full fence. */
    void asleep(boolean value) {
        flag.putIntVolatile(0, value ? 1 : 0);
    }

    /** Whether the flag says asleep. */
    boolean isAsleep() {
        return flag.getIntVolatile(0) != 0;
    }

    /** Sleeps until a ring or {@code timeoutMillis}; true when rung. Drains the socket. */
    boolean sleep(int timeoutMillis) {
        if (closed) {
            return false;
        }
        try {
            pollFd.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
            int n = (int) POLL.invokeExact(pollFd, 1L, timeoutMillis);
            if (n <= 0) {
                return false;
            }
            while ((long) RECV.invokeExact(socket, scratch, 64L, MSG_DONTWAIT) > 0) {
                // drain: one ring or many, one wake-up
            }
            return true;
        } catch (Throwable t) {
            throw new IllegalStateException("poll on the doorbell failed to run", t);
        }
    }

    /** Wakes this process's own sleeping agent (a command queued by another thread). */
    void ringSelf() {
        send(selfAddress, selfAddressLength);
    }

    private void send(MemorySegment to, int length) {
        if (closed) {
            return;
        }
        try {
            // EAGAIN (the sleeper's queue is full) means it has been rung already
            long ignored = (long) SENDTO.invokeExact(socket, scratch, 1L, MSG_DONTWAIT, to, length);
        } catch (Throwable t) {
            throw new IllegalStateException("sendto on the doorbell failed to run", t);
        }
    }

    /**
     * A peer's doorbell, from its {@link #address()} and its pid; null when its flag cannot be mapped (another pid
     * namespace, no permission, a malformed address).
     */
    Remote connect(long pid, byte[] address) {
        try {
            ByteBuffer b = ByteBuffer.wrap(address);
            int fd = b.getInt();
            byte[] peerName = new byte[b.get() & 0xFF];
            b.get(peerName);
            if (fd < 0 || peerName.length == 0 || peerName.length > 100 || pid <= 0) {
                return null;
            }
            MappedByteBuffer map;
            try (FileChannel ch = FileChannel.open(Path.of("/proc/" + pid + "/fd/" + fd), StandardOpenOption.READ)) {
                if (ch.size() < FLAG_BYTES) {
                    return null;
                }
                map = ch.map(FileChannel.MapMode.READ_ONLY, 0, FLAG_BYTES);
            }
            MemorySegment to = Arena.ofAuto().allocate(110);
            int len = sockaddr(to, peerName);
            return new Remote(new UnsafeBuffer(map), to, len);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** A peer's doorbell as seen by a sender. Threads: any. */
    final class Remote {
        private final UnsafeBuffer peerFlag;
        private final MemorySegment to;
        private final int length;

        private Remote(UnsafeBuffer peerFlag, MemorySegment to, int length) {
            this.peerFlag = peerFlag;
            this.to = to;
            this.length = length;
        }

        /** After a put to the peer: rings when its agent is asleep. A plain load unless it is. */
        void ringIfAsleep() {
            if (peerFlag.getIntVolatile(0) != 0) {
                ringsSent.incrementAndGet();
                send(to, length);
            }
        }
    }

    private static int sockaddr(MemorySegment addr, byte[] name) {
        addr.fill((byte) 0);
        addr.set(ValueLayout.JAVA_SHORT, 0, (short) AF_UNIX);
        // abstract namespace: sun_path starts with a NUL; the length counts the name's bytes exactly
        MemorySegment.copy(name, 0, addr, ValueLayout.JAVA_BYTE, 3, name.length);
        return 2 + 1 + name.length;
    }

    private static void closeFd(int fd) {
        if (fd >= 0) {
            try {
                int ignored = (int) CLOSE.invokeExact(fd);
            } catch (Throwable ignored) {
                // closing
            }
        }
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            closeFd(socket);
            closeFd(memfd);
        }
    }
}
