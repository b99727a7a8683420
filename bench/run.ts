// `npm run bench`: prints every benchmark figure as Markdown, ready for BENCHMARKS.md.
//   --only <name>   run one group (hotpath, control, sim, drivers, agent, uplink, faults)
//   --quick         fewer rounds, for a smoke run
//   --leak-poll-ms <ms>  the leak sensors' poll period in the agent group's leak-to-isolation
//                   trials (default 1): the latency and the daemon's CPU at that rate
import { parseArgs } from "node:util";
import { cpus, totalmem } from "node:os";
import { LEAK_POLL_MS, printAgent, runAgentBench } from "./agent.js";
import { printControl, runControlBench } from "./control.js";
import { printDrivers, runDriverBench } from "./drivers.js";
import { printHotpath, runHotpathBench } from "./hotpath.js";
import { printSim, runSimBench } from "./sim.js";
import { printUplink, runUplinkBench } from "./uplink.js";
import { printFaultBench, runFaultBench } from "./faults.js";

const { values } = parseArgs({
  options: { only: { type: "string" }, quick: { type: "boolean", default: false }, "leak-poll-ms": { type: "string" } },
});
const leakPollMs = values["leak-poll-ms"] === undefined ? LEAK_POLL_MS : Number(values["leak-poll-ms"]);
if (!(Number.isInteger(leakPollMs) && leakPollMs >= 1)) {
  console.error(`--leak-poll-ms: a whole number of milliseconds >= 1, not ${JSON.stringify(values["leak-poll-ms"])}`);
  process.exit(2);
}
const wants = (name: string): boolean => values.only === undefined || values.only === name;

console.log(`# podwarden benchmarks, ${new Date().toISOString()}`);
console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? "unknown CPU"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`);

if (wants("hotpath")) printHotpath(runHotpathBench(values.quick));
if (wants("control")) printControl(runControlBench());
if (wants("sim")) printSim(await runSimBench(values.quick));
if (wants("drivers")) printDrivers(await runDriverBench(values.quick));
if (wants("agent")) printAgent(await runAgentBench(values.quick, leakPollMs));
if (wants("uplink")) printUplink(await runUplinkBench(values.quick));
if (wants("faults")) printFaultBench(await runFaultBench(values.quick ? 10 : 100));
