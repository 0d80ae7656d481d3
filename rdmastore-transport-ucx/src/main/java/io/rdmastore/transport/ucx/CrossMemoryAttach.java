package io.rdmastore.transport.ucx;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Reads from another process on this host with {@code process_vm_readv(2)} (Linux cross-memory attach): one kernel
 * copy straight from the peer's pages into ours, on the calling thread, with no work by the peer.
 *
 * <p>Why not through UCX: UCX 1.13 does not use its {@code cma} transport for {@code ucp_get} (its RMA lanes need
 * short or bcopy operations, which cma lacks), so a get between two processes on one host is emulated with active
 * messages: the peer's worker copies the bytes into a shared-memory FIFO in 8 KiB segments and ours copies them out.
 * That is two copies and a busy peer thread; E5 measured it at about 6.5 GB/s against about 9 GB/s for memcpy. The
 * kernel copy is the transfer UCX's cma transport would make; it needs the peer's pid and the same pid namespace,
 * which the capability carries ({@link UcxTransport.Peer}), and the permission to ptrace the peer (same user, Yama
 * permitting); without them the read goes through UCX as before.
 *
 * <p>Public for the benchmarks' floor probe (E2's {@code floor} rows: what one such copy costs on the host, with no
 * protocol); the transport's own reads go through {@code Connection.read}.
 *
 * <p>Threads: any thread; stateless.
 */
public final class CrossMemoryAttach {
    private static final StructLayout IOVEC = MemoryLayout.structLayout(ValueLayout.ADDRESS.withName("base"),
        ValueLayout.JAVA_LONG.withName("len"));
    private static final VarHandle BASE = IOVEC.varHandle(MemoryLayout.PathElement.groupElement("base"));
    private static final VarHandle LEN = IOVEC.varHandle(MemoryLayout.PathElement.groupElement("len"));
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    /** The kernel moves at most MAX_RW_COUNT (2 GiB - 4 KiB) per call; reads are cut well below it. */
    private static final long MAX_PER_CALL = 1L << 30;
    private static final MethodHandle READV = lookup();
    /** This process's pid namespace (the inode of /proc/self/ns/pid), or -1 when unknown. */
    static final long PID_NAMESPACE = pidNamespace();
    /** This process's pid. */
    static final long PID = ProcessHandle.current().pid();

    private CrossMemoryAttach() {
    }

    /** Whether process_vm_readv could be bound and the pid namespace read. */
    public static boolean available() {
        return READV != null && PID_NAMESPACE > 0;
    }

    /**
     * Copies {@code length} bytes at {@code remoteAddress} in process {@code pid} to {@code localAddress} here.
     *
     * @return 0 when all bytes arrived, else the errno of the failed call ({@code EFAULT} for an unmapped range,
     *     {@code EPERM}/{@code ESRCH} when the peer cannot be read)
     */
    public static int read(long pid, long localAddress, long remoteAddress, long length) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment local = arena.allocate(IOVEC);
            MemorySegment remote = arena.allocate(IOVEC);
            MemorySegment state = arena.allocate(CAPTURE);
            long done = 0;
            while (done < length) {
                long n = Math.min(MAX_PER_CALL, length - done);
                BASE.set(local, 0L, MemorySegment.ofAddress(localAddress + done));
                LEN.set(local, 0L, n);
                BASE.set(remote, 0L, MemorySegment.ofAddress(remoteAddress + done));
                LEN.set(remote, 0L, n);
                long got = (long) READV.invokeExact(state, (int) pid, local, 1L, remote, 1L, 0L);
                if (got < 0) {
                    return (int) ERRNO.get(state, 0L);
                }
                if (got == 0) {
                    // a partial read stops at an unmapped page; nothing more can come
                    return Errno.EFAULT;
                }
                done += got;
            }
            return 0;
        } catch (Throwable t) {
            throw new IllegalStateException("process_vm_readv failed to run", t);
        }
    }

    /** The errno values the caller tells apart. */
    static final class Errno {
        static final int EPERM = 1;
        static final int ESRCH = 3;
        static final int EFAULT = 14;
        static final int ENOSYS = 38;

        private Errno() {
        }
    }

    private static MethodHandle lookup() {
        try {
            Linker linker = Linker.nativeLinker();
            return linker.defaultLookup().find("process_vm_readv").map(addr -> linker.downcallHandle(addr,
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                    ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG),
                Linker.Option.captureCallState("errno"))).orElse(null);
        } catch (RuntimeException | LinkageError e) {
            return null;
        }
    }

    private static long pidNamespace() {
        try {
            // "pid:[4026531836]"
            String link = Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString();
            int open = link.indexOf('[');
            int close = link.indexOf(']');
            return open < 0 || close < open ? -1 : Long.parseLong(link.substring(open + 1, close));
        } catch (Exception e) {
            return -1;
        }
    }
}
