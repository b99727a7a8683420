// The pod layout: the one place that knows which hot-path point, loop and actuator belongs to
// which rack, the CDU or the pump. Rack loops come first, in rack order, then the pump loop, and
// last the CDU's supply-temperature loop where cdu.supplyControl configures one;
// points go rack by rack (return, supply, flow, power, its leak sensors, then the isolation
// valves' closed limit switches it has), then the CDU's, then each pump's status inputs it has
// (fault, running).
// Everything else (the wiring, the supervisor, the commands, the status view) asks here.
import type { CduConfig, RackConfig } from "./config.js";
import { cduPumps } from "./pumps.js";

export interface RackSlots {
  name: string;
  /** bank point indices */
  returnTempC: number;
  supplyTempC: number;
  flowLpm: number;
  powerKw: number;
  leaks: number[];
  /** the isolation valves' closed limit switches, where the config names them (they join the isolation proof) */
  supplyClosedLimit?: number;
  returnClosedLimit?: number;
  /** the rack's valve loop */
  loop: number;
}

/** What a loop moves, and so its setpoint's unit and its envelope: a rack's valve (return temperature), the pump (dp), the CDU's primary valve (supply temperature). */
export type LoopKind = "rack" | "pump" | "supply";

/** The `control` section that tunes a loop of this kind. */
export function loopSection(kind: LoopKind): "rackLoop" | "pumpLoop" | "supplyLoop" {
  return kind === "pump" ? "pumpLoop" : kind === "supply" ? "supplyLoop" : "rackLoop";
}

/** A pump's status inputs in the bank, those it has (cdu.pumps[].points). */
export interface PumpSlots {
  name: string;
  fault?: number;
  running?: number;
}

export interface PodLayout {
  racks: RackSlots[];
  cdu: { dpKpa: number; supplyTempC: number; pumps: PumpSlots[] };
  /** loop index of each rack's valve loop */
  rackLoops: number[];
  pumpLoop: number;
  /** the supply-temperature loop (cdu.supplyControl), or undefined */
  supplyLoop?: number;
  /** bank points in all */
  points: number;
  /** loops in all */
  loops: number;
  /** a loop's name as alarms, events and commands use it: `<rack>.valve`, `cdu.pump`, `cdu.supply` */
  loopName(loop: number): string;
  /** the loop of a name, or undefined */
  loopIndex(name: string): number | undefined;
  /** the rack of a name, or undefined */
  rackIndex(name: string): number | undefined;
  isPumpLoop(loop: number): boolean;
  /** what a loop moves: a rack's valve, the pump, or the CDU's primary-side valve */
  loopKind(loop: number): LoopKind;
  /** the rack a loop belongs to (undefined for the pump loop) */
  rackOfLoop(loop: number): number | undefined;
}

/**
 * The field point feeding each bank point, in bank order (what a flight recording names its
 * slots by, so a replay can route them through the wiring again). A CDU without a supply sensor
 * names its slot as unconfigured: it is never sampled.
 */
export function bankPointIds(pod: { racks: readonly Pick<RackConfig, "points">[]; cdu: Pick<CduConfig, "points" | "outputs" | "pumps"> }): string[] {
  return [
    ...pod.racks.flatMap((r) => [r.points.returnTempC, r.points.supplyTempC, r.points.flowLpm, r.points.powerKw, ...r.points.leak, ...closedLimits(r)]),
    pod.cdu.points.dpKpa,
    pod.cdu.points.supplyTempC ?? UNCONFIGURED_CDU_SUPPLY,
    ...cduPumps(pod.cdu).flatMap((p) => [p.fault, p.running].filter((id): id is string => id !== undefined)),
  ];
}

/** A rack's closed limit switches in bank order (supply, return), those it has. */
function closedLimits(r: Pick<RackConfig, "points">): string[] {
  const { supplyIsolationClosedLimit: s, returnIsolationClosedLimit: t } = r.points;
  return [s, t].filter((id): id is string => id !== undefined);
}

/** The name of the CDU supply slot when no sensor feeds it. */
export const UNCONFIGURED_CDU_SUPPLY = "cdu.supplyTempC (none configured)";

/** What a layout needs to know of the pod: its racks' names and leak sensor counts. */
export type LayoutSource = { racks: readonly Pick<RackConfig, "name" | "points">[]; cdu?: CduConfig };

export function podLayout(src: LayoutSource): PodLayout {
  let next = 0;
  const racks = src.racks.map((r, i) => {
    const base = { name: r.name, returnTempC: next++, supplyTempC: next++, flowLpm: next++, powerKw: next++ };
    const leaks = r.points.leak.map(() => next++);
    const supplyClosedLimit = r.points.supplyIsolationClosedLimit !== undefined ? next++ : undefined;
    const returnClosedLimit = r.points.returnIsolationClosedLimit !== undefined ? next++ : undefined;
    return { ...base, leaks, supplyClosedLimit, returnClosedLimit, loop: i };
  });
  const dpKpa = next++;
  const supplyTempC = next++;
  const pumps = (src.cdu === undefined ? [] : cduPumps(src.cdu)).map((p) => ({
    name: p.name,
    fault: p.fault !== undefined ? next++ : undefined,
    running: p.running !== undefined ? next++ : undefined,
  }));
  const cdu = { dpKpa, supplyTempC, pumps };
  const pumpLoop = racks.length;
  const supplyLoop = src.cdu?.supplyControl !== undefined ? pumpLoop + 1 : undefined;
  const names = [...racks.map((r) => `${r.name}.valve`), "cdu.pump", ...(supplyLoop === undefined ? [] : ["cdu.supply"])];
  const loopByName = new Map(names.map((n, i) => [n, i]));
  const rackByName = new Map(racks.map((r, i) => [r.name, i]));
  return {
    racks,
    cdu,
    rackLoops: racks.map((r) => r.loop),
    pumpLoop,
    supplyLoop,
    points: next,
    loops: names.length,
    loopName: (loop) => names[loop] ?? `loop ${loop}`,
    loopIndex: (name) => loopByName.get(name),
    rackIndex: (name) => rackByName.get(name),
    isPumpLoop: (loop) => loop === pumpLoop,
    loopKind: (loop) => (loop === pumpLoop ? "pump" : loop === supplyLoop ? "supply" : "rack"),
    rackOfLoop: (loop) => (loop >= 0 && loop < racks.length ? loop : undefined),
  };
}
