package io.rdmastore.bench.ycsb;

import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreException;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.Vector;

/**
 * The YCSB binding for rdmastore's native client ({@code -db io.rdmastore.bench.ycsb.YcsbRdmaStoreDb}). A record is a
 * hash: key = YCSB key, one hash field per YCSB field; the YCSB table name is not part of the key (one table per run,
 * as YCSB's Redis binding does). Properties: {@code rdmastore.uri} (required), {@code rdmastore.transport} (optional:
 * when set, {@link #init} fails unless the connection really runs on that transport, so a ucx run cannot silently
 * measure tcp).
 *
 * <p>Scan: not supported. rdmastore shards its keyspace by hash and keeps no ordered index, so YCSB workload E (short
 * ranges) cannot run; {@link #scan} returns {@link Status#NOT_IMPLEMENTED} with that reason.
 *
 * <p>Threads: YCSB creates one instance per client thread and calls it from that thread only; each instance owns one
 * connection. Memory: arguments are copied by the client; results are fresh arrays owned by YCSB.
 */
public final class YcsbRdmaStoreDb extends DB {
    /** Why workload E is skipped, printed by the benchmark. */
    public static final String SCAN_UNSUPPORTED = "rdmastore shards keys by hash and keeps no ordered index, so YCSB"
        + " scans (workload E) are unsupported";

    private static final Status SCAN_STATUS = new Status("NOT_IMPLEMENTED", SCAN_UNSUPPORTED);

    private RdmaStoreClient client;

    @Override
    public void init() throws DBException {
        String uri = getProperties().getProperty("rdmastore.uri");
        if (uri == null) {
            throw new DBException("property rdmastore.uri is required, e.g. -p rdmastore.uri=rdmastore://127.0.0.1:7379");
        }
        try {
            client = RdmaStoreClient.connect(uri);
        } catch (RuntimeException e) {
            throw new DBException("cannot connect to " + uri + ": " + e.getMessage(), e);
        }
        String expected = getProperties().getProperty("rdmastore.transport");
        if (expected != null && !expected.equals(client.transport())) {
            String actual = client.transport() + " (" + client.transportReason() + ")";
            client.close();
            throw new DBException("asked for transport " + expected + " but the connection runs on " + actual);
        }
    }

    @Override
    public void cleanup() {
        if (client != null) {
            client.close();
        }
    }

    @Override
    public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
        try {
            byte[] k = utf8(key);
            if (fields == null) {
                List<byte[]> fv = client.hgetAll(k);
                if (fv.isEmpty()) {
                    return Status.NOT_FOUND;
                }
                for (int i = 0; i < fv.size(); i += 2) {
                    result.put(new String(fv.get(i), StandardCharsets.UTF_8), new ByteArrayByteIterator(fv.get(i + 1)));
                }
                return Status.OK;
            }
            for (String f : fields) {
                byte[] v = client.hget(k, utf8(f));
                if (v == null) {
                    return Status.NOT_FOUND;
                }
                result.put(f, new ByteArrayByteIterator(v));
            }
            return Status.OK;
        } catch (RdmaStoreException e) {
            return Status.ERROR;
        }
    }

    @Override
    public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                       Vector<HashMap<String, ByteIterator>> result) {
        return SCAN_STATUS;
    }

    @Override
    public Status update(String table, String key, Map<String, ByteIterator> values) {
        return write(key, values);
    }

    @Override
    public Status insert(String table, String key, Map<String, ByteIterator> values) {
        return write(key, values);
    }

    private Status write(String key, Map<String, ByteIterator> values) {
        if (values.isEmpty()) {
            return Status.BAD_REQUEST;
        }
        List<byte[]> fv = new ArrayList<>(values.size() * 2);
        for (Map.Entry<String, ByteIterator> e : values.entrySet()) {
            fv.add(utf8(e.getKey()));
            fv.add(e.getValue().toArray());
        }
        try {
            client.hset(utf8(key), fv);
            return Status.OK;
        } catch (RdmaStoreException e) {
            return Status.ERROR;
        }
    }

    @Override
    public Status delete(String table, String key) {
        try {
            return client.del(utf8(key)) == 1 ? Status.OK : Status.NOT_FOUND;
        } catch (RdmaStoreException e) {
            return Status.ERROR;
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
