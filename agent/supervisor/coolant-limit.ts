// The coolant's half of the power budget (issue 53, item 7): how much heat a rack's coolant can
// carry away now, from its maximum flow and the supply temperature it is given.
import { COOLANT_KJ_PER_L_K } from "../../pod/coolant.js";
import type { Reading } from "./reading.js";

/**
 * The heat, kW, that maxFlowLpm carries from supplyC up to returnLimitC: the most a rack may draw
 * with its valve fully open before its return temperature passes the limit. Never negative.
 */
export function coolantLimitKw(maxFlowLpm: number, supplyC: number, returnLimitC: number): number {
  return Math.max(0, ((maxFlowLpm * COOLANT_KJ_PER_L_K) / 60) * (returnLimitC - supplyC));
}

/**
 * The supply temperature a rack's limit is figured at: the warmer of its own supply reading and
 * the CDU's, where good (a sensor reading high costs power, never heat); with neither good, the
 * configured worst case, for an unknown value goes to its safe side.
 */
export function limitSupplyC(rack: Reading, cdu: Reading, unknownC: number): { supplyC: number; known: boolean } {
  const good = [rack, cdu].filter((v) => v.good && Number.isFinite(v.value)).map((v) => v.value);
  return good.length > 0 ? { supplyC: Math.max(...good), known: true } : { supplyC: unknownC, known: false };
}
