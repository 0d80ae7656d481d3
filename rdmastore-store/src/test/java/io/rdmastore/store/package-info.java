/**
 * Tests of the storage engine: unit tests per feature, a model-based random test against a plain in-memory
 * reference, recovery and corruption tests, concurrent snapshot tests, and a crash test that kills a writer process.
 */
package io.rdmastore.store;
