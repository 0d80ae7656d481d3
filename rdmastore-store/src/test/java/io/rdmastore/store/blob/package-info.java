/** Tests of blob files: commit, pinning of retired versions, recovery of leftovers, refusals. */
package io.rdmastore.store.blob;
