// A count of events in fixed one-second windows on the monotonic clock, against a limit: what
// an input takes a second before it looks at what it took (the Redfish client's events on a
// stream and pushed to the pod's listener alike).
import { monoMs } from "./clock.js";

export class PerSecond {
  private windowStartMs = -Infinity;
  private inWindow = 0;

  constructor(
    private readonly limit: number,
    private readonly now: () => number = monoMs,
  ) {}

  /** Counts one; false when it is beyond the limit in this second. */
  take(): boolean {
    const t = this.now();
    if (t - this.windowStartMs >= 1000) {
      this.windowStartMs = t;
      this.inWindow = 0;
    }
    return ++this.inWindow <= this.limit;
  }
}
