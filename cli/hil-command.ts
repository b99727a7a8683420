// `podwarden hil run <scenario.yaml…> [-c <config.yaml>] [--sim <sim.yaml>] [--junit <file>]
// [--html <file>]`: HIL scenarios with their expectations, run in virtual time against the
// simulator's plant through the pod's real wiring and hot path, or against a flight recording
// replayed into it (docs/hil.md). Prints a line per
// expectation, writes the JUnit XML and the HTML report, and exits non-zero when anything fails.
import { writeFileSync } from "node:fs";
import { loadAgentConfig, type AgentConfig } from "../agent/config/load.js";
import { replayRecording } from "../agent/recorder/flight-replay.js";
import { readRecording } from "../agent/recorder/recording-file.js";
import { runReplay } from "../hil/replay-runner.js";
import { podBankSpec } from "../pod/bank.js";
import { podLayout } from "../pod/layout.js";
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

/**
 * A replay scenario: its recording replayed into the virtual pod with this config's wiring and
 * tuning and this build (what is under test), the expectations judged on it.
 */
async function replayScenario(s: HilScenario, pod: AgentConfig, log: (line: string) => void): Promise<ScenarioRun> {
  const rec = await readRecording(s.replay as string);
  const spec = podBankSpec(pod.control, podLayout(pod), pod.racks);
  const r = runReplay(s, pod, {
    ticks: rec.header.count,
    run: (onTick) => replayRecording(rec, { spec, pod: { racks: pod.racks, cdu: pod.cdu, writeCaps: pod.supervisor.powerBudget.writeCaps }, onTick }),
  });
  log(`  ${s.replay as string}: replayed with this config and build; the hot path's outputs ${r.identical ? "identical to the recording's" : "differ from the recording's (a changed config or build)"}`);
  return r;
}

/** Runs every scenario; 0 when every expectation was met, 1 otherwise. Throws on a bad file. */
export async function hilRun(a: HilArgs): Promise<number> {
  if (a.scenarios.length === 0) throw new Error("hil run needs at least one scenario file");
  const pod = a.config === undefined ? demoAgentConfig() : loadAgentConfig(a.config).config;
  const sim = loadSimConfig(a.sim ?? "configs/sim-pod.yaml");
  // every file is read and checked before the first runs: a typo fails at once, not after an hour
  const scenarios: HilScenario[] = a.scenarios.map((f) => loadHilScenario(f));
  for (const s of scenarios) checkScenario(s, pod);
  const runs: ScenarioRun[] = [];
  for (const s of scenarios) {
    const r = s.replay === undefined ? runVirtual(s, sim, pod) : await replayScenario(s, pod, a.log);
    runs.push(r);
    a.log(`${r.passed ? "PASS" : "FAIL"} ${s.name} (${(r.durationMs / 1000).toFixed(1)} s of ${r.mode === "replay" ? "a recording replayed" : "virtual time"} in ${(r.wallMs / 1000).toFixed(2)} s, ${(r.durationMs / r.wallMs).toFixed(0)}x real time)`);
    for (const v of r.verdicts) a.log(`  ${v.passed ? "ok  " : "FAIL"} ${v.name}: ${v.figure}`);
  }
  if (a.junit !== undefined) writeFileSync(a.junit, junitXml(runs));
  if (a.html !== undefined) writeFileSync(a.html, htmlReport(runs));
  const failed = runs.filter((r) => !r.passed).length;
  a.log(failed === 0 ? `all ${runs.length} scenarios passed` : `${failed} of ${runs.length} scenarios failed`);
  return failed === 0 ? 0 : 1;
}
