// The one quantile the product and its benchmarks report with (a HIL campaign's p99, a bench's).

/** Linear-interpolated quantile, q in [0, 1]; NaN of no values. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}
