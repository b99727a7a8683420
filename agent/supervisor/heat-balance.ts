// Heat-balance cross-check: Q = flow · cp · (T_return − T_supply) must agree with the rack's
// power meter. When they disagree, one of four sensors is lying; peers help name which:
//   1. the rack's supply temperature must match the CDU's supply (same water, one pipe away);
//   2. flow per unit of valve conductance must match the other racks' (they share one dp);
//   3. a ΔT that is negative or beyond any plausible rise points at the return sensor;
//   4. otherwise the power meter is the odd one out.
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
  return racks.map((r, i) => {
    const carriedKw = (COOLANT_KJ_PER_L_K / 60) * r.flowLpm * (r.returnTempC - r.supplyTempC);
    const ref = Math.max(r.powerKw, o.minPowerKw);
    const errorPct = (100 * Math.abs(carriedKw - r.powerKw)) / ref;
    const disagrees = r.inService && r.powerKw >= o.minPowerKw && errorPct > o.tolerancePct;
    if (!disagrees) return { carriedKw, errorPct, disagrees };
    let suspect: Suspect;
    const peers = perKv.filter((x, j) => j !== i && Number.isFinite(x)).sort((a, b) => a - b);
    const median = peers.length > 0 ? peers[Math.floor(peers.length / 2)] : NaN;
    const dT = r.returnTempC - r.supplyTempC;
    if (Math.abs(r.supplyTempC - cduSupplyTempC) > o.supplyToleranceC) suspect = "supplyTempC";
    else if (Number.isFinite(median) && Number.isFinite(perKv[i]) && (100 * Math.abs(perKv[i] - median)) / median > o.flowPeerTolerancePct) suspect = "flowLpm";
    else if (dT < 0 || dT > 40) suspect = "returnTempC";
    else suspect = "powerKw";
    return { carriedKw, errorPct, disagrees, suspect };
  });
}
