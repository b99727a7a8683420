// A log-linear histogram of non-negative integers (microseconds here) over an Int32Array, so it
// can live in a SharedArrayBuffer: the control worker records tick lateness, the main thread reads
// percentiles without a message. 1 µs resolution below 32 µs, then 16 buckets per power of two
// (≤ 6.25 % relative error) up to 2^31 µs.
const SUB_BITS = 4;
const SUB = 1 << SUB_BITS;
const LINEAR = 2 * SUB;
export const LOG_HISTOGRAM_BUCKETS = LINEAR + (31 - SUB_BITS - 1) * SUB;

export function bucketOf(v: number): number {
  const x = Math.max(0, Math.floor(v));
  if (x < LINEAR) return x;
  const e = 31 - Math.clz32(x);
  const m = (x >>> (e - SUB_BITS)) & (SUB - 1);
  return Math.min(LOG_HISTOGRAM_BUCKETS - 1, LINEAR + (e - SUB_BITS - 1) * SUB + m);
}

/** Lowest value that falls in bucket i. */
export function bucketLow(i: number): number {
  if (i < LINEAR) return i;
  const e = Math.floor((i - LINEAR) / SUB) + SUB_BITS + 1;
  const m = (i - LINEAR) % SUB;
  return (SUB + m) * 2 ** (e - SUB_BITS);
}

export class LogHistogram {
  constructor(readonly counts: Int32Array = new Int32Array(LOG_HISTOGRAM_BUCKETS)) {
    if (counts.length < LOG_HISTOGRAM_BUCKETS) throw new RangeError("histogram array too small");
  }

  record(v: number): void {
    this.counts[bucketOf(v)]++;
  }

  total(): number {
    let n = 0;
    for (let i = 0; i < LOG_HISTOGRAM_BUCKETS; i++) n += this.counts[i];
    return n;
  }

  /** Value at quantile q (0..1): the upper edge of the bucket holding it. */
  percentile(q: number): number {
    const n = this.total();
    if (n === 0) return NaN;
    const rank = Math.ceil(q * n);
    let seen = 0;
    for (let i = 0; i < LOG_HISTOGRAM_BUCKETS; i++) {
      seen += this.counts[i];
      if (seen >= rank && this.counts[i] > 0) return i + 1 < LOG_HISTOGRAM_BUCKETS ? bucketLow(i + 1) : bucketLow(i);
    }
    return bucketLow(LOG_HISTOGRAM_BUCKETS - 1);
  }

  /** Count of values at or above v (approximately: whole buckets). */
  countAbove(v: number): number {
    let n = 0;
    for (let i = bucketOf(v); i < LOG_HISTOGRAM_BUCKETS; i++) n += this.counts[i];
    return n;
  }

  reset(): void {
    this.counts.fill(0);
  }
}
