// Busy time of a bus over the last second, for its time budget. A log of every transaction
// kept for a second (the first version) held ~500 small arrays per device at a 2 ms poll, each
// living long enough to be promoted out of V8's young generation as old-space garbage, and it
// was walked on every sheddable request. Fixed buckets allocate nothing and cost 20 additions.

const BUCKETS = 20;
const BUCKET_MS = 1000 / BUCKETS;

export class BusyWindow {
  /** which 50 ms slot of the monotonic clock each bucket currently counts */
  private readonly slot = new Float64Array(BUCKETS).fill(-Infinity);
  private readonly busy = new Float64Array(BUCKETS);

  /** Adds busyMs of transaction time that ended at endMs. */
  record(endMs: number, busyMs: number): void {
    const s = Math.floor(endMs / BUCKET_MS);
    const i = s % BUCKETS;
    if (this.slot[i] !== s) {
      this.slot[i] = s;
      this.busy[i] = 0;
    }
    this.busy[i] += busyMs;
  }

  /** Busy ms recorded in the second up to nowMs (to a 50 ms granularity). */
  total(nowMs: number): number {
    const oldest = Math.floor(nowMs / BUCKET_MS) - BUCKETS + 1;
    let sum = 0;
    for (let i = 0; i < BUCKETS; i++) if (this.slot[i] >= oldest) sum += this.busy[i];
    return sum;
  }
}
