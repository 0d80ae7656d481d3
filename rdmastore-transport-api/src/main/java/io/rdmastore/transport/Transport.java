package io.rdmastore.transport;

/**
 * One transport provider (tcp, ucx). Each provider has an availability probe in the style of Netty's
 * {@code Epoll.isAvailable()}: a provider that cannot work here says why, and callers fall back instead of crashing.
 *
 * <p>Threads: every method may be called from any thread. {@link #close()} releases native resources and must be
 * called once, after every connection and listener of this provider is closed.
 */
public interface Transport extends AutoCloseable {

    /** Short stable name used in HELLO, configuration and logs: {@code "tcp"}, {@code "ucx"}. */
    String name();

    /** Whether this provider can be used in this process. */
    boolean isAvailable();

    /** Why {@link #isAvailable()} is false; {@code null} when it is available. */
    Throwable unavailabilityCause();

    /**
     * Does one duty cycle of work for transports driven by the caller ("invoker mode") and returns the amount of work
     * done. Providers with their own threads return 0. Only the single thread that owns an invoker-mode transport may
     * call it.
     */
    default int doWork() {
        return 0;
    }

    /**
     * A hint from a thread that waits for a reply: {@code true} when it starts calling {@link #doWork()} in a loop
     * while it waits, {@code false} when it stops (to block until the reply is delivered, or because its wait is
     * over). Calls are paired per thread. A provider whose own thread sleeps between messages may then leave peers'
     * messages to the polling thread instead of being woken for each, and must be woken again once no thread polls
     * (at once when a thread blocks for its reply; see {@link #waiting}). Default: nothing.
     */
    default void polling(boolean active) {
    }

    /**
     * A hint from a thread that waits for a reply: {@code true} when it starts waiting (polling or blocked),
     * {@code false} when its wait is over (before its last {@code polling(false)}, when it polls). Calls are paired
     * per thread. A provider may then tell a thread that got its reply and goes on to its next request (it polls
     * again in a moment) from one that blocks for a late reply (someone else must deliver it), and need not be woken
     * between a caller's requests. Default: nothing.
     */
    default void waiting(boolean active) {
    }

    /**
     * A hint from a thread that sent a request whose reply it will not wait for by {@link #waiting} (an asynchronous
     * call): the provider must deliver that reply by itself, so it should not sleep unrung on callers' polling now.
     * Default: nothing.
     */
    default void sentUnawaited() {
    }

    @Override
    void close();
}
