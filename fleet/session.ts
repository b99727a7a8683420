// A pod's session as mission control saw it, recorded from a real daemon (`podwarden fleet record`)
// for the pod emulator (emulator.ts) to play back: the retained topics (state, info, alarms) and
// every telemetry and event message with its time from the start of the recording. The emulator
// says the same things at the same rates and sizes; only the numbering, the times and the pod's
// name are its own.
//
// The file is JSON, bounded when read, and checked message by message: a session from another
// version, or hand-edited, is refused with the reason rather than played wrong.
import mqtt from "mqtt";
import { readTextBounded } from "../lib/bounded-read.js";

export type SessionKind = "telemetry" | "events";

export interface SessionMessage {
  /** ms from the start of the recording */
  t: number;
  kind: SessionKind;
  /** the body as the pod sent it (seq, timestamp and historical are replaced on playback) */
  body: Record<string, unknown>;
}

export interface PodSession {
  format: "podwarden-session-1";
  recordedAt: string;
  /** the pod recorded, site/pod */
  pod: string;
  durationMs: number;
  retained: { state?: Record<string, unknown>; info?: Record<string, unknown>; alarms?: Record<string, unknown> };
  messages: SessionMessage[];
}

/** A session file is at most this big (a minute of a 10-rack pod is ~1 MB). */
export const MAX_SESSION_BYTES = 32 * 1024 * 1024;
const ID = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Checks a parsed session; throws saying what is wrong and where. */
export function checkSession(v: unknown, source: string): PodSession {
  const fail = (why: string): never => {
    throw new Error(`${source}: ${why}`);
  };
  if (!isObject(v)) return fail("not a JSON object");
  if (v.format !== "podwarden-session-1") fail(`format ${JSON.stringify(v.format)}, not podwarden-session-1`);
  if (typeof v.pod !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_-]*\/[A-Za-z0-9][A-Za-z0-9_-]*$/.test(v.pod)) fail("pod: site/pod");
  if (typeof v.durationMs !== "number" || !Number.isFinite(v.durationMs) || v.durationMs <= 0) fail("durationMs: a positive number");
  if (!isObject(v.retained)) fail("retained: an object");
  for (const k of ["state", "info", "alarms"]) {
    const r = (v.retained as Record<string, unknown>)[k];
    if (r !== undefined && !isObject(r)) fail(`retained.${k}: an object`);
  }
  if (!Array.isArray(v.messages) || v.messages.length === 0) return fail("messages: a non-empty list");
  let last = 0;
  v.messages.forEach((m: unknown, i: number) => {
    if (!isObject(m)) return fail(`messages[${i}]: an object`);
    if (typeof m.t !== "number" || !(m.t >= last) || m.t > (v.durationMs as number)) fail(`messages[${i}].t: in order, within durationMs`);
    if (m.kind !== "telemetry" && m.kind !== "events") fail(`messages[${i}].kind: telemetry or events`);
    if (!isObject(m.body)) fail(`messages[${i}].body: an object`);
    last = m.t as number;
  });
  return v as unknown as PodSession;
}

export function readSession(path: string): PodSession {
  const text = readTextBounded(path, MAX_SESSION_BYTES);
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new Error(`${path}: not JSON (${(err as Error).message})`, { cause: err });
  }
  return checkSession(v, path);
}

export interface RecordOptions {
  url: string;
  protocolVersion: 4 | 5;
  /** site/pod */
  pod: string;
  durationMs: number;
  username?: string;
  password?: string;
}

/** Records one pod's session from its broker for durationMs (a clean, non-persistent subscriber). */
export async function recordSession(o: RecordOptions): Promise<PodSession> {
  const [site, pod] = o.pod.split("/");
  if (site === undefined || pod === undefined || !ID.test(site) || !ID.test(pod)) throw new Error(`pod "${o.pod}": site/pod`);
  const base = `podwarden/${site}/${pod}/`;
  const client = await mqtt.connectAsync(o.url, { protocolVersion: o.protocolVersion, clean: true, reconnectPeriod: 0, connectTimeout: 5000, username: o.username, password: o.password });
  const session: PodSession = { format: "podwarden-session-1", recordedAt: new Date().toISOString(), pod: o.pod, durationMs: o.durationMs, retained: {}, messages: [] };
  const t0 = performance.now();
  try {
    client.on("message", (topic, payload) => {
      const kind = topic.slice(base.length);
      if (payload.length > 1 << 20) return;
      let body: unknown;
      try {
        body = JSON.parse(payload.toString("utf8"));
      } catch {
        return;
      }
      if (!isObject(body)) return;
      if (kind === "state" || kind === "info" || kind === "alarms") {
        // the first of each, retained or live: the pod's steady picture
        session.retained[kind] ??= body;
        return;
      }
      if (kind !== "telemetry" && kind !== "events") return;
      const t = Math.round(performance.now() - t0);
      if (t <= o.durationMs) session.messages.push({ t, kind, body });
    });
    await client.subscribeAsync([`${base}state`, `${base}info`, `${base}alarms`, `${base}telemetry`, `${base}events`], { qos: 1 });
    await new Promise((r) => setTimeout(r, o.durationMs));
  } finally {
    await client.endAsync(true);
  }
  return checkSession(session, `the session recorded from ${o.pod}`);
}
