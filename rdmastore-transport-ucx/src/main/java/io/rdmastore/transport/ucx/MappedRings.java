package io.rdmastore.transport.ucx;

import org.openucx.jucx.ucp.UcpRemoteKey;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The peer's memory mapped into this process, where UCX maps it ({@code ucp_rkey_ptr}: shared memory on one host,
 * posix or sysv segments): a ring can then compose its frames straight in the peer's ring instead of composing them
 * in its mirror and putting them (one copy and one UCX call fewer per frame). JUCX does not expose the call, so it is
 * bound here against {@code libucp.so.0} with the key's native handle.
 *
 * <p>{@code -Drdmastore.ucx.directRing=false} turns it off. Threads: any thread; stateless.
 */
final class MappedRings {
    private static final Logger LOG = LoggerFactory.getLogger(MappedRings.class);
    private static final boolean ENABLED = Boolean.parseBoolean(System.getProperty("rdmastore.ucx.directRing", "true"));
    private static final MethodHandle RKEY_PTR = ENABLED ? bind() : null;

    private MappedRings() {
    }

    /**
     * The local address at which the peer's {@code remoteAddress} (covered by {@code key}) is mapped into this
     * process, or 0 where UCX does not map it (another host, cross-memory attach only) or the call is unavailable.
     */
    static long pointer(UcpRemoteKey key, long remoteAddress) {
        if (RKEY_PTR == null) {
            return 0;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int status = (int) RKEY_PTR.invokeExact(key.getNativeId().longValue(), remoteAddress, out);
            return status == 0 ? out.get(ValueLayout.ADDRESS, 0).address() : 0;
        } catch (Throwable t) {
            LOG.debug("ucp_rkey_ptr failed", t);
            return 0;
        }
    }

    private static MethodHandle bind() {
        try {
            SymbolLookup ucp = SymbolLookup.libraryLookup("libucp.so.0", Arena.global());
            return Linker.nativeLinker().downcallHandle(ucp.find("ucp_rkey_ptr").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                    ValueLayout.ADDRESS));
        } catch (Throwable t) {
            LOG.debug("ucp_rkey_ptr not bound; rings put their frames", t);
            return null;
        }
    }
}
