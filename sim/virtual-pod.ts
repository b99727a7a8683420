// Virtual time: the real WASM hot path and the plant model in lockstep, with no I/O.
//
// Each 1 ms tick: due sensor samples go into the bank (read through the simulated devices, so
// injected sensor faults apply), the hot path steps, its outputs are written to the devices as
// the agent would write them over Modbus (with the lease heartbeat), and the plant advances.
// Seeded and deterministic: the same config, seed and scenario give the same trace.
import * as L from "../hotpath-as/assembly/layout.js";
import { loadBank, writeSample } from "../hotpath-as/bank-config.js";
import type { HotPath } from "../hotpath-as/views.js";
import { loadWasmHotPath } from "../hotpath-as/wasm-bank.js";
import { podBankSpec, podLayout, type PodControl, type PodLayout } from "../agent/pod-bank.js";
import type { SimConfig } from "./config.js";
import type { FieldDevice } from "./devices/field-device.js";

import { PodSim } from "./pod-sim.js";
import type { Scenario } from "./scenario.js";

export interface TraceRow {
  t: number;
  dpKpa: number;
  pumpPct: number;
  supplyC: number;
  racks: { ret: number; valve: number; flow: number; power: number; state: number; status: number }[];
}

export interface VirtualOptions {
  tickMs: number;
  /** how often each sensor is sampled, ms (a field bus is slower than the tick) */
  sampleMs: number;
  /** leak sensors' sampling period, ms */
  leakSampleMs: number;
  traceEveryS: number;
}

const DEFAULTS: VirtualOptions = { tickMs: 1, sampleMs: 100, leakSampleMs: 100, traceEveryS: 1 };

const round = (x: number, digits = 6): number => Math.round(x * 10 ** digits) / 10 ** digits;

export class VirtualPod {
  readonly sim: PodSim;
  readonly hp: HotPath;
  readonly trace: TraceRow[] = [];
  readonly layout: PodLayout;
  private readonly opts: VirtualOptions;
  private readonly plantEvery: number;
  private tick = 0;
  private nextSampleMs = 0;
  private nextLeakSampleMs = 0;
  private nextTraceS = 0;

  constructor(
    config: SimConfig,
    readonly control: PodControl,
    scenario?: Scenario,
    opts: Partial<VirtualOptions> = {},
    hp: HotPath = loadWasmHotPath("release"),
  ) {
    this.opts = { ...DEFAULTS, ...opts };
    if (control.racks !== config.plant.racks) throw new Error(`control has ${control.racks} racks, plant ${config.plant.racks}`);
    this.plantEvery = Math.round((config.plant.dtS * 1000) / this.opts.tickMs);
    if (this.plantEvery < 1 || Math.abs(this.plantEvery * this.opts.tickMs - config.plant.dtS * 1000) > 1e-9) {
      throw new Error(`plant dt ${config.plant.dtS} s must be a whole number of ${this.opts.tickMs} ms ticks`);
    }
    this.sim = new PodSim(config, scenario);
    this.hp = hp;
    this.layout = podLayout(control);
    loadBank(hp, podBankSpec(control, this.layout));
  }

  get timeMs(): number {
    return this.tick * this.opts.tickMs;
  }

  private sample(dev: FieldDevice<unknown>, name: string, point: number, now: number): void {
    const e = dev.entry(name);
    if (e === undefined) throw new Error(`${dev.name} has no ${name}`);
    writeSample(this.hp.views, point, dev.reported(e), now);
  }

  private sampleAll(now: number, analog: boolean, leak: boolean): void {
    const { racks, cdu } = this.sim.devices;
    const lay = this.layout;
    racks.forEach((dev, r) => {
      const p = lay.racks[r];
      if (analog) {
        this.sample(dev, "returnTempC", p.returnTempC, now);
        this.sample(dev, "supplyTempC", p.supplyTempC, now);
        this.sample(dev, "flowLpm", p.flowLpm, now);
        this.sample(dev, "powerKw", p.powerKw, now);
      }
      if (leak) for (const l of p.leaks) this.sample(dev, "leakState", l, now);
    });
    if (analog) {
      this.sample(cdu, "dpKpa", lay.cdu.dpKpa, now);
      this.sample(cdu, "supplyTempC", lay.cdu.supplyTempC, now);
    }
  }

  /** Writes the hot path's outputs to the devices, as the agent does over Modbus. */
  private actuate(now: number): void {
    const v = this.hp.views;
    const { racks, cdu } = this.sim.devices;
    racks.forEach((dev, r) => {
      dev.ctx.valveCmdPct = v.loopF.out[this.layout.rackLoops[r]];
      dev.ctx.supplyIsoOpen = v.rackI.supplyOpen[r] === 1;
      dev.ctx.returnIsoOpen = v.rackI.returnOpen[r] === 1;
      dev.ctx.wd.beat(now);
    });
    cdu.ctx.speedCmdPct = v.loopF.out[this.layout.pumpLoop];
    cdu.ctx.wd.beat(now);
  }

  private record(): void {
    const p = this.sim.plant;
    const v = this.hp.views;
    this.trace.push({
      t: round(p.timeS, 3),
      dpKpa: round(p.cdu.dpKpa),
      pumpPct: round(p.cdu.pumpSpeedPct),
      supplyC: round(p.cdu.supplyTempC),
      racks: p.racks.map((r, i) => ({
        ret: round(r.returnTempC),
        valve: round(r.controlValve.position),
        flow: round(r.flowLpm),
        power: round(r.powerKw),
        state: v.rackI.state[i],
        status: v.loopI.status[i],
      })),
    });
  }

  /** Advances plant time by `seconds`, calling `each` after every tick if given. */
  run(seconds: number, each?: () => void): void {
    const ticks = Math.round((seconds * 1000) / this.opts.tickMs);
    const dtS = this.opts.tickMs / 1000;
    for (let k = 0; k < ticks; k++) {
      const now = this.timeMs;
      const analog = now >= this.nextSampleMs;
      const leak = now >= this.nextLeakSampleMs;
      if (analog) this.nextSampleMs += this.opts.sampleMs;
      if (leak) this.nextLeakSampleMs += this.opts.leakSampleMs;
      if (analog || leak) this.sampleAll(now, analog, leak);
      if (this.hp.step(now, dtS) !== L.STEP_OK) throw new Error(`hot path refused tick ${this.tick}`);
      this.actuate(now);
      this.tick++;
      if (this.tick % this.plantEvery === 0) this.sim.step();
      if (this.sim.plant.timeS >= this.nextTraceS) {
        this.record();
        this.nextTraceS += this.opts.traceEveryS;
      }
      each?.();
    }
  }
}

