import { defineConfig } from "vitest/config";

/**
 * `npm run mutation` (stryker.config.mjs): the tests that hold the safety core, for Stryker's
 * vitest runner. Each mutant of the hot path's reference model, the pod wiring, the fail-safe
 * table or a supervisor rule runs the tests that cover it (coverage per test); the WASM hot path
 * is the reference model's judge (test/hotpath-equivalence.test.ts compares them bit for bit).
 */
export default defineConfig({
  test: {
    include: [
      "hotpath-equivalence",
      "hotpath-control",
      "hotpath-interlocks",
      "hotpath-quality",
      "pod-stage",
      "supervisor-rules",
      "supervisor-alarms",
      "pump-duty",
      "agent-supervisor",
      "supply-control",
      "supervisor-coolant-power",
    ].map((f) => `test/${f}.test.ts`),
    testTimeout: 60_000,
    hookTimeout: 60_000,
    setupFiles: ["test/helpers/temp-dirs-setup.ts"],
  },
});
