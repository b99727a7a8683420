// The reconnect and circuit-breaker backoff: doubling from the base to the cap, each wait drawn
// from the upper half of its ceiling (a floor under every wait, and no lockstep across a fleet).
import { describe, expect, it } from "vitest";
import { Backoff } from "../lib/backoff.js";

describe("backoff", () => {
  it("doubles its ceiling from the base up to the cap, and waits between half the ceiling and all of it", () => {
    const low = new Backoff({ baseMs: 100, maxMs: 1000, random: () => 0 });
    const high = new Backoff({ baseMs: 100, maxMs: 1000, random: () => 0.999999 });
    const ceilings = [100, 200, 400, 800, 1000, 1000, 1000];
    for (const c of ceilings) {
      expect(low.next()).toBe(c / 2);
      expect(high.next()).toBeCloseTo(c, 2);
    }
    expect(low.attempts).toBe(ceilings.length);
  });

  it("starts again from the base after a reset (a connection that came up)", () => {
    const b = new Backoff({ baseMs: 50, maxMs: 400, random: () => 0 });
    for (let i = 0; i < 6; i++) b.next();
    b.reset();
    expect(b.attempts).toBe(0);
    expect(b.next()).toBe(25);
  });

  it("stays finite and capped after any number of attempts", () => {
    const b = new Backoff({ baseMs: 500, maxMs: 30_000, random: () => 0.5 });
    let last = 0;
    for (let i = 0; i < 10_000; i++) last = b.next();
    expect(last).toBe(22_500);
  });

  it("spreads a fleet: clients that lost the same broker at the same moment do not retry together", () => {
    const firstRetries = Array.from({ length: 200 }, () => new Backoff({ baseMs: 1000, maxMs: 60_000 }).next());
    expect(Math.min(...firstRetries)).toBeGreaterThanOrEqual(500);
    expect(Math.max(...firstRetries)).toBeLessThanOrEqual(1000);
    // 200 draws over [500, 1000]: spread over most of the range, and no crowd in any one
    // millisecond (about 0.4 a millisecond on average; ten or more has odds below 1e-8)
    expect(Math.max(...firstRetries) - Math.min(...firstRetries)).toBeGreaterThan(400);
    const perMs = new Map<number, number>();
    for (const x of firstRetries) perMs.set(Math.round(x), (perMs.get(Math.round(x)) ?? 0) + 1);
    expect(Math.max(...perMs.values())).toBeLessThan(10);
  });
});
