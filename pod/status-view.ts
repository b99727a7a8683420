// The pod as people and dashboards see it: each rack's readings, valve, isolation and leak
// state, and the pump, from the hot path's outputs, the supervisor's decisions and the points.
import * as L from "../hotpath-as/assembly/layout.js";
import { COMMS_FAULTS, type Quality } from "../lib/points.js";
import type { PodConfig } from "./config.js";
import { cduPumps } from "./pumps.js";
import type { PodLayout } from "./layout.js";
import { isolationState, leakState, type IsolationState, type LeakState } from "./status-words.js";
import type { PodDecisions } from "./wiring.js";

/** What an isolation valve's limit switches say: null where the rack has none configured. */
export type ValveSeen = "open" | "closed" | "moving" | "not open" | "not closed" | "no reading" | "limit fault";

/** The valve's position from its open and closed limit switches (either may be missing). */
export function valveSeen(openLimit: number | null | undefined, closedLimit: number | null | undefined): ValveSeen | null {
  if (openLimit === undefined && closedLimit === undefined) return null;
  if (openLimit === null || closedLimit === null) return "no reading";
  const open = openLimit === 1;
  const closed = closedLimit === 1;
  if (open && closed) return "limit fault";
  if (open) return "open";
  if (closed) return "closed";
  // one switch only, not made: between, or at the other end, with nothing to tell which
  if (closedLimit === undefined) return "not open";
  if (openLimit === undefined) return "not closed";
  return "moving";
}

export interface RackStatus {
  name: string;
  // measured values: null unless the reading is good (an invalid reading's sentinel, a stale or
  // timed-out value must not pass for a measurement; the point's quality says why)
  returnTempC: number | null;
  supplyTempC: number | null;
  flowLpm: number | null;
  powerKw: number | null;
  /** the cap in force (with the rack's no-coolant limit applied while it is isolated), kW; null when no cap is written to the rack */
  powerCapKw: number | null;
  /** a power-off request is sent to the rack (leak escalation, or no coolant) */
  powerOffRequested: boolean;
  valvePct: number;
  /** the control valve's position feedback, %: null without one configured, or without a good reading */
  valvePositionPct: number | null;
  supplyIsolationOpen: boolean;
  returnIsolationOpen: boolean;
  /** where the isolation valves' limit switches say they are (null: none configured) */
  supplyIsolationSeen: ValveSeen | null;
  returnIsolationSeen: ValveSeen | null;
  isolation: IsolationState;
  /** an operator isolated the rack (isolate-rack); kept until return-rack, across restarts */
  isolatedByOperator: boolean;
  leak: LeakState;
  /**
   * its leak sensors: every one reading; one whose reading did not arrive (`comms fault`: its
   * device silent or erring, or the sample stale); one that arrived unusable (`no reading`); or
   * one reporting a cable fault. A fault of the sensor or its link, never a leak.
   */
  leakSensor: "ok" | "comms fault" | "no reading" | "cable fault";
  /** the hot path's rack status bits (RS_*: a leak input wet, a leak sensor fault, …) */
  rackStatus: number;
  loopStatus: number;
  setpointC: number;
  /** the control valve's health from its position feedback (null: no feedback configured, or not watched) */
  valveHealth: ValveHealthView | null;
}

/** What the agent's valve watch (agent/health) finds of a control valve. */
export interface ValveHealthView {
  /** the stiction, or the dead band's width, %; null until enough breakaways have been seen */
  stickBandPct: number | null;
  kind: "stiction" | "deadband" | null;
  /** full-stroke time as last seen, s; null until a stroke has been seen */
  travelS: number | null;
  stuck: boolean;
  /** command − position, % */
  trackingErrorPct: number | null;
  /** what is wrong, in words (the Warning valve:<rack> says the same) */
  problems: string[];
}

/** One of the CDU's pumps (pod/pumps.ts). */
export interface PumpUnitStatus {
  name: string;
  /** lead: it carries the loop; handover: the old lead through a rotation's overlap; standby: stopped */
  role: "lead" | "handover" | "standby";
  /** its status inputs' values when good, else null; undefined where it has none */
  fault?: number | null;
  running?: number | null;
  /** its speed feedback, % (null unless good); undefined where it has none configured */
  speedPct?: number | null;
}

export interface PumpStatus {
  speedCmdPct: number;
  /** null unless the reading is good */
  dpKpa: number | null;
  enabled: boolean;
  /** each pump, in lead/lag order (one, for a CDU with one pump) */
  pumps: PumpUnitStatus[];
  loopStatus: number;
  setpointKpa: number;
}

/** The CDU's own readings, each null unless configured (cdu.points) and good. */
export interface CduStatus {
  supplyTempC: number | null;
  returnTempC: number | null;
  totalFlowLpm: number | null;
  reservoirPct: number | null;
}

export function cduStatus(pod: Pick<PodConfig, "cdu">, v: Pick<ViewInputs, "value">): CduStatus {
  const p = pod.cdu.points;
  const read = (id: string | undefined): number | null => (id === undefined ? null : v.value(id));
  return { supplyTempC: read(p.supplyTempC), returnTempC: read(p.returnTempC), totalFlowLpm: read(p.totalFlowLpm), reservoirPct: read(p.reservoirPct) };
}

/** The CDU's supply-temperature loop (cdu.supplyControl). */
export interface SupplyStatus {
  /** the primary valve's command, % */
  valvePct: number;
  /** null unless the reading is good */
  supplyTempC: number | null;
  setpointC: number;
  loopStatus: number;
}

/** The hot-path outputs the view reads. */
export interface ViewOutputs {
  loopOut: ArrayLike<number>;
  loopStatus: ArrayLike<number>;
  rackState: ArrayLike<number>;
  rackStatus: ArrayLike<number>;
  rackSupplyOpen: ArrayLike<number>;
  rackReturnOpen: ArrayLike<number>;
}

export interface ViewInputs {
  outputs: ViewOutputs | undefined;
  decisions: PodDecisions;
  /** the power commands in force for rack i (PodWiring.powerCommand) */
  power(rack: number): { powerOff: boolean; capKw: number; writeCap: boolean };
  /** a field point's value when it is good, else null */
  value(pointId: string): number | null;
  /** a field point's quality (undefined: no such point read yet) */
  quality?(pointId: string): Quality | undefined;
  /** each loop's setpoint in force */
  setpoints: readonly number[];
  /** 1 where an operator isolated the rack */
  manualIsolate: ArrayLike<number>;
  /** rack i's control-valve health, where it is watched */
  valveHealth?: (rack: number) => ValveHealthView | null;
}

export function rackStatuses(pod: Pick<PodConfig, "racks">, lay: PodLayout, v: ViewInputs): RackStatus[] {
  const o = v.outputs;
  // a limit switch's reading: undefined where none is configured, null without a good reading
  const limit = (id: string | undefined): number | null | undefined => (id === undefined ? undefined : v.value(id));
  return pod.racks.map((r, i) => {
    const loop = lay.rackLoops[i];
    const power = v.power(i);
    return {
      name: r.name,
      returnTempC: v.value(r.points.returnTempC),
      supplyTempC: v.value(r.points.supplyTempC),
      flowLpm: v.value(r.points.flowLpm),
      powerKw: v.value(r.points.powerKw),
      powerCapKw: power.writeCap && r.outputs.powerCap !== undefined ? power.capKw : null,
      powerOffRequested: power.powerOff,
      valvePct: o?.loopOut[loop] ?? NaN,
      valvePositionPct: r.points.valvePositionPct === undefined ? null : v.value(r.points.valvePositionPct),
      supplyIsolationOpen: o?.rackSupplyOpen[i] === 1,
      returnIsolationOpen: o?.rackReturnOpen[i] === 1,
      supplyIsolationSeen: valveSeen(limit(r.points.supplyIsolationOpenLimit), limit(r.points.supplyIsolationClosedLimit)),
      returnIsolationSeen: valveSeen(limit(r.points.returnIsolationOpenLimit), limit(r.points.returnIsolationClosedLimit)),
      isolation: isolationState(o?.rackState[i] ?? L.RACK_NORMAL),
      isolatedByOperator: v.manualIsolate[i] === 1,
      leak: leakState(o?.rackState[i] ?? L.RACK_NORMAL, o?.rackStatus[i] ?? 0),
      leakSensor: leakSensor(r.points.leak, v),
      rackStatus: o?.rackStatus[i] ?? 0,
      loopStatus: o?.loopStatus[loop] ?? 0,
      setpointC: v.setpoints[loop],
      valveHealth: v.valveHealth?.(i) ?? null,
    };
  });
}

/** A rack's leak sensors in one word: a sensor unread outranks a cable fault (it may hide one). */
function leakSensor(ids: readonly string[], v: Pick<ViewInputs, "value" | "quality">): RackStatus["leakSensor"] {
  const unread = ids.filter((id) => v.value(id) === null);
  if (unread.some((id) => COMMS_FAULTS.has(v.quality?.(id) ?? "disconnected"))) return "comms fault";
  if (unread.length > 0) return "no reading";
  return ids.some((id) => v.value(id) === L.LEAK_CABLE_FAULT) ? "cable fault" : "ok";
}

/** The racks' power drawn, kW: the sum of their good readings (a rack without one adds nothing). */
export function podDrawKw(racks: readonly Pick<RackStatus, "powerKw">[]): number {
  return racks.reduce((a, r) => a + (r.powerKw ?? 0), 0);
}

export function pumpStatus(pod: Pick<PodConfig, "cdu">, lay: PodLayout, v: ViewInputs): PumpStatus {
  const o = v.outputs;
  const d = v.decisions;
  const lead = d.pumpLead ?? 0;
  return {
    speedCmdPct: o?.loopOut[lay.pumpLoop] ?? NaN,
    dpKpa: v.value(pod.cdu.points.dpKpa),
    enabled: d.pumpEnable,
    pumps: cduPumps(pod.cdu).map((p, i) => ({
      name: p.name,
      role: i === lead ? "lead" : (d.pumpRun[i] ?? false) ? "handover" : "standby",
      ...(p.fault === undefined ? {} : { fault: v.value(p.fault) }),
      ...(p.running === undefined ? {} : { running: v.value(p.running) }),
      ...(p.speedFeedback === undefined ? {} : { speedPct: v.value(p.speedFeedback) }),
    })),
    loopStatus: o?.loopStatus[lay.pumpLoop] ?? 0,
    setpointKpa: v.setpoints[lay.pumpLoop],
  };
}

/** The supply-temperature loop's status, or undefined without cdu.supplyControl. */
export function supplyStatus(pod: Pick<PodConfig, "cdu">, lay: PodLayout, v: ViewInputs): SupplyStatus | undefined {
  const loop = lay.supplyLoop;
  if (loop === undefined || pod.cdu.points.supplyTempC === undefined) return undefined;
  return {
    valvePct: v.outputs?.loopOut[loop] ?? NaN,
    supplyTempC: v.value(pod.cdu.points.supplyTempC),
    setpointC: v.setpoints[loop],
    loopStatus: v.outputs?.loopStatus[loop] ?? 0,
  };
}
