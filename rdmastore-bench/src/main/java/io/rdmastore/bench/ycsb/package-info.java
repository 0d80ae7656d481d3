/**
 * YCSB bindings (site.ycsb:core 0.17.0) so YCSB's own {@code site.ycsb.Client} and core workloads run against
 * rdmastore's native client and against redis-server through Jedis, in the same run: records are hashes (one field per
 * YCSB field), and scans are unsupported because rdmastore's keyspace is hash-sharded with no ordered ranges.
 * {@link io.rdmastore.bench.ycsb.YcsbChildMain} runs the YCSB client in its own JVM and reports that JVM's CPU seconds.
 */
package io.rdmastore.bench.ycsb;
