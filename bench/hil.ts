// The HIL standard library (configs/hil/) in virtual time: each scenario's wall time and its
// speed against real time, and the whole library's, over a few rounds; and the real-time subset
// (`podwarden hil run --rig`, the daemon against the simulator in its own process): its wall
// time beside its scenarios' own time; and the time-to-safe campaign through the runner
// (docs/hil.md).
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { demoConfigData } from "../cli/demo-config.js";
import { startSimProcess } from "../tooling/sim-process.js";
import { demoAgentConfig } from "../cli/demo-config.js";
import { scenarioConfig } from "../cli/hil-command.js";
import type { AgentConfig } from "../agent/config/load.js";
import { loadHilScenario, type HilScenario } from "../hil/scenario.js";
import { campaignRun, campaignTable, summariseCampaign } from "../hil/campaign.js";
import { runVirtual, type ScenarioRun } from "../hil/virtual-runner.js";
import { loadSimConfig } from "../sim/config.js";
import { fmt } from "./stats.js";

export interface HilBenchResult {
  scenarios: { name: string; virtualS: number; wallMs: number[] }[];
  totalWallMs: number[];
  totalVirtualS: number;
}

/** The standard library, configs/hil/*.yaml, by name. */
/** Each scenario's config (hil run's scenarioConfig), made once, outside the runs timed. */
function configsOf(files: HilScenario[], pod: AgentConfig): (s: HilScenario) => AgentConfig {
  const configs = new Map(files.map((s) => [s, scenarioConfig(s, undefined, pod)]));
  return (s) => configs.get(s) ?? pod;
}

function libraryScenarios(): HilScenario[] {
  return readdirSync("configs/hil")
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .map((f) => loadHilScenario(join("configs/hil", f)));
}

export function runHilBench(quick: boolean): HilBenchResult {
  const sim = loadSimConfig("configs/sim-pod.yaml");
  const pod = demoAgentConfig();
  const files = libraryScenarios();
  const podOf = configsOf(files, pod);
  const scenarios = files.map((s) => ({ name: s.name, virtualS: s.durationMs / 1000, wallMs: [] as number[] }));
  const totalWallMs: number[] = [];
  for (let round = 0; round < (quick ? 1 : 3); round++) {
    let total = 0;
    files.forEach((s, i) => {
      const r = runVirtual(s, sim, podOf(s));
      if (!r.passed) throw new Error(`bench: ${s.name} failed`);
      scenarios[i].wallMs.push(r.wallMs);
      total += r.wallMs;
    });
    totalWallMs.push(total);
  }
  return { scenarios, totalWallMs, totalVirtualS: scenarios.reduce((n, s) => n + s.virtualS, 0) };
}

export function printHilBench(r: HilBenchResult): void {
  const list = (xs: number[], d: number): string => xs.map((x) => fmt(x, d)).join(", ");
  console.log("\n## HIL library in virtual time\n");
  console.log("| scenario | virtual s | wall ms, each round | x real time, each round |");
  console.log("|---|---|---|---|");
  for (const s of r.scenarios) console.log(`| ${s.name} | ${s.virtualS} | ${list(s.wallMs, 0)} | ${list(s.wallMs.map((w) => (s.virtualS * 1000) / w), 0)} |`);
  console.log(`| **the library** | ${r.totalVirtualS} | ${list(r.totalWallMs, 0)} | ${list(r.totalWallMs.map((w) => (r.totalVirtualS * 1000) / w), 0)} |`);
}

/**
 * The time-to-safe campaign through the runner (hil/campaign.ts): every library scenario run
 * `runs` times in virtual time, seeds and phases varied, each `within` expectation's figure
 * summarised beside its limit. The same files, the same runner, as `npm test` and a rig.
 */
export function runHilCampaign(quick: boolean): { runs: number; scenarios: number; wallMs: number; table: string } {
  const sim = loadSimConfig("configs/sim-pod.yaml");
  const pod = demoAgentConfig();
  const files = libraryScenarios();
  const podOf = configsOf(files, pod);
  const n = quick ? 10 : 50;
  const all: ScenarioRun[] = [];
  const t0 = performance.now();
  for (const s of files) {
    for (let k = 0; k < n; k++) {
      const r = runVirtual(s, sim, podOf(s), campaignRun(k, n, s.seed));
      if (!r.passed) throw new Error(`bench: ${s.name} run ${k + 1} of ${n} failed: ${r.verdicts.filter((v) => !v.passed).map((v) => `${v.name}: ${v.figure}`).join("; ")}`);
      all.push(r);
    }
  }
  return { runs: n, scenarios: files.length, wallMs: performance.now() - t0, table: campaignTable(summariseCampaign(all)) };
}

export function printHilCampaign(r: ReturnType<typeof runHilCampaign>): void {
  console.log(`\n## HIL time-to-safe campaign, virtual time (${r.scenarios} scenarios x ${r.runs} runs, seeds and phases varied: ${fmt(r.wallMs / 1000, 1)} s)\n`);
  console.log(r.table);
}

/**
 * The real-time subset: a leak isolated and proven at the device, a chattering leak held
 * latched, a silent device failed safe (docs/hil.md, "Speed"). The whole library passes in real
 * time too (BENCHMARKS.md), in about nine minutes.
 */
export const REALTIME_SUBSET = ["leak-rack-3", "leak-chatter-rack-6", "device-offline-rack-5"].map((n) => join("configs/hil", `${n}.yaml`));

export interface HilRealtimeResult {
  scenarios: { name: string; scenarioS: number; wallS: number; passed: boolean }[];
  settleS: number;
  totalWallS: number;
}

/** The real-time subset once, through the CLI, against the simulator in its own process. */
export async function runHilRealtimeBench(): Promise<HilRealtimeResult> {
  const dir = mkdtempSync(join(tmpdir(), "podwarden-bench-hil-rt-"));
  const simPod = parse(readFileSync("configs/sim-pod.yaml", "utf8")) as { plant: Record<string, unknown> };
  const sim = await startSimProcess(dir, 3000, undefined, simPod.plant);
  const settleS = 10;
  try {
    const rig = {
      name: "sim-process",
      devices: Object.fromEntries(Object.entries(sim.ports).filter(([n]) => !n.endsWith(".bmc")).map(([name, port]) => [name, { host: "127.0.0.1", port }])),
      truth: { url: `${sim.controlUrl}/truth` },
      settleS,
      faults: { default: { http: { url: `${sim.controlUrl}/fault` } } },
      clear: { http: { url: `${sim.controlUrl}/clear` } },
    };
    writeFileSync(join(dir, "rig.yaml"), stringify(rig));
    const data = demoConfigData();
    data.pod = `bench-hil-${process.pid}`;
    writeFileSync(join(dir, "agent.yaml"), stringify(data));
    const t0 = performance.now();
    const child = spawn("node", ["dist/cli/podwarden.js", "hil", "run", ...REALTIME_SUBSET, "-c", join(dir, "agent.yaml"), "--rig", join(dir, "rig.yaml")], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    await new Promise((r) => child.once("exit", r));
    const totalWallS = (performance.now() - t0) / 1000;
    const scenarios = [...out.matchAll(/^(PASS|FAIL) (\S+) \(([\d.]+) s of real time on the rig \S+ in ([\d.]+) s/gm)].map((m) => ({ name: m[2], scenarioS: Number(m[3]), wallS: Number(m[4]), passed: m[1] === "PASS" }));
    if (scenarios.length !== REALTIME_SUBSET.length) throw new Error(`bench: hil run --rig printed ${scenarios.length} of ${REALTIME_SUBSET.length} scenarios:\n${out}`);
    return { scenarios, settleS, totalWallS };
  } finally {
    sim.child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}

export function printHilRealtimeBench(r: HilRealtimeResult): void {
  console.log("\n## HIL real-time subset: the daemon against the simulator in its own process\n");
  console.log(`Each scenario's wall time includes the daemon's start, ${r.settleS} s of settling and its stop.\n`);
  console.log("| scenario | scenario s | wall s | overhead s | result |");
  console.log("|---|---|---|---|---|");
  for (const s of r.scenarios) console.log(`| ${s.name} | ${fmt(s.scenarioS, 1)} | ${fmt(s.wallS, 1)} | ${fmt(s.wallS - s.scenarioS, 1)} | ${s.passed ? "pass" : "FAIL"} |`);
  const scen = r.scenarios.reduce((n, s) => n + s.scenarioS, 0);
  console.log(`| **the subset** | ${fmt(scen, 1)} | ${fmt(r.totalWallS, 1)} | ${fmt(r.totalWallS - scen, 1)} | ${r.scenarios.every((s) => s.passed) ? "pass" : "FAIL"} |`);
}
