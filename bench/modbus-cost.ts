// `npm run bench -- --only modbus`: the CPU one Modbus TCP transaction costs `podwarden run`,
// beside libmodbus's in the same run (../shared/tools/libmodbus-poll.c, one blocking transaction
// at a time, built here with gcc against Debian's libmodbus-dev). The daemon's cost is marginal:
// the demo pod with its leak sensors polled every 20 ms (its default) and then every 2 ms, each
// against a simulator of its own; the extra CPU divided by the extra transactions is what one
// more transaction costs it, the pod's fixed work (the 1 kHz ticks, the other groups, the
// supervisor) cancelling out. libmodbus polls one simulated device alone, as fast as the period
// lets it, so its figure is all transaction.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { metricValue } from "../tooling/prometheus-text.js";
import { podwardenProcess, startSimProcess } from "../tooling/sim-process.js";
import { cpuMeter, demoConfigWithPorts } from "./agent.js";
import { fmt } from "./stats.js";

const LIBMODBUS_POLL = "../shared/tools/libmodbus-poll.c";

export interface DaemonModbusRun {
  pollMs: number;
  txPerS: number;
  cpuPct: number;
}

export interface ModbusCostResult {
  daemon: DaemonModbusRun[];
  /** extra CPU per extra transaction between the two runs, µs */
  marginalUsPerTx: number;
  libmodbus: { txPerS: number; cpuPct: number; usPerTx: number; errors: number } | { skipped: string };
}

/** The demo pod under `podwarden run`, leak sensors every `pollMs`: its transactions a second and its CPU over `seconds`. */
async function daemonAt(pollMs: number, seconds: number): Promise<DaemonModbusRun> {
  const dir = mkdtempSync(join(tmpdir(), "podwarden-bench-modbus-"));
  const sim = await startSimProcess(dir, 3000);
  const cfg = join(dir, "agent.yaml");
  const data = demoConfigWithPorts(sim.ports, pollMs) as Record<string, unknown>;
  data.metrics = { enabled: true, port: 0 };
  data.hmi = { enabled: false };
  writeFileSync(cfg, stringify(data));
  const daemon = podwardenProcess(["run", "-c", cfg], "pipe");
  let out = "";
  daemon.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  const pid = daemon.pid!;
  try {
    const t0 = Date.now();
    let port: number | null = null;
    while (port === null) {
      if (Date.now() - t0 > 30_000) throw new Error("podwarden run did not serve metrics");
      const m = /"port":(\d+)[^\n]*metrics and health/.exec(out) ?? /metrics and health[^\n]*"port":(\d+)/.exec(out);
      port = m === null ? null : Number(m[1]);
      await new Promise((r) => setTimeout(r, 100));
    }
    const tx = async (): Promise<number> => metricValue(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(), "podwarden_modbus_requests_total");
    await new Promise((r) => setTimeout(r, 5000)); // start-up and warm-up done
    const tx0 = await tx();
    const cpu = cpuMeter(pid);
    const m0 = performance.now();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const cpuPct = cpu();
    const tx1 = await tx();
    return { pollMs, txPerS: (tx1 - tx0) / ((performance.now() - m0) / 1000), cpuPct };
  } finally {
    daemon.kill("SIGTERM");
    await new Promise((r) => daemon.once("exit", r));
    sim.child.kill("SIGTERM");
    await new Promise((r) => sim.child.once("exit", r));
  }
}

/** libmodbus-poll against one simulated rack device (unit 11, its leak register), every `periodUs`. */
async function libmodbusAt(periodUs: number, seconds: number): Promise<ModbusCostResult["libmodbus"]> {
  if (!existsSync(LIBMODBUS_POLL)) return { skipped: `${LIBMODBUS_POLL} not found` };
  const dir = mkdtempSync(join(tmpdir(), "podwarden-bench-libmodbus-"));
  const bin = join(dir, "libmodbus-poll");
  const flags = spawnSync("pkg-config", ["--cflags", "--libs", "libmodbus"], { encoding: "utf8" });
  if (flags.status !== 0) return { skipped: "libmodbus-dev not installed (apt-get install libmodbus-dev gcc)" };
  const cc = spawnSync("gcc", ["-O2", "-o", bin, LIBMODBUS_POLL, ...flags.stdout.trim().split(/\s+/)], { encoding: "utf8" });
  if (cc.status !== 0) return { skipped: `gcc: ${(cc.stderr || cc.error?.message || "failed").trim()}` };
  const sim = await startSimProcess(dir, 3000);
  try {
    const r = spawnSync(bin, [String(sim.ports["rack-1"]), "1", "11", String(periodUs), String(seconds)], { encoding: "utf8", timeout: (seconds + 30) * 1000 });
    const m = /tx (\d+) err (\d+) elapsed ([\d.]+) s cpu [\d.]+ s = ([\d.]+) % of a core, ([\d.]+) us\/tx, (\d+) tx\/s/.exec(r.stdout);
    if (m === null) return { skipped: `libmodbus-poll: ${(r.stderr || r.stdout).trim()}` };
    return { txPerS: Number(m[6]), cpuPct: Number(m[4]), usPerTx: Number(m[5]), errors: Number(m[2]) };
  } finally {
    sim.child.kill("SIGTERM");
    await new Promise((r) => sim.child.once("exit", r));
  }
}

export async function runModbusCostBench(quick: boolean): Promise<ModbusCostResult> {
  const seconds = quick ? 5 : 20;
  const slow = await daemonAt(20, seconds);
  const fast = await daemonAt(2, seconds);
  const marginalUsPerTx = ((fast.cpuPct - slow.cpuPct) / 100) * 1e6 / Math.max(1, fast.txPerS - slow.txPerS);
  return { daemon: [slow, fast], marginalUsPerTx, libmodbus: await libmodbusAt(500, seconds) };
}

export function printModbusCost(r: ModbusCostResult): void {
  console.log("\n## Modbus TCP: CPU per transaction, podwarden run beside libmodbus (same run)");
  console.log("| what | transactions / s | CPU % of one core | µs CPU per transaction |");
  console.log("|---|---:|---:|---:|");
  for (const d of r.daemon) console.log(`| podwarden run, demo pod, leak sensors every ${d.pollMs} ms | ${fmt(d.txPerS, 0)} | ${fmt(d.cpuPct, 1)} | — |`);
  console.log(`| podwarden run, marginal (the second run over the first) | ${fmt(r.daemon[1].txPerS - r.daemon[0].txPerS, 0)} | ${fmt(r.daemon[1].cpuPct - r.daemon[0].cpuPct, 1)} | ${fmt(r.marginalUsPerTx, 1)} |`);
  if ("skipped" in r.libmodbus) console.log(`| libmodbus-poll | skipped: ${r.libmodbus.skipped} | | |`);
  else {
    console.log(`| libmodbus-poll (C, one device, blocking, ${r.libmodbus.errors} errors) | ${fmt(r.libmodbus.txPerS, 0)} | ${fmt(r.libmodbus.cpuPct, 1)} | ${fmt(r.libmodbus.usPerTx, 1)} |`);
    console.log(`podwarden marginal / libmodbus = ${fmt(r.marginalUsPerTx / r.libmodbus.usPerTx, 2)}`);
  }
}
