// What the HMI page shows, computed on the daemon from the pod's reading face: every status bit
// already in words (the page decodes nothing), every measured value null unless it is good, the
// alarms in the order a technician reads them. One view serves every open page.
import { degradedWords, failsafeReasons, loopModeWord } from "../../pod/status-words.js";
import type { LoopKind, PodLayout } from "../../pod/layout.js";
import { podDrawKw, type ValveSeen } from "../../pod/status-view.js";
import { loopEnvelope, type CommandLimits, type PodReader, type Range } from "../pod-api.js";
import type { Alarm } from "../supervisor/alarms.js";

export interface HmiRack {
  name: string;
  supplyTempC: number | null;
  returnTempC: number | null;
  flowLpm: number | null;
  powerKw: number | null;
  powerCapKw: number | null;
  powerOffRequested: boolean;
  valvePct: number | null;
  /** the control valve's position feedback, where the rack has one */
  valvePositionPct: number | null;
  setpointC: number;
  /** commanded positions of the isolation valves */
  supplyIsolation: "open" | "closed";
  returnIsolation: "open" | "closed";
  /** where their limit switches say they are (null: none configured) */
  supplyIsolationSeen: ValveSeen | null;
  returnIsolationSeen: ValveSeen | null;
  isolation: string;
  isolatedByOperator: boolean;
  leak: string;
  /** its leak sensors: "ok", "comms fault", "no reading" or "cable fault" (pod/status-view.ts) */
  leakSensor: string;
  /** what holds the loop: LEAK, FAILSAFE, Tuning, Manual, Override, Auto */
  loopMode: string;
  /** why, in words, when an interlock holds it ("" otherwise) */
  hold: string;
}

/** A lease in force: a setpoint, or an Override's output, until it runs out. */
export interface HmiLease {
  value: number;
  expiresInMs: number;
  by: string;
}

/** A loop's faceplate: SP, PV and OUT, the mode and what holds it, its limits and its leases. */
export interface HmiLoop {
  name: string;
  kind: LoopKind;
  unit: "°C" | "kPa";
  sp: number;
  pv: number | null;
  out: number | null;
  mode: string;
  hold: string;
  spRange: Range;
  outRange: Range;
  setpointLease: HmiLease | null;
  override: HmiLease | null;
}

export interface HmiView {
  /** wall time of this view, ISO 8601 */
  at: string;
  pod: { site: string; pod: string; configHash: string; version: string };
  mode: string;
  maintenance: boolean;
  healthy: boolean;
  /** the racks' good power readings summed, and the budget in force (null if none is known) */
  power: { drawKw: number; budgetKw: number | null };
  /** duty: each pump's role with redundant pumps ("pump-1 lead · pump-2 standby"), "" with one */
  pump: { speedPct: number | null; dpKpa: number | null; setpointKpa: number; running: boolean; loopMode: string; hold: string; duty: string };
  /** the CDU's own readings (cdu.points), each null where none is configured or not good */
  cdu: { supplyTempC: number | null; returnTempC: number | null; totalFlowLpm: number | null; reservoirPct: number | null };
  racks: HmiRack[];
  loops: HmiLoop[];
  alarms: Pick<Alarm, "id" | "severity" | "message" | "source" | "raisedAt" | "acknowledged" | "latched" | "suppressed" | "conditionActive">[];
  control: { ticks: number; p99Us: number | null; maxUs: number | null; overruns: number; recentP99Us: number | null; recentOverruns: number; schedFifo: string };
}

const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);

/** The interlock holding a loop, in words: a leak isolation, or a fail-safe and its reasons; or what a loop still in control lost (degraded). */
export function holdWords(loopStatus: number): string {
  const mode = loopModeWord(loopStatus);
  if (mode === "LEAK") return "leak interlock: rack isolated";
  if (mode === "FAILSAFE") return `fail-safe: ${failsafeReasons(loopStatus) || "interlock"}`;
  const lost = degradedWords(loopStatus);
  return lost.length > 0 ? `degraded: ${lost.join("; ")}` : "";
}

const SEVERITY_RANK: Record<string, number> = { Critical: 0, Warning: 1 };

/** Active alarms, most severe first, then newest first: a new leak is the top line. */
export function alarmOrder(alarms: readonly Alarm[]): Alarm[] {
  return [...alarms].sort((a, b) => (SEVERITY_RANK[a.severity] ?? 9) - (SEVERITY_RANK[b.severity] ?? 9) || b.raisedAtMs - a.raisedAtMs);
}

interface SnapshotLease {
  loop: string;
  value?: number;
  outputPct?: number;
  expiresInMs: number;
  by: string;
}

/** The leases a snapshot lists, by loop name. */
function leasesOf(list: unknown): Map<string, HmiLease> {
  const out = new Map<string, HmiLease>();
  for (const l of Array.isArray(list) ? (list as SnapshotLease[]) : []) out.set(l.loop, { value: l.value ?? l.outputPct ?? NaN, expiresInMs: l.expiresInMs, by: l.by });
  return out;
}

/** What the view needs of the pod's wiring: the loops' names and the envelope. */
export interface ViewShape {
  layout: Pick<PodLayout, "loopName" | "rackLoops" | "pumpLoop" | "supplyLoop">;
  limits: CommandLimits;
}

export function hmiView(pod: Pick<PodReader, "identity" | "status" | "activeAlarms" | "healthy" | "snapshot" | "powerBudgetKw">, version: string, shape: ViewShape): HmiView {
  const snap = pod.snapshot();
  const s = snap.status as ReturnType<PodReader["status"]>;
  const setpointLeases = leasesOf(snap.setpointLeases);
  const overrides = leasesOf(snap.overrides);
  const { layout, limits } = shape;
  const loop = (i: number, kind: LoopKind, sp: number, pv: number | null, out: number, status: number): HmiLoop => {
    const name = layout.loopName(i);
    const env = loopEnvelope(limits, kind);
    return {
      name,
      kind,
      unit: kind === "pump" ? "kPa" : "°C",
      sp,
      pv,
      out: finite(out),
      mode: loopModeWord(status),
      hold: holdWords(status),
      spRange: env.setpoint,
      outRange: env.output,
      setpointLease: setpointLeases.get(name) ?? null,
      override: overrides.get(name) ?? null,
    };
  };
  return {
    at: new Date().toISOString(),
    pod: { site: pod.identity.site, pod: pod.identity.pod, configHash: pod.identity.configHash, version },
    mode: s.mode,
    maintenance: s.maintenance,
    healthy: pod.healthy(),
    power: { drawKw: podDrawKw(s.racks), budgetKw: pod.powerBudgetKw() },
    pump: { speedPct: finite(s.pump.speedCmdPct), dpKpa: s.pump.dpKpa, setpointKpa: s.pump.setpointKpa, running: s.pump.enabled, loopMode: loopModeWord(s.pump.loopStatus), hold: holdWords(s.pump.loopStatus), duty: s.pump.pumps.length > 1 ? s.pump.pumps.map((p) => `${p.name} ${p.role}`).join(" · ") : "" },
    cdu: s.cdu,
    racks: s.racks.map((r) => ({
      name: r.name,
      supplyTempC: r.supplyTempC,
      returnTempC: r.returnTempC,
      flowLpm: r.flowLpm,
      powerKw: r.powerKw,
      powerCapKw: r.powerCapKw,
      powerOffRequested: r.powerOffRequested,
      valvePct: finite(r.valvePct),
      valvePositionPct: r.valvePositionPct,
      setpointC: r.setpointC,
      supplyIsolation: r.supplyIsolationOpen ? "open" : "closed",
      returnIsolation: r.returnIsolationOpen ? "open" : "closed",
      supplyIsolationSeen: r.supplyIsolationSeen,
      returnIsolationSeen: r.returnIsolationSeen,
      isolation: r.isolation,
      isolatedByOperator: r.isolatedByOperator,
      leak: r.leak,
      leakSensor: r.leakSensor,
      loopMode: loopModeWord(r.loopStatus),
      hold: holdWords(r.loopStatus),
    })),
    loops: [...s.racks.map((r, i) => loop(layout.rackLoops[i], "rack", r.setpointC, r.returnTempC, r.valvePct, r.loopStatus)), loop(layout.pumpLoop, "pump", s.pump.setpointKpa, s.pump.dpKpa, s.pump.speedCmdPct, s.pump.loopStatus),
      ...(s.supply === undefined || layout.supplyLoop === undefined ? [] : [loop(layout.supplyLoop, "supply", s.supply.setpointC, s.supply.supplyTempC, s.supply.valvePct, s.supply.loopStatus)]),
    ],
    alarms: alarmOrder(pod.activeAlarms()).map((a) => ({
      id: a.id,
      severity: a.severity,
      message: a.message,
      source: a.source,
      raisedAt: a.raisedAt,
      acknowledged: a.acknowledged,
      latched: a.latched,
      suppressed: a.suppressed,
      conditionActive: a.conditionActive,
    })),
    control: {
      ticks: s.control.ticks,
      p99Us: finite(s.control.p99Us),
      maxUs: finite(s.control.maxUs),
      overruns: s.control.overruns,
      recentP99Us: finite(s.control.recent.p99Us),
      recentOverruns: s.control.recent.overruns,
      schedFifo: s.control.schedFifo,
    },
  };
}
