// A single hot-path loop closed around an FOPDT plant, in plant time at 1 kHz.
// Rack return temperature: more valve opening cools it, more rack power heats it.
// Shared by the control-quality tests and the feed-forward benchmark figure.
import * as L from "../hotpath-as/assembly/layout.js";
import { loadBank, writeSample, type LoopSpec } from "../hotpath-as/bank-config.js";
import type { HotPath } from "../hotpath-as/views.js";
import { Fopdt, type FopdtParams } from "./fopdt.js";
import { Prng } from "./prng.js";

export const DT = 0.001;
export const PLANT = { bias: 42, gainU: -0.15, gainD: 0.1, tauS: 30, deadTimeS: 3, dtS: DT };
// SIMC tuning for K = -0.15 degC/%, tau = 30 s, theta = 3 s, tc = theta: Kc = 33 %/degC, Ti = 24 s
export const TUNED: Partial<LoopSpec> = { kp: 33, ki: 33 / 24, kd: 0, outMin: 0, outMax: 100, outRate: 20 };

export const P_TEMP = 0;
export const P_POWER = 1;

export class Rig {
  readonly plant: Fopdt;
  now = 0;
  loadKw: number;
  /** measurement noise on the PV sample: uniform in ±noiseC, from a seeded generator */
  noiseC = 0;
  private readonly noise = new Prng(7);

  constructor(
    readonly hp: HotPath,
    loop: Partial<LoopSpec>,
    u0: number,
    load0: number,
    /** the process (default PLANT, a rack's return temperature) */
    plant: FopdtParams = PLANT,
  ) {
    this.loadKw = load0;
    this.plant = new Fopdt(plant, u0, load0);
    loadBank(hp, {
      points: [
        { min: 0, max: 120 },
        { min: 0, max: 200 },
      ],
      loops: [
        {
          pvPoint: P_TEMP,
          ffPoint: P_POWER,
          action: "direct",
          kp: 0,
          ki: 0,
          outMin: 0,
          outMax: 100,
          safeOnLeak: "closed",
          safeOnSensorFault: "open",
          sp: 40,
          ...TUNED,
          ...loop,
        },
      ],
      // with loop.rack = 0, the loop answers to one rack's isolation (no flow meter, no leak input)
      racks: loop.rack === 0 ? [{ isolatedFlowMaxLpm: 1, isolationDeadlineMs: 5000 }] : [],
    });
    hp.views.loopF.out[0] = u0;
    hp.views.loopF.manual[0] = u0;
  }

  get out(): number {
    return this.hp.views.loopF.out[0];
  }

  get pv(): number {
    return this.plant.y;
  }

  /** Runs `seconds` of plant time; `each` sees every tick. */
  run(seconds: number, each?: (pv: number, out: number) => void): void {
    const ticks = Math.round(seconds / DT);
    for (let k = 0; k < ticks; k++) {
      this.now += DT * 1000;
      writeSample(this.hp.views, P_TEMP, this.plant.y + (this.noiseC === 0 ? 0 : this.noiseC * (2 * this.noise.next() - 1)), this.now);
      writeSample(this.hp.views, P_POWER, this.loadKw, this.now);
      // no expect() per tick: it would dominate the run time
      if (this.hp.step(this.now, DT) !== L.STEP_OK) throw new Error(`step refused at ${this.now} ms`);
      this.plant.step(this.out, this.loadKw);
      each?.(this.plant.y, this.out);
    }
  }
}

/** Settles at 20 kW, steps the load to 100 kW, returns the error before and the peak |pv - sp| after. */
export function loadStepPeak(hp: HotPath, kff: number): { before: number; peak: number; final: number } {
  const rig = new Rig(hp, { kff }, 0, 20);
  rig.run(400);
  const before = Math.abs(rig.pv - 40);
  rig.loadKw = 100;
  let peak = 0;
  rig.run(400, (pv) => (peak = Math.max(peak, Math.abs(pv - 40))));
  return { before, peak, final: Math.abs(rig.pv - 40) };
}
