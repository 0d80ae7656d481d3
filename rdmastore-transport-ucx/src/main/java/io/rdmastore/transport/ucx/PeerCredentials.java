package io.rdmastore.transport.ucx;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

/**
 * Asks the kernel whether a process is the peer of a TCP connection: the peer's end of the carrier socket (found in
 * {@code /proc/net/tcp} and {@code tcp6} by its two addresses) must be an open file of that process ({@code
 * /proc/<pid>/fd}). A pid a peer declares in its capability is used for {@code process_vm_readv} only when it passes
 * this check, so a peer cannot make us read a process it does not run in: another client, another program of our user,
 * or this process.
 *
 * <p>What it needs: the same network namespace (else the peer's socket is not listed) and the right to list the
 * process's open files (the same user, as {@code process_vm_readv} needs anyway). A peer that hands its socket to
 * another process (SCM_RIGHTS) makes that process its peer too: it chose to. Threads: any thread; stateless.
 */
final class PeerCredentials {
    /** The start of the reason when the declared process does not exist. */
    static final String NO_PROCESS = "there is no process ";

    private PeerCredentials() {
    }

    /**
     * What the kernel says of a declared pid.
     *
     * @param vouched the process holds the peer's end of the control socket
     * @param refuted the kernel shows it does not (the process does not exist, or its open files lack the socket): the
     *     peer declared a pid that is not its own
     * @param reason in words, when not vouched
     */
    record Verdict(boolean vouched, boolean refuted, String reason) {
        static final Verdict VOUCHED = new Verdict(true, false, null);

        static Verdict unknown(String reason) {
            return new Verdict(false, false, reason);
        }

        static Verdict refuted(String reason) {
            return new Verdict(false, true, reason);
        }
    }

    /** Whether process {@code pid} holds the far end of the TCP connection from {@code local} to {@code remote}. */
    static Verdict verify(long pid, InetSocketAddress local, InetSocketAddress remote) {
        if (pid <= 0) {
            return Verdict.unknown("no pid declared");
        }
        if (local == null || remote == null) {
            return Verdict.unknown("the carrier has no socket addresses");
        }
        long inode;
        try {
            // the peer's socket: its local address is our remote one and the other way round
            inode = socketInode(remote, local);
        } catch (IOException | RuntimeException e) {
            return Verdict.unknown("cannot read /proc/net/tcp: " + e);
        }
        if (inode <= 0) {
            return Verdict.unknown("the peer's socket is not in this network namespace");
        }
        String want = "socket:[" + inode + "]";
        Path dir = Path.of("/proc", Long.toString(pid), "fd");
        if (!Files.exists(Path.of("/proc", Long.toString(pid)))) {
            return Verdict.refuted(NO_PROCESS + pid + " (the peer has exited, or named a pid not its own)");
        }
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(dir)) {
            for (Path fd : fds) {
                try {
                    if (Files.readSymbolicLink(fd).toString().equals(want)) {
                        return Verdict.VOUCHED;
                    }
                } catch (IOException e) {
                    // closed meanwhile
                }
            }
        } catch (IOException | SecurityException e) {
            return Verdict.unknown("cannot list the open files of pid " + pid + ": " + e.getClass().getSimpleName());
        }
        return Verdict.refuted("process " + pid + " does not hold the connection's socket");
    }

    /** The inode of the TCP socket bound to {@code local} and connected to {@code remote}, or -1. */
    static long socketInode(InetSocketAddress local, InetSocketAddress remote) throws IOException {
        byte[] l = mapped(local.getAddress());
        byte[] r = mapped(remote.getAddress());
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path p = Path.of(table);
            if (!Files.isReadable(p)) {
                continue;
            }
            List<String> lines = Files.readAllLines(p);
            for (int i = 1; i < lines.size(); i++) {
                String[] f = lines.get(i).trim().split("\\s+");
                if (f.length < 10) {
                    continue;
                }
                if (matches(f[1], l, local.getPort()) && matches(f[2], r, remote.getPort())) {
                    return Long.parseLong(f[9]);
                }
            }
        }
        return -1;
    }

    /** {@code hex} is "ADDR:PORT" as the kernel prints it: the address in 32-bit words of host (little) byte order. */
    private static boolean matches(String hex, byte[] address, int port) {
        int colon = hex.indexOf(':');
        if (colon < 0 || Integer.parseInt(hex.substring(colon + 1), 16) != port) {
            return false;
        }
        byte[] raw = HexFormat.of().parseHex(hex.substring(0, colon));
        byte[] ip = new byte[raw.length];
        for (int w = 0; w < raw.length; w += 4) {
            for (int b = 0; b < 4; b++) {
                ip[w + b] = raw[w + 3 - b];
            }
        }
        byte[] cmp = ip.length == 4 ? mappedBytes(ip) : ip;
        return Arrays.equals(cmp, address);
    }

    private static byte[] mapped(InetAddress a) {
        return a instanceof Inet4Address ? mappedBytes(a.getAddress()) : a.getAddress();
    }

    /** IPv4 as an IPv4-mapped IPv6 address, so a dual-stack socket in tcp6 matches an IPv4 view of it. */
    private static byte[] mappedBytes(byte[] v4) {
        byte[] m = new byte[16];
        m[10] = (byte) 0xFF;
        m[11] = (byte) 0xFF;
        System.arraycopy(v4, 0, m, 12, 4);
        return m;
    }
}
