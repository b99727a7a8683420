// The secondary loop's hydraulics: one pump feeding parallel rack branches and a bypass.
//
// Pump curve (affinity laws):   dp = shutoffKpa * s^2 - resistance * Q^2     (s = speed 0..1)
// Each branch:                   Q_i = Kv_i * sqrt(dp)                       (Q in L/min, dp in kPa)
// With C = sum(Kv_i), the operating point is exact, no iteration needed:
//   dp = shutoffKpa * s^2 / (1 + resistance * C^2)
// Closing one branch lowers C, which raises dp and so the other branches' flow.

export interface PumpCurve {
  shutoffKpa: number;
  /** kPa per (L/min)^2 */
  resistance: number;
}

export interface OperatingPoint {
  dpKpa: number;
  totalFlowLpm: number;
}

export function operatingPoint(curve: PumpCurve, speedFraction: number, conductances: readonly number[], headFactor = 1): OperatingPoint {
  const s = Math.min(Math.max(speedFraction, 0), 1.2);
  let c = 0;
  for (const kv of conductances) c += kv;
  const dpKpa = (curve.shutoffKpa * s * s * headFactor) / (1 + curve.resistance * c * c);
  return { dpKpa, totalFlowLpm: c * Math.sqrt(dpKpa) };
}
