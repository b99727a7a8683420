// An A/B of two builds' hot paths in one process, alternating round by round, so the machine's
// drift (a VM's neighbours) falls on both alike: the bench's rack bank (1000 loops, every input
// check on) on the pair path (all automatic) and the scalar path (every other loop in Manual).
//
//   node dist/bench/hotpath-ab.js <dist of build A> <dist of build B>
//
// Each dist is a whole `npm run build` output (its layout and its WASM together: two builds'
// banks need not share a memory layout), for example a `git worktree` of the older commit.
import { resolve } from "node:path";
import type { BankSpec } from "../hotpath-as/bank-config.js";
import type { HotPath } from "../hotpath-as/views.js";
import { median } from "./stats.js";

interface Build {
  loadBank(hp: HotPath, spec: BankSpec): void;
  writeSample(v: HotPath["views"], point: number, value: number, ts: number): void;
  loadWasmHotPath(target: "release"): HotPath;
}

async function load(dist: string): Promise<Build> {
  const bank = (await import(resolve(dist, "hotpath-as/bank-config.js"))) as Pick<Build, "loadBank" | "writeSample">;
  const wasm = (await import(resolve(dist, "hotpath-as/wasm-bank.js"))) as Pick<Build, "loadWasmHotPath">;
  return { loadBank: bank.loadBank, writeSample: bank.writeSample, loadWasmHotPath: wasm.loadWasmHotPath };
}

const LOOPS = 1000;

function bank(b: Build, oddMode: "Automatic" | "Manual"): HotPath {
  const hp = b.loadWasmHotPath("release");
  const check = { rateMax: 1e6, staleMs: 1e12, stuckEps: 1e-9, stuckMs: 1e12, debounceFault: 3, debounceClear: 3 };
  const points = [];
  const loops = [];
  for (let i = 0; i < LOOPS; i++) {
    points.push({ min: -50, max: 150, ...check }, { min: 0, max: 200, ...check });
    loops.push({ pvPoint: 2 * i, ffPoint: 2 * i + 1, action: "direct" as const, kp: 3, ki: 0.5, kff: 0.6, outRate: 50, outMin: 0, outMax: 100, safeOnLeak: "closed" as const, safeOnSensorFault: "open" as const, sp: 40, mode: i % 2 === 1 ? oddMode : ("Automatic" as const) });
  }
  b.loadBank(hp, { points, loops, racks: [] });
  for (let i = 0; i < LOOPS; i++) {
    b.writeSample(hp.views, 2 * i, 38 + (i % 7), 0);
    b.writeSample(hp.views, 2 * i + 1, 20 + (i % 13), 0);
  }
  return hp;
}

let now = 1;
/** ns per loop-step over 2000 ticks */
function time(hp: HotPath): number {
  const t0 = process.hrtime.bigint();
  for (let k = 0; k < 2000; k++) hp.step(++now, 0.001);
  return Number(process.hrtime.bigint() - t0) / 2000 / LOOPS;
}

const [distA, distB] = process.argv.slice(2);
if (distA === undefined || distB === undefined) {
  console.error("usage: node dist/bench/hotpath-ab.js <dist A> <dist B>");
  process.exit(2);
}
const builds = { A: await load(distA), B: await load(distB) };
const banks = { A: { pair: bank(builds.A, "Automatic"), scalar: bank(builds.A, "Manual") }, B: { pair: bank(builds.B, "Automatic"), scalar: bank(builds.B, "Manual") } };
const got = { A: { pair: [] as number[], scalar: [] as number[] }, B: { pair: [] as number[], scalar: [] as number[] } };
for (let w = 0; w < 5; w++) for (const k of ["A", "B"] as const) for (const p of ["pair", "scalar"] as const) time(banks[k][p]);
for (let r = 0; r < 41; r++) {
  for (const k of r % 2 === 0 ? (["A", "B"] as const) : (["B", "A"] as const)) for (const p of ["pair", "scalar"] as const) got[k][p].push(time(banks[k][p]));
}
console.log(`| build | pair path ns/loop-step, median (min) | scalar path ns/loop-step, median (min) |`);
console.log(`|---|---:|---:|`);
for (const k of ["A", "B"] as const) {
  const f = (a: number[]): string => `${median(a).toFixed(2)} (${Math.min(...a).toFixed(2)})`;
  console.log(`| ${k} ${k === "A" ? distA : distB} | ${f(got[k].pair)} | ${f(got[k].scalar)} |`);
}
