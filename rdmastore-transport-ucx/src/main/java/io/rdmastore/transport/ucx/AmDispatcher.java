package io.rdmastore.transport.ucx;

import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucs.UcsConstants;

import java.util.HashMap;
import java.util.Map;

/**
 * Routes UCX active messages to connections by the id in their header ({@code [connection id:8][sequence:8]}).
 * Driver thread only.
 */
final class AmDispatcher {
    static final int AM_ID = 7;
    static final int HEADER = 16;
    private final Map<Long, UcxAmConnection> byId = new HashMap<>();

    AmDispatcher(UcxTransport transport, UcpWorker worker) {
        worker.setAmRecvHandler(AM_ID, (headerAddress, headerSize, data, replyEp) -> {
            if (headerSize != HEADER) {
                return UcsConstants.STATUS.UCS_OK;
            }
            long id = org.agrona.UnsafeAccess.UNSAFE.getLong(headerAddress);
            long seq = org.agrona.UnsafeAccess.UNSAFE.getLong(headerAddress + 8);
            UcxAmConnection c = byId.get(id);
            if (c == null) {
                return UcsConstants.STATUS.UCS_OK;
            }
            return c.onAm(seq, data);
        });
    }

    void add(long id, UcxAmConnection c) {
        byId.put(id, c);
    }

    void remove(long id) {
        byId.remove(id);
    }
}
