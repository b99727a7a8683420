// How late a periodic pass on the main thread ran: the actuator pass is due every ACTUATOR_PASS_MS,
// and anything that holds the main thread (a login's work, a burst of connections, a config's
// parse) shows here first, as a pass that came late. The figures are what the service-plane
// benchmarks compare with an unloaded run, and what status and metrics report.
import { LogHistogram } from "../../lib/log-histogram.js";

export class PassLateness {
  /** lateness beyond the period, µs */
  readonly histogram = new LogHistogram();
  private last: number | null = null;
  private maxUs = 0;
  private passes = 0;

  constructor(readonly periodMs: number) {}

  /** A pass runs now (monotonic ms): how late it is against the one before, plus the period. */
  mark(nowMs: number): void {
    if (this.last !== null) {
      const lateUs = Math.max(0, (nowMs - this.last - this.periodMs) * 1000);
      this.histogram.record(lateUs);
      if (lateUs > this.maxUs) this.maxUs = lateUs;
    }
    this.last = nowMs;
    this.passes++;
  }

  figures(): { passes: number; p99LateUs: number; maxLateUs: number } {
    return { passes: this.passes, p99LateUs: this.passes > 1 ? this.histogram.percentile(0.99) : 0, maxLateUs: this.maxUs };
  }
}
