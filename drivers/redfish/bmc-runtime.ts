// What the Redfish client keeps of one BMC (bmc.ts): its counters, each polled resource's and each
// Control's runtime state, and the small readers of a Redfish body both the poll and the writes use.
import type { Backoff } from "../../lib/backoff.js";
import type { OutputState, PointStore } from "../../lib/points.js";
import type { BreakerState } from "../breaker.js";
import type { RedfishOutputConfig, RedfishPointConfig } from "./config.js";
import type { HttpAnswer } from "./http.js";

export interface RedfishDeviceStats {
  name: string;
  /** the last request had an answer, with our credentials taken */
  connected: boolean;
  breaker: BreakerState;
  /** why it is not connected, in words */
  why: string;
  polls: number;
  failedPolls: number;
  streamOpen: boolean;
  events: number;
  /** events not parsed (over maxEventsPerS): each time every detector was re-read instead */
  eventsShed: number;
  streamReconnects: number;
  /** why the BMC has no event stream (its detectors are polled); null: it has one, or it is not yet known */
  noStream: string | null;
  /** the BMC's EventDestination subscription pushing to the pod's listener (its URI), or null */
  subscription: string | null;
  /** events the BMC pushed through it */
  pushedEvents: number;
  logins: number;
}

export const LEAK_VALUE: Record<string, number> = { OK: 0, Critical: 1, Warning: 2 };

export interface PointRuntime {
  id: string;
  c: RedfishPointConfig;
  /** the ReadingTime and the raw value last seen, and when (monotonic) either last changed */
  readingTime: string | null;
  lastRaw: number | null;
  readingTimeSinceMs: number;
  /** monotonic ms of the last pushed sample from an event: a poll that began before it is older news */
  eventAtMs: number;
}

export interface OutputRuntime {
  id: string;
  c: RedfishOutputConfig;
  state: OutputState;
  /** the value the BMC last confirmed on read-back, engineering units */
  verified: number | null;
  etag: string | null;
  writing: boolean;
  /** monotonic ms the last write (and its read-back) ended: a poll sent before then may have read the value from before it */
  writeEndedMs: number;
  /** a failed value is tried again only after this (monotonic ms) */
  retryAtMs: number;
  retry: Backoff;
  /** since when the value asked for has not been verified (null: it is) */
  unverifiedSinceMs: number | null;
  why: string;
  /** the control's AllowableMin/AllowableMax, as last read */
  allowable: { min: number | null; max: number | null } | null;
  /** the value asked for that went out clamped to those limits (engineering units) */
  clampedFrom: number | null;
}

export interface RedfishDriverOptions {
  points: PointStore;
  /** a password for a device: from its passwordEnv or passwordFile (injectable for tests) */
  env?: NodeJS.ProcessEnv;
  onLog?: (level: "info" | "warn", message: string) => void;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

export function property(body: Record<string, unknown>, path: string): unknown {
  let v: unknown = body;
  for (const k of path.split(".")) v = isObject(v) ? v[k] : undefined;
  return v;
}

/** The Redfish error's MessageId, for the log and the alarm: " (Base.1.19.PreconditionFailed)". */
export function errorCode(r: HttpAnswer): string {
  const e = isObject(r.json) && isObject(r.json.error) ? r.json.error : null;
  return typeof e?.code === "string" ? ` (${e.code.slice(0, 80)})` : "";
}
