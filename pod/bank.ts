// How a pod maps onto the hot-path bank: each point's checks, each loop's tuning and input, each
// rack's isolation proof, at the indices the layout gives. Runs when a config loads or reloads
// (and in the virtual pod), never per tick.
import type { BankSpec, LoopSpec, PointSpec, RackSpec, TuneSpec } from "../hotpath-as/bank-config.js";
import { rackMinFlowLpm, type ControlConfig, type LoopTuning, type RackConfig } from "./config.js";
import { rackFailSafe } from "./fail-safe.js";
import type { PodLayout } from "./layout.js";

/** The tuning the bank is built from: the `control` section less its thread settings. */
export type BankTuning = Pick<ControlConfig, "returnTempSetpointC" | "dpSetpointKpa" | "supplyTempSetpointC" | "rackLoop" | "pumpLoop" | "supplyLoop" | "points" | "isolation">;

/** A loop's gains, as an engineer applied them over the config's (agent/tuning). */
export interface LoopGains {
  kp: number;
  ki: number;
  kd: number;
}

/** The relay autotune bounds the hot path takes, from a loop's config. */
function tuneSpec(t: LoopTuning["autotune"]): TuneSpec {
  return { amplitude: t.amplitude, hysteresisMin: t.hysteresisMin, deviationMax: t.deviationMax, noiseS: t.noiseS, timeoutS: t.timeoutS };
}

/** The config's loop fields the bank takes (the rest, autotune and the fail-safe classes, are mapped or used elsewhere). */
function loopFields(t: LoopTuning, gains: LoopGains | undefined) {
  const { autotune, safeOnShutdown: _s, safeOnLeaseLoss: _l, ...rest } = t;
  return { ...rest, ...gains, tune: tuneSpec(autotune) };
}

/**
 * The bank for a pod: each rack's loop with its own fail-safe settings where it has them, and
 * with the gains an engineer applied (`gains[loop]`) over the config's where there are some.
 */
export function podBankSpec(c: BankTuning, layout: PodLayout, rackConfigs: readonly Pick<RackConfig, "failSafe" | "minFlowLpm">[], gains: readonly (LoopGains | undefined)[] = []): BankSpec {
  const points: PointSpec[] = new Array<PointSpec>(layout.points);
  const loops: LoopSpec[] = [];
  const racks: RackSpec[] = [];
  layout.racks.forEach((rp, r) => {
    // the plant around a point, for its stuck check: the rack's valve moves its return
    // temperature and its flow; its supply temperature and power have no loop of their own
    points[rp.returnTempC] = { ...c.points.temperature, stuckLoop: rp.loop };
    points[rp.supplyTempC] = { ...c.points.temperature };
    points[rp.flowLpm] = { ...c.points.flow, stuckLoop: rp.loop };
    points[rp.powerKw] = { ...c.points.power };
    for (const l of rp.leaks) points[l] = { kind: "leak", rack: r, min: 0, max: 2, ...c.points.leak };
    for (const l of [rp.supplyClosedLimit, rp.returnClosedLimit]) if (l !== undefined) points[l] = { min: 0, max: 1, rateMax: 0, ...c.points.limitSwitch };
    const fs = rackFailSafe(c, rackConfigs[r]);
    loops[rp.loop] = {
      ...loopFields(c.rackLoop, gains[rp.loop]),
      safeOnLeak: fs.safeOnLeak,
      safeOnSensorFault: fs.safeOnSensorFault,
      minFlowLpm: rackMinFlowLpm(c, rackConfigs[r] ?? {}),
      pvPoint: rp.returnTempC,
      ffPoint: c.rackLoop.kff !== 0 ? rp.powerKw : undefined,
      rack: r,
      action: "direct",
      sp: c.returnTempSetpointC,
    };
    racks.push({
      flowPoint: rp.flowLpm,
      supplyClosedPoint: rp.supplyClosedLimit,
      returnClosedPoint: rp.returnClosedLimit,
      isolatedFlowMaxLpm: c.isolation.isolatedFlowMaxLpm,
      isolationDeadlineMs: c.isolation.deadlineMs,
      leakSensorFault: c.isolation.leakSensorFault,
    });
  });
  points[layout.cdu.dpKpa] = { ...c.points.pressure, stuckLoop: layout.pumpLoop };
  // the CDU's supply temperature: moved by the primary valve where a loop holds it
  points[layout.cdu.supplyTempC] = { ...c.points.temperature, ...(layout.supplyLoop === undefined ? {} : { stuckLoop: layout.supplyLoop }) };
  // a pump's fault and running inputs: two-state, watched for age only, for the duty to act on
  for (const p of layout.cdu.pumps) for (const i of [p.fault, p.running]) if (i !== undefined) points[i] = { min: 0, max: 1, rateMax: 0, ...c.points.pumpStatus };
  // the pump has no rack, so the hot path never isolates it: its leak value is never used
  loops[layout.pumpLoop] = { ...loopFields(c.pumpLoop, gains[layout.pumpLoop]), safeOnLeak: "hold", pvPoint: layout.cdu.dpKpa, action: "reverse", sp: c.dpSetpointKpa };
  // the supply loop serves every rack too: a leak holds it; a warmer supply opens the valve
  if (layout.supplyLoop !== undefined) {
    loops[layout.supplyLoop] = { ...loopFields(c.supplyLoop, gains[layout.supplyLoop]), safeOnLeak: "hold", pvPoint: layout.cdu.supplyTempC, action: "direct", sp: c.supplyTempSetpointC };
  }
  return { points, loops, racks };
}

/** Each loop's local default setpoint, by loop index: return temperature per rack, dp for the pump, the CDU's supply temperature. */
export function defaultSetpoints(c: Pick<ControlConfig, "returnTempSetpointC" | "dpSetpointKpa" | "supplyTempSetpointC">, layout: PodLayout): number[] {
  const sp = layout.racks.map(() => c.returnTempSetpointC);
  sp[layout.pumpLoop] = c.dpSetpointKpa;
  if (layout.supplyLoop !== undefined) sp[layout.supplyLoop] = c.supplyTempSetpointC;
  return sp;
}
