/**
 * MongoDB-style document queries for the store: {@link io.rdmastore.store.doc.DocumentFilter} compiles and matches
 * filters, {@link io.rdmastore.store.doc.DocumentUpdate} compiles and applies {@code $set}/{@code $unset}/{@code $inc}
 * updates, and {@link io.rdmastore.store.doc.BsonValues} holds the value comparisons both share (numbers compare by
 * value across int32, int64, double and decimal128). Compiled objects are immutable and may be shared by threads;
 * they never change the documents they are given.
 */
package io.rdmastore.store.doc;
