// Simulator figures: virtual-time speed-up, and Modbus TCP request latency against the
// simulator's own server beside modbus-serial's ServerTCP (which defers every request through
// a timer, so it is kept out of every latency-measured path).
import { createHistogram } from "node:perf_hooks";
import { ServerTCP } from "modbus-serial";
import { ModbusClient } from "../drivers/modbus/modbus-serial.js";
import { demoAgentConfig } from "../cli/demo-config.js";
import { freePort } from "../tooling/free-port.js";
import { simConfig } from "../sim/config.js";
import { PodSim } from "../sim/pod-sim.js";
import { VirtualPod } from "../sim/virtual-pod.js";
import { fmt } from "./stats.js";

export interface LatencyRow {
  server: string;
  p50Ms: number;
  p99Ms: number;
  pollsPerS: number;
}

export interface SimResult {
  virtual: { plantS: number; wallS: number; speedup: number };
  latency: LatencyRow[];
}

function virtualSpeed(plantS: number): SimResult["virtual"] {
  const vp = new VirtualPod(
    simConfig({ plant: { load: { profile: "training", lowPct: 30, highPct: 95, periodS: 60 } } }),
    demoAgentConfig(),
  );
  vp.run(10); // warm-up: JIT tiers
  const t0 = performance.now();
  vp.run(plantS);
  const wallS = (performance.now() - t0) / 1000;
  return { plantS, wallS, speedup: plantS / wallS };
}

/** Sequential FC4 reads of 11 registers through modbus-serial's client. */
async function measure(server: string, port: number, unit: number, requests: number): Promise<LatencyRow> {
  const m = new ModbusClient();
  await m.connectTCP("127.0.0.1", { port });
  m.setID(unit);
  m.setTimeout(2000);
  for (let k = 0; k < 200; k++) await m.readInputRegisters(0, 11);
  const h = createHistogram();
  const t0 = performance.now();
  for (let k = 0; k < requests; k++) {
    const s = process.hrtime.bigint();
    await m.readInputRegisters(0, 11);
    h.record(process.hrtime.bigint() - s);
  }
  const wall = (performance.now() - t0) / 1000;
  await new Promise<void>((r) => m.close(() => r()));
  return { server, p50Ms: h.percentile(50) / 1e6, p99Ms: h.percentile(99) / 1e6, pollsPerS: requests / wall };
}

export async function runSimBench(quick = false): Promise<SimResult> {
  const virtual = virtualSpeed(quick ? 120 : 600);
  const requests = quick ? 1000 : 5000;
  const sim = new PodSim(simConfig({ devices: { basePort: 0 } }));
  await sim.start();
  const latency: LatencyRow[] = [];
  try {
    latency.push(await measure("podwarden sim (raw socket server)", sim.portOf("rack-1")!, 11, requests));
  } finally {
    await sim.stop();
  }
  const port = await freePort();
  const server = new ServerTCP({ getMultipleInputRegisters: (addr: number, length: number) => Array.from({ length }, (_, k) => addr + k) }, { host: "127.0.0.1", port, unitID: 1 });
  await new Promise<void>((r) => server.on("initialized", () => r()));
  try {
    latency.push(await measure("modbus-serial ServerTCP", port, 1, requests));
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
  return { virtual, latency };
}

export function printSim(r: SimResult): void {
  console.log("\n## simulator: virtual time (8-rack pod, real WASM hot path at 1 kHz, plant dt 10 ms)");
  console.log(`${fmt(r.virtual.plantS, 0)} s of plant time in ${fmt(r.virtual.wallS, 3)} s: **${fmt(r.virtual.speedup, 0)}x real time**`);
  console.log("\n## simulator: Modbus TCP request latency (modbus-serial client, sequential FC4 x 11 registers, loopback)");
  console.log("| server | p50 ms | p99 ms | polls/s |");
  console.log("|---|---:|---:|---:|");
  for (const row of r.latency) console.log(`| ${row.server} | ${fmt(row.p50Ms, 3)} | ${fmt(row.p99Ms, 3)} | ${fmt(row.pollsPerS, 0)} |`);
}
