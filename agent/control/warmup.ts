// A synthetic bank for JIT warm-up: as many loops and points as the real one, every loop in
// automatic on valid, changing inputs, so the warm-up exercises the paths the real ticks will
// take (the SIMD pair path for the loops, the full validation for the points).
import { writeSample, type BankSpec } from "../../hotpath-as/bank-config.js";
import type { HotPath } from "../../hotpath-as/views.js";

export function warmupSpec(loops: number, points: number): BankSpec {
  const n = Math.max(1, points);
  return {
    points: Array.from({ length: n }, () => ({ min: -1e6, max: 1e6, rateMax: 1e9, staleMs: 0, debounceFault: 2, debounceClear: 2 })),
    loops: Array.from({ length: Math.max(1, loops) }, (_, i) => ({
      pvPoint: i % n,
      ffPoint: (i + 1) % n,
      action: "direct" as const,
      kp: 1,
      ki: 0.1,
      kff: 0.1,
      outMin: 0,
      outMax: 100,
      outRate: 50,
      safeOnLeak: "closed" as const,
      safeOnSensorFault: "open" as const,
      sp: 40,
    })),
    racks: [],
  };
}

/**
 * A new sample on every point for warm-up tick `tick`. Fresh samples every tick keep the full
 * point validation running: with unchanged samples no point would be validated after the first
 * tick, and V8 would leave the validation code in its baseline tier for the first real samples.
 */
export function warmupSamples(hp: HotPath, points: number, tick: number): void {
  for (let i = 0; i < Math.max(1, points); i++) writeSample(hp.views, i, 40 + ((i + tick) % 5), tick);
}
