/**
 * The Redis-compatible face of the server: a RESP2/RESP3 decoder, command dispatcher and reply encoder that the TCP
 * carrier installs on a connection whose first bytes are not the native preface. {@link io.rdmastore.server.resp.RespFace}
 * is the entry point; everything else in this package is per-connection state that lives on one Netty event loop
 * thread, so the hot path takes no locks and parses pipelined requests in a loop into one reply buffer per read batch.
 * The face-wide state shared across connections (clients blocked on list keys, watched keys, pub/sub subscriptions)
 * lives in {@code RespBlocking}, {@code RespMulti} and {@code RespPubSub}, fed by the store's key listener.
 * {@link io.rdmastore.server.resp.NativeCommands} runs the same commands for native-protocol sessions (opcodes 41-49)
 * on connections without a channel, whose blocking, resuming and pushes go to the session instead of an event loop.
 */
package io.rdmastore.server.resp;
