// Order statistics for benchmark samples. Medians and percentiles: on a shared, noisy machine one
// slow outlier should not move the figure we report. A mean only beside them, for per-call costs.

/** The q-quantile (0..1) by the nearest-rank method; NaN for no samples. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1] ?? Number.NaN;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >>> 1;
  if (sorted.length % 2 === 1) return sorted[mid] ?? Number.NaN;
  return ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

export interface Latency {
  n: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  max_ms: number;
}

export function latency(samplesMs: readonly number[]): Latency {
  return {
    n: samplesMs.length,
    p50_ms: quantile(samplesMs, 0.5),
    p95_ms: quantile(samplesMs, 0.95),
    p99_ms: quantile(samplesMs, 0.99),
    max_ms: quantile(samplesMs, 1),
  };
}

/** Run fn and return how long it took, in milliseconds. */
export function timeSync<T>(fn: () => T): { ms: number; value: T } {
  const started = performance.now();
  const value = fn();
  return { ms: performance.now() - started, value };
}

export async function timeAsync<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await fn();
  return { ms: performance.now() - started, value };
}

/** An in-place shuffle with the given random source (so a run's order can be reproduced). */
export function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const a = items[i] as T;
    items[i] = items[j] as T;
    items[j] = a;
  }
  return items;
}

/** Per-call figures of a latency sample. The mean is here because a per-call cost adds up over calls. */
export interface CallFigures {
  n: number;
  p50_ms: number;
  p99_ms: number;
  mean_ms: number;
}

export function callFigures(samplesMs: readonly number[]): CallFigures {
  const sum = samplesMs.reduce((a, b) => a + b, 0);
  return {
    n: samplesMs.length,
    p50_ms: quantile(samplesMs, 0.5),
    p99_ms: quantile(samplesMs, 0.99),
    mean_ms: samplesMs.length === 0 ? Number.NaN : sum / samplesMs.length,
  };
}

/** The median of a[i] - b[i]: two samples taken side by side, so drift in the machine cancels out. */
export function pairedDiff(a: readonly number[], b: readonly number[]): number {
  return median(a.map((x, i) => x - (b[i] ?? Number.NaN)).filter(Number.isFinite));
}
