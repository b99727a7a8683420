// Heat-balance cross-check: Q = flow · cp · (T_return − T_supply) must agree with the rack's
// power meter. When they disagree, one of four sensors is lying; peers help name which:
//   1. the rack's supply temperature must match the CDU's supply (same water, one pipe away),
//      or, with no good CDU supply reading, the median of the other racks' supply readings
//      (they share that one supply: a sensor 5 °C off the others' median is the odd one);
//   2. flow per unit of valve conductance must match the other racks' (they share one dp);
//   3. a ΔT that is negative or beyond any plausible rise points at the return sensor;
//   4. otherwise the power meter is the odd one out.
// A clue that cannot be had (no CDU supply and too few peers, too few peers' flow) is named in
// the result, so the alarm says its suspect was found without it.
import { COOLANT_KJ_PER_L_K, relativeKv } from "../../pod/coolant.js";

export interface RackHeat {
  powerKw: number;
  flowLpm: number;
  supplyTempC: number;
  returnTempC: number;
  valvePct: number;
  inService: boolean;
}

export type Suspect = "supplyTempC" | "flowLpm" | "returnTempC" | "powerKw";

export interface HeatBalanceResult {
  carriedKw: number;
  errorPct: number;
  disagrees: boolean;
  suspect?: Suspect;
  /** the clues the suspect was found without, in words (empty when every clue was there) */
  missing?: string[];
}

/** Peers needed for a median that one lying peer cannot move far: with two, the median is their mean. */
const MIN_PEERS = 2;

/** The median of the finite values, or NaN with fewer than MIN_PEERS of them. */
function median(values: readonly number[]): number {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length < MIN_PEERS) return NaN;
  const m = Math.floor(v.length / 2);
  return v.length % 2 === 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

export function heatBalance(
  racks: readonly RackHeat[],
  cduSupplyTempC: number,
  o: { tolerancePct: number; minPowerKw: number; supplyToleranceC: number; flowPeerTolerancePct: number },
): HeatBalanceResult[] {
  // flow per relative conductance, per rack: comparable across racks because they share dp
  const perKv = racks.map((r) => {
    const kv = relativeKv("equal-percentage", r.valvePct);
    return r.inService && kv > 0.02 ? r.flowLpm / kv : NaN;
  });
  const supplies = racks.map((r) => (r.inService ? r.supplyTempC : NaN));
  return racks.map((r, i) => {
    const carriedKw = (COOLANT_KJ_PER_L_K / 60) * r.flowLpm * (r.returnTempC - r.supplyTempC);
    const ref = Math.max(r.powerKw, o.minPowerKw);
    const errorPct = (100 * Math.abs(carriedKw - r.powerKw)) / ref;
    const disagrees = r.inService && r.powerKw >= o.minPowerKw && errorPct > o.tolerancePct;
    if (!disagrees) return { carriedKw, errorPct, disagrees };
    const others = <T>(xs: readonly T[]): T[] => xs.filter((_, j) => j !== i);
    const missing: string[] = [];
    const supplyRef = Number.isFinite(cduSupplyTempC) ? cduSupplyTempC : median(others(supplies));
    if (!Number.isFinite(supplyRef)) missing.push(`the rack's supply temperature was not compared: no good CDU supply reading and fewer than ${MIN_PEERS} other racks' supply readings`);
    const flowRef = median(others(perKv));
    if (!Number.isFinite(flowRef) || !Number.isFinite(perKv[i])) missing.push(`the flow meter was not compared: fewer than ${MIN_PEERS} other racks' flow readings in service, or this rack's valve too near shut`);
    const dT = r.returnTempC - r.supplyTempC;
    let suspect: Suspect;
    if (Math.abs(r.supplyTempC - supplyRef) > o.supplyToleranceC) suspect = "supplyTempC";
    else if ((100 * Math.abs(perKv[i] - flowRef)) / flowRef > o.flowPeerTolerancePct) suspect = "flowLpm";
    else if (dT < 0 || dT > 40) suspect = "returnTempC";
    else suspect = "powerKw";
    return { carriedKw, errorPct, disagrees, suspect, missing };
  });
}
