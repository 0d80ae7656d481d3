package io.rdmastore.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.util.concurrent.ScheduledFuture;
import io.rdmastore.transport.CarrierTransport;
import io.rdmastore.transport.ConnectionHandler;
import io.rdmastore.transport.MessageHandler;
import io.rdmastore.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The provider's only channel handler: on an accepted connection it first checks the preface (handing foreign
 * protocols to their installer), then splits frames and dispatches them to the {@link TcpConnection}. The connecting
 * side starts directly with frames and sends the preface when the channel becomes active.
 *
 * <p>Threads: the channel's event loop only. Not sharable.
 */
final class FrameHandler extends ByteToMessageDecoder {
    static final String NAME = "rdmastore-frames";

    private static final Logger LOG = LoggerFactory.getLogger(FrameHandler.class);

    private enum State { PREFACE, FRAMES, DISCARD }

    private final TcpTransport transport;
    private final ConnectionHandler acceptor;
    private TcpConnection connection;
    private State state;
    private ScheduledFuture<?> prefaceTimer;

    /** Either {@code connection} (connecting side) or {@code acceptor} (accepted side) is non-null. */
    FrameHandler(TcpTransport transport, TcpConnection connection, ConnectionHandler acceptor) {
        this.transport = transport;
        this.connection = connection;
        this.acceptor = acceptor;
        this.state = connection != null ? State.FRAMES : State.PREFACE;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        if (state == State.FRAMES) {
            ByteBuf preface = ctx.alloc().directBuffer(4).writeInt(CarrierTransport.PREFACE);
            ctx.writeAndFlush(preface, ctx.voidPromise());
            connection.prefaceWritten();
        } else if (state == State.PREFACE) {
            long millis = transport.context().prefaceTimeout().toMillis();
            prefaceTimer = ctx.executor().schedule(() -> {
                if (state == State.PREFACE) {
                    LOG.info("{}: no preface within {} ms, closing", remote(ctx), millis);
                    state = State.DISCARD;
                    ctx.close();
                }
            }, millis, TimeUnit.MILLISECONDS);
        }
        super.channelActive(ctx);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        TcpConnection c = connection;
        if (c != null) {
            c.readStarted();
        }
        super.channelRead(ctx, msg);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) throws Exception {
        super.channelReadComplete(ctx);
        TcpConnection c = connection;
        if (c != null) {
            c.readComplete();
        }
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        switch (state) {
            case PREFACE -> preface(ctx, in);
            case FRAMES -> frame(in);
            case DISCARD -> in.skipBytes(in.readableBytes());
        }
    }

    private void preface(ChannelHandlerContext ctx, ByteBuf in) {
        int have = Math.min(4, in.readableBytes());
        int at = in.readerIndex();
        for (int i = 0; i < have; i++) {
            if (in.getByte(at + i) != FrameDescriptor.prefaceByte(i)) {
                foreign(ctx, in);
                return;
            }
        }
        if (have < 4) {
            return;
        }
        in.skipBytes(4);
        cancelTimer();
        TcpConnection c = new TcpConnection(transport, ctx.channel(), null);
        MessageHandler h;
        try {
            h = acceptor.onConnection(c);
        } catch (RuntimeException e) {
            LOG.warn("{}: connection handler refused the connection: {}", remote(ctx), e.toString());
            state = State.DISCARD;
            in.skipBytes(in.readableBytes());
            ctx.close();
            return;
        }
        if (h == null) {
            LOG.warn("{}: connection handler returned no message handler, closing", remote(ctx));
            state = State.DISCARD;
            in.skipBytes(in.readableBytes());
            ctx.close();
            return;
        }
        c.handler(h);
        connection = c;
        c.readStarted();
        state = State.FRAMES;
    }

    private void foreign(ChannelHandlerContext ctx, ByteBuf in) {
        cancelTimer();
        Consumer<ChannelPipeline> installer = transport.context().foreignProtocol();
        if (installer == null) {
            LOG.info("{}: not an rdmastore native connection (bad preface), closing", remote(ctx));
            state = State.DISCARD;
            in.skipBytes(in.readableBytes());
            ctx.writeAndFlush(Unpooled.wrappedBuffer(FrameDescriptor.BAD_PREFACE_REPLY))
                .addListener(ChannelFutureListener.CLOSE);
            return;
        }
        state = State.DISCARD;
        ChannelPipeline p = ctx.pipeline();
        try {
            installer.accept(p);
        } catch (RuntimeException e) {
            LOG.warn("{}: foreign protocol installer failed, closing", remote(ctx), e);
            in.skipBytes(in.readableBytes());
            ctx.close();
            return;
        }
        LOG.debug("{}: foreign protocol", remote(ctx));
        ctx.fireChannelActive();
        // Removing a ByteToMessageDecoder passes the bytes it has not consumed to the next handler.
        p.remove(this);
    }

    private void frame(ByteBuf in) {
        if (connection.readsOnCallers()) {
            // The loop reads such a connection only on a socket error (EPOLLERR, e.g. a reset): what it read joins
            // the callers' bytes, delivered in order under their lock.
            if (!connection.readByLoop(in)) {
                state = State.DISCARD;
            }
            return;
        }
        if (connection.nextFrame(in) < 0) {
            state = State.DISCARD;
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        cancelTimer();
        try {
            super.channelInactive(ctx);
        } finally {
            TcpConnection c = connection;
            if (c != null) {
                c.onInactive();
            }
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        TcpConnection c = connection;
        LOG.debug("{}: closing after {}", remote(ctx), cause.toString());
        if (c != null) {
            c.failure(new TransportException("connection failed: " + cause, cause));
        } else {
            ctx.close();
        }
    }

    private void cancelTimer() {
        if (prefaceTimer != null) {
            prefaceTimer.cancel(false);
            prefaceTimer = null;
        }
    }

    private static String remote(ChannelHandlerContext ctx) {
        return TcpConnection.format((InetSocketAddress) ctx.channel().remoteAddress());
    }
}
