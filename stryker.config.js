// `npm run mutation`: mutation testing of the safety core with Stryker's vitest runner
// (docs/reliability.md, "Mutation testing"): the hot path's reference model, the pod wiring,
// the fail-safe table and the supervisor's rules. Not part of `npm test`: the whole scope is
// 2,190 mutants, about five hours on two cores (its dry run alone 3m11s). The run fails below a
// mutation score of 85 %.
//
// MUTATION_GROUP=hotpath|pod|rules takes one group, with its own incremental file and report, so
// the scope can be taken a group at a time and each group's results kept for its next run (one
// incremental file holds only the mutants of the run that wrote it).

import process from "node:process";

/** @type {Record<string, string[]>} */
const GROUPS = {
  hotpath: ["hotpath-as/reference.ts", "hotpath-as/reference-points.ts", "hotpath-as/reference-math.ts", "hotpath-as/reference-tune.ts"],
  pod: ["pod/wiring.ts", "pod/fail-safe.ts"],
  rules: [
    "agent/supervisor/heat-balance.ts",
    "agent/supervisor/power-budget.ts",
    "agent/supervisor/coolant-limit.ts",
    "agent/supervisor/no-coolant.ts",
    "agent/supervisor/power-pass.ts",
    "agent/supervisor/pump-duty.ts",
  ],
};
const group = process.env.MUTATION_GROUP ?? "all";
if (group !== "all" && !(group in GROUPS)) throw new Error(`MUTATION_GROUP=${group}: one of ${Object.keys(GROUPS).join(", ")} (or unset, for all)`);
const mutate = group === "all" ? Object.values(GROUPS).flat() : GROUPS[group];

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutation.config.ts" },
  mutate,
  coverageAnalysis: "perTest",
  ignoreStatic: true,
  concurrency: 2,
  // a mutant that loops forever is caught by the time-out, added to the covering tests' own time
  // in the dry run (the slowest covering file, test/supply-control.test.ts, takes 10 s)
  timeoutMS: 5_000,
  // results kept between runs: a run tests again only the mutants whose code or covering tests changed
  incremental: true,
  incrementalFile: `reports/mutation/${group}-incremental.json`,
  tempDirName: ".stryker-tmp",
  reporters: ["clear-text", "progress", "json", "html"],
  jsonReporter: { fileName: `reports/mutation/${group}.json` },
  htmlReporter: { fileName: `reports/mutation/${group}.html` },
  thresholds: { high: 90, low: 85, break: 85 },
};
