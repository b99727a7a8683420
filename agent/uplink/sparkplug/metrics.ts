// The Sparkplug metric model of a pod: which metrics the edge node (the pod) and each device
// (the CDU, every rack) carry, their datatypes, units and aliases, and how each is read from the
// pod. Built from the config's racks and cdu alone, so the docs' metric list (scripts/gen-docs.ts)
// is generated from the same code the edge node runs.
import { measuredValue, type Point } from "../../../lib/points.js";
import type { FieldPointInfo, ModelSource, Range } from "./model-source.js";
import { failsafeReasons, loopModeWord } from "../../../pod/status-words.js";
import type { PodStatus } from "../../pod-api.js";
import { SPARKPLUG_QUALITY, sparkplugQuality } from "./payload.js";
import { tenth } from "../../../pod/wiring.js";

export type MetricType = "Double" | "Boolean" | "String" | "Int64";
export type MetricValue = number | boolean | string | null;

/** One reading of the pod, taken once per check and shared by every metric. */
export interface PodSample {
  status: PodStatus;
  points: ReadonlyMap<string, Point>;
  budgetKw: number;
  activeAlarms: number;
  /** the JSON uplink's spool depth (events and telemetry), null when it does not run */
  uplinkSpool: number | null;
  stored: number;
  dropped: number;
  /** wall-clock ms now, and the monotonic ms the points' source times are on */
  wallMs: number;
  monoMs: number;
}

export interface Reading {
  value: MetricValue;
  /** Sparkplug quality code (§6.4.9.1) */
  quality: number;
  /** wall-clock ms the value is from */
  timestamp: number;
}

export interface MetricDef {
  name: string;
  type: MetricType;
  unit?: string;
  description: string;
  /** 1.. unique across the edge node; none for bdSeq and Node Control/Rebirth (§6.4.6, §5.17) */
  alias?: number;
  /** the field point behind it: its deadband (uplink.exception.deadbands) and quality apply */
  pointId?: string;
  /** the loop whose setpoint a DCMD may write to it, when opted in (uplink.sparkplug.writableSetpoints) */
  setpointLoop?: string;
  /** its range, as engLow and engHigh in the birth: a point's valid range, a setpoint's envelope */
  range?: Range;
  /** a DCMD may write it (readOnly false in the birth) */
  writable?: boolean;
  /** a diagnostic's deadband, in its own units: a change within it is not sent (a spool's 0/1 at every event) */
  deadband?: number;
  read(s: PodSample): Reading;
}

export interface DeviceDef {
  /** the Sparkplug device id: "CDU" or the rack's name */
  id: string;
  /** the field points whose loss (all of them unreadable) is the device's death (DDEATH) */
  pointIds: string[];
  metrics: MetricDef[];
}

export interface SparkplugModel {
  node: MetricDef[];
  devices: DeviceDef[];
}

export type { ModelSource } from "./model-source.js";
export { modelSourceOf } from "./model-source.js";

const good = (value: MetricValue, s: PodSample): Reading => ({ value, quality: SPARKPLUG_QUALITY.good, timestamp: s.wallMs });

/** A field point as a metric: its value only while good, at its resolution, its quality in Sparkplug's codes, its source time. */
function pointReading(s: PodSample, id: string, round: (v: number) => number): Reading {
  const p = s.points.get(id);
  if (p === undefined) return { value: null, quality: SPARKPLUG_QUALITY.stale, timestamp: s.wallMs };
  const t = Number.isFinite(p.sourceTimeMs) ? Math.round(s.wallMs - (s.monoMs - p.sourceTimeMs)) : s.wallMs;
  const v = measuredValue(p);
  return { value: typeof v === "number" ? round(v) : v, quality: sparkplugQuality(p.quality), timestamp: t };
}

/** A computed value at the resolution the pod sends it (pod/wiring.ts's tenth), null kept. */
const sentAs = (v: number | null): number | null => (v === null ? null : tenth(v));

/** The model of a pod; aliases run 1.. over the node's metrics, then each device's, in order, and so stay the same from birth to birth. */
export function sparkplugModel(src: ModelSource): SparkplugModel {
  const id = src.identity;
  const info = new Map<string, FieldPointInfo>(src.fieldPoints.map((f) => [f.id, f]));
  const published = new Set<string>();
  const pointMetric = (name: string, unit: string | undefined, pointId: string, description: string): Omit<MetricDef, "alias"> => {
    published.add(pointId);
    const round = info.get(pointId)?.round ?? ((v: number) => v);
    return { name, type: "Double", unit, pointId, range: src.pointRanges.get(pointId), description: `${description} (field point ${pointId})`, read: (s) => pointReading(s, pointId, round) };
  };
  /** a loop's setpoint: its envelope, and writable where uplink.sparkplug.writableSetpoints opts it in */
  const setpoint = (loop: string): Pick<MetricDef, "setpointLoop" | "range" | "writable"> => {
    const sp = src.setpoints.get(loop);
    return { setpointLoop: loop, range: sp === undefined ? undefined : { low: sp.low, high: sp.high }, writable: sp?.writable === true };
  };
  const node: Omit<MetricDef, "alias">[] = [
    { name: "Properties/Version", type: "String", description: "podwarden's version", read: (s) => good(id.version, s) },
    { name: "Properties/Config Hash", type: "String", description: "sha256 of the config file the pod runs", read: (s) => good(id.configHash, s) },
    { name: "Properties/Site", type: "String", description: "the site, as in the JSON topics", read: (s) => good(id.site, s) },
    { name: "Properties/Pod", type: "String", description: "the pod's name", read: (s) => good(id.pod, s) },
    { name: "Pod/Mode", type: "String", description: "the supervisor's mode: Starting, Running, Degraded, Failsafe", read: (s) => good(s.status.mode, s) },
    { name: "Pod/Maintenance", type: "Boolean", description: "an operator's maintenance is on", read: (s) => good(s.status.maintenance, s) },
    { name: "Pod/Power Budget", type: "Double", unit: "kW", description: "the pod's power budget in force: the configured one, or mission control's lower one", read: (s) => good(s.budgetKw, s) },
    { name: "Pod/Power Total", type: "Double", unit: "kW", description: "the racks' good power readings, summed", read: (s) => good(sentAs(s.status.racks.reduce((a, r) => a + (r.powerKw ?? 0), 0)), s) },
    { name: "Pod/Pump Speed", type: "Double", unit: "%", description: "the CDU pump's speed command", read: (s) => good(sentAs(s.status.pump.speedCmdPct), s) },
    { ...pointMetric("Pod/Loop dP", "kPa", src.cdu.points.dpKpa, "the secondary loop's differential pressure") },
    { name: "Pod/Active Alarms", type: "Int64", description: "alarms active now", read: (s) => good(s.activeAlarms, s) },
    { name: "Uplink/Spool Depth", type: "Int64", deadband: 10, description: "events and telemetry in the JSON uplink's store-and-forward spool (null: the JSON topics are off); sent when it moves by more than 10", read: (s) => good(s.uplinkSpool, s) },
    { name: "Sparkplug/Stored Messages", type: "Int64", deadband: 10, description: "DATA messages stored while there is no Sparkplug session, to be replayed as historical; sent when it moves by more than 10", read: (s) => good(s.stored, s) },
    { name: "Sparkplug/Dropped Messages", type: "Int64", description: "stored DATA messages dropped, oldest first, past uplink.sparkplug.maxStoredMessages, since start", read: (s) => good(s.dropped, s) },
  ];
  const cdu: Omit<MetricDef, "alias">[] = [
    { name: "Pump/Speed Command", type: "Double", unit: "%", description: "the pump's speed command", read: (s) => good(sentAs(s.status.pump.speedCmdPct), s) },
    { name: "Pump/Enabled", type: "Boolean", description: "the pump's enable output", read: (s) => good(s.status.pump.enabled, s) },
    { name: "Pump/Mode", type: "String", description: "what holds the pump loop: LEAK, FAILSAFE, Tuning (a relay autotune), Manual, Override, Auto", read: (s) => good(loopModeWord(s.status.pump.loopStatus), s) },
    { name: "Pump/Fail-safe Reason", type: "String", description: "why the pump loop is in fail-safe, in words (empty: it is not)", read: (s) => good(failsafeReasons(s.status.pump.loopStatus), s) },
    { name: "Pump/Lead", type: "String", description: "the pump that leads (cdu.pumps' lead/lag duty; `pump` for a CDU with one)", read: (s) => good(s.status.pump.pumps.find((p) => p.role === "lead")?.name ?? "", s) },
    { ...pointMetric("Loop/dP", "kPa", src.cdu.points.dpKpa, "the secondary loop's differential pressure") },
    { name: "Loop/dP Setpoint", type: "Double", unit: "kPa", ...setpoint("cdu.pump"), description: "the pump loop's dP setpoint in force", read: (s) => good(s.status.pump.setpointKpa, s) },
    ...(src.cdu.points.supplyTempC === undefined ? [] : [pointMetric("Supply Temperature", "°C", src.cdu.points.supplyTempC, "the CDU's supply temperature")]),
    // with cdu.supplyControl: the primary valve that holds it
    ...(src.cdu.supplyControl === undefined
      ? []
      : [
          { name: "Supply/Primary Valve Command", type: "Double", unit: "%", description: "the primary-side valve's command (cdu.supplyControl)", read: (s) => good(sentAs(s.status.supply?.valvePct ?? NaN), s) },
          { name: "Supply/Temperature Setpoint", type: "Double", unit: "°C", ...setpoint("cdu.supply"), description: "the supply-temperature loop's setpoint in force", read: (s) => good(s.status.supply?.setpointC ?? NaN, s) },
          { name: "Supply/Mode", type: "String", description: "what holds the supply-temperature loop: LEAK, FAILSAFE, Tuning, Manual, Override, Auto", read: (s) => good(loopModeWord(s.status.supply?.loopStatus ?? 0), s) },
        ] satisfies Omit<MetricDef, "alias">[]),
  ];
  const rack = (r: ModelSource["racks"][number], i: number): Omit<MetricDef, "alias">[] => {
    const st = (s: PodSample): PodStatus["racks"][number] => s.status.racks[i];
    const p = r.points;
    return [
      pointMetric("Return Temperature", "°C", p.returnTempC, "the rack's return (outlet) temperature"),
      pointMetric("Supply Temperature", "°C", p.supplyTempC, "the rack's supply (inlet) temperature"),
      pointMetric("Flow", "L/min", p.flowLpm, "the rack's coolant flow"),
      pointMetric("Power", "kW", p.powerKw, "the rack's IT power"),
      { name: "Return Temperature Setpoint", type: "Double", unit: "°C", ...setpoint(`${r.name}.valve`), description: "the valve loop's return-temperature setpoint in force", read: (s) => good(st(s).setpointC, s) },
      { name: "Valve/Command", type: "Double", unit: "%", description: "the control valve's command", read: (s) => good(sentAs(st(s).valvePct), s) },
      ...(p.valvePositionPct === undefined ? [] : [pointMetric("Valve/Position", "%", p.valvePositionPct, "the control valve's position feedback")]),
      { name: "Valve/Mode", type: "String", description: "what holds the valve loop: LEAK, FAILSAFE, Tuning (a relay autotune), Manual, Override, Auto", read: (s) => good(loopModeWord(st(s).loopStatus), s) },
      { name: "Valve/Fail-safe Reason", type: "String", description: "why the valve loop is in fail-safe, in words (empty: it is not)", read: (s) => good(failsafeReasons(st(s).loopStatus), s) },
      { name: "Isolation/State", type: "String", description: "Normal, Isolating, Isolated (proven) or Escalated", read: (s) => good(st(s).isolation, s) },
      { name: "Isolation/Supply Open", type: "Boolean", description: "the supply isolation valve is commanded open", read: (s) => good(st(s).supplyIsolationOpen, s) },
      { name: "Isolation/Return Open", type: "Boolean", description: "the return isolation valve is commanded open", read: (s) => good(st(s).returnIsolationOpen, s) },
      { name: "Isolation/By Operator", type: "Boolean", description: "an operator isolated the rack (until return-rack)", read: (s) => good(st(s).isolatedByOperator, s) },
      { name: "Leak/State", type: "String", description: "OK, Warning (a sensor fault) or Critical (wet, or latched)", read: (s) => good(st(s).leak, s) },
      { name: "Power/Cap", type: "Double", unit: "kW", description: "the power cap in force (null: none written)", read: (s) => good(st(s).powerCapKw, s) },
      { name: "Power/Off Requested", type: "Boolean", description: "a power-off request is sent to the rack (leak escalation, or no coolant)", read: (s) => good(st(s).powerOffRequested, s) },
    ];
  };
  const racks = src.racks.map((r, i) => rack(r, i));
  // every other point the pod reads (a CDU's return temperature, a rack's GPU temperature, its
  // leak input's raw code): under the device whose points share its field device, else the node's
  const extra = fieldExtras(src, published);
  const withExtras = (device: string | null, ms: Omit<MetricDef, "alias">[]): Omit<MetricDef, "alias">[] => [
    ...ms,
    ...(extra.get(device) ?? []).map((f) => pointMetric(device === null ? `Field/${f.id}` : `Field/${f.id.slice(f.id.indexOf(".") + 1)}`, f.unit, f.id, "a field point the pod reads")),
  ];
  let alias = 0;
  const numbered = (ms: Omit<MetricDef, "alias">[]): MetricDef[] => ms.map((m) => ({ ...m, alias: ++alias }));
  return {
    node: numbered(withExtras(null, node)),
    devices: [
      { id: "CDU", pointIds: [src.cdu.points.dpKpa, ...(src.cdu.points.supplyTempC === undefined ? [] : [src.cdu.points.supplyTempC])], metrics: numbered(withExtras("CDU", cdu)) },
      ...src.racks.map((r, i) => ({ id: r.name, pointIds: [r.points.returnTempC, r.points.supplyTempC, r.points.flowLpm, r.points.powerKw, ...r.points.leak], metrics: numbered(withExtras(r.name, racks[i])) })),
    ],
  };
}

/** The field device a point id names (`device.point`), or undefined for an id without one. */
const fieldDevice = (id: string): string | undefined => (id.includes(".") ? id.slice(0, id.indexOf(".")) : undefined);

/**
 * The field points no metric publishes yet, by the Sparkplug device they go under: the CDU or the
 * rack whose configured points alone read from the same field device; null (the node) for a
 * point of a field device two of them share, or of none.
 */
function fieldExtras(src: ModelSource, published: ReadonlySet<string>): Map<string | null, FieldPointInfo[]> {
  const owner = new Map<string, string | null>();
  const own = (device: string, ids: readonly (string | undefined)[]): void => {
    for (const id of ids) {
      const f = id === undefined ? undefined : fieldDevice(id);
      if (f === undefined) continue;
      const o = owner.get(f);
      owner.set(f, o === undefined || o === device ? device : null);
    }
  };
  own("CDU", Object.values(src.cdu.points));
  for (const r of src.racks) own(r.name, Object.values(r.points).flat());
  const out = new Map<string | null, FieldPointInfo[]>();
  for (const f of src.fieldPoints) {
    if (published.has(f.id)) continue;
    const d = fieldDevice(f.id);
    const device = d === undefined ? null : (owner.get(d) ?? null);
    out.set(device, [...(out.get(device) ?? []), f]);
  }
  return out;
}

/**
 * A device is dead when none of its field points can be read: every one is STALE (no answer, no
 * connection, its breaker open). A point that answers with a bad value keeps the device alive:
 * that is a sensor's fault, which the metric's quality carries.
 */
export function deviceLost(d: DeviceDef, points: ReadonlyMap<string, Point>): boolean {
  return d.pointIds.every((id) => {
    const p = points.get(id);
    return p === undefined || sparkplugQuality(p.quality) === SPARKPLUG_QUALITY.stale;
  });
}
