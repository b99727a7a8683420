// The reference model's scalar arithmetic: the same comparisons, in the same order, as
// assembly/index.ts (the equivalence test holds the two to the bit).
import * as L from "./assembly/layout.js";

export const COUNT_CAP = 0x3fffffff;

export const isFinite = (x: number): boolean => x - x === 0;
export const absf = (x: number): number => (x < 0 ? -x : x);
// NaN clamps to lo (lo < NaN is false). The two comparisons are f64x2.pmax(lo, x), then pmin(_, hi).
export const clampf = (x: number, lo: number, hi: number): number => {
  const y = lo < x ? x : lo;
  return hi < y ? hi : y;
};
export const incSat = (n: number): number => (n < COUNT_CAP ? n + 1 : n);

export function safeOutput(action: number, fixed: number, prev: number, lo: number, hi: number): number {
  if (action === L.SAFE_OPEN) return hi;
  if (action === L.SAFE_CLOSED) return lo;
  if (action === L.SAFE_HOLD && isFinite(prev)) return clampf(prev, lo, hi);
  return clampf(fixed, lo, hi);
}
