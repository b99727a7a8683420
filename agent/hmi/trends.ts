// The HMI's trends: the last `minutes` of every field point, every loop output and setpoint and
// every rack's cap, sampled once a second into a fixed ring. Memory is fixed when the ring is
// made (4 bytes a sample: ~360 KB for the 8-rack pod's ~100 series over 15 minutes), and a
// sample costs a pass over the pod's points, nothing more.
import { measuredValue, type Point } from "../../lib/points.js";
import type { PodStatus } from "../pod-api.js";

export interface TrendSeries {
  id: string;
  unit: string;
}

export interface TrendWindow {
  /** sample times, ms since the epoch, oldest first */
  t: number[];
  /** per series asked for, its values at those times (null: no good value then) */
  values: Record<string, (number | null)[]>;
}

/** The most series kept: beyond it, new ones are not recorded (a pod has ~100). */
export const MAX_SERIES = 512;
/** The most series one request may ask for. */
export const MAX_SERIES_PER_REQUEST = 8;

/** What one sample records: every field point's good value, and what the pod commands. */
export function trendSamples(points: readonly Point[], status: PodStatus): [string, string, number | null][] {
  const out: [string, string, number | null][] = points.map((p) => [p.id, p.unit ?? "", measuredValue(p)]);
  for (const r of status.racks) {
    out.push([`${r.name}.valve`, "%", Number.isFinite(r.valvePct) ? r.valvePct : null]);
    out.push([`${r.name}.setpoint`, "°C", r.setpointC]);
    out.push([`${r.name}.cap`, "kW", r.powerCapKw]);
  }
  out.push(["cdu.pump.speed", "%", Number.isFinite(status.pump.speedCmdPct) ? status.pump.speedCmdPct : null]);
  out.push(["cdu.pump.setpoint", "kPa", status.pump.setpointKpa]);
  return out;
}

export class TrendRing {
  private readonly times: Float64Array;
  private readonly series = new Map<string, { unit: string; values: Float32Array }>();
  private next = 0;
  private count = 0;

  constructor(readonly capacity: number) {
    this.times = new Float64Array(capacity);
  }

  /** One sample at `atMs`; a series first seen now has no values before it. */
  record(atMs: number, samples: Iterable<[id: string, unit: string, value: number | null]>): void {
    const i = this.next;
    this.times[i] = atMs;
    const seen = new Set<string>();
    for (const [id, unit, value] of samples) {
      let s = this.series.get(id);
      if (s === undefined) {
        if (this.series.size >= MAX_SERIES) continue;
        s = { unit, values: new Float32Array(this.capacity).fill(NaN) };
        this.series.set(id, s);
      }
      s.values[i] = value === null ? NaN : value;
      seen.add(id);
    }
    // a series that went away (a reload changed the pod) has no value at this sample
    for (const [id, s] of this.series) if (!seen.has(id)) s.values[i] = NaN;
    this.next = (i + 1) % this.capacity;
    this.count = Math.min(this.count + 1, this.capacity);
  }

  list(): TrendSeries[] {
    return [...this.series].map(([id, s]) => ({ id, unit: s.unit }));
  }

  has(id: string): boolean {
    return this.series.has(id);
  }

  /** The whole ring for `ids`, oldest sample first. */
  window(ids: readonly string[]): TrendWindow {
    const first = (this.next - this.count + this.capacity) % this.capacity;
    const order = Array.from({ length: this.count }, (_, k) => (first + k) % this.capacity);
    const values: Record<string, (number | null)[]> = {};
    for (const id of ids) {
      const v = this.series.get(id)?.values;
      // Float32 keeps ~7 digits: rounded back so the page does not print 33.70000076
      values[id] = order.map((i) => (v === undefined || Number.isNaN(v[i]) ? null : Number(v[i].toPrecision(7))));
    }
    return { t: order.map((i) => this.times[i]), values };
  }
}
