// Hot-path throughput: ns per loop-step, WASM beside the TypeScript reference in the same run,
// and the fixed cost of one step() call on an empty bank.
import * as L from "../hotpath-as/assembly/layout.js";
import { loadBank, writeSample, type BankSpec } from "../hotpath-as/bank-config.js";
import { ReferenceHotPath } from "../hotpath-as/reference.js";
import type { HotPath } from "../hotpath-as/views.js";
import { loadWasmHotPath } from "../hotpath-as/wasm-bank.js";
import { fmt, median } from "./stats.js";

export interface HotpathRow {
  profile: string;
  loops: number;
  /** the release build (WebAssembly SIMD) */
  wasmNs: number;
  /** the scalar build, for CPUs without SIMD */
  scalarNs: number;
  referenceNs: number;
  speedup: number;
}

export interface HotpathResult {
  rows: HotpathRow[];
  emptyTickNs: { wasm: number; reference: number };
  /**
   * The rack bank's 1000 loops' 2000 points stepped with no loops and no new samples, per loop:
   * the point pass's share of a loop-step (the rest is the loop pass). With no new samples the
   * step looks only at the point marks, plus a full scan every FULL_SCAN_TICKS ticks.
   */
  pointPassNs: { wasm: number; reference: number };
}

const PROFILES = {
  // what podwarden runs per rack: PI on return temperature, feed-forward from rack power, slew limit
  "rack PI+FF": { loop: { kff: 0.6, outRate: 50 }, oddMode: "Automatic", fresh: false },
  // every feature on at once: derivative with filter, setpoint ramp, deadband
  "all features": { loop: { kd: 0.1, tf: 0.05, kff: 0.6, outRate: 50, spRamp: 1, deadband: 0.05 }, oddMode: "Automatic", fresh: false },
  // every other loop in Manual: no pair is all-automatic, so every loop takes the scalar path
  // (the step runs pairs of steady automatic loops on SIMD lanes)
  "rack PI+FF, scalar path": { loop: { kff: 0.6, outRate: 50 }, oddMode: "Manual", fresh: false },
  // the worst case for the points: a new sample on every point before every tick, so none is
  // quiet and each is validated in full (a pod's samples arrive every 10-1000 ticks)
  "rack PI+FF, new samples every tick": { loop: { kff: 0.6, outRate: 50 }, oddMode: "Automatic", fresh: true },
} as const;
type Profile = keyof typeof PROFILES;

/** Every loop has its own PV point and feed-forward point, with every input check enabled (none tripping). */
function bankSpec(loops: number, profile: Profile): BankSpec {
  const points = [];
  const loopSpecs = [];
  const check = { rateMax: 1e6, staleMs: 1e12, stuckEps: 1e-9, stuckMs: 1e12, debounceFault: 3, debounceClear: 3 };
  for (let i = 0; i < loops; i++) {
    points.push({ min: -50, max: 150, ...check }, { min: 0, max: 200, ...check });
    loopSpecs.push({
      pvPoint: 2 * i,
      ffPoint: 2 * i + 1,
      action: "direct" as const,
      kp: 3,
      ki: 0.5,
      outMin: 0,
      outMax: 100,
      safeOnLeak: "closed" as const,
      safeOnSensorFault: "open" as const,
      sp: 40,
      mode: i % 2 === 1 ? PROFILES[profile].oddMode : "Automatic",
      ...PROFILES[profile].loop,
    });
  }
  return { points, loops: loopSpecs, racks: [] };
}

/** Loads the profile's bank (or only its points) and gives every point a first sample. */
function prepare(hp: HotPath, loops: number, profile: Profile, pointsOnly = false): void {
  const spec = bankSpec(loops, profile);
  loadBank(hp, pointsOnly ? { ...spec, loops: [] } : spec);
  for (let i = 0; i < loops; i++) {
    writeSample(hp.views, 2 * i, 38 + (i % 7), 0);
    writeSample(hp.views, 2 * i + 1, 20 + (i % 13), 0);
  }
}

/**
 * Median ns per step() over `rounds` rounds of `ticks` ticks each. With `freshPoints`, points
 * 0..freshPoints-1 get a new sample (value and source time) before every tick; those writes are
 * then timed alone in the same round, and their time is taken off.
 */
function timeSteps(hp: HotPath, ticks: number, rounds: number, freshPoints = 0): number {
  const step = hp.step.bind(hp);
  const views = hp.views;
  let now = 1;
  const run = (withStep: boolean): number => {
    const t0 = process.hrtime.bigint();
    for (let k = 0; k < ticks; k++) {
      now += 1;
      // inside every point's range and rate limit; writeSample also marks the point for the step
      for (let p = 0; p < freshPoints; p++) writeSample(views, p, 40 + (k & 1) * 0.01, now);
      if (withStep) step(now, 0.001);
    }
    return Number(process.hrtime.bigint() - t0) / ticks;
  };
  const samples: number[] = [];
  for (let r = 0; r < rounds; r++) samples.push(run(true) - (freshPoints > 0 ? run(false) : 0));
  return median(samples);
}

export function runHotpathBench(quick = false): HotpathResult {
  const rows: HotpathRow[] = [];
  for (const profile of Object.keys(PROFILES) as Profile[]) for (const loops of [1, 10, 100, 1000]) {
    const wasm = loadWasmHotPath("release");
    const scalar = loadWasmHotPath("scalar");
    const ref = new ReferenceHotPath();
    prepare(wasm, loops, profile);
    prepare(scalar, loops, profile);
    prepare(ref, loops, profile);
    const ticks = Math.max(200, Math.round((quick ? 2e5 : 2e6) / loops));
    const fresh = PROFILES[profile].fresh ? 2 * loops : 0;
    // warm-up: let both reach their top JIT tier before measuring
    timeSteps(wasm, ticks, 3, fresh);
    timeSteps(scalar, ticks, 3, fresh);
    timeSteps(ref, ticks, 3, fresh);
    const wasmNs = timeSteps(wasm, ticks, quick ? 5 : 15, fresh) / loops;
    const scalarNs = timeSteps(scalar, ticks, quick ? 5 : 15, fresh) / loops;
    const referenceNs = timeSteps(ref, ticks, quick ? 5 : 15, fresh) / loops;
    if ((wasm.views.loopI.status[0] & L.LS_AUTOMATIC) === 0) throw new Error("bench bank is not running in automatic");
    rows.push({ profile, loops, wasmNs, scalarNs, referenceNs, speedup: referenceNs / wasmNs });
  }
  const pointsOnly = (hp: HotPath): number => {
    prepare(hp, 1000, "rack PI+FF", true);
    const ticks = quick ? 200 : 2000;
    timeSteps(hp, ticks, 3);
    return timeSteps(hp, ticks, quick ? 5 : 15) / 1000;
  };
  const pointPassNs = { wasm: pointsOnly(loadWasmHotPath("release")), reference: pointsOnly(new ReferenceHotPath()) };
  const emptyWasm = loadWasmHotPath("release");
  const emptyRef = new ReferenceHotPath();
  emptyWasm.configure(0, 0, 0);
  emptyRef.configure(0, 0, 0);
  timeSteps(emptyWasm, 1e5, 3);
  timeSteps(emptyRef, 1e5, 3);
  return {
    rows,
    emptyTickNs: { wasm: timeSteps(emptyWasm, 1e6, 9), reference: timeSteps(emptyRef, 1e6, 9) },
    pointPassNs,
  };
}

export function printHotpath(r: HotpathResult): void {
  console.log("\n## hot path: ns per loop-step (each loop validates its own PV and feed-forward points)");
  console.log("| profile | loops | WASM ns/loop-step | WASM scalar build ns/loop-step | reference ns/loop-step | WASM speed-up |");
  console.log("|---|---:|---:|---:|---:|---:|");
  for (const row of r.rows) {
    console.log(`| ${row.profile} | ${row.loops} | ${fmt(row.wasmNs)} | ${fmt(row.scalarNs)} | ${fmt(row.referenceNs)} | ${fmt(row.speedup)}x |`);
  }
  console.log(`\nper-tick call overhead (empty bank): WASM ${fmt(r.emptyTickNs.wasm, 1)} ns, reference ${fmt(r.emptyTickNs.reference, 1)} ns`);
  console.log(
    `point pass alone (the rack bank's 2000 points at 1000 loops, no loops stepped, no new samples), per loop: WASM ${fmt(r.pointPassNs.wasm)} ns, reference ${fmt(r.pointPassNs.reference)} ns (the rest of a loop-step is the loop pass)`,
  );
}
