// What the HMI page shows, computed on the daemon from the pod's reading face: every status bit
// already in words (the page decodes nothing), every measured value null unless it is good, the
// alarms in the order a technician reads them. One view serves every open page.
import { failsafeReasons, loopModeWord } from "../../pod/status-words.js";
import type { PodReader } from "../pod-api.js";
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
  setpointC: number;
  /** commanded positions of the isolation valves */
  supplyIsolation: "open" | "closed";
  returnIsolation: "open" | "closed";
  isolation: string;
  isolatedByOperator: boolean;
  leak: string;
  /** what holds the loop: LEAK, FAILSAFE, Manual, Override, Auto */
  loopMode: string;
  /** why, in words, when an interlock holds it ("" otherwise) */
  hold: string;
}

export interface HmiView {
  /** wall time of this view, ISO 8601 */
  at: string;
  pod: { site: string; pod: string; configHash: string; version: string };
  mode: string;
  maintenance: boolean;
  healthy: boolean;
  pump: { speedPct: number | null; dpKpa: number | null; setpointKpa: number; running: boolean; loopMode: string; hold: string };
  racks: HmiRack[];
  alarms: Pick<Alarm, "id" | "severity" | "message" | "source" | "raisedAt" | "acknowledged" | "latched" | "suppressed" | "conditionActive">[];
  control: { ticks: number; p99Us: number | null; maxUs: number | null; overruns: number; recentP99Us: number | null; recentOverruns: number; schedFifo: string };
}

const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);

/** The interlock holding a loop, in words: a leak isolation, or a fail-safe and its reasons. */
export function holdWords(loopStatus: number): string {
  const mode = loopModeWord(loopStatus);
  if (mode === "LEAK") return "leak interlock: rack isolated";
  if (mode === "FAILSAFE") return `fail-safe: ${failsafeReasons(loopStatus) || "interlock"}`;
  return "";
}

const SEVERITY_RANK: Record<string, number> = { Critical: 0, Warning: 1 };

/** Active alarms, most severe first, then newest first: a new leak is the top line. */
export function alarmOrder(alarms: readonly Alarm[]): Alarm[] {
  return [...alarms].sort((a, b) => (SEVERITY_RANK[a.severity] ?? 9) - (SEVERITY_RANK[b.severity] ?? 9) || b.raisedAtMs - a.raisedAtMs);
}

export function hmiView(pod: Pick<PodReader, "identity" | "status" | "activeAlarms" | "healthy">, version: string): HmiView {
  const s = pod.status();
  return {
    at: new Date().toISOString(),
    pod: { site: pod.identity.site, pod: pod.identity.pod, configHash: pod.identity.configHash, version },
    mode: s.mode,
    maintenance: s.maintenance,
    healthy: pod.healthy(),
    pump: { speedPct: finite(s.pump.speedCmdPct), dpKpa: s.pump.dpKpa, setpointKpa: s.pump.setpointKpa, running: s.pump.enabled, loopMode: loopModeWord(s.pump.loopStatus), hold: holdWords(s.pump.loopStatus) },
    racks: s.racks.map((r) => ({
      name: r.name,
      supplyTempC: r.supplyTempC,
      returnTempC: r.returnTempC,
      flowLpm: r.flowLpm,
      powerKw: r.powerKw,
      powerCapKw: r.powerCapKw,
      powerOffRequested: r.powerOffRequested,
      valvePct: finite(r.valvePct),
      setpointC: r.setpointC,
      supplyIsolation: r.supplyIsolationOpen ? "open" : "closed",
      returnIsolation: r.returnIsolationOpen ? "open" : "closed",
      isolation: r.isolation,
      isolatedByOperator: r.isolatedByOperator,
      leak: r.leak,
      loopMode: loopModeWord(r.loopStatus),
      hold: holdWords(r.loopStatus),
    })),
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
