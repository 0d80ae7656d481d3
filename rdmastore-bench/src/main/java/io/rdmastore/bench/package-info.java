/**
 * The experiments of DESIGN.md section 6. Each runs its systems side by side in one run (these machines are shared and
 * noisy, so ratios are the claims), prints a table, and writes Markdown, JSON rows and a PNG chart under
 * {@code bench-results/<date-time>/}. {@link io.rdmastore.bench.BenchMain} is the entry point. E1, E2, E3, E4 and YCSB
 * measure fairly ({@link io.rdmastore.bench.BenchOptions}): time-based phases after a warm-up in the same JVM, repeats
 * reported as median and spread ({@link io.rdmastore.bench.Spread}), every system in the same CPU state
 * ({@link io.rdmastore.bench.CpuState}), Redis with matching persistence, CPU counted over measured phases only, and
 * a contention variant with bounded burners ({@link io.rdmastore.bench.Spinners}); see docs/bench/README.md.
 */
package io.rdmastore.bench;
