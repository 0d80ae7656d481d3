/**
 * The Java client of rdmastore's native protocol: {@link io.rdmastore.client.RdmaStoreClient} connects by URI
 * ({@code rdmastore://host:7379?transport=auto&password=...&timeout=5s}), offers a synchronous and a
 * {@code CompletableFuture} method for every operation, pipelines asynchronous calls on one connection, fails each call
 * that outlives its time-out, reconnects after the server restarts, and says which transport (tcp or ucx) it runs on and
 * why. Given several hosts or a {@code replicaSet}, it discovers the primary by ROLE, follows failovers (retrying only
 * what cannot have been applied), and applies write concern, read concern and read preference. Documents go through
 * {@link io.rdmastore.client.DocumentCollection}, in the style of MongoDB's driver. Lists, sets and sorted sets,
 * {@link io.rdmastore.client.Transaction}s, {@link io.rdmastore.client.Watch}es and pub/sub
 * ({@link io.rdmastore.client.Subscription}, delivered on one {@code rdmastore-client-pubsub} thread per client) run
 * the server's Redis commands through the native protocol's opcodes 41-49.
 */
package io.rdmastore.client;
