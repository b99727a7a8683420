// Coolant properties and valve characteristics shared by the plant model and the agent's checks.

/** Volumetric heat capacity of PG25 (cp 3.95 kJ/kg·K, ρ 1.03 kg/L), kJ/(L·K). Heat in kW = flow (L/min) · this / 60 · ΔT. */
export const COOLANT_KJ_PER_L_K = 4.07;

export type ValveCharacteristic = "linear" | "equal-percentage";

/** Relative flow coefficient (0..1) at opening x (0..100 %). */
export function relativeKv(characteristic: ValveCharacteristic, openingPct: number, rangeability = 50): number {
  const x = Math.min(Math.max(openingPct, 0), 100) / 100;
  if (characteristic === "linear") return x;
  // modified equal-percentage: exact 0 when shut, 1 when fully open
  return (Math.pow(rangeability, x) - 1) / (rangeability - 1);
}
