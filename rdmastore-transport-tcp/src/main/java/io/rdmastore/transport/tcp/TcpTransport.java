package io.rdmastore.transport.tcp;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.rdmastore.transport.CarrierTransport;
import io.rdmastore.transport.Connection;
import io.rdmastore.transport.ConnectionHandler;
import io.rdmastore.transport.Listener;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * The TCP provider: Netty 4.1 on epoll where {@link Epoll#isAvailable()}, NIO otherwise. Always available. Carries
 * framed messages and emulates one-sided reads and writes with control frames served by the owner's event loop (see
 * the package documentation for the wire format).
 *
 * <p>Threads: every method may be called from any thread. Event loops are created on the first {@link #listen} or
 * {@link #connect} and shut down by {@link #close()}, which closes every connection and listener of this transport.
 */
public final class TcpTransport implements CarrierTransport {
    /** This provider's name in HELLO, configuration and logs. */
    public static final String NAME = "tcp";

    private static final Logger LOG = LoggerFactory.getLogger(TcpTransport.class);

    private final Context ctx;
    private final boolean epoll;
    private final Object lock = new Object();
    private EventLoopGroup group;
    /** Netty's name of the TLS handler, first in the pipeline when TLS is on. */
    static final String TLS_HANDLER = "tls";
    private final SslContext serverTls;
    private final SslContext clientTls;
    private volatile boolean closed;

    /**
     * Configuration. Fluent setters; defaults come from system properties {@code rdmastore.tcp.ioThreads},
     * {@code rdmastore.tcp.maxMessageLength} and {@code rdmastore.tcp.native} where set. Validated once by the
     * transport's constructor; not thread-safe, and not to be changed after the transport is built.
     */
    public static final class Context {
        private int ioThreads = Integer.getInteger("rdmastore.tcp.ioThreads",
            Math.min(2, Math.max(1, Runtime.getRuntime().availableProcessors() / 2)));
        private int maxMessageLength = Integer.getInteger("rdmastore.tcp.maxMessageLength", 512 * 1024 * 1024 + 64 * 1024);
        private boolean nativeTransport = Boolean.parseBoolean(System.getProperty("rdmastore.tcp.native", "true"));
        private boolean directWrites = Boolean.parseBoolean(System.getProperty("rdmastore.tcp.directWrites", "true"));
        private boolean callerReads = Boolean.parseBoolean(System.getProperty("rdmastore.tcp.callerReads", "true"));
        private boolean tcpNoDelay = true;
        private boolean keepAlive = true;
        private int sendBufferSize;
        private int receiveBufferSize;
        private int writeBufferLowWaterMark = 512 * 1024;
        private int writeBufferHighWaterMark = 2 * 1024 * 1024;
        private int backlog = 1024;
        private Duration prefaceTimeout = Duration.ofSeconds(10);
        private int oneSidedChunkLength = 1024 * 1024;
        private int oneSidedWindow = 4;
        private Consumer<ChannelPipeline> foreignProtocol;
        private Path tlsCertificate;
        private Path tlsKey;
        private boolean tlsClient;
        private Path tlsTrust;

        /**
         * Serves TLS on accepted connections (native and RESP alike): the certificate chain and its PKCS#8 private
         * key, both PEM files. A client that does not speak TLS is refused by the handshake. Default none (plain TCP).
         */
        public Context tlsServer(Path certificateChain, Path privateKey) {
            tlsCertificate = certificateChain;
            tlsKey = privateKey;
            return this;
        }

        /**
         * Connects with TLS, checking the server's certificate against {@code trustedCertificates} (PEM; null: the
         * JVM's default trust store) and the host name it was given. Default off (plain TCP).
         */
        public Context tlsClient(Path trustedCertificates) {
            tlsClient = true;
            tlsTrust = trustedCertificates;
            return this;
        }

        /** Event-loop threads shared by every connection and listener of the transport. Default 1-2. */
        public Context ioThreads(int value) {
            ioThreads = value;
            return this;
        }

        /** Largest application message, in bytes. Default 512 MiB + 64 KiB. */
        public Context maxMessageLength(int value) {
            maxMessageLength = value;
            return this;
        }

        /** Use epoll when available (default true); false forces NIO. */
        public Context nativeTransport(boolean value) {
            nativeTransport = value;
            return this;
        }

        /**
         * On connections this transport makes (epoll, without TLS), a thread other than the event loop sends its
         * messages itself, one {@code send} on its own thread, whenever Netty holds none of the connection's bytes,
         * instead of handing them to the loop (which costs a wake-up of the loop per message). Default true;
         * {@code -Drdmastore.tcp.directWrites=false} hands every message to the loop.
         */
        public Context directWrites(boolean value) {
            directWrites = value;
            return this;
        }

        /**
         * On connections whose callers write directly ({@link #directWrites}), the threads waiting for replies read the
         * socket themselves ({@code Connection.awaitReading}) and a thread of the connection's own reads while none
         * does, instead of the event loop (which woke the loop and then the caller per reply). Default true;
         * {@code -Drdmastore.tcp.callerReads=false} leaves reading to the loop.
         */
        public Context callerReads(boolean value) {
            callerReads = value;
            return this;
        }

        /** TCP_NODELAY on accepted and connected sockets. Default true. */
        public Context tcpNoDelay(boolean value) {
            tcpNoDelay = value;
            return this;
        }

        /** SO_KEEPALIVE on accepted and connected sockets. Default true. */
        public Context keepAlive(boolean value) {
            keepAlive = value;
            return this;
        }

        /** SO_SNDBUF in bytes; 0 (default) leaves the operating system's choice. */
        public Context sendBufferSize(int value) {
            sendBufferSize = value;
            return this;
        }

        /** SO_RCVBUF in bytes; 0 (default) leaves the operating system's choice. */
        public Context receiveBufferSize(int value) {
            receiveBufferSize = value;
            return this;
        }

        /**
         * Back-pressure thresholds on a connection's queued outbound bytes: above {@code high}, {@code offer} returns
         * BACK_PRESSURED until the queue drains below {@code low}. Default 512 KiB / 2 MiB.
         */
        public Context writeBufferWaterMarks(int low, int high) {
            writeBufferLowWaterMark = low;
            writeBufferHighWaterMark = high;
            return this;
        }

        /** Listen backlog. Default 1024. */
        public Context backlog(int value) {
            backlog = value;
            return this;
        }

        /** How long an accepted connection may take to send its first 4 bytes. Default 10 s. */
        public Context prefaceTimeout(Duration value) {
            prefaceTimeout = value;
            return this;
        }

        /** Bytes per control frame of an emulated one-sided read or write. Default 1 MiB. */
        public Context oneSidedChunkLength(int value) {
            oneSidedChunkLength = value;
            return this;
        }

        /** Chunks of one one-sided operation in flight at once. Default 4. */
        public Context oneSidedWindow(int value) {
            oneSidedWindow = value;
            return this;
        }

        /**
         * Serves another protocol on the listener's port: an accepted connection whose first bytes are not the
         * preface has the provider's handler removed, then {@code installer} adds its own handlers with
         * {@code addLast}; they receive {@code channelActive} and then every byte already read. Null (default)
         * answers such connections with a one-line error and closes them. Called on the connection's event loop.
         */
        public Context foreignProtocol(Consumer<ChannelPipeline> installer) {
            foreignProtocol = installer;
            return this;
        }

        public int ioThreads() {
            return ioThreads;
        }

        public int maxMessageLength() {
            return maxMessageLength;
        }

        public boolean nativeTransport() {
            return nativeTransport;
        }

        public boolean directWrites() {
            return directWrites;
        }

        public boolean callerReads() {
            return callerReads;
        }

        public boolean tcpNoDelay() {
            return tcpNoDelay;
        }

        public boolean keepAlive() {
            return keepAlive;
        }

        public int sendBufferSize() {
            return sendBufferSize;
        }

        public int receiveBufferSize() {
            return receiveBufferSize;
        }

        public int writeBufferLowWaterMark() {
            return writeBufferLowWaterMark;
        }

        public int writeBufferHighWaterMark() {
            return writeBufferHighWaterMark;
        }

        public int backlog() {
            return backlog;
        }

        public Duration prefaceTimeout() {
            return prefaceTimeout;
        }

        public int oneSidedChunkLength() {
            return oneSidedChunkLength;
        }

        public int oneSidedWindow() {
            return oneSidedWindow;
        }

        public Consumer<ChannelPipeline> foreignProtocol() {
            return foreignProtocol;
        }

        /** A context from {@code java.util.Properties} keys {@code tlsCertificate, tlsKey, tls, tlsTrust}. */
        static Context from(java.util.Properties p) {
            Context c = new Context();
            if (p.getProperty("tlsCertificate") != null) {
                c.tlsServer(Path.of(p.getProperty("tlsCertificate")), Path.of(p.getProperty("tlsKey", "")));
            }
            if (Boolean.parseBoolean(p.getProperty("tls", "false")) || p.getProperty("tlsTrust") != null) {
                c.tlsClient(p.getProperty("tlsTrust") == null ? null : Path.of(p.getProperty("tlsTrust")));
            }
            return c;
        }

        /** Validates the values once; throws IllegalArgumentException naming the bad one. */
        Context conclude() {
            require(ioThreads >= 1 && ioThreads <= 256, "ioThreads must be 1..256: " + ioThreads);
            require(maxMessageLength >= 1 && maxMessageLength <= Integer.MAX_VALUE - FrameDescriptor.HEADER_LENGTH,
                "maxMessageLength must be 1.." + (Integer.MAX_VALUE - FrameDescriptor.HEADER_LENGTH) + ": "
                    + maxMessageLength);
            require(sendBufferSize >= 0 && receiveBufferSize >= 0, "socket buffer sizes must be >= 0");
            require(writeBufferLowWaterMark >= 0 && writeBufferHighWaterMark > 0
                    && writeBufferLowWaterMark <= writeBufferHighWaterMark,
                "write buffer water marks must satisfy 0 <= low <= high, high > 0: low " + writeBufferLowWaterMark
                    + ", high " + writeBufferHighWaterMark);
            require(backlog >= 1, "backlog must be >= 1: " + backlog);
            Objects.requireNonNull(prefaceTimeout, "prefaceTimeout");
            require(!prefaceTimeout.isNegative() && !prefaceTimeout.isZero(),
                "prefaceTimeout must be positive: " + prefaceTimeout);
            require(oneSidedChunkLength >= 1 && oneSidedChunkLength <= 64 * 1024 * 1024,
                "oneSidedChunkLength must be 1..64 MiB: " + oneSidedChunkLength);
            require(oneSidedWindow >= 1 && oneSidedWindow <= 1024, "oneSidedWindow must be 1..1024: "
                + oneSidedWindow);
            require(tlsCertificate == null || Files.isReadable(tlsCertificate) && tlsKey != null
                && Files.isReadable(tlsKey), "TLS certificate and key must be readable files: " + tlsCertificate
                + ", " + tlsKey);
            require(tlsTrust == null || Files.isReadable(tlsTrust), "TLS trust file is not readable: " + tlsTrust);
            return this;
        }

        private static void require(boolean ok, String message) {
            if (!ok) {
                throw new IllegalArgumentException(message);
            }
        }
    }

    /** A transport with default settings (see {@link Context}). */
    public TcpTransport() {
        this(new Context());
    }

    /**
     * A transport configured by keys: {@code tlsCertificate} and {@code tlsKey} (PEM paths: serve TLS), {@code tls}
     * (true: connect with TLS) and {@code tlsTrust} (PEM path of the certificates to trust; implies {@code tls}).
     */
    public TcpTransport(java.util.Properties settings) {
        this(Context.from(settings));
    }

    /** A transport configured by {@code ctx}, which is validated here and must not be changed afterwards. */
    public TcpTransport(Context ctx) {
        this.ctx = ctx.conclude();
        this.epoll = ctx.nativeTransport() && Epoll.isAvailable();
        try {
            this.serverTls = ctx.tlsCertificate == null ? null
                : SslContextBuilder.forServer(ctx.tlsCertificate.toFile(), ctx.tlsKey.toFile()).build();
            SslContextBuilder client = SslContextBuilder.forClient();
            if (ctx.tlsTrust != null) {
                client.trustManager(ctx.tlsTrust.toFile());
            }
            this.clientTls = ctx.tlsClient ? client.endpointIdentificationAlgorithm("HTTPS").build() : null;
        } catch (javax.net.ssl.SSLException | RuntimeException e) {
            throw new IllegalArgumentException("cannot set up TLS: " + e.getMessage(), e);
        }
    }

    /** Whether accepted connections speak TLS. */
    public boolean servesTls() {
        return serverTls != null;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public boolean isAvailable() {
        return true;
    }

    @Override
    public Throwable unavailabilityCause() {
        return null;
    }

    /** The I/O flavour in use: {@code "epoll"} or {@code "nio"}. */
    public String flavor() {
        return epoll ? "epoll" : "nio";
    }

    /** This transport's configuration. */
    public Context context() {
        return ctx;
    }

    @Override
    public Listener listen(InetSocketAddress bind, ConnectionHandler handler) {
        Objects.requireNonNull(bind, "bind");
        Objects.requireNonNull(handler, "handler");
        EventLoopGroup g = group();
        ServerBootstrap b = new ServerBootstrap()
            .group(g)
            .channel(epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class)
            .option(ChannelOption.SO_BACKLOG, ctx.backlog())
            .option(ChannelOption.SO_REUSEADDR, true)
            .childHandler(new ChannelInitializer<Channel>() {
                @Override
                protected void initChannel(Channel ch) {
                    if (serverTls != null) {
                        ch.pipeline().addLast(TLS_HANDLER, serverTls.newHandler(ch.alloc()));
                    }
                    ch.pipeline().addLast(FrameHandler.NAME, new FrameHandler(TcpTransport.this, null, handler));
                }
            });
        applyChildOptions(b);
        ChannelFuture f = b.bind(bind).awaitUninterruptibly();
        if (!f.isSuccess()) {
            throw new TransportException("cannot listen on " + bind + ": " + f.cause(), f.cause());
        }
        ServerChannel ch = (ServerChannel) f.channel();
        TcpListener listener = new TcpListener(ch);
        LOG.info("tcp ({}) listening on {}{}", flavor(), TcpConnection.format(listener.localAddress()),
            ctx.foreignProtocol() != null ? " (native protocol and a foreign protocol on one port)" : "");
        return listener;
    }

    @Override
    public Connection connect(InetSocketAddress address, MessageHandler handler, Duration timeout) {
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(handler, "handler");
        Objects.requireNonNull(timeout, "timeout");
        long millis = Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        EventLoopGroup g = group();
        AtomicReference<TcpConnection> made = new AtomicReference<>();
        Bootstrap b = new Bootstrap()
            .group(g)
            .channel(epoll ? EpollSocketChannel.class : NioSocketChannel.class)
            .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) millis)
            .handler(new ChannelInitializer<Channel>() {
                @Override
                protected void initChannel(Channel ch) {
                    TcpConnection c = new TcpConnection(TcpTransport.this, ch, handler,
                        epoll && ctx.directWrites() && clientTls == null);
                    made.set(c);
                    if (clientTls != null) {
                        ch.pipeline().addLast(TLS_HANDLER, clientTls.newHandler(ch.alloc(), address.getHostString(),
                            address.getPort()));
                    }
                    ch.pipeline().addLast(FrameHandler.NAME, new FrameHandler(TcpTransport.this, c, null));
                }
            });
        applyOptions(b);
        ChannelFuture f = b.connect(address);
        boolean done = f.awaitUninterruptibly(millis + 1000, TimeUnit.MILLISECONDS);
        if (!done || !f.isSuccess()) {
            f.channel().close();
            Throwable cause = done ? f.cause() : null;
            throw new TransportException("cannot connect to " + address + " over tcp: "
                + (cause != null ? cause.toString() : "timed out after " + millis + " ms"), cause);
        }
        TcpConnection c = made.get();
        if (c == null) {
            f.channel().close();
            throw new TransportException("cannot connect to " + address + ": channel was not initialised");
        }
        LOG.debug("connected: {}", c.describe());
        return c;
    }

    private void applyChildOptions(ServerBootstrap b) {
        b.childOption(ChannelOption.TCP_NODELAY, ctx.tcpNoDelay())
            .childOption(ChannelOption.SO_KEEPALIVE, ctx.keepAlive())
            .childOption(ChannelOption.ALLOCATOR, PooledByteBufAllocator.DEFAULT)
            .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK,
                new WriteBufferWaterMark(ctx.writeBufferLowWaterMark(), ctx.writeBufferHighWaterMark()));
        if (ctx.sendBufferSize() > 0) {
            b.childOption(ChannelOption.SO_SNDBUF, ctx.sendBufferSize());
        }
        if (ctx.receiveBufferSize() > 0) {
            b.childOption(ChannelOption.SO_RCVBUF, ctx.receiveBufferSize());
        }
    }

    private void applyOptions(Bootstrap b) {
        b.option(ChannelOption.TCP_NODELAY, ctx.tcpNoDelay())
            .option(ChannelOption.SO_KEEPALIVE, ctx.keepAlive())
            .option(ChannelOption.ALLOCATOR, PooledByteBufAllocator.DEFAULT)
            .option(ChannelOption.WRITE_BUFFER_WATER_MARK,
                new WriteBufferWaterMark(ctx.writeBufferLowWaterMark(), ctx.writeBufferHighWaterMark()));
        if (ctx.sendBufferSize() > 0) {
            b.option(ChannelOption.SO_SNDBUF, ctx.sendBufferSize());
        }
        if (ctx.receiveBufferSize() > 0) {
            b.option(ChannelOption.SO_RCVBUF, ctx.receiveBufferSize());
        }
    }

    private EventLoopGroup group() {
        synchronized (lock) {
            if (closed) {
                throw new TransportException("tcp transport is closed");
            }
            if (group == null) {
                DefaultThreadFactory tf = new DefaultThreadFactory("rdmastore-tcp", true);
                group = epoll ? new EpollEventLoopGroup(ctx.ioThreads(), tf)
                    : new NioEventLoopGroup(ctx.ioThreads(), tf);
                LOG.info("tcp transport started: {} with {} I/O thread(s)", flavor(), ctx.ioThreads());
            }
            return group;
        }
    }

    /** Closes every connection and listener of this transport and stops its threads, waiting up to 5 s. */
    @Override
    public void close() {
        EventLoopGroup g;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            g = group;
        }
        if (g != null) {
            g.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
            LOG.info("tcp transport ({}) stopped", flavor());
        }
    }
}
