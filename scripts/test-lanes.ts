// `npm test`'s runner: the vitest projects of vitest.config.ts in turn. "compute" first, two
// files at a time; then "plant" and "plant-io" side by side, each one file at a time; last
// "solo", the files that judge the machine's own timing, with nothing beside them. Vitest
// gives every project of one group the same worker count, so two serial lanes at once take two
// vitest processes. The files of "plant-io" mostly wait on brokers and daemons: beside "plant"
// they took `npm test` from 15m45s to 12m53s on the 2-core machine (the "plant" files ran
// 10-30 % slower beside them, the "plant-io" ones 297 s in all against 218 s one after another).
// Arguments (file filters, -t) go to every lane; the side lane's output is held and printed once
// it ends, so each lane's log reads whole. The exit code is the first lane's that failed.
import { spawn } from "node:child_process";

const extra = process.argv.slice(2);

function vitest(project: string, hold: boolean): Promise<number> {
  const child = spawn("npx", ["vitest", "run", "--project", project, "--passWithNoTests", ...extra], { stdio: ["ignore", hold ? "pipe" : "inherit", hold ? "pipe" : "inherit"] });
  const held: Buffer[] = [];
  child.stdout?.on("data", (d: Buffer) => held.push(d));
  child.stderr?.on("data", (d: Buffer) => held.push(d));
  return new Promise((resolve) =>
    child.once("close", (code, signal) => {
      if (hold) process.stdout.write(Buffer.concat([Buffer.from(`\n── vitest --project ${project} ──\n`), ...held]));
      resolve(code ?? (signal === null ? 1 : 128));
    }),
  );
}

const compute = await vitest("compute", false);
const [plant, io] = await Promise.all([vitest("plant", false), vitest("plant-io", true)]);
const solo = await vitest("solo", false);
process.exitCode = [compute, plant, io, solo].find((c) => c !== 0) ?? 0;
