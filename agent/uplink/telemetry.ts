// What telemetry carries: every point with its value, unit, source time and quality, plus the
// pod's rack-level status. Periodic snapshots carry all of it; report-by-exception messages in
// between carry only the points that moved beyond their deadband or changed quality.
import { measuredValue, type Point } from "../../lib/points.js";
import { monoMs } from "../../lib/clock.js";
import type { PodReader } from "../pod-api.js";
import type { UplinkConfig } from "./schema.js";

export interface PointReport {
  value: number | null;
  unit?: string;
  quality: string;
  /** wall-clock time of the reading, ISO 8601 (null: never read) */
  sourceTime: string | null;
  /** a 4–20 mA point's loop current as read, mA: what a failure current was */
  loopCurrentMa?: number;
  /** why the reading is not good, where the driver knows more than the quality says */
  detail?: string;
}

function report(p: Point, wallNow: number, monoNow: number): PointReport {
  return {
    // a value that is not good travels as null; the quality says why
    value: measuredValue(p),
    ...(p.unit === undefined ? {} : { unit: p.unit }),
    quality: p.quality,
    sourceTime: Number.isFinite(p.sourceTimeMs) ? new Date(wallNow - (monoNow - p.sourceTimeMs)).toISOString() : null,
    ...(p.loopCurrentMa !== undefined && Number.isFinite(p.loopCurrentMa) ? { loopCurrentMa: p.loopCurrentMa } : {}),
    ...(p.detail === undefined ? {} : { detail: p.detail }),
  };
}

export function pointReports(points: Iterable<Point>): Record<string, PointReport> {
  const wall = Date.now();
  const mono = monoMs();
  const out: Record<string, PointReport> = {};
  for (const p of points) out[p.id] = report(p, wall, mono);
  return out;
}

/**
 * The periodic snapshot's content (the uplink adds seq, timestamp and historical). The alarms'
 * counts stay out: they are the metrics' (podwarden_alarms_chattering), and the alarms themselves
 * are published as they change (docs/mqtt.md).
 */
export function periodicTelemetry(agent: Pick<PodReader, "status" | "fieldPoints">): Record<string, unknown> {
  const { alarms: _counts, ...status } = agent.status();
  return { kind: "periodic", ...status, points: pointReports(agent.fieldPoints()) };
}

/** Tracks what was last reported, to decide what an exception message must carry. */
export class ExceptionReporter {
  private readonly last = new Map<string, { value: number; quality: string }>();

  constructor(private readonly c: UplinkConfig["exception"]) {}

  /** Remembers every point as reported (after a periodic snapshot). */
  reportedAll(points: Iterable<Point>): void {
    for (const p of points) this.last.set(p.id, { value: p.value, quality: p.quality });
  }

  /**
   * The points that changed beyond their deadband since last reported; marks them reported.
   * Measured from the value last *reported*, not the last read: a slow drift is reported once it
   * has moved a deadband in all, however small each step.
   */
  changed(points: Iterable<Point>): Record<string, PointReport> | null {
    const moved: Point[] = [];
    for (const p of points) {
      const prev = this.last.get(p.id);
      const band = this.c.deadbands[p.id] ?? this.c.defaultDeadband;
      const differs =
        prev === undefined ||
        prev.quality !== p.quality ||
        Number.isFinite(prev.value) !== Number.isFinite(p.value) ||
        (Number.isFinite(p.value) && Math.abs(p.value - prev.value) > band);
      if (differs) {
        moved.push(p);
        this.last.set(p.id, { value: p.value, quality: p.quality });
      }
    }
    return moved.length === 0 ? null : pointReports(moved);
  }
}
