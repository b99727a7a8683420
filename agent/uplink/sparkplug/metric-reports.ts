// Report by exception (Sparkplug 3.0 §6.4.7, §5.17): each metric as a birth carries it, and
// what DATA carries of the metrics that moved past their deadband or changed quality since they
// were last reported. Keeps the last reported value and quality of each alias.
import type { UplinkConfig } from "../schema.js";
import type { MetricDef, PodSample, Reading } from "./metrics.js";
import { SPARKPLUG_QUALITY, type UMetric } from "./payload.js";

interface Last {
  value: number | boolean | string | null;
  quality: number;
}

export class MetricReports {
  private readonly last = new Map<number, Last>();

  constructor(private readonly ex: UplinkConfig["exception"]) {}

  /** A metric as a birth carries it: name, alias, datatype, value, and its unit, range, writability and quality as properties. */
  birth(m: MetricDef, s: PodSample): UMetric {
    const r = m.read(s);
    this.last.set(m.alias ?? 0, { value: r.value, quality: r.quality });
    return {
      name: m.name,
      alias: m.alias,
      type: m.type,
      value: r.value,
      timestamp: r.timestamp,
      // §6.4.7's well-known properties: a SCADA host shows the unit and the range, and offers a
      // write only where one is taken (Ignition offered writes that were then refused)
      properties: {
        ...(m.unit === undefined ? {} : { engUnit: { type: "String", value: m.unit } }),
        ...(m.range === undefined ? {} : { engLow: { type: "Double", value: m.range.low }, engHigh: { type: "Double", value: m.range.high } }),
        readOnly: { type: "Boolean", value: m.writable !== true },
        Quality: { type: "Int32", value: r.quality },
      },
    };
  }

  /** The metrics that moved past their deadband or changed quality since last reported (all of them with `all`); marks them reported. */
  changed(defs: readonly MetricDef[], s: PodSample, all = false): UMetric[] {
    const out: UMetric[] = [];
    for (const m of defs) {
      const r = m.read(s);
      const key = m.alias ?? 0;
      const prev = this.last.get(key);
      const qualityChanged = prev === undefined || prev.quality !== r.quality;
      let moved = all || qualityChanged || prev.value !== r.value;
      if (!all && !qualityChanged && typeof r.value === "number" && typeof prev.value === "number" && (m.type === "Double" || m.deadband !== undefined)) {
        const band = m.deadband ?? (m.pointId === undefined ? undefined : this.ex.deadbands[m.pointId]) ?? this.ex.defaultDeadband;
        moved = Math.abs(r.value - prev.value) > band;
      }
      if (!moved) continue;
      this.last.set(key, { value: r.value, quality: r.quality });
      out.push(dataMetric(m, r, qualityChanged));
    }
    return out;
  }
}

/** A metric as DATA carries it: the alias only, and its quality when not good or just changed. */
function dataMetric(m: MetricDef, r: Reading, qualityChanged: boolean): UMetric {
  return {
    alias: m.alias,
    type: m.type,
    value: r.value,
    timestamp: r.timestamp,
    ...(qualityChanged || r.quality !== SPARKPLUG_QUALITY.good ? { properties: { Quality: { type: "Int32", value: r.quality } } } : {}),
  };
}
