// The secondary loop's hydraulics: parallel pumps feeding parallel rack branches and a bypass.
//
// Pump curve (affinity laws):   dp = shutoffKpa * s^2 - resistance * Q^2     (s = speed 0..1)
// Each branch:                   Q_i = Kv_i * sqrt(dp)                       (Q in L/min, dp in kPa)
// With C = sum(Kv_i) and n identical pumps running at one speed (each carries Q/n), the
// operating point is exact, no iteration needed:
//   dp = shutoffKpa * s^2 / (1 + resistance * C^2 / n^2)
// Closing one branch lowers C, which raises dp and so the other branches' flow.
// Pumps at different speeds (a lead/lag handover, a pump coasting down) share dp: each gives
// Q_p = sqrt((shutoffKpa * s_p^2 - dp) / resistance) while its head exceeds dp (its check valve
// shuts otherwise), and dp is where their sum meets C * sqrt(dp), found by bisection.

export interface PumpCurve {
  shutoffKpa: number;
  /** kPa per (L/min)^2 */
  resistance: number;
}

export interface OperatingPoint {
  dpKpa: number;
  totalFlowLpm: number;
}

const clampSpeed = (s: number): number => Math.min(Math.max(s, 0), 1.2);

/** One pump, or `pumps` identical pumps at one speed. */
export function operatingPoint(curve: PumpCurve, speedFraction: number, conductances: readonly number[], headFactor = 1, pumps = 1): OperatingPoint {
  const s = clampSpeed(speedFraction);
  let c = 0;
  for (const kv of conductances) c += kv;
  const dpKpa = (curve.shutoffKpa * s * s * headFactor) / (1 + (curve.resistance * c * c) / (pumps * pumps));
  return { dpKpa, totalFlowLpm: c * Math.sqrt(dpKpa) };
}

/** Bisection steps for pumps at different speeds: the bracket shrinks to 2^-60 of the shutoff head. */
const BISECTIONS = 60;

/** Pumps in parallel, each at its own speed (0: stopped, its check valve shut). */
export function parallelOperatingPoint(curve: PumpCurve, speedFractions: readonly number[], conductances: readonly number[], headFactor = 1): OperatingPoint {
  const heads = speedFractions.map(clampSpeed).filter((s) => s > 0).map((s) => curve.shutoffKpa * s * s * headFactor);
  if (heads.length === 0) return operatingPoint(curve, 0, conductances, headFactor);
  if (heads.every((h) => h === heads[0])) {
    return operatingPoint(curve, clampSpeed(speedFractions.find((s) => clampSpeed(s) > 0) ?? 0), conductances, headFactor, heads.length);
  }
  let c = 0;
  for (const kv of conductances) c += kv;
  const pumped = (dp: number): number => heads.reduce((q, h) => q + (h > dp ? Math.sqrt((h - dp) / curve.resistance) : 0), 0);
  let lo = 0;
  let hi = Math.max(...heads);
  for (let i = 0; i < BISECTIONS; i++) {
    const mid = (lo + hi) / 2;
    if (pumped(mid) > c * Math.sqrt(mid)) lo = mid;
    else hi = mid;
  }
  const dpKpa = (lo + hi) / 2;
  return { dpKpa, totalFlowLpm: c * Math.sqrt(dpKpa) };
}
