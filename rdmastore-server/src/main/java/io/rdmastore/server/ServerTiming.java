package io.rdmastore.server;

import io.rdmastore.client.protocol.ProtocolDescriptor;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Paper 000's server-side breakdown of a request, per opcode: Source (from the transport handing over the message to
 * the start of the store operation: header and body decoding), Process (the store operation), Sink (building the reply
 * and handing it to the transport). Only created when {@link ServerConfig#timing(boolean)} is on, so a server without
 * it reads no clock and touches none of these counters.
 *
 * <p>Threads: {@link #record} is called by every transport thread at once; each opcode's count and three sums are
 * independent atomic adds (no lock, no allocation). {@link #snapshot()} may run on any thread and reads the sums
 * without stopping writers, so one opcode's figures may be off by the requests in flight while it reads.
 */
final class ServerTiming {
    private static final int OPCODES = 256;
    private static final int COUNT = 0;
    private static final int SOURCE = 1;
    private static final int PROCESS = 2;
    private static final int SINK = 3;
    /** Slots of one opcode span their own cache lines, so threads serving different opcodes do not share a line. */
    private static final int STRIDE = 8;

    private final AtomicLongArray sums = new AtomicLongArray(OPCODES * STRIDE);

    /**
     * Records one request.
     *
     * @param opcode the request's opcode byte (0..255)
     * @param sourceNanos decoding time before the store operation
     * @param processNanos the store operation
     * @param sinkNanos reply encoding and the transport's offer
     */
    void record(int opcode, long sourceNanos, long processNanos, long sinkNanos) {
        int base = (opcode & 0xFF) * STRIDE;
        sums.getAndIncrement(base + COUNT);
        sums.getAndAdd(base + SOURCE, sourceNanos);
        sums.getAndAdd(base + PROCESS, processNanos);
        sums.getAndAdd(base + SINK, sinkNanos);
    }

    /**
     * Adds time to a request already recorded, for work that finished after its handler returned (SET_LARGE's
     * one-sided read and store write, and its deferred reply). Any thread.
     */
    void addLater(int opcode, long processNanos, long sinkNanos) {
        int base = (opcode & 0xFF) * STRIDE;
        sums.getAndAdd(base + PROCESS, processNanos);
        sums.getAndAdd(base + SINK, sinkNanos);
    }

    /**
     * The sums since start, for INFO's {@code Timing} section: for every opcode seen, {@code <op>_count},
     * {@code <op>_source_ns}, {@code <op>_process_ns} and {@code <op>_sink_ns} (sums of nanoseconds; callers take the
     * difference of two snapshots and divide by the count difference). {@code <op>} is the lower-case opcode name.
     */
    Map<String, String> snapshot() {
        Map<String, String> out = new LinkedHashMap<>();
        for (int op = 0; op < OPCODES; op++) {
            int base = op * STRIDE;
            long n = sums.get(base + COUNT);
            if (n == 0) {
                continue;
            }
            String name = ProtocolDescriptor.opcodeName(op).toLowerCase(Locale.ROOT);
            out.put(name + "_count", Long.toString(n));
            out.put(name + "_source_ns", Long.toString(sums.get(base + SOURCE)));
            out.put(name + "_process_ns", Long.toString(sums.get(base + PROCESS)));
            out.put(name + "_sink_ns", Long.toString(sums.get(base + SINK)));
        }
        return out;
    }
}
