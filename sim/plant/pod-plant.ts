// The thermal-hydraulic model of one pod: a CDU (pumps, heat exchanger, reservoir) serving N
// racks on a secondary loop. Stepped at a fixed dt; everything random comes from a seeded
// generator, so the same seed and inputs give the same trajectory.
import { Prng } from "../prng.js";
import { DelayLine } from "./delay-line.js";
import { parallelOperatingPoint } from "./hydraulics.js";
import { LoadGenerator, type LoadProfile } from "./load.js";
import { StrokedValve, relativeKv, type ValveCharacteristic } from "./valve.js";

import { COOLANT_KJ_PER_L_K } from "../../pod/coolant.js";

export interface PlantParams {
  dtS: number;
  racks: number;
  rackRatedKw: number;
  primarySupplyTempC: number;
  /** `count` identical pumps in parallel (a lead and its standbys); pump 1 starts at initialSpeedPct, the others stopped */
  pump: { count?: number; shutoffKpa: number; resistanceKpaPerLpm2: number; rampPctPerS: number; initialSpeedPct: number };
  /** effectiveness with the primary valve open; the valve strokes in primaryValveStrokeS (default 30 s) */
  hx: { effectiveness: number; timeConstantS: number; primaryValveStrokeS?: number };
  valve: { characteristic: ValveCharacteristic; strokeTimeS: number; kvMax: number; initialPct: number };
  isolationValve: { strokeTimeS: number };
  rack: { thermalMassKjPerK: number; pipeVolumeL: number; gpuThermalResistanceKPerKw: number; gpuThrottleC: number };
  bypassKv: number;
  reservoir: { volumeL: number; staticPressureKpa: number };
  leakRateLpm: number;
  load: LoadProfile;
  /** per rack, over `load` */
  rackLoads?: LoadProfile[];
}

/**
 * The share of the exchanger's full effectiveness at a primary valve position: the primary flow
 * follows the valve (linear), and the exchanger's NTU rises with it and saturates, as
 * 1 − e^(−3x) does: a quarter open gives 59 %, half 82 %, fully open exactly 1.
 */
export function primaryShare(positionPct: number): number {
  const x = Math.min(Math.max(positionPct / 100, 0), 1);
  return x >= 1 ? 1 : (1 - Math.exp(-3 * x)) / (1 - Math.exp(-3));
}

export type LeakState = "dry" | "wet" | "cable-fault";

export class RackModel {
  readonly controlValve: StrokedValve;
  readonly supplyIso: StrokedValve;
  readonly returnIso: StrokedValve;
  flowLpm = 0;
  inletTempC: number;
  returnTempC: number;
  powerKw = 0;
  demandPct = 0;
  /** agent-written cap; Infinity when none */
  powerCapKw = Infinity;
  powerOff = false;
  /** a fault: power-off requested does not take (a welded contactor): the rack keeps its load */
  powerStuckOn = false;
  gpuTempC: number;
  throttle = 1;
  leak: LeakState = "dry";
  /** monotonic ms when the leak state last changed (for leak-to-isolation latency) */
  leakChangedAtMs = -Infinity;
  coolantLostL = 0;
  readonly supplyDelay: DelayLine;
  readonly returnDelay: DelayLine;

  constructor(
    readonly index: number,
    p: PlantParams,
    readonly load: LoadGenerator,
  ) {
    this.controlValve = new StrokedValve(p.valve.strokeTimeS, p.valve.initialPct);
    this.supplyIso = new StrokedValve(p.isolationValve.strokeTimeS, 100);
    this.returnIso = new StrokedValve(p.isolationValve.strokeTimeS, 100);
    this.inletTempC = p.primarySupplyTempC + 2;
    this.returnTempC = this.inletTempC;
    this.gpuTempC = this.returnTempC;
    this.supplyDelay = new DelayLine(p.dtS, 30, this.inletTempC);
    this.returnDelay = new DelayLine(p.dtS, 30, this.returnTempC);
  }

  /** Fraction open of the isolation pair (the smaller of the two). */
  get isolationOpen(): number {
    return Math.min(this.supplyIso.position, this.returnIso.position) / 100;
  }
}

/** One CDU pump: its drive's command, enable and trip, and the speed it turns at. */
export interface PumpModel {
  speedCmdPct: number;
  speedPct: number;
  enabled: boolean;
  tripped: boolean;
}

export interface CduModel {
  /** pump 1 first (plant.pump.count) */
  pumps: PumpModel[];
  dpKpa: number;
  totalFlowLpm: number;
  bypassFlowLpm: number;
  supplyTempC: number;
  returnTempC: number;
  primarySupplyTempC: number;
  /** the primary-side valve: the facility water through the exchanger (starts open) */
  primaryValve: StrokedValve;
  hxDutyKw: number;
  reservoirL: number;
  loopPressureKpa: number;
}

export class PodPlant {
  readonly racks: RackModel[];
  readonly cdu: CduModel;
  timeS = 0;
  readonly rng: Prng;

  constructor(
    readonly p: PlantParams,
    seed: number,
    perRackLoad?: readonly (LoadProfile | undefined)[],
  ) {
    this.rng = new Prng(seed);
    this.racks = [];
    for (let r = 0; r < p.racks; r++) {
      this.racks.push(new RackModel(r, p, new LoadGenerator(perRackLoad?.[r] ?? p.rackLoads?.[r] ?? p.load, new Prng(seed * 7919 + r + 1))));
    }
    const pumps: PumpModel[] = Array.from({ length: p.pump.count ?? 1 }, (_, i) => {
      const speed = i === 0 ? p.pump.initialSpeedPct : 0;
      return { speedCmdPct: speed, speedPct: speed, enabled: i === 0, tripped: false };
    });
    this.cdu = {
      pumps,
      dpKpa: 0,
      totalFlowLpm: 0,
      bypassFlowLpm: 0,
      supplyTempC: p.primarySupplyTempC + 2,
      returnTempC: p.primarySupplyTempC + 2,
      primarySupplyTempC: p.primarySupplyTempC,
      primaryValve: new StrokedValve(p.hx.primaryValveStrokeS ?? 30, 100),
      hxDutyKw: 0,
      reservoirL: p.reservoir.volumeL,
      loopPressureKpa: p.reservoir.staticPressureKpa,
    };
    this.solveHydraulics();
  }

  /** Coolant level as a fraction of the nominal volume. */
  get reservoirFraction(): number {
    return this.cdu.reservoirL / this.p.reservoir.volumeL;
  }

  private solveHydraulics(): void {
    const p = this.p;
    const cdu = this.cdu;
    const kv = this.racks.map((r) => p.valve.kvMax * relativeKv(p.valve.characteristic, r.controlValve.position) * r.isolationOpen);
    // A nearly empty reservoir starves the pump: below 10 % the head collapses with the level.
    const head = Math.min(1, Math.max(0, this.reservoirFraction / 0.1));
    const op = parallelOperatingPoint(
      { shutoffKpa: p.pump.shutoffKpa, resistance: p.pump.resistanceKpaPerLpm2 },
      cdu.pumps.map((m) => m.speedPct / 100),
      [...kv, p.bypassKv],
      head,
    );
    const sq = Math.sqrt(op.dpKpa);
    cdu.dpKpa = op.dpKpa;
    cdu.totalFlowLpm = op.totalFlowLpm;
    cdu.bypassFlowLpm = p.bypassKv * sq;
    this.racks.forEach((r, i) => (r.flowLpm = kv[i] * sq));
  }

  step(): void {
    const p = this.p;
    const dt = p.dtS;
    const cdu = this.cdu;
    this.timeS += dt;

    // each pump's speed ramps to its command; a trip or a disable coasts it down
    const ramp = p.pump.rampPctPerS * dt;
    for (const m of cdu.pumps) {
      const target = m.enabled && !m.tripped ? Math.min(Math.max(m.speedCmdPct, 0), 100) : 0;
      const dSpeed = target - m.speedPct;
      m.speedPct += Math.abs(dSpeed) <= ramp ? dSpeed : Math.sign(dSpeed) * ramp;
    }

    for (const r of this.racks) {
      r.controlValve.step(dt);
      r.supplyIso.step(dt);
      r.returnIso.step(dt);
    }
    this.solveHydraulics();

    // coolant lost through unisolated leaks; level sets the loop's static pressure
    let lostL = 0;
    for (const r of this.racks) {
      if (r.leak !== "wet") continue;
      const l = ((p.leakRateLpm * r.isolationOpen * Math.min(1, cdu.loopPressureKpa / p.reservoir.staticPressureKpa)) / 60) * dt;
      r.coolantLostL += l;
      lostL += l;
    }
    cdu.reservoirL = Math.max(0, cdu.reservoirL - lostL);
    cdu.loopPressureKpa = p.reservoir.staticPressureKpa * Math.min(1, this.reservoirFraction);

    // racks: load -> power (throttled, capped) -> coolant temperatures
    const volHeat = COOLANT_KJ_PER_L_K / 60; // kW per (L/min * K)
    let mixNum = cdu.bypassFlowLpm * cdu.supplyTempC;
    for (const r of this.racks) {
      r.demandPct = r.load.demandPct(this.timeS);
      const demandKw = (p.rackRatedKw * r.demandPct) / 100;
      // GPUs throttle when their temperature passes the threshold, and recover below it
      if (r.gpuTempC > p.rack.gpuThrottleC) r.throttle = Math.max(0.3, r.throttle - 0.02 * (r.gpuTempC - p.rack.gpuThrottleC) * dt);
      else if (r.gpuTempC < p.rack.gpuThrottleC - 2) r.throttle = Math.min(1, r.throttle + 0.05 * dt);
      r.powerKw = r.powerOff && !r.powerStuckOn ? 0 : Math.min(demandKw * r.throttle, r.powerCapKw);

      const delayS = r.flowLpm > 1e-6 ? (p.rack.pipeVolumeL / r.flowLpm) * 60 : r.supplyDelay.maxDelayS;
      r.supplyDelay.push(cdu.supplyTempC);
      r.inletTempC = r.supplyDelay.read(delayS);
      // well-mixed rack: C dT/dt = P - m cp (T_out - T_in), integrated implicitly (stable at any flow)
      const g = volHeat * r.flowLpm;
      const c = p.rack.thermalMassKjPerK;
      r.returnTempC = (c * r.returnTempC + dt * (r.powerKw + g * r.inletTempC)) / (c + dt * g);
      r.gpuTempC = r.returnTempC + r.powerKw * p.rack.gpuThermalResistanceKPerKw;
      r.returnDelay.push(r.returnTempC);
      mixNum += r.flowLpm * r.returnDelay.read(delayS);
    }

    // CDU: mixed return through the heat exchanger to the primary loop
    if (cdu.totalFlowLpm > 1e-6) cdu.returnTempC = mixNum / cdu.totalFlowLpm;
    cdu.primaryValve.step(dt);
    const hxOutSs = cdu.returnTempC - p.hx.effectiveness * primaryShare(cdu.primaryValve.position) * (cdu.returnTempC - cdu.primarySupplyTempC);
    const flowing = cdu.totalFlowLpm > 1e-6;
    if (flowing) cdu.supplyTempC += ((hxOutSs - cdu.supplyTempC) * dt) / p.hx.timeConstantS;
    cdu.hxDutyKw = volHeat * cdu.totalFlowLpm * (cdu.returnTempC - cdu.supplyTempC);
  }

  /** Sum of heat the racks put into the coolant now, kW. */
  get rackHeatKw(): number {
    let q = 0;
    for (const r of this.racks) q += r.powerKw;
    return q;
  }
}
