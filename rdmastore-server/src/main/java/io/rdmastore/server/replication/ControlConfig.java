package io.rdmastore.server.replication;

import java.time.Duration;
import java.util.Objects;

/**
 * Settings of the replica set's {@link ControlPlane}, with fluent setters and typed defaults, validated once by
 * {@link #conclude()} when the control plane starts. Every setter names its default; docs/replication.md says why.
 *
 * <p>Threads: configure on one thread, then hand to {@link ControlPlane#start}; it is not changed afterwards.
 */
public final class ControlConfig {
    private Duration electionTimeoutMin = Duration.ofMillis(150);
    private Duration electionTimeoutMax = Duration.ofMillis(300);
    private Duration rpcRequestTimeout = Duration.ofSeconds(1);
    private Duration leaderStepDownWait = Duration.ofSeconds(1);
    private Duration pauseShutdownThreshold = Duration.ofDays(1);
    private Duration viewPollInterval = Duration.ofMillis(20);
    private Duration adminTimeout = Duration.ofSeconds(15);
    private boolean concluded;

    /**
     * Shortest election timeout; default 150 ms. A follower that hears nothing from a leader for a random time between
     * this and {@link #electionTimeoutMax} campaigns. Ratis sends heartbeats every half of this.
     */
    public ControlConfig electionTimeoutMin(Duration value) {
        electionTimeoutMin = value;
        return this;
    }

    /**
     * Longest election timeout; default 300 ms. It is also how long a leader goes without hearing from a majority
     * before it steps down by itself (Ratis's leadership check), so it bounds how long a cut-off leader believes it
     * leads: at most twice this after its last majority heartbeat.
     */
    public ControlConfig electionTimeoutMax(Duration value) {
        electionTimeoutMax = value;
        return this;
    }

    /** Time-out of one Ratis RPC between members (append, vote); default 1 s; must exceed the election maximum. */
    public ControlConfig rpcRequestTimeout(Duration value) {
        rpcRequestTimeout = value;
        return this;
    }

    /**
     * Ratis's {@code leader.step-down.wait-time}; default 1 s (Ratis: 10 s). Two uses: a leader whose JVM was
     * paused (GC, SIGSTOP) longer than this steps down as soon as it runs again; a member that stepped down for
     * lost heartbeats waits this long before it campaigns, so it does not disrupt the members that replaced it.
     */
    public ControlConfig leaderStepDownWait(Duration value) {
        leaderStepDownWait = value;
        return this;
    }

    /**
     * Ratis's {@code close.threshold}: a JVM pause longer than this makes Ratis shut the member's server down for
     * good. Default 1 day (Ratis: 60 s), because nothing here would restart it; a paused leader steps down anyway.
     */
    public ControlConfig pauseShutdownThreshold(Duration value) {
        pauseShutdownThreshold = value;
        return this;
    }

    /**
     * How often the control plane re-reads Ratis's view of leader and term; default 20 ms. Ratis notifies a new leader
     * at once but not "leader unknown" nor every step-down; this poll catches those.
     */
    public ControlConfig viewPollInterval(Duration value) {
        viewPollInterval = value;
        return this;
    }

    /** Longest time a membership change or primary announcement may take before its future fails; default 15 s. */
    public ControlConfig adminTimeout(Duration value) {
        adminTimeout = value;
        return this;
    }

    public Duration electionTimeoutMin() {
        return electionTimeoutMin;
    }

    public Duration electionTimeoutMax() {
        return electionTimeoutMax;
    }

    public Duration rpcRequestTimeout() {
        return rpcRequestTimeout;
    }

    public Duration leaderStepDownWait() {
        return leaderStepDownWait;
    }

    public Duration pauseShutdownThreshold() {
        return pauseShutdownThreshold;
    }

    public Duration viewPollInterval() {
        return viewPollInterval;
    }

    public Duration adminTimeout() {
        return adminTimeout;
    }

    /** Validates the settings once; called by {@link ControlPlane#start}. Returns this. */
    public ControlConfig conclude() {
        if (concluded) {
            return this;
        }
        positive(electionTimeoutMin, "electionTimeoutMin");
        positive(electionTimeoutMax, "electionTimeoutMax");
        positive(rpcRequestTimeout, "rpcRequestTimeout");
        positive(leaderStepDownWait, "leaderStepDownWait");
        positive(pauseShutdownThreshold, "pauseShutdownThreshold");
        positive(viewPollInterval, "viewPollInterval");
        positive(adminTimeout, "adminTimeout");
        if (electionTimeoutMax.compareTo(electionTimeoutMin) <= 0) {
            throw new IllegalArgumentException("electionTimeoutMax (" + electionTimeoutMax
                + ") must exceed electionTimeoutMin (" + electionTimeoutMin + ")");
        }
        if (rpcRequestTimeout.compareTo(electionTimeoutMax) <= 0) {
            throw new IllegalArgumentException("rpcRequestTimeout (" + rpcRequestTimeout
                + ") must exceed electionTimeoutMax (" + electionTimeoutMax + ")");
        }
        if (pauseShutdownThreshold.compareTo(leaderStepDownWait) <= 0) {
            throw new IllegalArgumentException("pauseShutdownThreshold (" + pauseShutdownThreshold
                + ") must exceed leaderStepDownWait (" + leaderStepDownWait + ")");
        }
        concluded = true;
        return this;
    }

    private static void positive(Duration value, String name) {
        Objects.requireNonNull(value, name);
        if (value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(name + " must be positive: " + value);
        }
    }

    @Override
    public String toString() {
        return "ControlConfig{election=" + electionTimeoutMin.toMillis() + "-" + electionTimeoutMax.toMillis()
            + "ms, rpcRequestTimeout=" + rpcRequestTimeout.toMillis() + "ms, leaderStepDownWait="
            + leaderStepDownWait.toMillis() + "ms, viewPollInterval=" + viewPollInterval.toMillis()
            + "ms, adminTimeout=" + adminTimeout.toMillis() + "ms}";
    }
}
