// `npm test`'s runner: the vitest projects of vitest.config.ts in turn. "compute" first, two
// files at a time; then "plant" and "plant-io" side by side, each one file at a time; last
// "solo", the files that judge the machine's own timing, with nothing beside them. The real-time
// HIL library ("hil-library", `npm run hil-library`) is not a lane of `npm test`: beside "plant"
// and "plant-io" it failed 9 of its 28 scenarios on the two cores' contention, and alone it adds
// 11 minutes to a run near its 25 (docs/hil.md, "The whole real-time library"). Vitest
// gives every project of one group the same worker count, so two serial lanes at once take two
// vitest processes. The files of "plant-io" mostly wait on brokers and daemons: beside "plant"
// they took `npm test` from 15m45s to 12m53s on the 2-core machine (the "plant" files ran
// 10-30 % slower beside them, the "plant-io" ones 297 s in all against 218 s one after another).
// Arguments (file filters, -t) go to every lane; the side lane's output is held and printed once
// it ends, so each lane's log reads whole. The exit code is the first lane's that failed.
//
// The run ends on a summary: each lane's exit code and, for a lane that failed, the lines vitest
// marked as failures. CI shows only the tail of a long log, and a failure in the first lane was
// otherwise 1,500 lines above it, out of sight.
import { spawn } from "node:child_process";

const extra = process.argv.slice(2);
// vitest's failure lines: "FAIL <file> > <test>", a "×" before a failed test, and the error's
// own first line. Colour codes are taken out before matching.
const FAILURE = /^\s*(FAIL\b|×|❯ .*\(\d+ tests? \|.*failed|(Assertion)?Error\b|Test Files .*failed|Tests .*failed)/;
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;

interface Lane {
  project: string;
  code: number;
  failures: string[];
}

function vitest(project: string, hold: boolean): Promise<Lane> {
  const child = spawn("npx", ["vitest", "run", "--project", project, "--passWithNoTests", ...extra], { stdio: ["ignore", "pipe", "pipe"] });
  const held: Buffer[] = [];
  const failures: string[] = [];
  let partial = "";
  const take = (d: Buffer, out: NodeJS.WriteStream): void => {
    if (hold) held.push(d);
    else out.write(d);
    const lines = (partial + d.toString("utf8")).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      const plain = line.replace(ANSI, "");
      if (FAILURE.test(plain) && failures.length < 60) failures.push(plain.trim());
    }
  };
  child.stdout.on("data", (d: Buffer) => take(d, process.stdout));
  child.stderr.on("data", (d: Buffer) => take(d, process.stderr));
  return new Promise((resolve) =>
    child.once("close", (code, signal) => {
      if (hold) process.stdout.write(Buffer.concat([Buffer.from(`\n── vitest --project ${project} ──\n`), ...held]));
      resolve({ project, code: code ?? (signal === null ? 1 : 128), failures });
    }),
  );
}

const compute = await vitest("compute", false);
const [plant, io] = await Promise.all([vitest("plant", false), vitest("plant-io", true)]);
const solo = await vitest("solo", false);
const lanes = [compute, plant, io, solo];
process.stdout.write("\n── npm test: lanes ──\n");
for (const lane of lanes) {
  process.stdout.write(`${lane.project}: exit ${lane.code}\n`);
  if (lane.code !== 0) for (const line of lane.failures) process.stdout.write(`  ${line}\n`);
}
process.exitCode = lanes.find((l) => l.code !== 0)?.code ?? 0;
