// A captured telemetry log as a scenario's input: the pod's `telemetry` messages (docs/mqtt.md),
// as mission control received them, replayed into the pod stage in virtual time. Each point's
// reading (value, quality, source time) goes through the pod's wiring into the hot path at its
// source time, the hot path steps every control period, and the wiring writes the actuators on
// the daemon's schedule: "this build isolates the leak that log shows within 20 ms too".
//
// A log is what mission control keeps, not what the pod read: periodic snapshots
// (`uplink.telemetryMs`) and, between them, the points that moved more than their deadband or
// changed quality (`uplink.exception`). A leak input changing state is always among them; an
// analog reading is as fresh as the log has it. Nothing of the pod's own state is replayed
// (setpoints and modes are the config's, there is no supervisor), and there is nothing recorded
// to compare the outputs with: a flight recording (agent/recorder/) is the input for that.
//
// Formats, one message a line: the payload alone (JSON Lines), or `<topic> <payload>` as
// `mosquitto_sub -v -t 'podwarden/<site>/<pod>/#'` prints it (lines of other topics are left out).
import { readFileSync, statSync } from "node:fs";
import { loadBank } from "../hotpath-as/bank-config.js";
import { loadWasmHotPath } from "../hotpath-as/wasm-bank.js";
import { QUALITIES, type Point, type Quality } from "../lib/points.js";
import { podBankSpec } from "../pod/bank.js";
import type { PodConfig } from "../pod/config.js";
import { podLayout } from "../pod/layout.js";
import { VirtualTimeLoop, virtualLoopPod } from "../pod/virtual-loop.js";
import { PodWiring } from "../pod/wiring.js";
import type { ReplaySource } from "./replay-runner.js";

/** A log is read up to this size (a day of 1 s snapshots of an 8-rack pod is ~500 MB: cut it to the window of interest). */
export const MAX_TELEMETRY_LOG_BYTES = 256 * 1024 * 1024;
/** A line is read up to this size before it is parsed (the uplink's own packet limit is 256 kB). */
export const MAX_TELEMETRY_LINE_BYTES = 1024 * 1024;
/** At most this many readings are kept (each a point's value at a time). */
export const MAX_TELEMETRY_SAMPLES = 20_000_000;
/** At most this long a replay (a day): the hot path steps every control period across it. */
export const MAX_TELEMETRY_SPAN_MS = 86_400_000;
/** At most this many writes are kept. */
const MAX_WRITES = 20_000;

/** One reading from the log: a point's value and quality at its source time (ms since the epoch). */
export interface TelemetryReading {
  tMs: number;
  id: string;
  value: number;
  quality: Quality;
}

export interface TelemetryLog {
  file: string;
  /**
   * every reading that acts on the pod (good, or invalid: NaN), by source time, each a change
   * from the point's last (a snapshot repeats most). A reading of any other quality (stale,
   * timeout, offline, …) carries the time of the point's last good read, which may be long
   * before the log: it is left out, as the wiring would hand the hot path nothing for it.
   */
  readings: TelemetryReading[];
  /** every point the log reports, whatever its quality */
  reported: Set<string>;
  /** the telemetry messages read */
  messages: number;
}

const QUALITY_SET = new Set<string>(QUALITIES);

/** Reads and checks a log; throws naming the file and line of what it cannot read. */
export function readTelemetryLog(file: string): TelemetryLog {
  const size = statSync(file).size;
  if (size > MAX_TELEMETRY_LOG_BYTES) throw new Error(`${file}: ${size} bytes, more than a telemetry log may be (${MAX_TELEMETRY_LOG_BYTES}): cut it to the window to replay`);
  return parseTelemetryLog(readFileSync(file, "utf8"), file);
}

export function parseTelemetryLog(text: string, file = "telemetry log"): TelemetryLog {
  const all: TelemetryReading[] = [];
  const reported = new Set<string>();
  let messages = 0;
  const lines = text.split("\n");
  lines.forEach((raw, n) => {
    const at = `${file}:${n + 1}`;
    const line = raw.trim();
    if (line === "") return;
    if (line.length > MAX_TELEMETRY_LINE_BYTES) throw new Error(`${at}: a line of ${line.length} characters, more than ${MAX_TELEMETRY_LINE_BYTES}`);
    let payload = line;
    if (!line.startsWith("{")) {
      // mosquitto_sub -v: the topic, a space, the payload; only the pod's telemetry is read
      const sp = line.indexOf(" ");
      if (sp < 0) throw new Error(`${at}: neither a JSON message nor "<topic> <message>"`);
      if (!line.slice(0, sp).endsWith("/telemetry")) return;
      payload = line.slice(sp + 1);
    }
    let body: unknown;
    try {
      body = JSON.parse(payload);
    } catch (err) {
      throw new Error(`${at}: not JSON (${(err as Error).message})`, { cause: err });
    }
    const points = typeof body === "object" && body !== null ? (body as { points?: unknown }).points : undefined;
    if (typeof points !== "object" || points === null || Array.isArray(points)) throw new Error(`${at}: a telemetry message carries its readings in "points" (docs/mqtt.md); this has none`);
    messages++;
    for (const [id, p] of Object.entries(points as Record<string, unknown>)) {
      const r = p as { value?: unknown; quality?: unknown; sourceTime?: unknown };
      if (typeof r !== "object" || r === null) throw new Error(`${at}: points.${id} is not a reading`);
      if (typeof r.quality !== "string" || !QUALITY_SET.has(r.quality)) throw new Error(`${at}: points.${id}.quality ${JSON.stringify(r.quality)} is none of ${QUALITIES.join(", ")}`);
      reported.add(id);
      const tMs = typeof r.sourceTime === "string" ? Date.parse(r.sourceTime) : NaN;
      // a point never read has no source time: nothing to replay of it yet
      if (r.sourceTime === null) continue;
      if (!Number.isFinite(tMs)) throw new Error(`${at}: points.${id}.sourceTime ${JSON.stringify(r.sourceTime)} is not a time`);
      const good = r.quality === "good";
      if (good && (typeof r.value !== "number" || !Number.isFinite(r.value))) throw new Error(`${at}: points.${id} is good with no number for its value`);
      if (!good && r.quality !== "invalid") continue;
      if (all.length >= MAX_TELEMETRY_SAMPLES) throw new Error(`${at}: more than ${MAX_TELEMETRY_SAMPLES} readings: cut the log to the window to replay`);
      all.push({ tMs, id, value: good ? (r.value as number) : NaN, quality: r.quality as Quality });
    }
  });
  if (messages === 0) throw new Error(`${file}: no telemetry message in it`);
  if (all.length === 0) throw new Error(`${file}: no good or invalid reading in it: nothing to replay`);
  // by source time (stable: a log's order breaks ties), each point's repeats and older readings left out
  all.sort((a, b) => a.tMs - b.tMs);
  const last = new Map<string, TelemetryReading>();
  const readings = all.filter((r) => {
    const l = last.get(r.id);
    if (l !== undefined && l.tMs === r.tMs && l.quality === r.quality && Object.is(l.value, r.value)) return false;
    last.set(r.id, r);
    return true;
  });
  const span = readings[readings.length - 1].tMs - readings[0].tMs;
  if (span > MAX_TELEMETRY_SPAN_MS) throw new Error(`${file}: spans ${(span / 3_600_000).toFixed(1)} h, more than a replay may (24 h): cut it to the window to replay`);
  return { file, readings, reported, messages };
}

/**
 * The log replayed into this pod (its config's wiring, tuning and build): time 0 is the first
 * reading's source time, and the hot path steps every `control.periodMs` to the last one.
 * Throws when the log never reports a point the pod's hot path reads: a replay needs the same pod.
 */
export function telemetryReplaySource(log: TelemetryLog, pod: PodConfig & { supervisor?: { powerBudget: { writeCaps: boolean } } }): ReplaySource {
  const loopPod = virtualLoopPod(pod);
  const layout = podLayout(pod);
  const missing = [...new PodWiring(loopPod, layout, { writeCaps: loopPod.writeCaps }).inputs].filter((id) => !log.reported.has(id));
  if (missing.length > 0) throw new Error(`${log.file}: the log never reports ${missing.join(", ")}, which this pod's hot path reads: a replay needs the same pod`);
  const periodMs = pod.control.periodMs;
  const base = log.readings[0].tMs;
  const ticks = Math.floor((log.readings[log.readings.length - 1].tMs - base) / periodMs) + 1;
  return {
    ticks,
    run: (onTick) => {
      const hp = loadWasmHotPath("release");
      loadBank(hp, podBankSpec(pod.control, layout, pod.racks));
      const initialWrites: Record<string, number> = {};
      const writes: { tickMs: number; id: string; value: number }[] = [];
      const last = new Map<string, number>();
      const loop = new VirtualTimeLoop(loopPod, hp, {
        // like the driver, only a changed command is a write
        setOutput: (id: string, value: number): void => {
          if (last.get(id) === value) return;
          last.set(id, value);
          if (loop.passes === 1) initialWrites[id] = value;
          else if (writes.length < MAX_WRITES) writes.push({ tickMs: loop.passMs, id, value });
        },
      });
      const point: Point = { id: "", value: NaN, sourceTimeMs: 0, quality: "good" };
      const rs = log.readings;
      let next = 0;
      const dtS = periodMs / 1000;
      for (let k = 0; k < ticks; k++) {
        const tickMs = k * periodMs;
        // every reading taken by now, as the driver would have handed it over
        for (; next < rs.length && rs[next].tMs - base <= tickMs; next++) {
          const r = rs[next];
          point.id = r.id;
          point.value = r.value;
          point.quality = r.quality;
          point.sourceTimeMs = r.tMs - base;
          loop.route(point, tickMs);
        }
        loop.step(tickMs, dtS, `replayed tick ${k}`);
        onTick(tickMs, hp.views);
      }
      return { initialWrites, writes, identical: null };
    },
  };
}
