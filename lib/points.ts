// Points: what the drivers publish and the pod stage reads (one store, injected into every driver). A point is a value, its source time on the monotonic clock
// (lib/clock.ts) and a quality. The drivers know nothing about racks or PID.

export const QUALITIES = [
  "good",
  "timeout", // no answer within the request timeout
  "disconnected", // no connection to the device or bus
  "offline", // the device's circuit breaker is open: not polled until it recovers
  "exception", // the device answered with a Modbus exception (see exceptionCode)
  "corrupt", // a malformed or CRC-failing frame
  "invalid", // decoded, but not a usable number (NaN, the device's invalid sentinel)
  "stale", // MQTT: no message within the point's staleness window
  "mismatch", // write read-back did not match what was written
  "config", // the device rejected the request as addressed (exception 1, 2 or 3): a map error
] as const;
export type Quality = (typeof QUALITIES)[number];

/**
 * The qualities that say the reading did not arrive (the link, the device's answer, or the
 * source's silence), as against a reading that arrived and is not usable: what an operator
 * is told as a comms fault rather than a sensor's.
 */
export const COMMS_FAULTS: ReadonlySet<Quality> = new Set(["timeout", "disconnected", "offline", "exception", "corrupt", "stale"]);

export interface Point {
  id: string;
  value: number;
  /** monotonic ms when the value was read (or the failure observed) */
  sourceTimeMs: number;
  quality: Quality;
  unit?: string;
  /** the Modbus exception code, for quality "exception" and "config" */
  exceptionCode?: number;
  /** a 4–20 mA point's loop current as read, mA, also when it is a failure current (the value is then NaN) */
  loopCurrentMa?: number;
  /** why a reading is not good, in words, where the driver knows more than the quality says */
  detail?: string;
}

/**
 * A point's value as a measurement, or null: a value that is not good (an invalid reading's
 * sentinel, a stale or disconnected point's last value) is not one, and neither is NaN. Every
 * payload that reports a value (telemetry, status, metrics) goes through this.
 */
export function measuredValue(p: Point | undefined): number | null {
  return p !== undefined && p.quality === "good" && Number.isFinite(p.value) ? p.value : null;
}

/** What became of an output's last command (every driver that writes keeps one per output). */
export interface OutputState {
  id: string;
  /** last value asked for (engineering units) */
  value: number | null;
  /** last value the device acknowledged */
  written: number | null;
  writtenAtMs: number | null;
  quality: Quality;
  writes: number;
  failures: number;
}

export type PointListener = (p: Point) => void;

/** The latest value of every point, with change listeners. */
export class PointStore {
  private readonly points = new Map<string, Point>();
  private readonly listeners = new Set<PointListener>();

  publish(p: Point): void {
    this.points.set(p.id, p);
    for (const l of this.listeners) l(p);
  }

  get(id: string): Point | undefined {
    return this.points.get(id);
  }

  all(): IterableIterator<Point> {
    return this.points.values();
  }

  subscribe(l: PointListener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
}
