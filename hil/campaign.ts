// A campaign: each scenario run again and again, and each expectation's figures summarised over
// the runs: how many passed, and the measured figure's p50, p99 and max (a `within`'s time to
// safe, in ms). The same scenario files serve the library (`npm test`), the bench
// (`npm run bench -- --only hil`) and a rig (`podwarden hil run --repeat N --rig …`).
//
// In virtual time a run is deterministic, so each run of a campaign differs on purpose: the
// plant's seed, and the phase at which the pod's polls and heartbeats meet the steps
// (`ioPhaseMs`, spread evenly over PHASE_SPAN_MS), as a fault lands anywhere in a poll period on
// a rig. The same campaign gives the same summary. In real time a rig varies by itself.
import { quantile } from "../lib/quantile.js";
import type { ExpectationKind } from "./expectations.js";
import type { ScenarioRun, VirtualRunOptions } from "./virtual-runner.js";

/** Phases spread over one period of the slowest poll the hot path reads (the demo's control group, 100 ms). */
export const PHASE_SPAN_MS = 100;
/** At most this many runs of a scenario. */
export const MAX_REPEAT = 1000;

/** Run k of n in virtual time: the scenario's seed plus k, and an I/O phase k/n of the span. */
export function campaignRun(k: number, n: number, seed: number | undefined): Required<VirtualRunOptions> {
  return { seed: (seed ?? 0) + k, ioPhaseMs: Math.floor((k * PHASE_SPAN_MS) / n) };
}

export interface CampaignLine {
  scenario: string;
  expectation: string;
  kind: ExpectationKind;
  runs: number;
  passed: number;
  /** runs in which it was not judged (real time cannot see a write) */
  skipped: number;
  /** over the runs that measured a figure; NaN with none */
  p50: number;
  p99: number;
  max: number;
  /** a `within`'s limit, ms (the figure's baseline) */
  limitMs?: number;
}

/** One line per expectation of each scenario, over its runs (runs of one scenario share its name). */
export function summariseCampaign(runs: readonly ScenarioRun[]): CampaignLine[] {
  const by = new Map<string, ScenarioRun[]>();
  for (const r of runs) by.set(r.scenario.name, [...(by.get(r.scenario.name) ?? []), r]);
  const out: CampaignLine[] = [];
  for (const [scenario, rs] of by) {
    rs[0].verdicts.forEach((v0, i) => {
      const vs = rs.map((r) => r.verdicts[i]);
      const figures = vs.filter((v) => v.skipped === undefined && v.measured !== null).map((v) => v.measured as number);
      out.push({
        scenario,
        expectation: v0.name,
        kind: v0.kind,
        runs: vs.length,
        passed: vs.filter((v) => v.skipped === undefined && v.passed).length,
        skipped: vs.filter((v) => v.skipped !== undefined).length,
        p50: quantile(figures, 0.5),
        p99: quantile(figures, 0.99),
        max: figures.length === 0 ? NaN : Math.max(...figures),
        ...(v0.kind === "within" ? { limitMs: rs[0].scenario.expect[i]?.withinMs } : {}),
      });
    });
  }
  return out;
}

const fig = (x: number, kind: ExpectationKind): string => (!Number.isFinite(x) ? "—" : kind === "count" ? String(x) : `${x.toFixed(x < 10 ? 1 : 0)}${kind === "within" || kind === "eventually" ? " ms" : ""}`);

/** The summary as a Markdown table: the `within` expectations (time to safe) only, or every one. */
export function campaignTable(lines: readonly CampaignLine[], all = false): string {
  const rows = lines.filter((l) => all || l.kind === "within");
  const head = ["| scenario | expectation | passed | p50 | p99 | max | limit |", "|---|---|---:|---:|---:|---:|---:|"];
  const passed = (l: CampaignLine): string => (l.skipped === l.runs ? `skipped in all ${l.runs} (not judged in this mode)` : `${l.passed}/${l.runs - l.skipped}${l.skipped > 0 ? ` (${l.skipped} skipped)` : ""}`);
  return [
    ...head,
    ...rows.map((l) => `| ${l.scenario} | ${l.expectation} | ${passed(l)} | ${fig(l.p50, l.kind)} | ${fig(l.p99, l.kind)} | ${fig(l.max, l.kind)} | ${l.limitMs === undefined ? "—" : `${l.limitMs} ms`} |`),
  ].join("\n");
}
