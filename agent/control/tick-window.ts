// Control-tick lateness and overruns over a recent window, beside the cumulative figures. The
// worker's histogram and counters only ever grow, so quantiles since start cannot show an
// incident an hour in: this keeps snapshots of them and reports the difference between now and
// the snapshot one window ago. It also decides what a "pod-level" overrun problem is: a share of
// missed deadlines over the window, so a single late tick (a GC pause, a page fault) does not
// flip the pod's mode and its retained state twice.
import { LOG_HISTOGRAM_BUCKETS, LogHistogram, bucketLow } from "../../lib/log-histogram.js";

export interface TickCounters {
  ticks: number;
  overruns: number;
  lateness: LogHistogram;
}

export interface RecentTicks {
  /** the span actually covered, ms (shorter than the window just after start) */
  spanMs: number;
  ticks: number;
  overruns: number;
  /** lateness quantiles over the span, µs (NaN with no tick in it) */
  p50Us: number;
  p99Us: number;
  p999Us: number;
  /** upper edge of the highest lateness bucket seen in the span, µs (NaN with no tick) */
  maxUs: number;
}

interface Snapshot {
  atMs: number;
  ticks: number;
  overruns: number;
  counts: Int32Array;
}

/** Snapshots taken every windowMs/SLICES: the window is known to within a tenth of itself. */
const SLICES = 10;

export class TickWindow {
  private readonly snaps: Snapshot[] = [];
  private readonly diff = new LogHistogram();
  private last: RecentTicks = { spanMs: 0, ticks: 0, overruns: 0, p50Us: NaN, p99Us: NaN, p999Us: NaN, maxUs: NaN };

  constructor(readonly windowMs: number) {}

  /** Takes the counters as they are at nowMs; returns the figures over the last window. */
  update(nowMs: number, c: TickCounters): RecentTicks {
    const newest = this.snaps.at(-1);
    if (newest === undefined || nowMs - newest.atMs >= this.windowMs / SLICES) {
      this.snaps.push({ atMs: nowMs, ticks: c.ticks, overruns: c.overruns, counts: Int32Array.from(c.lateness.counts) });
      // keep one snapshot at or before the window's start, drop the older ones
      while (this.snaps.length > 2 && nowMs - this.snaps[1].atMs >= this.windowMs) this.snaps.shift();
    }
    const base = this.snaps[0];
    const d = this.diff.counts;
    let top = -1;
    for (let i = 0; i < LOG_HISTOGRAM_BUCKETS; i++) {
      d[i] = c.lateness.counts[i] - base.counts[i];
      if (d[i] > 0) top = i;
    }
    this.last = {
      spanMs: nowMs - base.atMs,
      ticks: c.ticks - base.ticks,
      overruns: c.overruns - base.overruns,
      p50Us: this.diff.percentile(0.5),
      p99Us: this.diff.percentile(0.99),
      p999Us: this.diff.percentile(0.999),
      maxUs: top < 0 ? NaN : top + 1 < LOG_HISTOGRAM_BUCKETS ? bucketLow(top + 1) : bucketLow(top),
    };
    return this.last;
  }

  /** The figures from the last update. */
  recent(): RecentTicks {
    return this.last;
  }
}
