import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests start real brokers, servers and child processes; keep them from starving each other on 2 cores.
    fileParallelism: false,
    pool: "forks",
    // memory-bound checks (fuzzers, reconnect loops) force a collection before they measure
    execArgv: ["--expose-gc"],
  },
});
