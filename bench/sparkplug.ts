// Sparkplug B beside the JSON telemetry, in one run, one pod, one broker (mosquitto 2):
//  - bytes per update: the report-by-exception messages of the 8-rack demo pod (its varied
//    workload, configs/sim-pod.yaml, and the demo config's deadbands) over the same
//    window, Sparkplug's NDATA/DDATA against JSON's `telemetry` exception messages;
//  - change to broker: for each field point a message carries, the subscriber's receipt minus
//    the point's source time (the moment the driver read the new value, which both payloads carry,
//    ms), Sparkplug's DDATA against JSON's exception telemetry. The subscriber is mosquitto_sub in
//    its own process, stamping each message as it handles it (%U, µs), as in the uplink bench;
//  - the control tick's lateness with the JSON uplink alone and with both profiles on.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { parse } from "yaml";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as tahu from "sparkplug-payload";
import { SparkplugEdgeNode } from "../agent/uplink/sparkplug/edge-node.js";
import { modelSourceOf, sparkplugModel, type SparkplugModel } from "../agent/uplink/sparkplug/metrics.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { startPodHarness, type PodHarness } from "../tooling/pod-harness.js";
import { startSimProcess } from "../tooling/sim-process.js";
import { stopProcess, waitFor } from "../tooling/processes.js";
import { fmt, quantile } from "./stats.js";

const codec = tahu.get("spBv1.0")!;
const quiet = { write: (): boolean => true };
const GROUP = "bench";
/** The Sparkplug metrics read from a field point: the ones whose change has a source time. */
const POINT_METRICS = new Set(["Return Temperature", "Supply Temperature", "Flow", "Power", "Loop/dP", "Pod/Loop dP", "Valve/Position"]);

interface Profile {
  what: string;
  messages: number;
  updates: number;
  bytes: number;
  perS: number;
  latencySamples: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

interface TickWindow {
  what: string;
  p50Us: number;
  p99Us: number;
  maxUs: number;
  ticks: number;
}

export interface SparkplugBenchResult {
  seconds: number;
  profiles: Profile[];
  ticks: TickWindow[];
}

interface Line {
  atMs: number;
  topic: string;
  payload: Buffer;
}

/** mosquitto_sub in its own process: each message stamped on receipt (µs), topic, payload in hex. */
function capture(url: string, topics: string[]): { child: ChildProcess; lines: Line[] } {
  const u = new URL(url);
  const child = spawn("mosquitto_sub", ["-h", u.hostname, "-p", u.port, ...topics.flatMap((t) => ["-t", t]), "-q", "0", "-V", "mqttv5", "-F", "%U|%t|%x"], { stdio: ["ignore", "pipe", "inherit"] });
  const lines: Line[] = [];
  let partial = "";
  child.stdout?.on("data", (d: Buffer) => {
    const parts = (partial + d.toString()).split("\n");
    partial = parts.pop() ?? "";
    for (const l of parts) {
      const [us, topic, hex] = l.split("|");
      if (hex === undefined) continue;
      lines.push({ atMs: Number(us) * 1000, topic, payload: Buffer.from(hex, "hex") });
    }
  });
  return { child, lines };
}

function profile(what: string, seconds: number, msgs: { bytes: number; updates: number; latencies: number[] }[]): Profile {
  const lat = msgs.flatMap((m) => m.latencies);
  const updates = msgs.reduce((a, m) => a + m.updates, 0);
  const bytes = msgs.reduce((a, m) => a + m.bytes, 0);
  return { what, messages: msgs.length, updates, bytes, perS: bytes / seconds, latencySamples: lat.length, p50Ms: quantile(lat, 0.5), p99Ms: quantile(lat, 0.99), maxMs: lat.length === 0 ? NaN : Math.max(...lat) };
}

/** Tick lateness over `ms`, from the control worker's own histogram. */
async function tickWindow(pod: PodHarness, what: string, ms: number): Promise<TickWindow> {
  const ct = pod.agent.control;
  const h = ct.latenessHistogram();
  h.reset();
  const t0 = ct.ticks;
  await new Promise((r) => setTimeout(r, ms));
  return { what, p50Us: h.percentile(0.5), p99Us: h.percentile(0.99), maxUs: h.percentile(1), ticks: ct.ticks - t0 };
}

/** The metric model the bench's node publishes (the names its DATA's aliases stand for). */
const sparkplugModelOf = (p: PodHarness): SparkplugModel => sparkplugModel(modelSourceOf(p.config, "bench", "bench"));

export async function runSparkplugBench(quick = false): Promise<SparkplugBenchResult> {
  const seconds = quick ? 5 : 30;
  const dir = mkdtempSync(join(tmpdir(), "pw-bench-spb-"));
  // the demo's varied workload (configs/sim-pod.yaml: training steps, inference bursts, idle racks)
  const demoPlant = (parse(readFileSync("configs/sim-pod.yaml", "utf8")) as { plant: { rackLoads: unknown } }).plant;
  const sim = await startSimProcess(dir, 3000, undefined, { rackLoads: demoPlant.rackLoads });
  const mosq = await Mosquitto.start();
  let pod: PodHarness | null = null;
  let node: SparkplugEdgeNode | null = null;
  try {
    // the daemon's control thread (SCHED_FIFO where permitted, full warm-up), the demo pod's deadbands
    pod = await startPodHarness({
      brokerUrl: mosq.url,
      protocolVersion: 5,
      portOf: (n) => sim.ports[n],
      logTo: quiet,
      patch: (d) => {
        d.control = { ...(d.control as object), schedFifo: true, warmupTicks: 20000 };
      },
      uplink: { telemetryMs: 1000 },
    });
    const p = pod;
    await waitFor(() => p.agent.supervisor.mode === "Running", "pod running", 60_000, 100);
    const sub = capture(mosq.url, [`${p.base}telemetry`, `spBv1.0/${GROUP}/+/${p.config.pod}/#`, `spBv1.0/${GROUP}/+/${p.config.pod}`]);
    // Alternating windows, the JSON uplink alone then both profiles, three times: the pod's load
    // drifts with its workload, and one A then one B measured the drift (a first run gave tick p99
    // 232 µs alone, then 800 µs with both, with the subscriber running only in the second)
    const ticks: TickWindow[] = [];
    const measured: [number, number][] = [];
    const windowMs = (seconds * 1000) / 3;
    for (let round = 0; round < 3; round++) {
      ticks.push(await tickWindow(p, "JSON uplink alone", windowMs));
      const n = new SparkplugEdgeNode({ pod: p.agent, uplink: { ...p.config.uplink!, sparkplug: { ...p.config.uplink!.sparkplug, enabled: true, groupId: GROUP } }, model: modelSourceOf(p.config, "bench", "bench"), jsonUplink: () => p.uplink.stats(), log: p.agent.logs.module("sparkplug") });
      node = n;
      n.start();
      await waitFor(() => n.stats().session, "sparkplug session", 10_000);
      await new Promise((r) => setTimeout(r, 500)); // past the births
      const from = Date.now();
      ticks.push(await tickWindow(p, "JSON uplink and Sparkplug", windowMs));
      measured.push([from, Date.now()]);
      await n.stop();
      node = null;
    }
    await stopProcess(sub.child);
    const inWindow = (at: number): boolean => measured.some(([a, b]) => at >= a && at <= b);
    const model = sparkplugModelOf(p);
    const json: { bytes: number; updates: number; latencies: number[] }[] = [];
    const spb: { bytes: number; updates: number; latencies: number[] }[] = [];
    for (const l of sub.lines) {
      if (!inWindow(l.atMs)) continue;
      if (l.topic.endsWith("/telemetry")) {
        const body = JSON.parse(l.payload.toString()) as { kind: string; points: Record<string, { sourceTime: string | null }> };
        if (body.kind !== "exception") continue;
        const pts = Object.values(body.points);
        json.push({ bytes: l.payload.length, updates: pts.length, latencies: pts.filter((x) => x.sourceTime !== null).map((x) => l.atMs - Date.parse(x.sourceTime!)) });
      } else if (/\/(NDATA|DDATA)\//.test(l.topic)) {
        const m = codec.decodePayload(l.payload).metrics ?? [];
        spb.push({ bytes: l.payload.length, updates: m.length, latencies: [] });
      }
    }
    // Sparkplug DATA names no metric: the names come from the births, which the bench reads
    // from the model the node published
    const names = new Map<number, string>();
    for (const m of [...model.node, ...model.devices.flatMap((d) => d.metrics)]) names.set(m.alias!, m.name);
    let i = 0;
    for (const l of sub.lines) {
      if (!inWindow(l.atMs) || !/\/(NDATA|DDATA)\//.test(l.topic)) continue;
      const ms = codec.decodePayload(l.payload).metrics ?? [];
      spb[i++].latencies = ms.filter((m) => POINT_METRICS.has(names.get(Number(m.alias)) ?? "")).map((m) => l.atMs - Number(m.timestamp));
    }
    const secs = measured.reduce((a, [x, y]) => a + (y - x), 0) / 1000;
    return { seconds: secs, profiles: [profile("JSON telemetry, exception messages (podwarden/<site>/<pod>/telemetry, QoS 1)", secs, json), profile("Sparkplug B NDATA/DDATA (QoS 0)", secs, spb)], ticks };
  } finally {
    await node?.stop();
    await pod?.stop();
    await mosq.stop();
    await stopProcess(sim.child);
    rmSync(dir, { recursive: true, force: true });
  }
}

export function printSparkplug(r: SparkplugBenchResult): void {
  console.log(`\n## sparkplug: the demo pod's changing metrics by exception, Sparkplug B beside JSON, one pod, one mosquitto 2, ${fmt(r.seconds, 1)} s with both on`);
  console.log("| profile | messages | updates | bytes/update | bytes/message | bytes/s | change -> subscriber p50 ms | p99 ms | max ms | samples |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const p of r.profiles) console.log(`| ${p.what} | ${p.messages} | ${p.updates} | ${fmt(p.bytes / p.updates, 1)} | ${fmt(p.bytes / p.messages, 0)} | ${fmt(p.perS, 0)} | ${fmt(p.p50Ms, 2)} | ${fmt(p.p99Ms, 2)} | ${fmt(p.maxMs, 2)} | ${p.latencySamples} |`);
  const [j, s] = r.profiles;
  console.log(`Sparkplug / JSON: bytes per update ${fmt(s.bytes / s.updates / (j.bytes / j.updates), 2)}, change-to-subscriber p99 ${fmt(s.p99Ms / j.p99Ms, 2)} (goal <= 1.2)`);
  console.log("| control tick (alternating windows) | p50 µs | p99 µs | max µs | ticks |");
  console.log("|---|---:|---:|---:|---:|");
  for (const w of r.ticks) console.log(`| ${w.what} | ${fmt(w.p50Us, 0)} | ${fmt(w.p99Us, 0)} | ${fmt(w.maxUs, 0)} | ${w.ticks} |`);
}
