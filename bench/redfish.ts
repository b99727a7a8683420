// Redfish rack BMCs (issue #25), each figure beside its baseline in the same run; the simulator
// runs in its own process with a BMC per rack (devices.redfish):
//  - leak event at the BMC -> isolation command at the valve device: racks 1-4 take their leak
//    detector from their BMC (the SSE event), racks 5-8 from their Modbus device (the leak
//    thread's 1 ms poll), one daemon, trials alternating between the racks. Measured by the
//    simulator, from the leak state changing in the plant to the supply isolation's close command
//    arriving at the rack's Modbus device. The Redfish figure includes the BMC noticing (its
//    event leaves at the plant step after the change, as a BMC's own detection takes time);
//  - polling cost: the daemon's CPU with 8 BMCs read every second (power, leak detector, power
//    limit) and their event streams open, against the same daemon (same racks, same wiring)
//    without them, in alternating windows;
//  - power-budget enforcement: from the budget set below the pod's draw to the plant's total
//    power under it, with the caps written to the BMCs (which ramp to them at their own
//    50 kW/s) against the caps written to the Modbus cap register (applied at once).
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { Agent } from "../agent/agent.js";
import { validateAgentConfig } from "../agent/config/load.js";
import { Logs } from "../agent/log.js";
import { DEMO_BMC_PASSWORD_ENV, readRacksThroughBmcs } from "../cli/demo-config.js";
import { devicesTaken, podwardenProcess, startSimProcess, type SimProcess } from "../tooling/sim-process.js";
import { stopProcess } from "../tooling/processes.js";
import { cpuMeter, demoConfigWithPorts, leakTrials } from "./agent.js";
import { fmt, quantile } from "./stats.js";

interface Latencies {
  what: string;
  trials: number;
  missed: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface RedfishBenchResult {
  leak: Latencies[];
  cpu: { what: string; pct: number[] }[];
  cpuWindowS: number;
  budget: Latencies[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const BMC_RACKS = new Set(["rack-1", "rack-2", "rack-3", "rack-4"]);
/** every rack flat out, so a budget binds on all of them */
const FLAT_OUT = { load: { profile: "idle", pct: 95 } };

function latencies(what: string, xs: (number | null)[]): Latencies {
  const got = xs.filter((x): x is number => x !== null);
  return { what, trials: xs.length, missed: xs.length - got.length, p50Ms: quantile(got, 0.5), p99Ms: quantile(got, 0.99), maxMs: Math.max(...got) };
}

function daemon(dir: string, name: string, data: object): ChildProcess {
  const cfg = join(dir, `${name}.yaml`);
  mkdirSync(join(dir, name));
  writeFileSync(cfg, stringify({ ...data, stateDir: join(dir, name) }));
  return podwardenProcess(["run", "-c", cfg], "ignore");
}

async function leakBench(dir: string, sim: SimProcess, trials: number): Promise<Latencies[]> {
  const data = demoConfigWithPorts(sim.ports, 1) as Record<string, unknown>;
  readRacksThroughBmcs(data, (d) => sim.ports[d], { racks: (r) => BMC_RACKS.has(r) });
  const d = daemon(dir, "leak", data);
  try {
    await devicesTaken(sim);
    await sleep(10_000); // inputs valid, loops in automatic, streams open, code warm
    const xs = await leakTrials(sim.controlUrl, join(dir, "leak", "admin.sock"), trials * 2);
    return [
      latencies("Redfish: BMC leak detector, SSE event (racks 1-4)", xs.filter((x) => x.rack < 4).map((x) => x.leakToIsolationMs)),
      latencies("Modbus: leak register, leak thread polling every 1 ms (racks 5-8)", xs.filter((x) => x.rack >= 4).map((x) => x.leakToIsolationMs)),
    ];
  } finally {
    await stopProcess(d);
  }
}

async function cpuBench(dir: string, sim: SimProcess, windowS: number, rounds: number): Promise<RedfishBenchResult["cpu"]> {
  // the same racks wired the same way, with the BMCs read on top: the difference is what
  // reading them costs, not a change of which thread polls the leak inputs
  const plain = demoConfigWithPorts(sim.ports, 20) as Record<string, unknown>;
  const wired = demoConfigWithPorts(sim.ports, 20) as Record<string, unknown>;
  readRacksThroughBmcs(wired, (d) => sim.ports[d], { pollMs: 1000 });
  const bmcs = { ...plain, redfishClient: wired.redfishClient };
  const out = [
    { what: "the demo pod, Modbus only", data: plain, pct: [] as number[] },
    { what: "the same, also reading 8 BMCs over Redfish (1 s poll, event streams open)", data: bmcs, pct: [] as number[] },
  ];
  for (let round = 0; round < rounds; round++) {
    for (const [i, o] of out.entries()) {
      const d = daemon(dir, `cpu-${round}-${i}`, o.data);
      try {
        await devicesTaken(sim);
        await sleep(5000);
        const cpu = cpuMeter(d.pid!);
        await sleep(windowS * 1000);
        o.pct.push(cpu());
      } finally {
        await stopProcess(d);
      }
    }
  }
  return out.map(({ what, pct }) => ({ what, pct }));
}

async function budgetBench(dir: string, trials: number): Promise<Latencies[]> {
  const out: Latencies[] = [];
  for (const through of ["Modbus cap register (applied at once)", "Redfish BMC PowerLimit (the BMC ramps at 50 kW/s)"]) {
    // a simulator of its own for each: a BMC keeps the last limit it was given, after its agent
    // has gone, and it would hold the racks under the other path's caps
    const sim = await startSimProcess(dir, 5000, undefined, FLAT_OUT, { redfish: {} });
    const truthKw = async (): Promise<number> => ((await (await fetch(`${sim.controlUrl}/truth`)).json()) as { racks: { powerKw: number }[] }).racks.reduce((a, r) => a + r.powerKw, 0);
    const data = demoConfigWithPorts(sim.ports, 20) as Record<string, unknown>;
    // the demo's own budget (900 kW) binds at this load: lifting a trial's budget must return
    // the pod to its uncapped draw, not to a budget the caps then chase
    data.supervisor = { ...(data.supervisor as object), powerBudget: { ...(data.supervisor as { powerBudget: object }).powerBudget, podKw: 960 } };
    if (through.startsWith("Redfish")) readRacksThroughBmcs(data, (d) => sim.ports[d], { pollMs: 1000 });
    data.stateDir = join(dir, `budget-${out.length}`);
    mkdirSync(data.stateDir as string);
    data.log = { level: "error", modules: {} };
    const config = validateAgentConfig(data, "bench");
    const agent = new Agent({ config, hash: "bench", path: "bench" }, new Logs(config.log, { site: "bench", pod: "redfish" }, { write: () => true }));
    await agent.start();
    const xs: (number | null)[] = [];
    try {
      await devicesTaken(sim);
      await sleep(5000);
      for (let k = 0; k < trials; k++) {
        const full = await truthKw();
        const budget = Math.round(full * 0.7);
        const t0 = performance.now();
        await agent.commander.setPowerBudget(budget);
        let dt: number | null = null;
        while (performance.now() - t0 < 20_000) {
          if ((await truthKw()) <= budget) {
            dt = performance.now() - t0;
            break;
          }
          await sleep(5);
        }
        xs.push(dt);
        // back to full power before the next trial
        await agent.commander.setPowerBudget(null);
        const t1 = performance.now();
        while ((await truthKw()) < full * 0.97 && performance.now() - t1 < 20_000) await sleep(50);
      }
    } finally {
      await agent.stop({ driveSafe: false, reason: "bench" });
      await stopProcess(sim.child);
    }
    out.push(latencies(through, xs));
  }
  return out;
}

export async function runRedfishBench(quick = false): Promise<RedfishBenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "podwarden-bench-rf-"));
  process.env[DEMO_BMC_PASSWORD_ENV] ??= "podwarden-sim";
  try {
    const sim = await startSimProcess(dir, 5000, undefined, FLAT_OUT, { redfish: {} });
    let leak: Latencies[];
    let cpu: RedfishBenchResult["cpu"];
    const cpuWindowS = quick ? 5 : 30;
    try {
      leak = await leakBench(dir, sim, quick ? 20 : 200);
      cpu = await cpuBench(dir, sim, cpuWindowS, quick ? 1 : 2);
    } finally {
      await stopProcess(sim.child);
    }
    const budget = await budgetBench(dir, quick ? 5 : 100);
    return { leak, cpu, cpuWindowS, budget };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function printRedfish(r: RedfishBenchResult): void {
  const table = (rows: Latencies[]): void => {
    console.log("| path | trials | p50 ms | p99 ms | max ms | missed |");
    console.log("|---|---|---|---|---|---|");
    for (const x of rows) console.log(`| ${x.what} | ${x.trials} | ${fmt(x.p50Ms, 1)} | ${fmt(x.p99Ms, 1)} | ${fmt(x.maxMs, 1)} | ${x.missed} |`);
  };
  console.log("\n## Redfish rack BMCs\n");
  console.log("Leak at the BMC -> isolation close command at the rack's valve device (the simulator's clock):\n");
  table(r.leak);
  console.log(`\nDaemon CPU, % of one core, over ${r.cpuWindowS} s windows, alternating:\n`);
  console.log("| daemon | windows | mean % |");
  console.log("|---|---|---|");
  for (const c of r.cpu) console.log(`| ${c.what} | ${c.pct.map((p) => fmt(p, 1)).join(", ")} | ${fmt(c.pct.reduce((a, b) => a + b, 0) / c.pct.length, 1)} |`);
  console.log("\nPower budget set to 70 % of the pod's draw -> the plant's total power under it:\n");
  table(r.budget);
}
