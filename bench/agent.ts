// Agent figures:
//  - control tick lateness (p50/p99/p99.9/max) with a loaded main thread, beside cyclictest
//    (Debian rt-tests) under the same load in the same run;
//  - leak-to-isolation latency: from the leak register changing at the simulated device to the
//    isolation close command arriving at it, over >= 200 trials, with the simulator in its own
//    process so it does not share an event loop with the agent;
//  - RSS and CPU of `podwarden run` on the 8-rack demo pod.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { ControlThread } from "../agent/control/control-thread.js";
import { demoAgentConfig } from "../cli/demo-config.js";
import { podBankSpec } from "../pod/bank.js";
import { podLayout } from "../pod/layout.js";
import { demoConfigData } from "../cli/demo-config.js";
import { adminRequest } from "../agent/ops/admin-socket.js";
import mqtt from "mqtt";
import { commandBody } from "../agent/commands/client.js";
import { generateCommandKey, parsePrivateKey } from "../agent/commands/signing.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { devicesTaken, podwardenProcess, startSimProcess } from "../tooling/sim-process.js";
import { freePort } from "../tooling/free-port.js";
import { openHmiPages } from "../tooling/hmi-pages.js";
import { fmt, quantile } from "./stats.js";

export interface LatenessRow {
  what: string;
  p50Us: number;
  p99Us: number;
  p999Us: number;
  maxUs: number;
  samples: number;
}

/** What runs against the daemon during the leak trials. */
export type LeakLoad = "none" | "ingest-100mb" | "command-flood-10k" | "telemetry-10hz" | "hmi-5-pages";

export interface LeakResult {
  load: LeakLoad;
  /** what the load did, in words, with its measured rate */
  loadDone: string;
  trials: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  pollP50Ms: number;
  pollP99Ms: number;
  pollMs: number;
  daemonCpuPct: number;
  daemonRssMb: number;
}

export interface AgentResult {
  lateness: LatenessRow[];
  schedFifo: string;
  leak: LeakResult | null;
  /** the same measurement while each input load runs, in turn */
  leakUnderLoad: LeakResult[];
  resources: { rssMb: number; cpuPct: number; seconds: number } | null;
}

/** Keeps the main thread busy the way a real one gets busy: bursts of allocation and GC. */
function loadMainThread(): () => void {
  let stop = false;
  const burst = (): void => {
    if (stop) return;
    const junk: unknown[] = [];
    const t0 = performance.now();
    while (performance.now() - t0 < 8) junk.push({ a: Math.random(), b: "x".repeat(64), c: [1, 2, 3] });
    JSON.stringify(junk.slice(0, 2000));
    setTimeout(burst, 2);
  };
  burst();
  return () => (stop = true);
}

async function tickLateness(seconds: number): Promise<{ row: LatenessRow; sched: string }> {
  const ct = new ControlThread(podBankSpec(demoAgentConfig().control, podLayout(demoAgentConfig()), demoAgentConfig().racks), { periodMs: 1, schedFifo: true, schedPriority: 40, warmupTicks: 20000 });
  await ct.start();
  ct.latenessHistogram().reset(); // drop the start-up ticks
  const stopLoad = loadMainThread();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  stopLoad();
  const h = ct.latenessHistogram();
  const row = { what: "podwarden control worker (1 ms, Atomics.wait to absolute deadlines)", p50Us: h.percentile(0.5), p99Us: h.percentile(0.99), p999Us: h.percentile(0.999), maxUs: ct.maxLatenessUs, samples: h.total() };
  const sched = ct.schedFifo;
  await ct.stop();
  return { row, sched };
}

/** cyclictest under the same main-thread load, SCHED_FIFO 40, 1 ms interval; percentiles from its histogram. */
async function cyclictest(seconds: number): Promise<LatenessRow | null> {
  if (spawnSync("which", ["cyclictest"]).status !== 0) return null;
  const stopLoad = loadMainThread();
  const out = await new Promise<string>((resolve) => {
    const c = spawn("cyclictest", ["-m", "-p", "40", "-i", "1000", "-D", `${seconds}s`, "-q", "-h", "20000"], { stdio: ["ignore", "pipe", "ignore"] });
    let s = "";
    c.stdout.on("data", (d: Buffer) => (s += d.toString()));
    c.on("close", () => resolve(s));
  });
  stopLoad();
  const counts: [number, number][] = [];
  let max = NaN;
  for (const line of out.split("\n")) {
    const m = /^(\d+)\s+(\d+)/.exec(line);
    if (m !== null) counts.push([Number(m[1]), Number(m[2])]);
    const mx = /# Max Latencies:\s+(\d+)/.exec(line);
    if (mx !== null) max = Number(mx[1]);
  }
  const total = counts.reduce((a, [, n]) => a + n, 0);
  if (total === 0) return null;
  const at = (q: number): number => {
    let seen = 0;
    for (const [us, n] of counts) {
      seen += n;
      if (seen >= q * total) return us;
    }
    return counts[counts.length - 1][0];
  };
  return { what: "cyclictest -m -p 40 -i 1000 (C, SCHED_FIFO)", p50Us: at(0.5), p99Us: at(0.99), p999Us: at(0.999), maxUs: max, samples: total };
}

/**
 * The demo pod's config wired to a simulator process's ports, leak sensors polled every
 * `safetyPeriodMs`. The flight recorder is off: the leak benches trip a rack every few hundred
 * ms, and a recording of each would measure the disk, not the leak path; its own costs are the
 * recorder group's figures (bench/recorder.ts), which turn it on.
 */
export function demoConfigWithPorts(ports: Record<string, number>, safetyPeriodMs: number): unknown {
  const data = demoConfigData((name) => ports[name]);
  for (const g of data.modbus.groups) if (g.name === "safety") g.periodMs = safetyPeriodMs;
  (data as Record<string, unknown>).recorder = { enabled: false };
  return data;
}

/**
 * Starts one input load against the daemon through the broker; the function it returns stops it
 * and says what it did. Each runs in this (the bench's) process, on the machine's other core.
 * - ingest-100mb: a 100 MB message on an ingest topic every 2 s (MQTT 3.1.1, so the broker
 *   delivers it and the daemon's packet guard must end it unread);
 * - command-flood-10k: 10,000 requests a second that pass every check up to the signature and
 *   fail it (a well-formed body for this pod and a configured key, a forged signature);
 * - telemetry-10hz: the uplink publishing its full snapshot every 100 ms, with a subscriber.
 */
export async function startLoad(load: LeakLoad, url: string, privatePem: string): Promise<() => Promise<string>> {
  const client = await mqtt.connectAsync(url, { protocolVersion: 5, clientId: `bench-load-${process.pid}` });
  let stopped = false;
  let sent = 0;
  const t0 = performance.now();
  const rate = (): string => `${Math.round(sent / ((performance.now() - t0) / 1000))}/s`;
  let finish = (): Promise<string> => Promise.resolve("");
  if (load === "ingest-100mb") {
    const big = Buffer.alloc(100 * 1024 * 1024, 0x20);
    big.write('{"v":');
    const loop = async (): Promise<void> => {
      while (!stopped) {
        await client.publishAsync("bench/temp", big, { qos: 1 });
        sent++;
        await new Promise((r) => setTimeout(r, 2000)); // a payload every 2 s, not a bandwidth flood
      }
    };
    const running = loop();
    finish = async () => {
      await running.catch(() => undefined);
      return `${sent} messages of 100 MB (${rate()}) on an ingest topic`;
    };
  } else if (load === "command-flood-10k") {
    const body = JSON.stringify(commandBody({ site: "demo", pod: "pod-a", command: "setpoint", params: { loop: "rack-1.valve", value: 40, leaseS: 60 }, seq: 1, keyId: "ops", privateKey: parsePrivateKey(privatePem), ttlS: 300 }));
    const forged = Buffer.from(JSON.stringify({ keyId: "ops", body, signature: Buffer.alloc(64, 7).toString("base64") }));
    const timer = setInterval(() => {
      for (let k = 0; k < 100; k++) client.publish("podwarden/demo/pod-a/request/setpoint", forged, { qos: 0 });
      sent += 100;
    }, 10);
    finish = () => {
      clearInterval(timer);
      return Promise.resolve(`${sent} forged commands (${rate()}) that reach signature verification`);
    };
  } else {
    await client.subscribeAsync("podwarden/demo/pod-a/#", { qos: 1 });
    client.on("message", () => sent++);
    finish = () => Promise.resolve(`the uplink's full snapshot every 100 ms, ${rate()} messages to a subscriber`);
  }
  let said: string | null = null;
  return async () => {
    if (said !== null) return said;
    stopped = true;
    said = await finish();
    await client.endAsync(true);
    return said;
  };
}

/**
 * The leak benches measure at the device: where permitted, the simulator runs at SCHED_FIFO, as
 * a device on its own hardware would not wait behind the daemon and the load generators for a
 * core (at normal priority its own stalls were most of the tail: BENCHMARKS.md).
 */
export const SIM_FIFO = process.getuid?.() === 0 ? 30 : undefined;
export const simPriority = (): string => (SIM_FIFO === undefined ? "simulator at normal priority (not root)" : `simulator at SCHED_FIFO ${SIM_FIFO}`);

/**
 * The real daemon (its own process, production flags) against the simulator (another process);
 * this process only injects leaks and reads the simulator's timestamps. One daemon serves every
 * trial, warmed up first, as a pod controller runs for months: after each leak the simulator
 * dries the rack and the latch is reset through the daemon's local admin socket (the path of
 * `podwarden reset-leak`), and the next leak goes to the next rack.
 */
async function leakToIsolation(trials: number, warmupS: number, pollMs: number, load: LeakLoad = "none"): Promise<LeakResult | null> {
  const dir = mkdtempSync(join(tmpdir(), "podwarden-bench-"));
  const sim = await startSimProcess(dir, 5000, SIM_FIFO);
  const broker = load === "none" || load === "hmi-5-pages" ? null : await Mosquitto.start();
  const key = generateCommandKey();
  let stopLoad: () => Promise<string> = () => Promise.resolve("nothing");
  const latencies: number[] = [];
  const toRead: number[] = [];
  const rss: number[] = [];
  let cpuPct: number;
  let loadDone: string;
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
  let daemon: ChildProcess | null = null;
  try {
    const cfg = join(dir, "agent.yaml");
    const data = { ...(demoConfigWithPorts(sim.ports, pollMs) as object), stateDir: dir } as Record<string, unknown>;
    if (broker !== null) {
      data.uplink = { url: broker.url, protocolVersion: 5, telemetryMs: load === "telemetry-10hz" ? 100 : 1000, commands: { keys: [{ id: "ops", publicKey: key.publicRaw, roles: ["operator"] }] } };
      // MQTT 3.1.1: no maximumPacketSize, so the broker delivers the 100 MB and the pod's own guard must cope
      data.mqttIngest = { url: broker.url, protocolVersion: 4, points: [{ id: "bench.temp", topic: "bench/temp", path: "v", staleMs: 60_000 }] };
    }
    const hmiPort = await freePort();
    data.hmi = { port: hmiPort };
    writeFileSync(cfg, stringify(data));
    daemon = podwardenProcess(["run", "-c", cfg], "ignore");
    await devicesTaken(sim);
    await sleep(warmupS * 1000); // inputs valid, loops in automatic, code warm
    if (broker !== null) stopLoad = await startLoad(load, broker.url, key.privatePem);
    if (load === "hmi-5-pages") {
      const pages = await openHmiPages(`http://127.0.0.1:${hmiPort}/`, 5);
      stopLoad = async () => {
        await pages.stop();
        return `5 HMI pages (${pages.views()} live views)`;
      };
    }
    const cpu = cpuMeter(daemon.pid!);
    const pid = daemon.pid!;
    for (const x of await leakTrials(sim.controlUrl, join(dir, "admin.sock"), trials, (k) => k % 8 === 0 && rss.push(processRssMb(pid)))) {
      if (x.leakToIsolationMs !== null) latencies.push(x.leakToIsolationMs);
      if (x.leakToReadMs !== null) toRead.push(x.leakToReadMs);
    }
    cpuPct = cpu();
    loadDone = await stopLoad();
  } finally {
    await stopLeakRun(stopLoad, daemon, sim.child, broker);
  }
  if (latencies.length === 0) return null;
  return { load, loadDone, trials: latencies.length, p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99), maxMs: Math.max(...latencies), pollP50Ms: quantile(toRead, 0.5), pollP99Ms: quantile(toRead, 0.99), pollMs, daemonCpuPct: cpuPct, daemonRssMb: Math.max(...rss) };
}

/** Ends a leak run's load, then its daemon, simulator and broker, each waited for. */
export async function stopLeakRun(stopLoad: () => Promise<string>, daemon: ChildProcess | null, sim: ChildProcess, broker: Mosquitto | null): Promise<void> {
  await stopLoad().catch(() => undefined);
  for (const p of [daemon, sim]) {
    if (p === null || p.exitCode !== null || p.signalCode !== null) continue; // gone already: no exit event to wait for
    p.kill("SIGTERM");
    await new Promise((r) => p.once("exit", r));
  }
  await broker?.stop();
}

export interface LeakTrial {
  rack: number;
  leakToIsolationMs: number | null;
  leakToReadMs: number | null;
}

/**
 * `trials` leaks, one rack after another (by default rack k % 8; else `racks`, in turn), each at
 * a random phase against the polls, read at the simulated device: after each the simulator dries
 * the rack and the latch is reset through the daemon's admin socket (the path of `podwarden
 * reset-leak`). A trial with no isolation within `waitMs` (150) has null figures.
 */
export async function leakTrials(controlUrl: string, adminSock: string, trials: number, beforeTrial: (k: number) => void = () => undefined, racks: readonly number[] = [0, 1, 2, 3, 4, 5, 6, 7], waitMs = 150): Promise<LeakTrial[]> {
  const post = (body: object): Promise<Response> => fetch(`${controlUrl}/fault`, { method: "POST", body: JSON.stringify(body) });
  const truth = async (): Promise<{ racks: { leakToIsolationMs: number | null; leakToReadMs: number | null }[] }> => (await fetch(`${controlUrl}/truth`)).json() as never;
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
  const out: LeakTrial[] = [];
  for (let k = 0; k < trials; k++) {
    beforeTrial(k);
    const index = racks[k % racks.length];
    const rack = `rack-${index + 1}`;
    await sleep(50 + Math.random() * 20); // random phase against the polls
    await post({ leak: rack });
    await sleep(waitMs);
    const x = (await truth()).racks[index];
    out.push({ rack: index, leakToIsolationMs: x.leakToIsolationMs, leakToReadMs: x.leakToReadMs });
    await post({ clear: "all" });
    for (let attempt = 0; ; attempt++) {
      await sleep(20);
      const r = await adminRequest(adminSock, "POST", `/reset-leak?rack=${rack}`);
      if (r.status === 200) break;
      if (attempt > 100) throw new Error(`${rack}: latch reset refused: ${JSON.stringify(r.body)}`);
    }
  }
  return out;
}

async function daemonResources(seconds: number): Promise<AgentResult["resources"]> {
  const dir = mkdtempSync(join(tmpdir(), "podwarden-bench-"));
  const sim = await startSimProcess(dir, 3000);
  const cfg = join(dir, "agent.yaml");
  try {
    writeFileSync(cfg, stringify(demoConfigWithPorts(sim.ports, 20)));
  } catch (err) {
    sim.child.kill("SIGTERM");
    throw err;
  }
  // the production command line: the flags in the CLI's shebang (and the systemd unit)
  const agent = podwardenProcess(["run", "-c", cfg], "ignore");
  const pid = agent.pid!;
  try {
    await new Promise((r) => setTimeout(r, 5000)); // start-up and warm-up done
    const cpu = cpuMeter(pid);
    const t0 = performance.now();
    const rss: number[] = [];
    while (performance.now() - t0 < seconds * 1000) {
      await new Promise((r) => setTimeout(r, 1000));
      rss.push(processRssMb(pid));
    }
    return { rssMb: Math.max(...rss), cpuPct: cpu(), seconds };
  } finally {
    agent.kill("SIGTERM");
    await new Promise((r) => agent.once("exit", r));
    sim.child.kill("SIGTERM");
    await new Promise((r) => sim.child.once("exit", r));
  }
}

/**
 * Leak sensors' poll period in the latency benchmark unless `--leak-poll-ms` says otherwise, ms.
 * The latency is about this period plus the path's own ~1-3 ms, so the period is what buys the
 * 5 ms target; the bench reports the daemon's CPU at the rate beside it.
 */
export const LEAK_POLL_MS = 1;

/** Starts measuring a process's CPU time (Linux); the returned function gives its % of one core since then. */
export function cpuMeter(pid: number): () => number {
  const hz = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;
  const ticks = (): number => {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return Number(f[11]) + Number(f[12]); // utime + stime, in clock ticks
  };
  const c0 = ticks();
  const t0 = performance.now();
  return () => (100 * (ticks() - c0)) / hz / ((performance.now() - t0) / 1000);
}

/** Resident set of a process, MB (Linux). */
export function processRssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
}

const LOADS: LeakLoad[] = ["ingest-100mb", "command-flood-10k", "telemetry-10hz", "hmi-5-pages"];

export async function runAgentBench(quick = false, leakPollMs = LEAK_POLL_MS, only?: "leak"): Promise<AgentResult> {
  const seconds = quick ? 5 : 20;
  const leak = (): Promise<AgentResult["leak"]> => leakToIsolation(quick ? 40 : 400, quick ? 3 : 10, leakPollMs);
  const underLoad = async (): Promise<LeakResult[]> => {
    const out: LeakResult[] = [];
    for (const load of LOADS) {
      const r = await leakToIsolation(quick ? 40 : 200, quick ? 3 : 10, leakPollMs, load);
      if (r !== null) out.push(r);
    }
    return out;
  };
  if (only === "leak") return { lateness: [], schedFifo: "-", leak: await leak(), leakUnderLoad: await underLoad(), resources: null };
  const ours = await tickLateness(seconds);
  const ct = await cyclictest(seconds);
  return {
    lateness: ct === null ? [ours.row] : [ours.row, ct],
    schedFifo: ours.sched,
    leak: await leak(),
    leakUnderLoad: await underLoad(),
    resources: await daemonResources(quick ? 10 : 30),
  };
}

export function printAgent(r: AgentResult): void {
  console.log(`\n## agent: control tick lateness, main thread loaded (8 ms allocation bursts every 2 ms); SCHED_FIFO: ${r.schedFifo}`);
  console.log("| timer | p50 µs | p99 µs | p99.9 µs | max µs | ticks |");
  console.log("|---|---:|---:|---:|---:|---:|");
  for (const x of r.lateness) console.log(`| ${x.what} | ${fmt(x.p50Us, 0)} | ${fmt(x.p99Us, 0)} | ${fmt(x.p999Us, 0)} | ${fmt(x.maxUs, 0)} | ${x.samples} |`);
  if (r.lateness.length > 1) console.log(`tick p99 / cyclictest p99 = ${fmt(r.lateness[0].p99Us / Math.max(1, r.lateness[1].p99Us), 2)}`);
  else console.log("cyclictest not installed (apt-get install rt-tests): no platform floor in this run");
  if (r.leak !== null) {
    console.log(`\n## agent: leak-to-isolation latency (leak register changes at the device -> isolation close command arrives at it; leak sensors polled every ${r.leak.pollMs} ms; ${simPriority()})`);
    console.log(`${r.leak.trials} trials: p50 ${fmt(r.leak.p50Ms, 2)} ms, p99 ${fmt(r.leak.p99Ms, 2)} ms, max ${fmt(r.leak.maxMs, 2)} ms (of which leak change -> first poll of it: p50 ${fmt(r.leak.pollP50Ms, 2)} ms, p99 ${fmt(r.leak.pollP99Ms, 2)} ms)`);
    console.log(`the daemon over the trials, polling every leak sensor every ${r.leak.pollMs} ms: CPU ${fmt(r.leak.daemonCpuPct, 1)} % of one core, max RSS ${fmt(r.leak.daemonRssMb, 1)} MB`);
  }
  if (r.leak !== null && r.leakUnderLoad.length > 0) {
    console.log(`\n## agent: leak-to-isolation under input load (the same measurement, one load at a time; target p99 <= 5 ms, RSS <= 90 MB; ${simPriority()})`);
    console.log("| load | what it did | trials | p50 ms | p99 ms | max ms | daemon CPU % of one core | daemon max RSS MB |");
    console.log("|---|---|---:|---:|---:|---:|---:|---:|");
    for (const x of [r.leak, ...r.leakUnderLoad]) console.log(`| ${x.load} | ${x.loadDone} | ${x.trials} | ${fmt(x.p50Ms, 2)} | ${fmt(x.p99Ms, 2)} | ${fmt(x.maxMs, 2)} | ${fmt(x.daemonCpuPct, 1)} | ${fmt(x.daemonRssMb, 1)} |`);
  }
  if (r.resources !== null) {
    console.log(`\n## agent: podwarden run on the 8-rack demo pod over ${r.resources.seconds} s: max RSS ${fmt(r.resources.rssMb, 1)} MB, CPU ${fmt(r.resources.cpuPct, 1)} % of one core`);
  }
}
