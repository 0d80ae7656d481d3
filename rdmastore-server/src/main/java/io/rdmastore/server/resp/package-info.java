/**
 * The Redis-compatible face of the server: a RESP2/RESP3 decoder, command dispatcher and reply encoder that the TCP
 * carrier installs on a connection whose first bytes are not the native preface. {@link io.rdmastore.server.resp.RespFace}
 * is the entry point; everything else in this package is per-connection state that lives on one Netty event loop
 * thread, so the hot path takes no locks and parses pipelined requests in a loop into one reply buffer per read batch.
 */
package io.rdmastore.server.resp;
