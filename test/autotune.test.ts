// Relay autotune: the hot path's relay on the simulator's FOPDT rigs, the analysis's Ku and Pu
// against the analytic values, the proposed gains closing the loop, and every abort.
import { describe, expect, it } from "vitest";
import * as L from "../hotpath-as/assembly/layout.js";
import { loadBank, startTune, stopTune, writeSample, type TuneSpec } from "../hotpath-as/bank-config.js";
import { loadWasmHotPath } from "../hotpath-as/wasm-bank.js";
import type { TuneState } from "../agent/control/control-thread.js";
import type { TuningStatus } from "../agent/pod-api.js";
import { Autotuner } from "../agent/tuning/autotuner.js";
import { analyseRelay, type TuneSample } from "../agent/tuning/relay-analysis.js";
import { Fopdt, type FopdtParams } from "../sim/fopdt.js";
import { DT, PLANT, Rig } from "../sim/fopdt-rig.js";

/** Ku and Pu of K·e^(−θs)/(τs+1): θω + atan(τω) = π, Ku = √(1 + (τω)²) / |K|. */
function ultimate(p: FopdtParams): { ku: number; puS: number } {
  let lo = 1e-6;
  let hi = Math.PI / p.deadTimeS;
  for (let k = 0; k < 200; k++) {
    const w = (lo + hi) / 2;
    if (p.deadTimeS * w + Math.atan(p.tauS * w) < Math.PI) lo = w;
    else hi = w;
  }
  return { ku: Math.sqrt(1 + (p.tauS * lo) ** 2) / Math.abs(p.gainU), puS: (2 * Math.PI) / lo };
}

interface RigCase {
  name: string;
  plant: FopdtParams;
  action: "direct" | "reverse";
  sp: number;
  u0: number;
  tune: TuneSpec;
  noise: number;
}

const RIGS: RigCase[] = [
  { name: "rack return temperature (lag-dominant)", plant: PLANT, action: "direct", sp: 40, u0: 50, tune: { amplitude: 15, hysteresisMin: 0.01, deviationMax: 3, noiseS: 5, timeoutS: 600 }, noise: 0.005 },
  { name: "slow valve with a long dead time", plant: { bias: 60, gainU: -0.4, gainD: 0.1, tauS: 12, deadTimeS: 4, dtS: DT }, action: "direct", sp: 40, u0: 60, tune: { amplitude: 10, hysteresisMin: 0.02, deviationMax: 8, noiseS: 5, timeoutS: 600 }, noise: 0.01 },
  { name: "pump on differential pressure (reverse acting)", plant: { bias: -60, gainU: 2, gainD: 0, tauS: 3, deadTimeS: 0.6, dtS: DT }, action: "reverse", sp: 40, u0: 50, tune: { amplitude: 5, hysteresisMin: 0.1, deviationMax: 20, noiseS: 3, timeoutS: 300 }, noise: 0.05 },
];

const SAMPLE_MS = 50;

/** Runs the rig's tuning to `cycles` whole periods, sampling every 50 ms as the agent does. */
function tune(c: RigCase, cycles = 4, outRate = 0): { rig: Rig; samples: TuneSample[]; end: number } {
  const hp = loadWasmHotPath("release");
  const rig = new Rig(hp, { action: c.action, sp: c.sp, kp: 0, ki: 0, kff: 0, mode: "Manual", tune: c.tune, outRate }, c.u0, 20, c.plant);
  rig.noiseC = c.noise;
  rig.run(c.plant.tauS * 8);
  startTune(hp.views, 0, rig.now);
  const samples: TuneSample[] = [];
  const v = hp.views;
  let next = 0;
  while (v.loopI.tune[0] !== L.TUNE_OFF && v.loopI.tuneSwitches[0] < 2 * cycles + 1) {
    rig.run(SAMPLE_MS / 1000);
    if (rig.now >= next) {
      samples.push({ tMs: rig.now, pv: v.loopF.pv[0], out: v.loopF.out[0], switches: v.loopI.tuneSwitches[0] });
      next = rig.now + SAMPLE_MS;
    }
  }
  stopTune(v, 0);
  return { rig, samples, end: v.loopI.tuneEnd[0] };
}

/** The rig with a proposal's gains: a setpoint step, and how it settles. */
function stepResponse(c: RigCase, kp: number, ki: number): { overshoot: number; swings: number; finalErr: number } {
  const hp = loadWasmHotPath("release");
  const rig = new Rig(hp, { action: c.action, sp: c.sp, kp, ki, kff: 0, outRate: 0 }, c.u0, 20, c.plant);
  rig.run(c.plant.tauS * 10);
  const step = c.action === "direct" ? -1 : 5; // a cooler return; more pressure
  const target = c.sp + step;
  hp.views.loopF.sp[0] = target;
  let overshoot = 0;
  let swings = 0;
  let side = -Math.sign(step); // the PV starts on this side of the target
  rig.run(c.plant.tauS * 15, (pv) => {
    const e = pv - target;
    overshoot = Math.max(overshoot, e * Math.sign(step));
    // crossing the target by more than 2 % of the step is one swing
    if (Math.abs(e) > 0.02 * Math.abs(step) && Math.sign(e) !== side) {
      swings++;
      side = Math.sign(e);
    }
  });
  return { overshoot: overshoot / Math.abs(step), swings, finalErr: Math.abs(rig.pv - target) / Math.abs(step) };
}

describe("relay autotune on the FOPDT rigs", () => {
  for (const c of RIGS) {
    describe(c.name, () => {
      const { samples, end } = tune(c);
      const a = analyseRelay({ samples, action: c.action, d: c.tune.amplitude, hysteresis: 0, cycles: 4 });
      const exact = ultimate(c.plant);

      it("ends when the host stops it, with the relay's periods", () => {
        expect(end).toBe(L.TUNE_END_STOPPED);
        expect(samples.at(-1)?.switches).toBe(9);
      });

      it("identifies Ku and Pu within 10 % of the analytic values", () => {
        expect(Math.abs(a.ku / exact.ku - 1)).toBeLessThan(0.1);
        expect(Math.abs(a.puS / exact.puS - 1)).toBeLessThan(0.1);
        // the describing function's peak-amplitude estimate is what the harmonics improve on
        expect(a.kuDescribingFunction).toBeLessThan(a.ku);
        expect(a.warnings).toEqual([]);
      });

      it("fits a first-order-plus-dead-time model: the dead time, and the gain over the lag (what a relay pins down)", () => {
        expect(a.fopdt, a.fopdtWhyNot).not.toBeNull();
        const m = a.fopdt!;
        expect(Math.abs(m.deadTimeS / c.plant.deadTimeS - 1)).toBeLessThan(0.15);
        expect(Math.abs(m.gain / m.tauS / (c.plant.gainU / c.plant.tauS) - 1)).toBeLessThan(0.15);
        expect(a.recommended).toBe("simc");
      });

      it("proposes gains by three rules, with the margins the model expects", () => {
        expect(a.proposals.map((p) => p.rule)).toEqual(["simc", "tyreus-luyben", "ziegler-nichols"]);
        for (const p of a.proposals) {
          expect(p.kp).toBeGreaterThan(0);
          expect(p.ki).toBeGreaterThan(0);
          expect(p.margins).not.toBeNull();
        }
        // the robust rules leave a gain margin near 3 and a phase margin of 55° or more
        for (const rule of ["simc", "tyreus-luyben"]) {
          const m = a.proposals.find((p) => p.rule === rule)!.margins!;
          expect(m.gain).toBeGreaterThan(2.5);
          expect(m.phaseDeg).toBeGreaterThan(55);
        }
      });

      it("the recommended and the Tyreus-Luyben gains, applied, settle a setpoint step without oscillation", () => {
        for (const rule of ["simc", "tyreus-luyben"]) {
          const p = a.proposals.find((x) => x.rule === rule)!;
          const r = stepResponse(c, p.kp, p.ki);
          expect(r.finalErr, rule).toBeLessThan(0.02);
          // one swing past the target at most, and back without a second: no oscillation
          expect(r.overshoot, rule).toBeLessThan(0.3);
          expect(r.swings, rule).toBeLessThanOrEqual(1);
        }
      });
    });
  }
});

/**
 * One tuned loop on rack 0 of a two-rack pod, around the FOPDT rig's plant, with rack 1's leak
 * input: every condition that must end a tuning can be set off here.
 */
class AbortBench {
  readonly hp = loadWasmHotPath("release");
  readonly plant = new Fopdt(PLANT, 50, 20);
  now = 0;
  pvOverride: number | null = null;
  leakOther = 0;
  loadKw = 20;

  constructor(mode: "Automatic" | "Manual", tuneSpec: Partial<TuneSpec> = {}) {
    loadBank(this.hp, {
      points: [{ min: 0, max: 120, staleMs: 3000, debounceFault: 1 }, { min: 0, max: 200 }, { kind: "leak", rack: 1, min: 0, max: 2 }],
      loops: [{ pvPoint: 0, ffPoint: 1, rack: 0, action: "direct", kp: 33, ki: 33 / 24, kff: 0, outMin: 0, outMax: 100, safeOnLeak: "closed", safeOnSensorFault: "open", sp: 40, mode, tune: { amplitude: 10, hysteresisMin: 0.01, deviationMax: 2, noiseS: 2, timeoutS: 600, ...tuneSpec } }],
      racks: [{ isolatedFlowMaxLpm: 1, isolationDeadlineMs: 60_000 }, { isolatedFlowMaxLpm: 1, isolationDeadlineMs: 60_000 }],
    });
    this.hp.views.loopF.out[0] = 50;
    this.hp.views.loopF.manual[0] = 50;
  }

  get v() {
    return this.hp.views;
  }

  run(seconds: number): void {
    for (let k = 0; k < Math.round(seconds / DT); k++) {
      this.now += DT * 1000;
      writeSample(this.v, 0, this.pvOverride ?? this.plant.y, this.now);
      writeSample(this.v, 1, this.loadKw, this.now);
      writeSample(this.v, 2, this.leakOther, this.now);
      this.hp.step(this.now, DT);
      this.plant.step(this.v.loopF.out[0], this.loadKw);
    }
  }

  /** Ticks until the tuning ends (or `maxS` passes); the outputs of the last tuning tick and the first after. */
  runUntilEnd(maxS: number, each?: () => void): { before: number; after: number; end: number } {
    let before = this.v.loopF.out[0];
    for (let k = 0; k < Math.round(maxS / DT) && this.v.loopI.tune[0] !== L.TUNE_OFF; k++) {
      before = this.v.loopF.out[0];
      each?.();
      this.run(DT);
    }
    return { before, after: this.v.loopF.out[0], end: this.v.loopI.tuneEnd[0] };
  }
}

it("says so when the output's slew limit, not the process, shaped the relay", () => {
  const c = RIGS[0];
  const { samples } = tune(c, 4, 0.5); // 0.5 %/s: 60 s to cross the relay's 30 %, against an 11 s period
  const a = analyseRelay({ samples, action: c.action, d: c.tune.amplitude, hysteresis: 0, cycles: 4 });
  expect(a.warnings.join("\n")).toMatch(/slew limit/);
  expect(a.warnings.join("\n")).toMatch(/not the loop's ultimate point/);
});

describe("a relay autotune aborts at once, and the loop is back in its mode", () => {
  const relaying = (b: AbortBench): void => {
    startTune(b.v, 0, b.now);
    b.run(10); // past the noise window, into the relay
    expect(b.v.loopI.tune[0]).toBe(L.TUNE_RELAY);
    expect(b.v.loopI.status[0] & L.LS_TUNING).not.toBe(0);
  };
  /** no jump: the first tick back moves the output by no more than the PI's own step */
  const noJump = (r: { before: number; after: number }): void => expect(Math.abs(r.after - r.before)).toBeLessThan(0.05);

  for (const mode of ["Automatic", "Manual"] as const) {
    const word = mode === "Automatic" ? L.LS_AUTOMATIC : L.LS_MANUAL;

    it(`on a leak anywhere in the pod (${mode})`, () => {
      const b = new AbortBench(mode);
      b.run(60);
      relaying(b);
      b.leakOther = 1;
      const r = b.runUntilEnd(1);
      expect(r.end).toBe(L.TUNE_END_LEAK);
      expect(b.v.loopI.status[0] & word).not.toBe(0);
      noJump(r);
    });

    it(`on a PV deviation beyond the bound (${mode})`, () => {
      const b = new AbortBench(mode);
      b.run(60);
      relaying(b);
      b.loadKw = 200; // a load step the relay cannot hold the PV against
      const r = b.runUntilEnd(120);
      expect(r.end).toBe(L.TUNE_END_DEVIATION);
      expect(Math.abs(b.v.loopF.pv[0] - b.v.loopF.tuneCenter[0])).toBeGreaterThan(2);
      expect(b.v.loopI.status[0] & word).not.toBe(0);
      noJump(r);
    });

    it(`on its timeout (${mode})`, () => {
      const b = new AbortBench(mode, { timeoutS: 15 });
      b.run(60);
      relaying(b);
      const r = b.runUntilEnd(10);
      expect(r.end).toBe(L.TUNE_END_TIMEOUT);
      expect(b.now).toBeGreaterThanOrEqual(60_000 + 15_000);
      expect(b.v.loopI.status[0] & word).not.toBe(0);
      noJump(r);
    });

    it(`when the host stops it: an operator's abort, or done (${mode})`, () => {
      const b = new AbortBench(mode);
      b.run(60);
      relaying(b);
      const before = b.v.loopF.out[0];
      stopTune(b.v, 0);
      b.run(DT);
      expect(b.v.loopI.tuneEnd[0]).toBe(L.TUNE_END_STOPPED);
      expect(b.v.loopI.status[0] & word).not.toBe(0);
      noJump({ before, after: b.v.loopF.out[0] });
    });
  }

  it("on a bad input: the fail-safe interlock takes the loop, and the loop returns to its mode after", () => {
    const b = new AbortBench("Automatic");
    b.run(60);
    relaying(b);
    b.pvOverride = NaN;
    const r = b.runUntilEnd(1);
    expect(r.end).toBe(L.TUNE_END_BAD_INPUT);
    expect(b.v.loopI.status[0] & L.LS_INTERLOCK_FAILSAFE).not.toBe(0);
    b.pvOverride = null;
    b.run(1);
    expect(b.v.loopI.status[0] & L.LS_AUTOMATIC).not.toBe(0);
    expect(b.v.loopI.tune[0]).toBe(L.TUNE_OFF); // ended for good, not resumed
  });

  it("on its own rack's isolation: the leak interlock takes the loop", () => {
    const b = new AbortBench("Automatic");
    b.run(60);
    relaying(b);
    b.v.rackI.manualIsolate[0] = 1;
    const r = b.runUntilEnd(1);
    expect(r.end).toBe(L.TUNE_END_INTERLOCK);
    expect(b.v.loopI.status[0] & L.LS_INTERLOCK_LEAK).not.toBe(0);
    expect(b.v.loopF.out[0]).toBe(0); // safeOnLeak: closed
    b.v.rackI.manualIsolate[0] = 0;
    b.run(1);
    expect(b.v.loopI.status[0] & L.LS_AUTOMATIC).not.toBe(0);
  });

  it("refuses a relay the envelope has no room for, and never starts one on a loop without tuning bounds", () => {
    const b = new AbortBench("Manual");
    b.v.loopF.manual[0] = 98; // 2 % from the top: a quarter of the 10 % amplitude is 2.5
    b.run(30);
    startTune(b.v, 0, b.now);
    const r = b.runUntilEnd(5);
    expect(r.end).toBe(L.TUNE_END_ENVELOPE);
    noJump(r);
    const none = new AbortBench("Automatic", { amplitude: 0 });
    none.run(30);
    startTune(none.v, 0, none.now);
    expect(none.runUntilEnd(5).end).toBe(L.TUNE_END_ENVELOPE);
  });

  it("a tuning started while a leak is latched anywhere ends on its first tick", () => {
    const b = new AbortBench("Automatic");
    b.leakOther = 1;
    b.run(30);
    b.leakOther = 0;
    b.run(1);
    expect(b.v.rackI.state[1]).not.toBe(L.RACK_NORMAL);
    startTune(b.v, 0, b.now);
    b.run(DT);
    expect(b.v.loopI.tuneEnd[0]).toBe(L.TUNE_END_LEAK);
  });
});

/**
 * The Autotuner (the main thread's session) against a real bank stepped by the test as the worker
 * would step it: its start, its samples, its analysis at the end, its abort words, and a start
 * the control thread never takes.
 */
describe("the tuning session", () => {
  class Bench {
    readonly rig: Rig;
    starts = 0;
    stops = 0;
    /** the start count the "worker" has applied (the test applies them in tick()) */
    applied = 0;
    clock = 0;
    takeStarts = true;
    constructor(c: RigCase) {
      this.rig = new Rig(loadWasmHotPath("release"), { action: c.action, sp: c.sp, kp: 0, ki: 0, kff: 0, mode: "Manual", tune: c.tune, outRate: 0 }, c.u0, 20, c.plant);
      this.rig.noiseC = c.noise;
      this.rig.run(c.plant.tauS * 8);
    }
    readonly control = {
      startTune: (): number => ++this.starts,
      stopTune: (): void => void this.stops++,
      tuneState: (): TuneState => {
        const v = this.rig.hp.views;
        return { phase: v.loopI.tune[0], end: v.loopI.tuneEnd[0], switches: v.loopI.tuneSwitches[0], applied: this.applied, center: v.loopF.tuneCenter[0], hysteresis: v.loopF.tuneHyst[0], d: v.loopF.tuneD[0], pv: v.loopF.pv[0], out: v.loopF.out[0], tickMs: this.rig.now };
      },
    };
    /** the worker's side: the command frame's edges, then `ms` of ticks */
    tick(ms: number): void {
      const v = this.rig.hp.views;
      if (this.takeStarts && this.starts !== this.applied) {
        this.applied = this.starts;
        startTune(v, 0, this.rig.now);
      }
      if (this.stops > 0) {
        stopTune(v, 0);
        this.stops = 0;
      }
      this.rig.run(ms / 1000);
      this.clock += ms;
    }
  }
  const sessionOn = (b: Bench, ended: TuningStatus[]): Autotuner =>
    new Autotuner(b.control, (i) => (i === 0 ? { name: "rack-1.valve", action: "direct", amplitude: 15, cycles: 4 } : undefined), { ended: (s) => ended.push(s), now: () => new Date(0), monoMs: () => b.clock }, 1e9);

  it("runs a tuning to its end and analyses it: the same Ku and Pu as the rig's own run", () => {
    const b = new Bench(RIGS[0]);
    const ended: TuningStatus[] = [];
    const tuner = sessionOn(b, ended);
    expect(tuner.start(0, "test").state).toBe("starting");
    expect(() => tuner.start(0, "again")).toThrow(/rack-1.valve is being tuned: one tuning at a time/);
    for (let k = 0; k < 20_000 && tuner.running !== null; k++) {
      b.tick(10);
      tuner.poll();
    }
    expect(ended).toHaveLength(1);
    const s = ended[0];
    expect(s.state).toBe("done");
    expect(tuner.running).toBeNull();
    const exact = ultimate(RIGS[0].plant);
    expect(Math.abs(s.result!.ku / exact.ku - 1)).toBeLessThan(0.1);
    expect(Math.abs(s.result!.puS / exact.puS - 1)).toBeLessThan(0.1);
    b.tick(10);
    expect(b.rig.hp.views.loopI.tuneEnd[0]).toBe(L.TUNE_END_STOPPED); // the session stopped the relay
  });

  it("says in words why the hot path ended a tuning", () => {
    const b = new Bench(RIGS[0]);
    const ended: TuningStatus[] = [];
    const tuner = sessionOn(b, ended);
    tuner.start(0, "test");
    for (let k = 0; k < 600; k++) {
      b.tick(10);
      tuner.poll();
    }
    b.rig.loadKw = 200; // a load step the relay cannot hold the PV against
    for (let k = 0; k < 20_000 && tuner.running !== null; k++) {
      b.tick(10);
      tuner.poll();
    }
    expect(ended[0]).toMatchObject({ state: "aborted", reason: "the hot path ended it: the PV left the operating point by more than control.*.autotune.deviationMax" });
  });

  it("takes a loop's bounds from the config in force at each start (a reload's periods count)", () => {
    const b = new Bench(RIGS[0]);
    let cycles = 4;
    const tuner = new Autotuner(b.control, (i) => (i === 0 ? { name: "rack-1.valve", action: "direct", amplitude: 15, cycles } : undefined), { ended: () => undefined, now: () => new Date(0), monoMs: () => b.clock }, 1e9);
    expect(tuner.start(0, "test").switchesNeeded).toBe(9);
    tuner.abort(0, "test");
    cycles = 3;
    expect(tuner.start(0, "test").switchesNeeded).toBe(7);
    tuner.abort(0, "test");
    expect(() => tuner.start(1, "test")).toThrow(/no loop 1/);
  });

  it("gives up a start the control thread never takes, rather than holding off every other tuning", () => {
    const b = new Bench(RIGS[0]);
    b.takeStarts = false;
    const ended: TuningStatus[] = [];
    const tuner = sessionOn(b, ended);
    tuner.start(0, "test");
    for (let k = 0; k < 600 && tuner.running !== null; k++) {
      b.tick(10);
      tuner.poll();
    }
    expect(ended[0]).toMatchObject({ state: "failed", reason: "the control thread did not take the start within 5 s" });
    expect(tuner.running).toBeNull();
  });
});
