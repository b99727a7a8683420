// Leak-to-isolation on an RS-485 line (issue #52, the leak path on every transport): the real
// daemon with racks 1 and 2 on one Modbus RTU bus at 19,200 baud, the rest on TCP, against the
// simulator's RTU front over a socat pty pair. A pty carries bytes at once whatever its rate, so
// the simulator takes each request in, and sends each answer out, after its time on a 19,200-baud
// wire (`devices.rtu.wireTime`): the figures are a real line's, but for the adapter's latency.
// The bus carries its own load, the two racks' control, telemetry, heartbeat and write traffic
// besides the leak polls; the main-thread loads are the TCP leak bench's (bench/agent.ts), each
// with a daemon of its own, the unloaded row the baseline in the same run.
//
// Target: p99 <= one poll period + 3 frame times + 2 ms: the transaction on the wire when the leak
// comes, the poll that reads it, the close that isolates it, each as long as the bus's longest
// transaction (request, answer and a t3.5 after each), and 2 ms of the daemon's own.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { generateCommandKey } from "../agent/commands/signing.js";
import { loadAgentConfig } from "../agent/config/load.js";
import type { DeviceConfig } from "../drivers/modbus/config.js";
import { registerCount } from "../drivers/modbus/codec.js";
import { planReads } from "../drivers/modbus/plan.js";
import { frameGapMs } from "../drivers/modbus/serial-line.js";
import { Mosquitto } from "../tooling/mosquitto-process.js";
import { metricValue } from "../tooling/prometheus-text.js";
import { freePort } from "../tooling/free-port.js";
import { ptyPair } from "../test/helpers/processes.js";
import { devicesTaken, podwardenProcess, startSimProcess } from "../tooling/sim-process.js";
import { cpuMeter, demoConfigWithPorts, leakTrials, stopLeakRun, processRssMb, SIM_FIFO, simPriority, startLoad, type LeakLoad } from "./agent.js";
import { fmt, quantile } from "./stats.js";

const BAUD = 19_200;
/** 8N2: 11 bits a character, as 8E1 (a pty has no parity) */
const FRAMING = { dataBits: 8 as const, parity: "none" as const, stopBits: 2 as const };
const CHAR_MS = (11 * 1000) / BAUD;
/** the leak sensors' poll period on the line: two devices' leak polls, and room for the rest */
const POLL_MS = 100;
const SERIAL_RACKS = [0, 1];
const LOADS: LeakLoad[] = ["ingest-100mb", "command-flood-10k", "telemetry-10hz"];

export interface RtuLeakRow {
  load: LeakLoad;
  loadDone: string;
  trials: number;
  missed: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** leak change to the first poll that read it */
  readP50Ms: number;
  readP99Ms: number;
  busUtilization: number;
  /** the serial devices' requests over the run: timed out, damaged (corrupt or collision), retried */
  lineErrors: string;
  daemonCpuPct: number;
  daemonRssMb: number;
}

export interface RtuLeakResult {
  frameMs: number;
  targetMs: number;
  rows: RtuLeakRow[];
}

/** Bytes of a read's answer on the line: unit, function, count byte, data, CRC. */
function readAnswerBytes(fc: number, count: number): number {
  return 3 + (fc <= 2 ? Math.ceil(count / 8) : 2 * count) + 2;
}

/**
 * The longest transaction a device of the bus makes, ms: request and answer on the wire and a
 * t3.5 after each. Reads as the driver plans them; a write of n registers is FC16 (9 + 2n bytes,
 * answered in 8), a coil FC5 (8 and 8).
 */
export function longestTransactionMs(devices: readonly DeviceConfig[]): number {
  let chars = 0;
  for (const d of devices) {
    const groups = new Set(d.points.map((p) => p.group));
    for (const g of groups) for (const b of planReads(d, d.points.filter((p) => p.group === g))) chars = Math.max(chars, 8 + readAnswerBytes(b.request.fc, b.request.count));
    for (const o of d.outputs) chars = Math.max(chars, o.table === "coil" ? 16 : 9 + 2 * registerCount(o.type) + 8);
  }
  return chars * CHAR_MS + 2 * frameGapMs(BAUD, FRAMING);
}

/** The demo pod's config with racks 1 and 2 on the RS-485 line, leak sensors polled every POLL_MS. */
function serialDemo(ports: Record<string, number>, path: string): object {
  const data = demoConfigWithPorts(ports, POLL_MS) as { modbus: { buses?: unknown[]; devices: Record<string, unknown>[] } };
  data.modbus.buses = [{ name: "rs485-1", path, baudRate: BAUD, ...FRAMING, rs485: "none", latencyMs: 0 }];
  data.modbus.devices = data.modbus.devices.map((d, i) => {
    if (!SERIAL_RACKS.includes(i - 1)) return d; // devices[0] is the CDU
    const { tcp: _tcp, ...rest } = d;
    return { ...rest, bus: "rs485-1" };
  });
  return data;
}

async function run(load: LeakLoad, trials: number, warmupS: number): Promise<{ row: RtuLeakRow | null; frameMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), "podwarden-bench-rtu-"));
  const line = await ptyPair();
  const sim = await startSimProcess(dir, 5000, SIM_FIFO, undefined, { rtu: { path: line.b, baudRate: BAUD, wireTime: true } });
  const broker = load === "none" ? null : await Mosquitto.start();
  const key = generateCommandKey();
  let stopLoad: () => Promise<string> = () => Promise.resolve("—");
  let daemon: ChildProcess | null = null;
  try {
    const cfg = join(dir, "agent.yaml");
    const metricsPort = await freePort();
    const data = { ...serialDemo(sim.ports, line.a), stateDir: dir, metrics: { port: metricsPort } } as Record<string, unknown>;
    if (broker !== null) {
      data.uplink = { url: broker.url, protocolVersion: 5, telemetryMs: load === "telemetry-10hz" ? 100 : 1000, commands: { keys: [{ id: "ops", publicKey: key.publicRaw, roles: ["operator"] }] } };
      data.mqttIngest = { url: broker.url, protocolVersion: 4, points: [{ id: "bench.temp", topic: "bench/temp", path: "v", staleMs: 60_000 }] };
    }
    writeFileSync(cfg, stringify(data));
    const loaded = loadAgentConfig(cfg);
    const frameMs = longestTransactionMs(loaded.config.modbus.devices.filter((d) => d.bus === "rs485-1"));
    daemon = podwardenProcess(["run", "-c", cfg], "ignore");
    await devicesTaken(sim);
    await new Promise((r) => setTimeout(r, warmupS * 1000));
    if (broker !== null) stopLoad = await startLoad(load, broker.url, key.privatePem);
    const pid = daemon.pid!;
    const cpu = cpuMeter(pid);
    const rss: number[] = [];
    const utilization: number[] = [];
    const metrics = async (): Promise<void> => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      utilization.push(metricValue(text, "podwarden_modbus_bus_utilization", { bus: "rtu:rs485-1" }));
    };
    const latencies: number[] = [];
    const toRead: number[] = [];
    let missed = 0;
    const xs = await leakTrials(sim.controlUrl, join(dir, "admin.sock"), trials, (k) => {
      if (k % 8 !== 0) return;
      rss.push(processRssMb(pid));
      void metrics().catch(() => undefined);
    }, SERIAL_RACKS, 400);
    for (const x of xs) {
      if (x.leakToIsolationMs === null) missed++;
      else latencies.push(x.leakToIsolationMs);
      if (x.leakToReadMs !== null) toRead.push(x.leakToReadMs);
    }
    const cpuPct = cpu();
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const count = (outcome: string): number => SERIAL_RACKS.reduce((n, i) => n + metricValue(text, "podwarden_modbus_requests_total", { device: `rack-${i + 1}`, outcome }), 0);
    const lineErrors = `${count("ok")} ok, ${count("timeouts")} timed out, ${count("corrupt") + count("collisions")} damaged, ${count("retries")} retried`;
    const loadDone = await stopLoad();
    if (latencies.length === 0) return { row: null, frameMs };
    return {
      frameMs,
      row: { load, loadDone, trials: xs.length, missed, p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99), maxMs: Math.max(...latencies), readP50Ms: quantile(toRead, 0.5), readP99Ms: quantile(toRead, 0.99), busUtilization: utilization.length === 0 ? NaN : quantile(utilization, 0.5), lineErrors, daemonCpuPct: cpuPct, daemonRssMb: Math.max(...rss) },
    };
  } finally {
    await stopLeakRun(stopLoad, daemon, sim.child, broker);
    await line.stop();
  }
}

export async function runRtuLeakBench(quick: boolean): Promise<RtuLeakResult> {
  const rows: RtuLeakRow[] = [];
  let frameMs = NaN;
  const only = process.env.PODWARDEN_BENCH_RTU_LOAD; // one row, for a diagnosis
  for (const load of ["none" as const, ...LOADS].filter((l) => only === undefined || l === only)) {
    const r = await run(load, quick ? 40 : load === "none" ? 400 : 200, quick ? 3 : 10);
    frameMs = r.frameMs;
    if (r.row !== null) rows.push(r.row);
  }
  return { frameMs, targetMs: POLL_MS + 3 * frameMs + 2, rows };
}

export function printRtuLeak(r: RtuLeakResult): void {
  console.log(`\n## agent: leak-to-isolation on an RS-485 line (racks 1-2 on one RTU bus, ${BAUD} baud 8N2, the simulator's answers paced at the wire's rate; leak sensors polled every ${POLL_MS} ms; ${simPriority()})`);
  console.log(`the bus's longest transaction ${fmt(r.frameMs, 2)} ms; target p99 <= ${POLL_MS} + 3 x ${fmt(r.frameMs, 2)} + 2 = ${fmt(r.targetMs, 1)} ms`);
  console.log("| load | what it did | trials | not isolated in 400 ms | p50 ms | p99 ms | max ms | leak to its first read p50 / p99 ms | bus utilization (median) | the line's requests | daemon CPU % of one core | daemon max RSS MB |");
  console.log("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|");
  for (const x of r.rows) console.log(`| ${x.load} | ${x.loadDone} | ${x.trials} | ${x.missed} | ${fmt(x.p50Ms, 2)} | ${fmt(x.p99Ms, 2)} | ${fmt(x.maxMs, 2)} | ${fmt(x.readP50Ms, 2)} / ${fmt(x.readP99Ms, 2)} | ${fmt(x.busUtilization * 100, 0)} % | ${x.lineErrors} | ${fmt(x.daemonCpuPct, 1)} | ${fmt(x.daemonRssMb, 1)} |`);
}
