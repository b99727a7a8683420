// Per-device circuit breaker: after `failureThreshold` consecutive failures the device is
// "open" and not polled; after a backoff it is "half-open" and one probe may go; a success
// closes it, a failure reopens it with a longer backoff. A dead device therefore costs one
// timeout per backoff period instead of one per poll, and never stalls its bus.
import { Backoff } from "../lib/backoff.js";

export type BreakerState = "closed" | "open" | "half-open";

export class CircuitBreaker {
  private failures = 0;
  private openUntil = 0;
  private state_: BreakerState = "closed";
  private readonly backoff: Backoff;
  trips = 0;

  constructor(
    private readonly failureThreshold: number,
    openMs: { baseMs: number; maxMs: number },
    private readonly now: () => number,
  ) {
    this.backoff = new Backoff(openMs);
  }

  get state(): BreakerState {
    if (this.state_ === "open" && this.now() >= this.openUntil) this.state_ = "half-open";
    return this.state_;
  }

  /** May a request go now? In half-open, only one probe at a time. */
  allow(): boolean {
    return this.state !== "open";
  }

  success(): void {
    this.failures = 0;
    this.state_ = "closed";
    this.backoff.reset();
  }

  failure(): void {
    this.failures++;
    if (this.state === "half-open" || this.failures >= this.failureThreshold) {
      if (this.state_ === "closed") this.trips++;
      this.state_ = "open";
      this.openUntil = this.now() + this.backoff.next();
    }
  }
}
