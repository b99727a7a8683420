// Uplink figures, against a real mosquitto (and aedes for the live latency):
//  - live publish latency: an agent event, through the spool and the broker, to a subscriber in
//    its own process on loopback;
//  - spool replay: a backlog spooled while the broker was down, sent at QoS 1 after it returns,
//    in messages per second, with the control tick's lateness during the replay beside a quiet
//    window of the same length;
//  - a flood of 1,000 bad commands a second: tick lateness with it and without it.
import { spawn, type ChildProcess } from "node:child_process";
import mqtt from "mqtt";
import { startPodHarness, type PodHarness } from "../tooling/pod-harness.js";
import { startEmbeddedBroker } from "../lib/embedded-broker.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { disableNagle } from "../lib/mqtt-connection.js";
import { stopProcess, waitFor } from "../tooling/processes.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSimProcess } from "../tooling/sim-process.js";
import { fmt, quantile } from "./stats.js";

/** Discards the agent's logs: the benchmark measures the uplink, not pino. */
const quiet = { write: (): boolean => true };
/** The control thread as the daemon runs it: SCHED_FIFO where permitted, full JIT warm-up. */
const asDaemon = (data: Record<string, unknown>): void => {
  data.control = { ...(data.control as object), schedFifo: true, warmupTicks: 20000 };
};

/** A pod in this process against the simulator, as the daemon runs it, logs discarded. */
function benchPod(sim: SimPorts, brokerUrl: string, protocolVersion: 4 | 5, uplink: Record<string, unknown>): Promise<PodHarness> {
  return startPodHarness({ brokerUrl, protocolVersion, portOf: (n) => sim.portOf(n), logTo: quiet, patch: asDaemon, uplink });
}

interface Window {
  what: string;
  p50Us: number;
  p99Us: number;
  maxUs: number;
  ticks: number;
}

export interface UplinkResult {
  latency: { broker: string; samples: number; p50Ms: number; p99Ms: number; maxMs: number; ackP50Ms: number; ackP99Ms: number }[];
  replay: { messages: number; seconds: number; perS: number; windows: Window[] } | null;
  flood: { sent: number; rejected: number; windows: Window[] } | null;
}

/** Tick lateness while `during` runs, from the control worker's own histogram. */
async function tickWindow(pod: PodHarness, what: string, during: () => Promise<void>): Promise<Window> {
  const ct = pod.agent.control;
  const h = ct.latenessHistogram();
  h.reset();
  const ticks0 = ct.ticks;
  await during();
  return { what, p50Us: h.percentile(0.5), p99Us: h.percentile(0.99), maxUs: h.percentile(1), ticks: ct.ticks - ticks0 };
}

/** What the readiness marker carries as its action: never counted as a probe. */
const READY_MARKER = "bench-probe-ready";

/**
 * The probe subscriber: mosquitto_sub, a C client in its own process, stamping each message
 * with the wall clock as it handles it (`%U`, ns). A Node subscriber's own event loop and
 * garbage collector added up to ~0.4 ms to the p99 of every row, the floor included; the
 * instrument should be quieter than what it measures. For the same reason it runs without
 * `-d`: with it, mosquitto_sub wrote two debug lines into the pipe to this process before
 * stamping each message (each write waking this process, on a machine of two vCPUs): inside
 * the measured interval, and ~0.1 ms on every row's p99 in a scratch A/B (BENCHMARKS.md). Readiness is therefore seen by content:
 * a ready marker published from another client until the subscriber prints one. Its result is
 * the latency of each probe (receipt minus the µs stamp the probe carries).
 */
async function probeSubscriber(url: string, topic: string, protocolVersion: 4 | 5, count: number): Promise<{ result: Promise<number[]>; child: ChildProcess }> {
  const u = new URL(url);
  // mosquitto_sub flushes its output after each message, so a pipe shows each when it arrives
  const child = spawn("mosquitto_sub", ["-h", u.hostname, "-p", u.port, "-t", topic, "-q", "1", "-V", protocolVersion === 5 ? "mqttv5" : "mqttv311", "-F", "%U|%p"], { stdio: ["ignore", "pipe", "inherit"] });
  const latencies: number[] = [];
  let subscribed = false;
  let partial = "";
  let resolve: (x: number[]) => void = () => undefined;
  const result = new Promise<number[]>((r, reject) => {
    resolve = r;
    child.once("exit", () => reject(new Error(`mosquitto_sub exited with ${latencies.length} of ${count} probes`)));
  });
  child.stdout?.on("data", (d: Buffer) => {
    const lines = (partial + d.toString()).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      const bar = line.indexOf("|");
      if (bar < 0 || !/^\d+\.\d+$/.test(line.slice(0, bar))) continue;
      const probe = JSON.parse(line.slice(bar + 1)) as { action?: string; result?: string };
      if (probe.action === READY_MARKER) subscribed = true;
      if (probe.action !== "bench-latency") continue;
      latencies.push(Number(line.slice(0, bar)) * 1000 - Number(probe.result));
      if (latencies.length === count) resolve(latencies);
    }
  });
  const marker = await mqtt.connectAsync(url, { protocolVersion, clientId: "bench-probe-ready" });
  try {
    const t0 = Date.now();
    while (!subscribed) {
      if (Date.now() - t0 > 10_000) throw new Error("probe subscriber did not subscribe within 10 s");
      await marker.publishAsync(topic, JSON.stringify({ action: READY_MARKER }), { qos: 1 });
      await new Promise((r) => setTimeout(r, 50));
    }
  } catch (err) {
    await stopProcess(child);
    throw err;
  } finally {
    await marker.endAsync(true);
  }
  return { result, child };
}

type LatencyRow = Omit<UplinkResult["latency"][number], "broker">;

function latencyRow(got: number[], ack: { p50: number; p99: number }): LatencyRow {
  return { samples: got.length, p50Ms: quantile(got, 0.5), p99Ms: quantile(got, 0.99), maxMs: Math.max(...got), ackP50Ms: ack.p50 / 1000, ackP99Ms: ack.p99 / 1000 };
}

const withTimeout = <T>(p: Promise<T>, ms: number, what: string): Promise<T> => Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what} timed out`)), ms))]);

/** The floor: a bare mqtt.js client publishing the same probes, no agent, same pacing. */
async function bareLatency(brokerUrl: string, samples: number): Promise<LatencyRow> {
  const topic = "bench/floor/events";
  const probe = await probeSubscriber(brokerUrl, topic, 5, samples);
  const client = await mqtt.connectAsync(brokerUrl, { protocolVersion: 5, clientId: "bench-floor" });
  disableNagle(client);
  const ack: number[] = [];
  try {
    for (let i = 0; i < samples; i++) {
      const t0 = performance.now();
      client.publish(topic, JSON.stringify({ action: "bench-latency", result: String(performance.timeOrigin + t0) }), { qos: 1 }, () => ack.push((performance.now() - t0) * 1000));
      await new Promise((r) => setTimeout(r, 4));
    }
    const got = await withTimeout(probe.result, 30_000, "probe subscriber");
    return latencyRow(got, { p50: quantile(ack, 0.5), p99: quantile(ack, 0.99) });
  } finally {
    await client.endAsync(true);
    await stopProcess(probe.child);
  }
}

/**
 * The floor under the same load: the bare client again, while a pod (agent, drivers polling the
 * simulator, control thread) runs in this process as in the podwarden row. The difference
 * between this row and that one is the agent's own publishing path.
 */
async function loadedFloor(sim: SimPorts, brokerUrl: string, samples: number): Promise<LatencyRow> {
  const pod = await benchPod(sim, brokerUrl, 5, { telemetryMs: 1000 });
  try {
    await waitFor(() => pod.uplink.stats().connected, "uplink connected");
    return await bareLatency(brokerUrl, samples);
  } finally {
    await pod.stop();
  }
}

async function liveLatency(sim: SimPorts, brokerUrl: string, protocolVersion: 4 | 5, samples: number): Promise<LatencyRow> {
  const pod = await benchPod(sim, brokerUrl, protocolVersion, { telemetryMs: 1000 });
  const probe = await probeSubscriber(brokerUrl, `${pod.base}events`, protocolVersion, samples);
  try {
    await waitFor(() => pod.uplink.stats().connected, "uplink connected");
    for (let i = 0; i < samples; i++) {
      pod.agent.audit({ action: "bench-latency", by: "bench", result: String(performance.timeOrigin + performance.now()) });
      await new Promise((r) => setTimeout(r, 4));
    }
    const got = await withTimeout(probe.result, 30_000, "probe subscriber");
    return latencyRow(got, pod.uplink.stats().ackUs);
  } finally {
    await stopProcess(probe.child);
    await pod.stop();
  }
}

async function spoolReplay(sim: SimPorts, backlog: number): Promise<UplinkResult["replay"]> {
  const broker = await Mosquitto.start({ general: ["max_inflight_messages 0", "max_queued_messages 0"] });
  const pod = await benchPod(sim, broker.url, 5, { telemetryMs: 1000, spool: { maxBytes: 1 << 30, fsyncMs: 1000, maxInflight: 1024 } });
  try {
    await waitFor(() => pod.uplink.stats().connected, "uplink connected");
    await broker.kill("SIGKILL");
    await waitFor(() => !pod.uplink.stats().connected, "outage noticed");
    // a realistic backlog: event-sized records, spooled while the broker is away
    for (let i = 0; i < backlog; i++) pod.agent.audit({ action: "bench-backlog", by: "bench", result: String(i) });
    let seconds = 0;
    const during = await tickWindow(pod, "during the spool replay", async () => {
      await broker.restart();
      const t0 = performance.now();
      await waitFor(() => pod.uplink.stats().spoolDepth.critical === 0, "backlog replayed", 120_000, 1);
      seconds = (performance.now() - t0) / 1000;
    });
    const quietAfter = await tickWindow(pod, "after it, connected and idle, same length", async () => {
      await new Promise((r) => setTimeout(r, Math.max(1000, seconds * 1000)));
    });
    return { messages: backlog, seconds, perS: backlog / seconds, windows: [quietAfter, during] };
  } finally {
    await pod.stop();
    await broker.stop();
  }
}

async function commandFlood(sim: SimPorts, seconds: number): Promise<UplinkResult["flood"]> {
  const broker = await Mosquitto.start({ general: ["max_inflight_messages 0", "max_queued_messages 0"] });
  const pod = await benchPod(sim, broker.url, 5, { commands: { keys: [] } });
  const attacker = await mqtt.connectAsync(broker.url, { protocolVersion: 5, clientId: "bench-flood" });
  try {
    await waitFor(() => pod.uplink.stats().connected, "uplink connected");
    const without = await tickWindow(pod, "without a flood", async () => {
      await new Promise((r) => setTimeout(r, seconds * 1000));
    });
    let sent = 0;
    const junk = JSON.stringify({ keyId: "nobody", signature: "A".repeat(88), body: JSON.stringify({ v: 1, pod: "demo/pod-a", command: "setpoint", transaction: "x", seq: 1, issuedAt: new Date().toISOString(), expiresAt: new Date(Date.now() + 60_000).toISOString(), params: { loop: "rack-1.valve", value: 40, leaseS: 60 } }) });
    const withFlood = await tickWindow(pod, "with 1,000 bad commands/s", async () => {
      const t0 = performance.now();
      while (performance.now() - t0 < seconds * 1000) {
        for (let i = 0; i < 10; i++) {
          attacker.publish(`${pod.base}request/setpoint`, i % 2 === 0 ? junk : `{"garbage":${sent}`, { qos: 1 });
          sent++;
        }
        await new Promise((r) => setTimeout(r, Math.max(0, t0 + (sent * 1000) / 1000 - performance.now())));
      }
    });
    await waitFor(() => pod.uplink.stats().commands.rejected >= sent, "every flooded command rejected", 30_000);
    return { sent, rejected: pod.uplink.stats().commands.rejected, windows: [without, withFlood] };
  } finally {
    await attacker.endAsync(true);
    await pod.stop();
    await broker.stop();
  }
}

/** The simulator's device ports, whether it runs in this process or its own. */
interface SimPorts {
  portOf(name: string): number | undefined;
}

export async function runUplinkBench(quick = false): Promise<UplinkResult> {
  // the simulator runs in its own process, as field devices would: it must not share the
  // agent's event loop in a latency figure
  const dir = mkdtempSync(join(tmpdir(), "pw-bench-uplink-"));
  const proc = await startSimProcess(dir, 3000);
  const sim: SimPorts = { portOf: (name) => proc.ports[name] };
  try {
    const latency: UplinkResult["latency"] = [];
    const samples = quick ? 200 : 2000;
    const mosq = await Mosquitto.start();
    try {
      latency.push({ broker: "floor: bare mqtt.js client, no agent -> mosquitto 2", ...(await bareLatency(mosq.url, samples)) });
      latency.push({ broker: "loaded floor: the same bare client, a pod running beside it", ...(await loadedFloor(sim, mosq.url, samples)) });
      latency.push({ broker: "podwarden -> mosquitto 2 (MQTT 5)", ...(await liveLatency(sim, mosq.url, 5, samples)) });
    } finally {
      await mosq.stop();
    }
    const aedes = await startEmbeddedBroker(0);
    try {
      latency.push({ broker: "podwarden -> aedes in the bench process (MQTT 3.1.1)", ...(await liveLatency(sim, aedes.url, 4, samples)) });
    } finally {
      await aedes.close();
    }
    const replay = await spoolReplay(sim, quick ? 10_000 : 100_000);
    const flood = await commandFlood(sim, quick ? 3 : 10);
    return { latency, replay, flood };
  } finally {
    await stopProcess(proc.child);
    rmSync(dir, { recursive: true, force: true });
  }
}

function printWindows(ws: Window[]): void {
  console.log("| control tick | p50 µs | p99 µs | max µs | ticks |");
  console.log("|---|---:|---:|---:|---:|");
  for (const w of ws) console.log(`| ${w.what} | ${fmt(w.p50Us, 0)} | ${fmt(w.p99Us, 0)} | ${fmt(w.maxUs, 0)} | ${w.ticks} |`);
}

export function printUplink(r: UplinkResult): void {
  console.log("\n## uplink: live publish latency, QoS 1, loopback, one probe every 4 ms (agent event -> spool -> broker -> subscriber in its own process; and publish -> PUBACK)");
  console.log("| publisher -> broker | samples | p50 ms | p99 ms | max ms | PUBACK p50 ms | PUBACK p99 ms |");
  console.log("|---|---:|---:|---:|---:|---:|---:|");
  for (const x of r.latency) console.log(`| ${x.broker} | ${x.samples} | ${fmt(x.p50Ms, 3)} | ${fmt(x.p99Ms, 3)} | ${fmt(x.maxMs, 3)} | ${fmt(x.ackP50Ms, 3)} | ${fmt(x.ackP99Ms, 3)} |`);
  if (r.replay !== null) {
    console.log(`\n## uplink: spool replay to mosquitto at QoS 1: ${r.replay.messages} messages in ${fmt(r.replay.seconds, 2)} s = ${fmt(r.replay.perS, 0)} messages/s`);
    printWindows(r.replay.windows);
  }
  if (r.flood !== null) {
    console.log(`\n## uplink: command flood: ${r.flood.sent} bad commands at 1,000/s, ${r.flood.rejected} rejected`);
    printWindows(r.flood.windows);
  }
}
