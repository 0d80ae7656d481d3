/**
 * The experiments of DESIGN.md section 6. Each runs its systems side by side in one run (these machines are shared and
 * noisy, so ratios are the claims), prints a table, and writes Markdown, JSON rows and a PNG chart under
 * {@code bench-results/<date-time>/}. {@link io.rdmastore.bench.BenchMain} is the entry point.
 */
package io.rdmastore.bench;
