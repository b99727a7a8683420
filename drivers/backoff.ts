// Exponential backoff with full jitter, for reconnects and circuit breakers: the k-th retry
// waits a random time in [base * 2^k / 2, base * 2^k], capped at max. Jitter keeps a fleet of
// clients from reconnecting in lockstep after a broker or device restart.
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
