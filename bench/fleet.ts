// Fleet figures (`npm run bench -- --only fleet`), on a real 3-node NATS cluster (Debian's
// nats-server, MQTT 3.1.1, streams and consumers on all three nodes, routes direct), with the
// fleet watch (fleet/watch.ts) as mission control, in this process:
//  - pods per broker node at the demo pod's telemetry rate: emulated pods (`podwarden fleet
//    emulate`, child processes, the recorded demo session) added in steps, spread over the
//    nodes; the capacity is the last step where the end-to-end p99 (the message's own timestamp
//    to the watch's receipt) is within 1 s and nothing is lost. Measured before the daemons
//    start: five daemons at 1 kHz with their simulators took ~1.3 of this machine's 2 cores
//    (top, first run), and the figure is the broker's, not what is left beside them;
//  - end-to-end latency at 1,000 emulated pods, events (an alarm from each pod every 10 s) and
//    telemetry, the telemetry thinned to an eighth of the rate the ramp carried (at the recorded
//    rate 1,000 pods are several times the knee; said in the table), then failover: the node
//    carrying a third of the pods is SIGKILLed; for each of its pods, the time from the kill to
//    the watch having a message the pod made after the kill, with no event of that pod missing
//    before it (reconnected, backlog delivered). First with the cluster alone (the broker's
//    figures), then beside five real daemons;
//  - the daemons: `podwarden run`, each on its own simulator process, the three nodes as their
//    broker list. Their control tick p99 (podwarden_tick_lateness_recent_seconds, scraped from
//    each one's /metrics) before the emulated pods return is the baseline, read again at 1,000
//    pods and during the failover. The mixed run shares this machine's 2 cores between the
//    cluster and the daemons, which no site does.
import { type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { stringify } from "yaml";
import { FleetWatch } from "../fleet/watch.js";
import { freePort } from "../tooling/free-port.js";
import { NatsCluster } from "../tooling/nats-cluster.js";
import { stopProcess, waitFor } from "../tooling/processes.js";
import { devicesTaken, podwardenProcess, startSimProcess, type SimProcess } from "../tooling/sim-process.js";
import { demoConfigWithPorts } from "./agent.js";
import { fmt, quantile } from "./stats.js";

const DAEMONS = 5;
const STEPS = [10, 25, 50, 100, 200, 400, 700, 1000];
const QUICK_STEPS = [10, 50];
const AT = 1000;
/** a step whose p99 is past this is saturated: the ramp stops there */
const SATURATED_MS = 10_000;

export interface Latency {
  samples: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface RampRow {
  pods: number;
  perNode: number;
  msgsPerS: number;
  all: Latency;
  lost: number;
  open: number;
}

export interface FleetBenchResult {
  daemons: number;
  baselineTickP99Us: number;
  ramp: RampRow[];
  capacity: { pods: number; perNode: number; why: string };
  /** at 1,000 pods with the cluster alone, then beside the daemons */
  alone: Thousand;
  mixed: Thousand;
}

export interface Thousand {
  at: { pods: number; telemetryEvery: number; events: Latency; telemetry: Latency; tickP99Us: number };
  failover: { pods: number; recovered: number; p50Ms: number; p99Ms: number; maxMs: number; tickP99Us: number; eventsLost: number; eventsMissing: number };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function latency(xs: number[]): Latency {
  const s = [...xs].sort((a, b) => a - b);
  return { samples: s.length, p50Ms: quantile(s, 0.5), p99Ms: quantile(s, 0.99), maxMs: s.length === 0 ? NaN : (s[s.length - 1] ?? NaN) };
}

interface Daemon {
  sim: SimProcess;
  child: ChildProcess;
  metricsPort: number;
  id: string;
}

/** The broker list rotated by k: pod k starts on node k mod n. */
const rotated = (urls: string[], k: number): string[] => urls.map((_, j) => urls[(k + j) % urls.length] ?? "");

async function startDaemon(dir: string, k: number, urls: string[]): Promise<Daemon> {
  const d = join(dir, `daemon-${k}`);
  const sim = await startSimProcess(mkdtempSync(join(dir, `sim-${k}-`)), 3000);
  const metricsPort = await freePort();
  const data = { ...(demoConfigWithPorts(sim.ports, 20) as object), site: "bench", pod: `daemon-${k}`, stateDir: d } as Record<string, unknown>;
  data.uplink = { brokers: rotated(urls, k), protocolVersion: 4 };
  data.hmi = { enabled: false };
  data.metrics = { port: metricsPort };
  const cfg = join(dir, `daemon-${k}.yaml`);
  writeFileSync(cfg, stringify(data));
  const child = podwardenProcess(["run", "-c", cfg], "ignore");
  await devicesTaken(sim);
  return { sim, child, metricsPort, id: `bench/daemon-${k}` };
}

/** The worst recent tick p99 over the daemons, µs. */
async function tickP99(daemons: Daemon[]): Promise<number> {
  const ps = await Promise.all(
    daemons.map(async (d) => {
      const text = await (await fetch(`http://127.0.0.1:${d.metricsPort}/metrics`)).text();
      const m = /podwarden_tick_lateness_recent_seconds\{quantile="0\.99"\} ([0-9.e+-]+)/.exec(text);
      return m === null ? NaN : Number(m[1]) * 1e6;
    }),
  );
  return Math.max(...ps);
}

/** Messages the emulated pods hold unacknowledged, per child, from each one's latest JSON line. */
const queuedBy = new Map<ChildProcess, number>();
const queued = (): number => [...queuedBy.values()].reduce((a, b) => a + b, 0);

/** A `podwarden fleet emulate` child: `count` pods from `first`, its totals read from its JSON lines. */
function emulators(urls: string[], site: string, first: number, count: number, extra: string[] = []): ChildProcess {
  const child = podwardenProcess(["fleet", "emulate", "--url", urls.join(","), "--mqtt-version", "4", "--site", site, "--first", String(first), "--count", String(count), "--json", "--every", "1", ...extra], "pipe");
  queuedBy.set(child, count);
  createInterface({ input: child.stdout! }).on("line", (line) => {
    try {
      const q = (JSON.parse(line) as { queued?: unknown }).queued;
      if (typeof q === "number") queuedBy.set(child, q);
    } catch {
      // not a totals line
    }
  });
  child.once("exit", () => queuedBy.delete(child));
  return child;
}

export async function runFleetBench(quick: boolean, log: (line: string) => void = (l) => console.error(l)): Promise<FleetBenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "pw-fleet-bench-"));
  const cluster = await NatsCluster.start({ nodes: 3, replicas: 3, partitionable: false, maxFile: "4G" });
  const urls = cluster.urls;
  const daemons: Daemon[] = [];
  const children: ChildProcess[] = [];
  // mission control on the node that is never killed first, then the others
  const w = await FleetWatch.start({ urls: [urls[2] ?? "", urls[1] ?? "", urls[0] ?? ""], protocolVersion: 4, consumers: 1, clientId: `bench-fleet-${process.pid}`, baseline: "one", lossAfterMs: 20_000 });
  // latency of every first copy taken, per class, while `sampling`
  let sampling = false;
  const lat = { events: [] as number[], telemetry: [] as number[] };
  let onRecovery: ((pod: string, stampedAt: number) => void) | null = null;
  w.onData((pod, cls, body) => {
    if (cls === "state") return;
    const at = Date.parse(String(body.timestamp));
    if (!Number.isFinite(at)) return;
    if (sampling) lat[cls].push(Date.now() - at);
    onRecovery?.(pod, at);
  });
  const online = (): number => w.stats().pods.online;
  const stopChildren = async (): Promise<void> => {
    await Promise.all(children.splice(0).map((c) => stopProcess(c)));
  };
  try {
    // the ramp, at the recorded rate
    const ramp: RampRow[] = [];
    let capacity = { pods: 0, perNode: 0, why: "" };
    let pods = 0;
    for (const step of quick ? QUICK_STEPS : STEPS) {
      children.push(emulators(urls, "ramp", pods, step - pods));
      pods = step;
      await waitFor(() => online() >= pods, `${pods} emulated pods online`, 120_000, 200);
      await waitFor(() => queued() < pods, "the emulated pods' queues drained", 60_000, 500).catch(() => undefined);
      await sleep(5000);
      const before = w.stats();
      lat.events = [];
      lat.telemetry = [];
      sampling = true;
      const t0 = performance.now();
      await sleep(10_000);
      sampling = false;
      const after = w.stats();
      const s = (after.connections[0]?.messages ?? 0) - (before.connections[0]?.messages ?? 0);
      const row: RampRow = {
        pods,
        perNode: pods / cluster.size,
        msgsPerS: s / ((performance.now() - t0) / 1000),
        all: latency([...lat.events, ...lat.telemetry]),
        lost: after.events.lost + after.telemetry.lost - (before.events.lost + before.telemetry.lost),
        open: after.events.open + after.telemetry.open,
      };
      ramp.push(row);
      log(`fleet: ${pods} pods, ${fmt(row.msgsPerS, 0)} msg/s, p99 ${fmt(row.all.p99Ms, 0)} ms, lost ${row.lost}, open ${row.open}`);
      if (capacity.why === "") {
        if (row.all.p99Ms > 1000) capacity = { pods: ramp[ramp.length - 2]?.pods ?? 0, perNode: (ramp[ramp.length - 2]?.pods ?? 0) / cluster.size, why: `p99 ${fmt(row.all.p99Ms / 1000, 1)} s at ${pods} pods` };
        else if (row.lost > 0) capacity = { pods: ramp[ramp.length - 2]?.pods ?? 0, perNode: (ramp[ramp.length - 2]?.pods ?? 0) / cluster.size, why: `${row.lost} lost at ${pods} pods` };
      }
      if (row.all.p99Ms > SATURATED_MS) break;
    }
    if (capacity.why === "") capacity = { pods, perNode: pods / cluster.size, why: `the largest step, within 1 s and no loss` };
    await stopChildren();
    await waitFor(() => online() === 0, "the emulated pods gone", 120_000, 200);

    // a thousand pods, each run under a site of its own (a pod's numbers start again at 1 in a
    // new emulator, and the watch would take them for duplicates of the last run's): events and
    // telemetry latency, then a node's death. The telemetry at an eighth of the rate the ramp
    // carried: at 1,000 pods the recorded rate is several times the knee
    const telemetryEvery = Math.ceil(AT / Math.max(1, capacity.pods / 8));
    const per = quick ? 100 : 250;
    const total = quick ? 200 : AT;
    const thousand = async (site: string): Promise<Thousand> => {
      for (let first = 0; first < total; first += per) children.push(emulators(urls, site, first, per, ["--telemetry-every", String(telemetryEvery), "--alarm-every", "10"]));
      await waitFor(() => online() >= daemons.length + total, `${total} emulated pods online`, 180_000, 200);
      // the connection storm's retained state and first messages through before the window opens
      await waitFor(() => queued() < total, "the emulated pods' queues drained", 120_000, 500).catch(() => undefined);
      await sleep(5000);
      lat.events = [];
      lat.telemetry = [];
      sampling = true;
      await sleep(15_000);
      sampling = false;
      const at = { pods: total, telemetryEvery, events: latency(lat.events), telemetry: latency(lat.telemetry), tickP99Us: daemons.length === 0 ? NaN : await tickP99(daemons) };
      log(`fleet: ${site}: ${total} pods (telemetry 1 in ${telemetryEvery}), events p99 ${fmt(at.events.p99Ms, 0)} ms, telemetry p99 ${fmt(at.telemetry.p99Ms, 0)} ms`);

      // node 0 dies: the pods that started on it (emulated pod k and daemon k with k mod 3 = 0)
      const onNode0 = [...Array.from({ length: total }, (_, k) => k).filter((k) => k % cluster.size === 0).map((k) => `${site}/emu-${k}`), ...daemons.filter((_, k) => k % cluster.size === 0).map((d) => d.id)];
      const recovered = new Map<string, number>();
      const pending = new Set(onNode0);
      const killedAt = Date.now();
      onRecovery = (pod, stampedAt) => {
        if (!pending.has(pod) || stampedAt < killedAt) return;
        if (w.ledger.missing(pod, "events", 1).length > 0) return;
        pending.delete(pod);
        recovered.set(pod, Date.now() - killedAt);
      };
      await cluster.kill(0);
      await waitFor(() => pending.size === 0, "every pod of the killed node back with its backlog", 120_000, 200).catch(() => undefined);
      const tickDuring = daemons.length === 0 ? NaN : await tickP99(daemons);
      onRecovery = null;
      await cluster.restart(0);
      await sleep(5000);
      const rec = [...recovered.values()].sort((a, b) => a - b);
      const gaps = w.gaps("events");
      const failover = {
        pods: onNode0.length,
        recovered: rec.length,
        p50Ms: quantile(rec, 0.5),
        p99Ms: quantile(rec, 0.99),
        maxMs: rec[rec.length - 1] ?? NaN,
        tickP99Us: tickDuring,
        eventsLost: w.stats().events.lost,
        eventsMissing: gaps.reduce((n, g) => n + g.counts.open, 0),
      };
      log(`fleet: ${site}: failover of ${failover.pods} pods, ${failover.recovered} back, p99 ${fmt(failover.p99Ms, 0)} ms, events lost ${failover.eventsLost}, missing ${failover.eventsMissing}`);
      await stopChildren();
      await waitFor(() => online() <= daemons.length, "the emulated pods gone", 120_000, 200);
      return { at, failover };
    };

    // the broker's own figures: the cluster, the watch and the emulators alone
    const alone = await thousand("alone");

    // then the mixed fleet: five daemons join, their ticks measured before the pods return
    for (let k = 0; k < DAEMONS; k++) daemons.push(await startDaemon(dir, k, urls));
    await waitFor(() => online() >= DAEMONS, "five daemons online at the watch", 60_000, 200);
    await sleep(10_000); // loops in automatic, code warm, a full tick window
    const baselineTickP99Us = await tickP99(daemons);
    log(`fleet: ${DAEMONS} daemons online, tick p99 ${fmt(baselineTickP99Us, 0)} µs`);
    const mixed = await thousand("mixed");
    return { daemons: DAEMONS, baselineTickP99Us, ramp, capacity, alone, mixed };
  } finally {
    await stopChildren();
    await Promise.all(
      daemons.map(async (d) => {
        await stopProcess(d.child);
        await stopProcess(d.sim.child);
      }),
    );
    await w.stop();
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const row = (l: Latency): string => `${fmt(l.p50Ms, 0)} | ${fmt(l.p99Ms, 0)} | ${fmt(l.maxMs, 0)} | ${l.samples}`;

export function printFleet(r: FleetBenchResult): void {
  console.log(`\n## fleet: a 3-node NATS cluster (MQTT 3.1.1, streams R3), ${r.daemons} real daemons and emulated pods, the fleet watch as mission control`);
  console.log("\nthe ramp, at the recorded rate (the cluster, the watch and the emulators alone on the machine):\n");
  console.log("emulated pods | per node | messages/s at the watch | e2e p50 ms | p99 ms | max ms | samples | lost | open gaps");
  console.log("---|---|---|---|---|---|---|---|---");
  for (const x of r.ramp) console.log(`${x.pods} | ${fmt(x.perNode, 0)} | ${fmt(x.msgsPerS, 0)} | ${row(x.all)} | ${x.lost} | ${x.open}`);
  console.log(`\ncapacity at the demo pod's telemetry rate: ${r.capacity.pods} pods, ${fmt(r.capacity.perNode, 0)} per node (${r.capacity.why})`);
  printThousand(r.alone, "the cluster, the watch and the emulators alone");
  console.log(`\nthen ${r.daemons} real daemons join (podwarden run, each on its own simulator); baseline, their control tick p99 before the emulated pods return, worst of the ${r.daemons}: ${fmt(r.baselineTickP99Us, 0)} µs`);
  printThousand(r.mixed, `beside the ${r.daemons} daemons`);
}

function printThousand(t: Thousand, where: string): void {
  const daemons = Number.isFinite(t.at.tickP99Us);
  console.log(`\nat ${t.at.pods} emulated pods, ${where} (telemetry ${t.at.telemetryEvery === 1 ? "at the recorded rate" : `1 message in ${t.at.telemetryEvery} of the recording`}, an alarm from each pod every 10 s)${daemons ? `, daemons' tick p99 ${fmt(t.at.tickP99Us, 0)} µs` : ""}:\n`);
  console.log("class | e2e p50 ms | p99 ms | max ms | samples");
  console.log("---|---|---|---|---");
  console.log(`events | ${row(t.at.events)}`);
  console.log(`telemetry | ${row(t.at.telemetry)}`);
  const f = t.failover;
  console.log(`\nfailover: node 1 SIGKILLed; its ${f.pods} pods, each from the kill to reconnected with its backlog delivered: ${f.recovered} of ${f.pods} back, p50 ${fmt(f.p50Ms, 0)} ms, p99 ${fmt(f.p99Ms, 0)} ms, max ${fmt(f.maxMs, 0)} ms; events lost at the watch ${f.eventsLost}, missing ${f.eventsMissing}${daemons ? `; daemons' tick p99 ${fmt(f.tickP99Us, 0)} µs` : ""}`);
}
