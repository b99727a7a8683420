// `npm run bench`: prints every benchmark figure as Markdown, ready for BENCHMARKS.md.
//   --only <name>   run one group (hotpath, control, sim, drivers, agent, uplink, hmi, sparkplug, redfish, recorder, hil, hil-campaign, hil-realtime, faults, fleet, attacks, modbus), or
//                   leak: the agent group's leak-to-isolation alone, unloaded and under each load
//                   leak-rtu: leak-to-isolation on an RS-485 line at 19,200 baud, unloaded and under each load
//   --quick         fewer rounds, for a smoke run
//   --leak-poll-ms <ms>  the leak sensors' poll period in the agent group's leak-to-isolation
//                   trials (default 1): the latency and the daemon's CPU at that rate
import { parseArgs } from "node:util";
import { spawnSync } from "node:child_process";
import { cpus, totalmem } from "node:os";
import { DAEMON_NODE_FLAGS } from "../tooling/sim-process.js";
import { LEAK_POLL_MS, printAgent, runAgentBench } from "./agent.js";
import { printControl, runControlBench } from "./control.js";
import { printDrivers, runDriverBench } from "./drivers.js";
import { printHotpath, runHotpathBench } from "./hotpath.js";
import { printSim, runSimBench } from "./sim.js";
import { printUplink, runUplinkBench } from "./uplink.js";
import { printFaultBench, runFaultBench } from "./faults.js";
import { printHmi, runHmiBench } from "./hmi.js";
import { printSparkplug, runSparkplugBench } from "./sparkplug.js";
import { printRedfish, runRedfishBench } from "./redfish.js";
import { printRecorder, runRecorderBench } from "./recorder.js";
import { printFleet, runFleetBench } from "./fleet.js";
import { printAttacks, runAttackBench } from "./attacks.js";
import { printModbusCost, runModbusCostBench } from "./modbus-cost.js";
import { printRtuLeak, runRtuLeakBench } from "./leak-rtu.js";
import { printHilBench, printHilCampaign, printHilRealtimeBench, runHilBench, runHilCampaign, runHilRealtimeBench } from "./hil.js";

const { values } = parseArgs({
  options: { only: { type: "string" }, quick: { type: "boolean", default: false }, "leak-poll-ms": { type: "string" } },
});
const leakPollMs = values["leak-poll-ms"] === undefined ? LEAK_POLL_MS : Number(values["leak-poll-ms"]);
if (!(Number.isInteger(leakPollMs) && leakPollMs >= 1)) {
  console.error(`--leak-poll-ms: a whole number of milliseconds >= 1, not ${JSON.stringify(values["leak-poll-ms"])}`);
  process.exit(2);
}
const wants = (name: string): boolean => values.only === undefined || values.only === name;

// set in the child that runs one group with the daemon's flags (below): the parent printed the header
const NESTED_ENV = "PODWARDEN_BENCH_NESTED";
if (process.env[NESTED_ENV] === undefined) {
  console.log(`# podwarden benchmarks, ${new Date().toISOString()}`);
  console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? "unknown CPU"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`);
}

/**
 * Runs one group in a child node with the daemon's production flags (the CLI's shebang), for a
 * group whose agent runs inside the bench process: its figures must be the agent's as
 * `podwarden run` runs it, not under node's defaults.
 */
function runWithDaemonFlags(group: string): void {
  const args = [...DAEMON_NODE_FLAGS, process.argv[1], "--only", group, ...(values.quick ? ["--quick"] : [])];
  const r = spawnSync(process.execPath, args, { stdio: "inherit", env: { ...process.env, [NESTED_ENV]: "1" } });
  if (r.status !== 0) throw new Error(`bench group ${group} with the daemon's flags failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`})`);
}
const hasDaemonFlags = DAEMON_NODE_FLAGS.every((f) => process.execArgv.includes(f));

if (wants("hotpath")) printHotpath(runHotpathBench(values.quick));
if (wants("control")) printControl(runControlBench());
if (wants("sim")) printSim(await runSimBench(values.quick));
if (wants("drivers")) printDrivers(await runDriverBench(values.quick));
if (wants("agent")) printAgent(await runAgentBench(values.quick, leakPollMs));
if (wants("modbus")) printModbusCost(await runModbusCostBench(values.quick));
// the leak-to-isolation measurement alone, unloaded and under each input load
if (values.only === "leak") printAgent(await runAgentBench(values.quick, leakPollMs, "leak"));
// the same on an RS-485 line (the leak thread owns the bus)
if (wants("leak-rtu")) printRtuLeak(await runRtuLeakBench(values.quick));
// The uplink group's agent runs in this process. Under node's defaults it had four V8 helper
// threads where the daemon has one, and they woke at every collection and preempted the broker
// on the other core (`perf sched`, BENCHMARKS.md).
if (wants("uplink")) {
  if (hasDaemonFlags) printUplink(await runUplinkBench(values.quick));
  else runWithDaemonFlags("uplink");
}
if (wants("hmi")) printHmi(await runHmiBench(values.quick));
// like the uplink group: the pod runs in this process, so with the daemon's flags
if (wants("sparkplug")) {
  if (hasDaemonFlags) printSparkplug(await runSparkplugBench(values.quick));
  else runWithDaemonFlags("sparkplug");
}
// the budget figure's agent runs in this process: with the daemon's flags
if (wants("redfish")) {
  if (hasDaemonFlags) printRedfish(await runRedfishBench(values.quick));
  else runWithDaemonFlags("redfish");
}
// the control worker and the replay run in this process: with the daemon's flags
if (wants("recorder")) {
  if (hasDaemonFlags) printRecorder(await runRecorderBench(values.quick));
  else runWithDaemonFlags("recorder");
}
if (wants("hil")) printHilBench(runHilBench(values.quick));
if (wants("hil-campaign")) printHilCampaign(runHilCampaign(values.quick));
if (wants("hil-realtime")) printHilRealtimeBench(await runHilRealtimeBench());
if (wants("faults")) printFaultBench(await runFaultBench(values.quick ? 10 : 100));
// the daemons run as `podwarden run` processes; this process is mission control
if (wants("fleet")) printFleet(await runFleetBench(values.quick));
// the daemon runs as a `podwarden run` process with its production flags; this process attacks it
if (wants("attacks")) printAttacks(await runAttackBench(values.quick));
