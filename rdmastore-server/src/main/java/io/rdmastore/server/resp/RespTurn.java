package io.rdmastore.server.resp;

import io.rdmastore.store.WriteBatch;
import io.netty.util.concurrent.EventExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;

/**
 * The end of an event loop's turn, as Redis's {@code beforeSleep}: the commands of every client that was readable in
 * this turn ran with one {@link WriteBatch} open; when the loop has read them all, one task hands the log to the OS in
 * one {@code write(2)} and then flushes each of those clients' replies. So 32 clients each sending one command cost
 * one log write per turn, not one per client, and no reply leaves before the write it depends on.
 *
 * <p>The task is queued from the event loop itself (no wake-up) and runs after the loop has processed the turn's
 * ready channels. Threads: one instance per event loop thread, used only on it.
 */
final class RespTurn implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(RespTurn.class);
    private static final ThreadLocal<RespTurn> CURRENT = ThreadLocal.withInitial(RespTurn::new);

    private final List<RespConnection> pending = new ArrayList<>();
    private boolean scheduled;

    private RespTurn() {
    }

    /** Event loop: {@code c}'s replies are flushed at the end of this turn, after the turn's log write. */
    static void defer(RespConnection c, EventExecutor loop) {
        RespTurn t = CURRENT.get();
        if (!c.inTurn) {
            c.inTurn = true;
            t.pending.add(c);
        }
        if (!t.scheduled) {
            t.scheduled = true;
            loop.execute(t);
        }
    }

    @Override
    public void run() {
        scheduled = false;
        boolean written;
        try {
            WriteBatch.end();
            written = true;
        } catch (RuntimeException e) {
            LOG.warn("RESP: the log write of an event loop turn failed ({}); closing its {} client(s) without their"
                + " replies", e.toString(), pending.size());
            written = false;
        }
        for (int i = 0; i < pending.size(); i++) {
            RespConnection c = pending.get(i);
            c.inTurn = false;
            c.endTurn(written);
        }
        pending.clear();
    }
}
