package io.rdmastore.bench.ycsb;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisException;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.Vector;

/**
 * A small YCSB binding for redis-server on Jedis ({@code -db io.rdmastore.bench.ycsb.YcsbRedisDb}), because YCSB's own
 * Redis binding is not on Maven Central. Records are hashes exactly as in {@link YcsbRdmaStoreDb}, so both stores do the
 * same work per operation (HGETALL / HMGET, HSET, DEL). Properties: {@code redis.host} (default 127.0.0.1),
 * {@code redis.port} (default 6379). Scans are left unsupported, as for rdmastore, so the workloads compared match
 * (YCSB's Redis binding emulates them with a sorted-set index that rdmastore has no equivalent of).
 *
 * <p>Threads: one instance per YCSB client thread, each with its own connection, called from that thread only.
 */
public final class YcsbRedisDb extends DB {
    private static final Status SCAN_STATUS = new Status("NOT_IMPLEMENTED",
        "scans are not compared: rdmastore has no ordered ranges");

    private Jedis jedis;

    @Override
    public void init() throws DBException {
        String host = getProperties().getProperty("redis.host", "127.0.0.1");
        int port = Integer.parseInt(getProperties().getProperty("redis.port", "6379"));
        try {
            jedis = new Jedis(host, port, 30_000);
            jedis.ping();
        } catch (JedisException e) {
            throw new DBException("cannot connect to redis-server at " + host + ":" + port + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void cleanup() {
        if (jedis != null) {
            jedis.close();
        }
    }

    @Override
    public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
        try {
            byte[] k = utf8(key);
            if (fields == null) {
                Map<byte[], byte[]> all = jedis.hgetAll(k);
                if (all.isEmpty()) {
                    return Status.NOT_FOUND;
                }
                for (Map.Entry<byte[], byte[]> e : all.entrySet()) {
                    result.put(new String(e.getKey(), StandardCharsets.UTF_8), new ByteArrayByteIterator(e.getValue()));
                }
                return Status.OK;
            }
            byte[][] fs = new byte[fields.size()][];
            int i = 0;
            for (String f : fields) {
                fs[i++] = utf8(f);
            }
            List<byte[]> values = jedis.hmget(k, fs);
            Iterator<String> names = fields.iterator();
            for (byte[] v : values) {
                if (v == null) {
                    return Status.NOT_FOUND;
                }
                result.put(names.next(), new ByteArrayByteIterator(v));
            }
            return Status.OK;
        } catch (JedisException e) {
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
        Map<byte[], byte[]> hash = new HashMap<>(values.size() * 2);
        for (Map.Entry<String, ByteIterator> e : values.entrySet()) {
            hash.put(utf8(e.getKey()), e.getValue().toArray());
        }
        try {
            jedis.hset(utf8(key), hash);
            return Status.OK;
        } catch (JedisException e) {
            return Status.ERROR;
        }
    }

    @Override
    public Status delete(String table, String key) {
        try {
            return jedis.del(utf8(key)) == 1 ? Status.OK : Status.NOT_FOUND;
        } catch (JedisException e) {
            return Status.ERROR;
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
