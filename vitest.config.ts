import { defineConfig } from "vitest/config";

/**
 * Files that only compute: no broker, device, daemon, clock or browser of their own that another
 * file's load could make late. They run first, two at a time (the machine has two cores), and
 * the rest after them, one at a time. What a file does decides its group, not how long it takes:
 * a file that starts a real peer or waits on real time belongs to the serial group.
 */
const COMPUTE_ONLY = [
  "agent-config",
  "agent-supervisor",
  "architecture",
  "autotune",
  "backoff",
  "commands-auth",
  "control-behaviour",
  "control-quality",
  "docs",
  "drivers-codec",
  "force-target",
  "fuzz-commands",
  "fuzz-config",
  "hil",
  "hil-virtual-supervisor",
  "hotpath-control",
  "hotpath-equivalence",
  "hotpath-interlocks",
  "hotpath-quality",
  "isolation-stroke",
  "login-limiter",
  "node-version",
  "pod-stage",
  "pump-duty",
  "sim-physics",
  "sim-virtual",
  "sparkplug-model",
  "state-manifest",
  "supervisor-alarms",
  "supervisor-coolant-power",
  "supervisor-rules",
  "supply-control",
  "tick-window",
  "uplink-telemetry",
].map((f) => `test/${f}.test.ts`);

/**
 * Files whose peers are brokers, BMCs and daemons that mostly wait on the network, not on a
 * deadline of their own: a lane of their own, one file at a time, beside the rest of the plant
 * files (scripts/test-lanes.ts), with no real-time scenario, browser, fuzzer, tight control loop
 * or fault campaign among them.
 */
const PLANT_IO = [
  "agent-operator-state",
  // a daemon waiting out its health windows; the package's build, apt and lintian, then the same
  // (measured 2026-12-07: the plant lane 997 s against this one's 271 s, npm test 22m29s)
  "release-window",
  "package-deb",
  "demo-uplink",
  "drivers-mqtt-ingest",
  "fleet-bridge",
  "fleet-cluster",
  "fleet-emulator",
  "redfish-client",
  "redfish-racks",
  "redfish-service",
  "sparkplug",
  "uplink-mosquitto",
  "uplink-outage",
].map((f) => `test/${f}.test.ts`);

/**
 * Files that judge the machine's own timing or CPU, run alone after both plant lanes: the
 * real-time HIL runs starve the daemon of CPU in a cgroup and count how often the quota held it
 * back (beside the other lane the host held it back first: 1 throttled period, not > 5, in a CI
 * run), and push 100 MiB messages through the runner's broker inside a scenario's deadline.
 */
const SOLO = ["hil-realtime"].map((f) => `test/${f}.test.ts`);

/**
 * The real-time HIL library, every scenario of configs/hil/real-time/ (issue #54), in two shards
 * at once: `npm run hil-library`, on a machine with nothing else to do. Not a lane of `npm test`
 * (scripts/test-lanes.ts): beside "plant" and "plant-io" on two cores, 9 of its 28 scenarios
 * failed their real-time deadlines and samples (2026-12-07; docs/hil.md).
 */
const HIL_LIBRARY = ["hil-realtime-library"].map((f) => `test/${f}.test.ts`);

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // memory-bound checks (fuzzers, reconnect loops) force a collection before they measure
    execArgv: ["--expose-gc"],
    // removes the temporary directories a file made (tempDir) when the file ends
    setupFiles: ["test/helpers/temp-dirs-setup.ts"],
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        // isolate: false, one module graph per worker for all its files: 46 s for the group instead of 52
        test: { name: "compute", include: COMPUTE_ONLY, isolate: false, sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        // Tests that start real brokers, servers and child processes, one file at a time: two
        // of them at once starved each other on 2 cores
        test: { name: "plant", include: ["test/**/*.test.ts"], exclude: [...COMPUTE_ONLY, ...PLANT_IO, ...SOLO, ...HIL_LIBRARY], fileParallelism: false, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        // one file at a time too; `npm test` runs it beside "plant" in a vitest of its own
        // (vitest gives the projects of one group one worker count), plain `vitest run` after it
        test: { name: "plant-io", include: PLANT_IO, fileParallelism: false, sequence: { groupOrder: 2 } },
      },
      {
        extends: true,
        // one file whose shards run at once (it.concurrent); `npm run hil-library`, not `npm test`
        test: { name: "hil-library", include: HIL_LIBRARY, fileParallelism: false, sequence: { groupOrder: 3 } },
      },
      {
        extends: true,
        test: { name: "solo", include: SOLO, fileParallelism: false, sequence: { groupOrder: 4 } },
      },
    ],
  },
});
