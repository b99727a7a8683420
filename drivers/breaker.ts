// Per-device circuit breaker: after `failureThreshold` consecutive failures the device is
// "open" and not polled; after a backoff it is "half-open" and one probe may go; a success
// closes it, a failure reopens it with a longer backoff. A dead device therefore costs one
// timeout per backoff period instead of one per poll, and never stalls its bus.
//
// A damaged answer (a bad CRC, a cut frame: `damaged()`) counts apart, against its own, higher
// threshold. It shows the device alive and the line noisy, and it costs the bus a frame and a
// frame gap, not a timeout. Counted like a timeout, three in a row come every ~50 exchanges on
// a line damaging 30 % of answers: in test/drivers-rtu.test.ts one device's breaker opened 3
// times in 8.5 s, each time cutting the device off (a leak on it unread, its isolation writes
// refused) for its open period. A device answering only garbage still opens it, after
// `damagedThreshold` answers in a row.
import { Backoff } from "../lib/backoff.js";

export type BreakerState = "closed" | "open" | "half-open";

export class CircuitBreaker {
  private failures = 0;
  private damagedRun = 0;
  private openUntil = 0;
  private state_: BreakerState = "closed";
  private readonly backoff: Backoff;
  trips = 0;

  constructor(
    private readonly failureThreshold: number,
    openMs: { baseMs: number; maxMs: number },
    private readonly now: () => number,
    private readonly damagedThreshold = failureThreshold,
    /** the jitter's random source in [0, 1) (the virtual pod's is seeded) */
    random?: () => number,
  ) {
    this.backoff = new Backoff({ ...openMs, random });
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
    this.damagedRun = 0;
    this.state_ = "closed";
    this.backoff.reset();
  }

  /** The device did not answer, or refused in a way that says it is unwell. */
  failure(): void {
    this.failures++;
    if (this.state === "half-open" || this.failures >= this.failureThreshold) this.open();
  }

  /**
   * The way to the device is new (its connection came back): a probe may go now rather than at
   * the end of the open period. The period was set while the device could not be reached, so
   * it says nothing of the device as it is now; and the reconnect had its own wait (up to
   * reconnect.maxMs), which would otherwise add to the open period's rather than overlap it. A
   * failed probe reopens the breaker with its next, longer period, as any half-open probe's does.
   */
  retryNow(): void {
    if (this.state_ === "open") this.openUntil = this.now();
  }

  /** When an open breaker lets its next probe go (its clock's ms), or null when it is not open. */
  get retryAtMs(): number | null {
    return this.state === "open" ? this.openUntil : null;
  }

  /** The device answered, damaged on the line. */
  damaged(): void {
    this.damagedRun++;
    if (this.state === "half-open" || this.damagedRun >= this.damagedThreshold) this.open();
  }

  private open(): void {
    if (this.state_ === "closed") this.trips++;
    this.state_ = "open";
    this.openUntil = this.now() + this.backoff.next();
  }
}
