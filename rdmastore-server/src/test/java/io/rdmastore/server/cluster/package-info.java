/** Tests of cluster mode: three one-member shards on loopback, driven by Jedis's and Lettuce's cluster clients. */
package io.rdmastore.server.cluster;
