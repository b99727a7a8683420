// The HIL standard library (configs/hil/) in virtual time: each scenario's wall time and its
// speed against real time, and the whole library's, over a few rounds (docs/hil.md).
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { demoAgentConfig } from "../cli/demo-config.js";
import { loadHilScenario } from "../hil/scenario.js";
import { runVirtual } from "../hil/virtual-runner.js";
import { loadSimConfig } from "../sim/config.js";
import { fmt } from "./stats.js";

export interface HilBenchResult {
  scenarios: { name: string; virtualS: number; wallMs: number[] }[];
  totalWallMs: number[];
  totalVirtualS: number;
}

export function runHilBench(quick: boolean): HilBenchResult {
  const sim = loadSimConfig("configs/sim-pod.yaml");
  const pod = demoAgentConfig();
  const files = readdirSync("configs/hil")
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .map((f) => loadHilScenario(join("configs/hil", f)));
  const scenarios = files.map((s) => ({ name: s.name, virtualS: s.durationMs / 1000, wallMs: [] as number[] }));
  const totalWallMs: number[] = [];
  for (let round = 0; round < (quick ? 1 : 3); round++) {
    let total = 0;
    files.forEach((s, i) => {
      const r = runVirtual(s, sim, pod);
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
