// What the Sparkplug metric model is built from, taken from an agent's config: the racks and the
// CDU, every field point the pod reads (its unit, and the resolution its values are rounded to),
// each point's valid range and each loop's setpoint envelope (a birth's engLow and engHigh), and
// which setpoints a DCMD may write (its readOnly).
import type { PointConfig } from "../../../drivers/modbus/config.js";
import type { CduConfig, RackConfig } from "../../../pod/config.js";
import { podLayout } from "../../../pod/layout.js";
import type { AgentConfig } from "../../config/load.js";
import { commandLimits } from "../../commands/executor.js";
import { loopEnvelope } from "../../pod-api.js";

/** A field point the pod reads. */
export interface FieldPointInfo {
  id: string;
  unit?: string;
  /** its value at the resolution its source has (an f32 register's 7 significant digits, a scaled integer's decimals) */
  round: (v: number) => number;
}

export interface Range {
  low: number;
  high: number;
}

export interface ModelSource {
  racks: readonly Pick<RackConfig, "name" | "points">[];
  cdu: Pick<CduConfig, "points" | "supplyControl">;
  /** every field point the pod reads, in config order */
  fieldPoints: readonly FieldPointInfo[];
  /** a loop point's valid range (control.points.<kind>), where the model knows its kind */
  pointRanges: ReadonlyMap<string, Range>;
  /** each loop's setpoint envelope, and whether a DCMD may write it (uplink.sparkplug.writableSetpoints) */
  setpoints: ReadonlyMap<string, Range & { writable: boolean }>;
  /** identity properties in the NBIRTH */
  identity: { version: string; configHash: string; site: string; pod: string };
}

const exact = (v: number): number => v;

/** Rounds to `digits` significant digits (toPrecision), or leaves the value as it is. */
export const significant =
  (digits: number) =>
  (v: number): number =>
    Number.isFinite(v) ? Number(v.toPrecision(digits)) : v;

/** Rounds to the decimals `step` has (0.1: one, 0.01: two, 1: none). */
export function toStep(step: number): (v: number) => number {
  const decimals = Math.max(0, Math.min(12, Math.ceil(-Math.log10(Math.abs(step)) - 1e-9)));
  return (v) => (Number.isFinite(v) ? Number(v.toFixed(decimals)) : v);
}

/**
 * The resolution of a Modbus point: an f32 carries about 7 significant decimal digits (the
 * 117.5999984741211 a float32 117.6 widens to is noise); an integer register its scale's
 * decimals; a 4–20 mA input the 5 significant digits of its µA reading; an f64 or a 64-bit
 * integer everything.
 */
export function modbusResolution(p: Pick<PointConfig, "type" | "scale" | "loop4to20">): (v: number) => number {
  if (p.loop4to20 !== undefined) return significant(5);
  if (p.type === "f32") return significant(7);
  if (p.type === "u16" || p.type === "i16" || p.type === "u32" || p.type === "i32") return toStep(p.scale);
  return exact;
}

type ConfigShape = Pick<AgentConfig, "racks" | "cdu" | "control" | "site" | "pod" | "modbus" | "mqttIngest" | "redfishClient" | "uplink" | "supervisor">;

/** The model's source from an agent's config and the identity it runs with. */
export function modelSourceOf(c: ConfigShape, configHash: string, version: string): ModelSource {
  const fieldPoints: FieldPointInfo[] = [
    ...c.modbus.devices.flatMap((d) => d.points.map((p) => ({ id: `${d.name}.${p.name}`, unit: p.unit, round: modbusResolution(p) }))),
    ...(c.mqttIngest?.points ?? []).map((p) => ({ id: p.id, unit: p.unit, round: exact })),
    ...c.redfishClient.devices.flatMap((d) => d.points.map((p) => ({ id: `${d.name}.${p.name}`, unit: p.unit, round: exact }))),
  ];
  const k = c.control.points;
  const range = (r: { min: number; max: number }): Range => ({ low: r.min, high: r.max });
  const pointRanges = new Map<string, Range>();
  for (const r of c.racks) {
    pointRanges.set(r.points.returnTempC, range(k.temperature)).set(r.points.supplyTempC, range(k.temperature));
    pointRanges.set(r.points.flowLpm, range(k.flow)).set(r.points.powerKw, range(k.power));
  }
  pointRanges.set(c.cdu.points.dpKpa, range(k.pressure));
  if (c.cdu.points.supplyTempC !== undefined) pointRanges.set(c.cdu.points.supplyTempC, range(k.temperature));
  const lay = podLayout(c);
  const limits = commandLimits(c);
  const writable = new Set(c.uplink?.sparkplug.writableSetpoints ?? []);
  const setpoints = new Map<string, Range & { writable: boolean }>();
  for (let i = 0; i < lay.loops; i++) {
    const env = loopEnvelope(limits, lay.loopKind(i)).setpoint;
    setpoints.set(lay.loopName(i), { low: env.min, high: env.max, writable: writable.has(lay.loopName(i)) });
  }
  return { racks: c.racks, cdu: c.cdu, fieldPoints, pointRanges, setpoints, identity: { version, configHash, site: c.site, pod: c.pod } };
}
