/**
 * The rdmastore storage engine: a keyspace of binary keys holding strings, hashes, sets, lists and sorted sets, named
 * collections of BSON documents, an append-only CRC32C-framed log with a Redis-like fsync policy, snapshots that let
 * the log be truncated, and recovery (newest snapshot plus log replay) on
 * {@link io.rdmastore.store.Store#open(StoreConfig)}. The engine knows nothing of networks; the server calls it from
 * any number of threads. Every type says which threads may call it and who owns the memory it takes or returns.
 */
package io.rdmastore.store;
