// The WASM hot path and the TypeScript reference model must agree bit for bit.
//
// Both banks get the same random config, then the same random stream of samples, faults,
// mode switches, setpoint and manual writes, leaks, resets and isolations, tick after tick,
// while a crude plant closes the loops so outputs saturate and recover. After every tick
// every field of every configured slot is compared as raw bits.
import { describe, expect, it } from "vitest";
import * as L from "../hotpath-as/assembly/layout.js";
import { loadBank, startTune, stopTune, writeSample, type BankSpec, type LoopSpec, type PointSpec, type RackSpec, type SafeAction } from "../hotpath-as/bank-config.js";
import { ReferenceHotPath } from "../hotpath-as/reference.js";
import type { BankViews, HotPath } from "../hotpath-as/views.js";
import { loadWasmHotPath } from "../hotpath-as/wasm-bank.js";
import { Prng } from "../sim/prng.js";
import { countWords, fullCount } from "./helpers/counts.js";

/** Randomised ticks per seed: 10,000 under `npm run soak -- --full-counts`, a sixth in `npm test` (helpers/counts.ts). */
const TICKS = fullCount(10_000);

const RACKS = 8;
const LOOPS = 96;

interface Layout {
  spec: BankSpec;
  leakPoints: number[];
  flowPoints: number[];
  limitPoints: number[];
}

function randomSafe(rng: Prng): SafeAction {
  return rng.pick<SafeAction>(["open", "closed", "hold", { fixed: rng.range(-10, 110) }]);
}

/**
 * "rough" throws every fault at the banks; "calm" is a pod running normally (no leaks, sound
 * samples, loops mostly left in automatic, gains that keep outputs mostly inside their
 * envelope), so most loop pairs stay on the SIMD path while modes, setpoints and slew still move.
 */
type Weather = "rough" | "calm" | "tuning";
// "tuning" is "calm" with nothing that isolates a rack (a leak or an isolation anywhere ends a
// relay autotune on the spot): its loops tune, their relays switch, and their tunings end on
// the step's own checks (timeout, deviation, envelope)

function randomLayout(rng: Prng, weather: Weather): Layout {
  const calm = weather !== "rough";
  const tuning = weather === "tuning";
  const points: PointSpec[] = [];
  const analog = (): number => {
    const min = rng.range(-50, 0);
    points.push({
      min,
      max: min + rng.range(calm ? 100 : 20, 200), // calm: wide enough for every sample perturb() writes
      rateMax: rng.chance(0.5) ? rng.range(calm ? 500 : 5, calm ? 5000 : 500) : 0,
      staleMs: rng.chance(0.7) ? rng.range(calm ? 50 : 5, 200) : 0,
      stuckEps: rng.range(0, 0.01),
      stuckMs: !calm && rng.chance(0.3) ? rng.range(20, 400) : 0,
      debounceFault: rng.int(1, 4),
      debounceClear: rng.int(1, 6),
    });
    return points.length - 1;
  };
  const leakPoints: number[] = [];
  const flowPoints: number[] = [];
  const racks: RackSpec[] = [];
  for (let r = 0; r < RACKS; r++) {
    flowPoints.push(analog());
    for (let k = 0; k < rng.int(1, 2); k++) {
      points.push({
        kind: "leak",
        rack: r,
        min: 0,
        max: 2,
        staleMs: !tuning && rng.chance(0.5) ? rng.range(5, 100) : 0,
        debounceFault: rng.int(1, 5),
        debounceClear: rng.int(1, 8),
      });
      leakPoints.push(points.length - 1);
    }
    racks.push({
      flowPoint: rng.chance(0.9) ? flowPoints[r] : undefined,
      isolatedFlowMaxLpm: rng.range(0.5, 20),
      isolationDeadlineMs: rng.range(5, 300),
      leakSensorFault: tuning ? "hold" : rng.pick(["hold", "isolate"] as const),
    });
  }
  const loops: LoopSpec[] = [];
  for (let i = 0; i < LOOPS; i++) {
    const outMin = rng.range(-20, 10);
    loops.push({
      pvPoint: !calm && rng.chance(0.02) ? 99999 : analog(),
      ffPoint: rng.chance(0.5) ? analog() : undefined,
      rack: rng.chance(0.6) ? rng.int(0, RACKS - 1) : undefined,
      action: rng.pick(["direct", "reverse"] as const),
      kp: rng.range(0, calm ? 1 : 5),
      ki: rng.range(0, calm ? 2 : 20),
      kd: rng.chance(calm ? 0.5 : 1) ? rng.range(0, 0.5) : 0,
      tf: rng.chance(0.2) ? 0 : rng.range(0.001, 0.1),
      pvFilterS: rng.chance(0.7) ? 0 : rng.range(0.001, 2),
      kff: rng.range(-2, 2),
      ffBias: rng.range(-5, 5),
      outMin,
      outMax: outMin + rng.range(10, 120),
      outRate: rng.chance(0.5) ? rng.range(calm ? 1 : 10, 5000) : 0,
      spRamp: rng.chance(0.4) ? rng.range(1, 500) : 0,
      deadband: rng.chance(0.3) ? rng.range(0, 2) : 0,
      safeOnLeak: randomSafe(rng),
      safeOnSensorFault: randomSafe(rng),
      sp: rng.range(-10, 60),
      mode: calm ? "Automatic" : rng.pick(["Automatic", "Automatic", "Automatic", "Manual", "Override", "Disabled"] as const),
      tune: rng.chance(0.8)
        ? { amplitude: rng.range(0, 30), hysteresisMin: rng.range(0, 0.05), deviationMax: rng.range(calm ? 5 : 0.1, 60), noiseS: rng.range(0, 0.05), timeoutS: rng.range(0.05, 3) }
        : undefined,
      // a minimum-flow floor on the loop's rack's flow point (a loop without a rack has none to read)
      minFlowLpm: rng.chance(0.5) ? rng.range(1, 60) : 0,
      minFlowGain: rng.range(0, 200),
    });
  }
  // stuck checks judged by the plant around a point (its loop's output), on some analog points
  for (const p of points) {
    if (p.kind === "leak" || !rng.chance(0.5)) continue;
    p.stuckLoop = rng.int(0, LOOPS - 1);
    p.stuckMove = rng.chance(0.8) ? rng.range(0.01, 20) : 0;
  }
  // the isolation valves' closed limit switches, on most racks (some with one only)
  const limitPoints: number[] = [];
  racks.forEach((r) => {
    for (const key of ["supplyClosedPoint", "returnClosedPoint"] as const) {
      if (!rng.chance(0.7)) continue;
      points.push({ min: 0, max: 1, staleMs: rng.chance(0.5) ? rng.range(20, 200) : 0, debounceFault: rng.int(1, 3), debounceClear: rng.int(1, 6) });
      r[key] = points.length - 1;
      limitPoints.push(points.length - 1);
    }
  });
  return { spec: { points, loops, racks }, leakPoints, flowPoints, limitPoints };
}

/** Applies the same random disturbance to every bank. */
function perturb(rng: Prng, banks: BankViews[], lay: Layout, now: number, weather: Weather): void {
  const { spec } = lay;
  const calm = weather !== "rough";
  // Every random draw happens outside `set`, so each bank receives exactly the same write.
  const set = (fn: (v: BankViews) => void): void => banks.forEach(fn);
  // fresh samples for most analog points, derived from a crude first-order plant on the outputs
  for (let i = 0; i < spec.loops.length; i++) {
    const pvIdx = spec.loops[i].pvPoint;
    if (pvIdx >= spec.points.length || !rng.chance(0.4)) continue;
    const p = spec.points[pvIdx];
    const out = banks[0].loopF.out[i];
    const prevPv = banks[0].pointF.value[pvIdx];
    const base = Number.isFinite(prevPv) ? prevPv : (p.min + p.max) / 2;
    const noise = calm ? 0.002 : 0.2;
    let value = base + 0.05 * ((Number.isFinite(out) ? out : 0) * 0.3 - base) + rng.range(-noise, noise);
    const ageMs = !calm && rng.chance(0.05) ? rng.range(0, 400) : rng.range(0, 3);
    const roll = calm ? 1 : rng.next();
    if (roll < 0.01) value = NaN;
    else if (roll < 0.015) value = rng.pick([Infinity, -Infinity]);
    else if (roll < 0.03) value = p.max + rng.range(0.1, 50);
    else if (roll < 0.04) value = base + rng.range(-100, 100);
    set((v) => writeSample(v, pvIdx, value, now - ageMs));
  }
  for (const loop of spec.loops) {
    if (loop.ffPoint !== undefined && rng.chance(0.3)) {
      const ffPoint = loop.ffPoint;
      const value = !calm && rng.chance(0.01) ? NaN : rng.range(0, 40);
      const ts = now - rng.range(0, 2);
      set((v) => writeSample(v, ffPoint, value, ts));
    }
  }
  for (const fp of lay.flowPoints) {
    if (!rng.chance(0.3)) continue;
    const value = rng.chance(0.3) ? rng.range(0, 2) : rng.range(10, 80);
    const ts = now - rng.range(0, 5);
    set((v) => writeSample(v, fp, value, ts));
  }
  for (const lp of lay.leakPoints) {
    if (!rng.chance(0.05)) continue;
    const value = calm ? 0 : rng.pick([0, 0, 0, 0, 1, 2, 0.5, NaN, 7]);
    set((v) => writeSample(v, lp, value, now));
  }
  for (const lp of lay.limitPoints) {
    if (!rng.chance(0.3)) continue;
    const value = rng.pick([1, 1, 1, 1, 1, 0, !calm ? NaN : 1]);
    const ts = now - rng.range(0, 5);
    set((v) => writeSample(v, lp, value, ts));
  }
  if (rng.chance(0.01)) {
    const r = rng.int(0, RACKS - 1);
    set((v) => (v.rackI.reset[r] = 1));
  }
  if (weather !== "tuning" && rng.chance(calm ? 0.0002 : 0.005)) {
    const r = rng.int(0, RACKS - 1);
    const on = rng.chance(0.5) ? 1 : 0;
    set((v) => (v.rackI.manualIsolate[r] = on));
  }
  if (rng.chance(0.03)) {
    const i = rng.int(0, spec.loops.length - 1);
    const mode = calm && rng.chance(0.5)
      ? L.MODE_AUTOMATIC
      : rng.pick([L.MODE_AUTOMATIC, L.MODE_AUTOMATIC, L.MODE_MANUAL, L.MODE_OVERRIDE, L.MODE_DISABLED, 9]);
    set((v) => (v.loopI.mode[i] = mode));
  }
  // relay autotunes started and stopped (the step ends most of them on its own checks)
  if (rng.chance(0.02)) {
    const i = rng.int(0, spec.loops.length - 1);
    set((v) => startTune(v, i, now));
  }
  if (rng.chance(0.002)) {
    const i = rng.int(0, spec.loops.length - 1);
    set((v) => stopTune(v, i));
  }
  if (rng.chance(0.03)) {
    const i = rng.int(0, spec.loops.length - 1);
    const sp = !calm && rng.chance(0.05) ? NaN : rng.range(-10, 60);
    set((v) => (v.loopF.sp[i] = sp));
  }
  if (rng.chance(0.03)) {
    const i = rng.int(0, spec.loops.length - 1);
    const val = rng.chance(0.05) ? NaN : rng.range(-50, 150);
    const field = rng.chance(0.5) ? "manual" : "override";
    set((v) => (v.loopF[field][i] = val));
  }
}

function firstMismatch(a: HotPath, b: HotPath, counts: [number, number, number]): string | null {
  const groups: [keyof BankViews, number][] = [
    ["loopF", counts[0]],
    ["loopI", counts[0]],
    ["pointF", counts[1]],
    ["pointI", counts[1]],
    ["rackF", counts[2]],
    ["rackI", counts[2]],
  ];
  for (const [group, n] of groups) {
    const va = a.views[group] as Record<string, Float64Array | Int32Array>;
    const vb = b.views[group] as Record<string, Float64Array | Int32Array>;
    for (const field of Object.keys(va)) {
      const xa = va[field];
      const xb = vb[field];
      const ba = new Uint32Array(xa.buffer, xa.byteOffset, (n * xa.BYTES_PER_ELEMENT) / 4);
      const bb = new Uint32Array(xb.buffer, xb.byteOffset, (n * xb.BYTES_PER_ELEMENT) / 4);
      for (let k = 0; k < ba.length; k++) {
        if (ba[k] !== bb[k]) {
          const slot = Math.floor((k * 4) / xa.BYTES_PER_ELEMENT);
          return `${group}.${field}[${slot}]: wasm ${xa[slot]} vs reference ${xb[slot]}`;
        }
      }
    }
  }
  return null;
}

// Both builds: the SIMD release build, and the scalar build for CPUs without SIMD.
const BUILDS = ["release", "scalar"] as const;

describe.each(BUILDS)("WASM hot path (%s build) vs TypeScript reference", (build) => {
  const runs: [Weather, number][] = [["rough", 1], ["rough", 2], ["rough", 3], ["rough", 20261130], ["calm", 4], ["calm", 5], ["tuning", 6]];
  for (const [weather, seed] of runs) {
    it(`is bit-identical over ${countWords(TICKS)} randomised ticks (${weather}, seed ${seed})`, () => {
      const rng = new Prng(seed);
      const lay = randomLayout(rng, weather);
      const wasm = loadWasmHotPath(build);
      const ref = new ReferenceHotPath();
      loadBank(wasm, lay.spec);
      loadBank(ref, lay.spec);
      const counts: [number, number, number] = [lay.spec.loops.length, lay.spec.points.length, lay.spec.racks.length];
      expect(firstMismatch(wasm, ref, counts)).toBeNull();

      let now = 1000;
      const seen = {
        ...{ leak: 0, failsafe: 0, auto: 0, manual: 0, satHigh: 0, satLow: 0, held: 0, escalate: 0, proven: 0, badDt: 0 },
        // a rack with closed limit switches proven, and one whose switches are off or unknown
        ...{ provenByLimits: 0, limitsNotClosed: 0 },
        // the WASM step runs a pair of loops on SIMD lanes when both stay in automatic
        // (see stepAutomaticPair); these count that path, that path at a limit, and a pair
        // split between it and the scalar path
        ...{ pairPath: 0, pairAtLimit: 0, pairSplit: 0 },
        // relay autotune: a loop tuning, its relay switching, and a tuning ended by the step
        ...{ tuning: 0, relaySwitched: 0, tuneEnded: 0 },
        // degraded modes: automatic with the feed-forward term dropped; the minimum-flow floor
        // above outMin, and dropped for a bad flow input
        ...{ ffDropped: 0, flowFloor: 0, flowFloorLost: 0 },
      };
      const lastBranch = new Int32Array(LOOPS);
      for (let tick = 0; tick < TICKS; tick++) {
        const dtS = rng.chance(0.002) ? rng.pick([0, -1, NaN, Infinity]) : rng.range(0.0005, 0.002);
        now += rng.chance(0.001) ? rng.range(50, 300) : 1;
        perturb(rng, [wasm.views, ref.views], lay, now, weather);
        lastBranch.set(wasm.views.loopI.branch.subarray(0, LOOPS));
        const rw = wasm.step(now, dtS);
        const rr = ref.step(now, dtS);
        expect(rw).toBe(rr);
        if (rw !== L.STEP_OK) seen.badDt++;
        const mismatch = firstMismatch(wasm, ref, counts);
        if (mismatch !== null) throw new Error(`tick ${tick}: ${mismatch}`);
        for (let i = 0; i < LOOPS; i++) {
          const s = wasm.views.loopI.status[i];
          if (s & L.LS_INTERLOCK_LEAK) seen.leak++;
          if (s & L.LS_INTERLOCK_FAILSAFE) seen.failsafe++;
          if (s & L.LS_AUTOMATIC) seen.auto++;
          if (s & L.LS_MANUAL) seen.manual++;
          if (s & L.LS_SAT_HIGH) seen.satHigh++;
          if (s & L.LS_SAT_LOW) seen.satLow++;
          if (s & L.LS_INTEGRATOR_HELD) seen.held++;
          if (s & L.LS_TUNING) seen.tuning++;
          if (s & L.LS_AUTOMATIC && s & L.LS_FF_BAD) seen.ffDropped++;
          if (s & L.LS_FLOW_FLOOR) seen.flowFloor++;
          if (s & L.LS_FLOW_FLOOR_LOST) seen.flowFloorLost++;
          if (s & L.LS_TUNING && wasm.views.loopI.tuneSwitches[i] > 0) seen.relaySwitched++;
          if (wasm.views.loopI.tuneEnd[i] > L.TUNE_END_STOPPED) seen.tuneEnded++;
        }
        const steady = (i: number): boolean =>
          lastBranch[i] === L.BRANCH_AUTOMATIC && wasm.views.loopI.branch[i] === L.BRANCH_AUTOMATIC;
        const limits = L.LS_SAT_HIGH | L.LS_SAT_LOW | L.LS_RATE_LIMITED | L.LS_INTEGRATOR_HELD;
        for (let i = 0; i < LOOPS; i += 2) {
          if (steady(i) && steady(i + 1)) {
            seen.pairPath++;
            if ((wasm.views.loopI.status[i] | wasm.views.loopI.status[i + 1]) & limits) seen.pairAtLimit++;
          } else if (steady(i) || steady(i + 1)) {
            seen.pairSplit++;
          }
        }
        for (let r = 0; r < RACKS; r++) {
          const s = wasm.views.rackI.status[r];
          if (s & L.RS_ESCALATE) seen.escalate++;
          if (s & L.RS_PROVEN) seen.proven++;
          const hasLimits = lay.spec.racks[r].supplyClosedPoint !== undefined || lay.spec.racks[r].returnClosedPoint !== undefined;
          if (hasLimits && s & L.RS_PROVEN) seen.provenByLimits++;
          if (hasLimits && !(s & L.RS_LIMITS_CLOSED)) seen.limitsNotClosed++;
        }
      }
      // The run only proves something if it actually visited every branch.
      // (a tuning pod has no leak, so no isolation; the others tune too, but their leaks end
      // the tunings before they show)
      const tuneOnly = ["tuning", "relaySwitched", "tuneEnded"];
      const isolationOnly = ["leak", "escalate", "proven", "provenByLimits"];
      for (const [what, count] of Object.entries(seen)) {
        if ((weather === "tuning" ? isolationOnly : tuneOnly).includes(what)) continue;
        expect(count, what).toBeGreaterThan(0);
      }
    });
  }
});

describe.each(BUILDS)("WASM hot path (%s build) vs TypeScript reference at the limits of f64", (build) => {
  // Validated inputs keep the steady-automatic (SIMD pair) path finite in the runs above, so
  // its non-finite handling is exercised here: gains large enough that the PID terms overflow
  // to infinity and the sum of opposite infinities is NaN. Every lane must still come out as
  // the reference computes it (NaN targets clamp to the low end of the envelope).
  it("is bit-identical when PID terms overflow", () => {
    const rng = new Prng(7);
    const huge = [0, 1, -1, 1e300, -1e300, 1.7e308, -1.7e308];
    const points: PointSpec[] = [];
    const loops: LoopSpec[] = [];
    for (let i = 0; i < 64; i++) {
      points.push({ min: -Number.MAX_VALUE, max: Number.MAX_VALUE }, { min: -Number.MAX_VALUE, max: Number.MAX_VALUE });
      loops.push({
        pvPoint: 2 * i,
        ffPoint: 2 * i + 1,
        action: rng.pick(["direct", "reverse"] as const),
        kp: rng.pick(huge),
        ki: rng.pick(huge),
        kd: rng.chance(0.5) ? rng.pick(huge) : 0,
        tf: 0.01,
        kff: rng.pick(huge),
        outMin: 0,
        outMax: 100,
        outRate: rng.chance(0.5) ? 50 : 0,
        safeOnLeak: "closed",
        safeOnSensorFault: "open",
        sp: 10,
      });
    }
    const spec: BankSpec = { points, loops, racks: [] };
    const wasm = loadWasmHotPath(build);
    const ref = new ReferenceHotPath();
    loadBank(wasm, spec);
    loadBank(ref, spec);
    let now = 1000;
    let nanTargets = 0;
    for (let tick = 0; tick < 2000; tick++) {
      now += 1;
      for (let p = 0; p < points.length; p++) {
        // now and then a sample near the top of f64, so the derivative's slope overflows too
        const value = rng.chance(0.9) ? rng.range(-100, 100) : rng.pick([-1e308, 1e308]);
        for (const v of [wasm.views, ref.views]) writeSample(v, p, value, now);
      }
      expect(wasm.step(now, 0.001)).toBe(ref.step(now, 0.001));
      const mismatch = firstMismatch(wasm, ref, [loops.length, points.length, 0]);
      if (mismatch !== null) throw new Error(`tick ${tick}: ${mismatch}`);
      for (let i = 0; i < loops.length; i++) {
        const s = wasm.views.loopI.status[i];
        if ((s & L.LS_AUTOMATIC) !== 0 && (s & L.LS_SAT_HIGH) !== 0 && (s & L.LS_SAT_LOW) !== 0) nanTargets++;
      }
    }
    // a NaN target is the only way both saturation bits rise at once
    expect(nanTargets).toBeGreaterThan(0);
  });
});
