package io.rdmastore.store;

/**
 * Groups the log writes that {@link FsyncPolicy#EVERYSEC} owes before replies, as Redis writes its AOF once per event
 * loop turn: between {@link #begin()} and {@link #end()} on one thread, every write of every {@link Store} records how
 * far its log must be handed to the OS instead of making the {@code write(2)} at once; {@link #end()} (or
 * {@link #flush()} mid-batch) makes one {@code write} per log for the whole batch. A network face calls {@code begin}
 * before it runs a read's worth of pipelined commands and {@code flush} before any reply of the batch leaves, so no
 * reply is sent before its write reached the OS. Without a batch a write is handed to the OS before it returns.
 *
 * <p>Threads: the state is per thread; begin, flush and end must be called on the thread that runs the commands.
 */
public final class WriteBatch {
    /** One per thread, reused: opening a batch allocates nothing. */
    private static final ThreadLocal<WriteBatch> CURRENT = ThreadLocal.withInitial(WriteBatch::new);

    private boolean open;

    private LogWriter log;
    private long ticket;
    private LogWriter otherLog;
    private long otherTicket;

    private WriteBatch() {
    }

    /** Opens a batch on this thread (idempotent while one is open). */
    public static void begin() {
        CURRENT.get().open = true;
    }

    /** Hands to the OS what the batch's writes so far owe; the batch stays open. Call before a reply leaves. */
    public static void flush() {
        WriteBatch b = CURRENT.get();
        if (b.open) {
            b.writeOut();
        }
    }

    /** Flushes and closes the batch of this thread; nothing when none is open. */
    public static void end() {
        WriteBatch b = CURRENT.get();
        if (b.open) {
            b.open = false;
            b.writeOut();
        }
    }

    /** Store side: records {@code ticket} of {@code writer} in this thread's batch; false when no batch is open. */
    static boolean defer(LogWriter writer, long ticket) {
        WriteBatch b = CURRENT.get();
        if (!b.open) {
            return false;
        }
        if (b.log == null || b.log == writer) {
            b.log = writer;
            b.ticket = Math.max(b.ticket, ticket);
        } else if (b.otherLog == null || b.otherLog == writer) {
            b.otherLog = writer;
            b.otherTicket = Math.max(b.otherTicket, ticket);
        } else {
            // a third store in one batch: rare (tests); write it now
            return false;
        }
        return true;
    }

    private void writeOut() {
        if (log != null) {
            LogWriter l = log;
            long t = ticket;
            log = null;
            ticket = 0;
            l.writeTo(t);
        }
        if (otherLog != null) {
            LogWriter l = otherLog;
            long t = otherTicket;
            otherLog = null;
            otherTicket = 0;
            l.writeTo(t);
        }
    }
}
