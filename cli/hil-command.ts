// `podwarden hil run <scenario.yaml…> [-c <config.yaml>] [--sim <sim.yaml>] [--junit <file>]
// [--html <file>]`: HIL scenarios with their expectations, run in virtual time against the
// simulator's plant through the pod's real wiring and hot path (docs/hil.md). Prints a line per
// expectation, writes the JUnit XML and the HTML report, and exits non-zero when anything fails.
import { writeFileSync } from "node:fs";
import { loadAgentConfig } from "../agent/config/load.js";
import { loadHilScenario, type HilScenario } from "../hil/scenario.js";
import { htmlReport, junitXml } from "../hil/report.js";
import { checkScenario, runVirtual, type ScenarioRun } from "../hil/virtual-runner.js";
import { loadSimConfig } from "../sim/config.js";
import { demoAgentConfig } from "./demo-config.js";

export interface HilArgs {
  scenarios: string[];
  /** the daemon's config (default: the demo pod's) */
  config: string | undefined;
  /** the simulator's config (default: configs/sim-pod.yaml) */
  sim: string | undefined;
  junit: string | undefined;
  html: string | undefined;
  log: (line: string) => void;
}

/** Runs every scenario; 0 when every expectation was met, 1 otherwise. Throws on a bad file. */
export function hilRun(a: HilArgs): number {
  if (a.scenarios.length === 0) throw new Error("hil run needs at least one scenario file");
  const pod = a.config === undefined ? demoAgentConfig() : loadAgentConfig(a.config).config;
  const sim = loadSimConfig(a.sim ?? "configs/sim-pod.yaml");
  // every file is read and checked before the first runs: a typo fails at once, not after an hour
  const scenarios: HilScenario[] = a.scenarios.map((f) => loadHilScenario(f));
  for (const s of scenarios) checkScenario(s, pod);
  const runs: ScenarioRun[] = [];
  for (const s of scenarios) {
    const r = runVirtual(s, sim, pod);
    runs.push(r);
    a.log(`${r.passed ? "PASS" : "FAIL"} ${s.name} (${(r.durationMs / 1000).toFixed(1)} s of virtual time in ${(r.wallMs / 1000).toFixed(2)} s, ${(r.durationMs / r.wallMs).toFixed(0)}x real time)`);
    for (const v of r.verdicts) a.log(`  ${v.passed ? "ok  " : "FAIL"} ${v.name}: ${v.figure}`);
  }
  if (a.junit !== undefined) writeFileSync(a.junit, junitXml(runs));
  if (a.html !== undefined) writeFileSync(a.html, htmlReport(runs));
  const failed = runs.filter((r) => !r.passed).length;
  a.log(failed === 0 ? `all ${runs.length} scenarios passed` : `${failed} of ${runs.length} scenarios failed`);
  return failed === 0 ? 0 : 1;
}
