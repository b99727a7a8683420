// Control-tick lateness over a recent window: an incident shows in the window's quantiles and
// leaves them once it is a window old, while the cumulative ones keep it.
import { describe, expect, it } from "vitest";
import { LogHistogram } from "../lib/log-histogram.js";
import { TickWindow } from "../agent/control/tick-window.js";

describe("tick window", () => {
  it("reports lateness and overruns over the last window only", () => {
    const h = new LogHistogram();
    const c = { ticks: 0, overruns: 0, lateness: h };
    const w = new TickWindow(10_000);
    const run = (fromMs: number, toMs: number, lateUs: number, overrun: boolean): void => {
      for (let t = fromMs; t < toMs; t += 100) {
        for (let k = 0; k < 100; k++) h.record(lateUs);
        c.ticks += 100;
        if (overrun) c.overruns += 100;
        w.update(t + 100, c);
      }
    };
    run(0, 60_000, 20, false); // a quiet minute
    expect(w.recent()).toMatchObject({ overruns: 0, p99Us: 21 });
    run(60_000, 61_000, 5000, true); // a one-second incident: 1000 ticks 5 ms late
    const during = w.recent();
    expect(during.overruns).toBe(1000);
    expect(during.ticks).toBeGreaterThanOrEqual(10_000);
    expect(during.p99Us).toBeGreaterThan(4000);
    expect(during.maxUs).toBeGreaterThan(4000);
    expect(h.percentile(0.99)).toBeGreaterThan(4000); // 1000 of 61 000 ticks: in the cumulative p99 too
    run(61_000, 75_000, 20, false); // the incident is now more than a window old
    expect(w.recent()).toMatchObject({ overruns: 0, p99Us: 21 });
    expect(w.recent().spanMs).toBeGreaterThanOrEqual(10_000);
    expect(w.recent().spanMs).toBeLessThanOrEqual(11_000);
    expect(h.percentile(0.99)).toBeGreaterThan(4000); // while the cumulative p99 keeps it
  });

  it("has no figures before the first tick", () => {
    const w = new TickWindow(10_000);
    expect(w.update(0, { ticks: 0, overruns: 0, lateness: new LogHistogram() })).toMatchObject({ ticks: 0, overruns: 0, p99Us: NaN, maxUs: NaN });
  });
});
