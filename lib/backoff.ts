// Exponential backoff with jitter, for reconnects and circuit breakers: the k-th retry waits a
// random time in [c / 2, c], c = min(max, base * 2^k) ("equal jitter": half fixed, half random).
// The random half keeps a fleet of clients from reconnecting in lockstep after a broker or
// device restart; the fixed half keeps a floor under every wait, so a peer that refuses at once
// is never retried at once (full jitter, a wait anywhere in [0, c], can draw a retry of ~0 ms).
export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  /** random source in [0, 1): injectable so tests are deterministic */
  random?: () => number;
}

export class Backoff {
  private attempt = 0;

  constructor(private readonly o: BackoffOptions) {}

  next(): number {
    const ceiling = Math.min(this.o.maxMs, this.o.baseMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    const r = (this.o.random ?? Math.random)();
    return ceiling / 2 + (ceiling / 2) * r;
  }

  reset(): void {
    this.attempt = 0;
  }

  get attempts(): number {
    return this.attempt;
  }
}
