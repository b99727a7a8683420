// The plant model's physics, stepped directly (no I/O).
import { describe, expect, it } from "vitest";
import { simConfig } from "../sim/config.js";
import { operatingPoint } from "../sim/plant/hydraulics.js";
import { PodPlant } from "../sim/plant/pod-plant.js";
import { relativeKv, StrokedValve } from "../sim/plant/valve.js";
import { DelayLine } from "../sim/plant/delay-line.js";
import { PodSim } from "../sim/pod-sim.js";

const plantFor = (over: Parameters<typeof simConfig>[0] = {}): PodPlant => {
  const c = simConfig(over);
  return new PodPlant(c.plant, c.seed);
};
const runS = (p: PodPlant, seconds: number): void => {
  for (let k = 0, n = Math.round(seconds / p.p.dtS); k < n; k++) p.step();
};

describe("pod plant physics", () => {
  it("balances heat at steady state: rack heat in = heat exchanger duty out, within 1 %", () => {
    const p = plantFor({ plant: { load: { profile: "idle", pct: 70 } } });
    runS(p, 1500);
    const heatIn = p.rackHeatKw;
    expect(heatIn).toBeGreaterThan(500);
    expect(Math.abs(p.cdu.hxDutyKw - heatIn) / heatIn).toBeLessThan(0.01);
    // and each rack carries its own heat away: Q = flow * cp * (T_return - T_supply)
    for (const r of p.racks) {
      const carried = (4.07 / 60) * r.flowLpm * (r.returnTempC - r.inletTempC);
      expect(Math.abs(carried - r.powerKw) / r.powerKw).toBeLessThan(0.01);
    }
  });

  it("shifts flow to the other racks when one rack's valve closes", () => {
    const p = plantFor();
    runS(p, 60);
    const before = p.racks.map((r) => r.flowLpm);
    p.racks[2].controlValve.command = 0;
    runS(p, 60);
    expect(p.racks[2].flowLpm).toBe(0);
    for (const r of p.racks) if (r.index !== 2) expect(r.flowLpm).toBeGreaterThan(before[r.index]);
    expect(p.cdu.dpKpa).toBeGreaterThan(0);
  });

  it("stops a rack's flow when its isolation valves close, after their stroke time", () => {
    const p = plantFor();
    runS(p, 10);
    p.racks[0].supplyIso.command = 0;
    runS(p, 2); // half of the 4 s stroke
    expect(p.racks[0].flowLpm).toBeGreaterThan(0);
    runS(p, 3);
    expect(p.racks[0].flowLpm).toBe(0);
  });

  it("loses coolant through an unisolated leak only, lowering level and pressure", () => {
    const p = plantFor();
    runS(p, 10);
    p.racks[4].leak = "wet";
    runS(p, 60);
    const lost = p.racks[4].coolantLostL;
    expect(lost).toBeGreaterThan(3);
    expect(p.cdu.reservoirL).toBeCloseTo(200 - lost, 6);
    expect(p.cdu.loopPressureKpa).toBeLessThan(150);
    p.racks[4].supplyIso.command = 0;
    p.racks[4].returnIso.command = 0;
    runS(p, 5);
    const afterIsolation = p.racks[4].coolantLostL;
    runS(p, 60);
    expect(p.racks[4].coolantLostL).toBe(afterIsolation);
  });

  it("throttles GPUs when the coolant runs too warm, and the pump trip stops the flow", () => {
    const p = plantFor({ plant: { primarySupplyTempC: 45, load: { profile: "idle", pct: 100 } } });
    for (const r of p.racks) r.controlValve.command = 15;
    runS(p, 900);
    expect(p.racks[0].gpuTempC).toBeGreaterThan(84);
    expect(p.racks[0].throttle).toBeLessThan(1);
    expect(p.racks[0].powerKw).toBeLessThan(120);
    p.cdu.pumps[0].tripped = true;
    runS(p, 10);
    expect(p.cdu.pumps[0].speedPct).toBe(0);
    expect(p.cdu.totalFlowLpm).toBe(0);
  });

  it("is deterministic for a seed, including inference bursts", () => {
    const over = { seed: 9, plant: { load: { profile: "inference" as const, basePct: 30, burstPct: 90, meanBurstS: 3, meanGapS: 8 } } };
    const a = plantFor(over);
    const b = plantFor(over);
    const c = plantFor({ ...over, seed: 10 });
    runS(a, 120);
    runS(b, 120);
    runS(c, 120);
    expect(a.racks.map((r) => r.returnTempC)).toEqual(b.racks.map((r) => r.returnTempC));
    expect(a.racks.map((r) => r.returnTempC)).not.toEqual(c.racks.map((r) => r.returnTempC));
  });
});

describe("plant building blocks", () => {
  it("valve characteristics pass through 0 and 1, equal-percentage below linear in between", () => {
    for (const ch of ["linear", "equal-percentage"] as const) {
      expect(relativeKv(ch, 0)).toBe(0);
      expect(relativeKv(ch, 100)).toBeCloseTo(1, 12);
    }
    expect(relativeKv("equal-percentage", 50)).toBeLessThan(relativeKv("linear", 50));
  });

  it("strokes a valve at its stroke rate and a stuck valve ignores its command", () => {
    const v = new StrokedValve(10, 0);
    v.command = 100;
    for (let k = 0; k < 50; k++) v.step(0.1);
    expect(v.position).toBeCloseTo(50, 9);
    v.stuck = true;
    v.step(1);
    expect(v.position).toBeCloseTo(50, 9);
  });

  it("models a valve's dead band, stiction and slow travel, and clears them", () => {
    const settle = (v: StrokedValve, cmd: number): number => {
      v.command = cmd;
      for (let k = 0; k < 400; k++) v.step(0.1);
      return v.position;
    };
    const db = new StrokedValve(10, 50);
    db.faults.deadbandPct = 4;
    expect(settle(db, 51.5)).toBe(50); // within half the band: no movement
    expect(settle(db, 60)).toBeCloseTo(58, 9); // beyond it: settles half the band short
    expect(settle(db, 57)).toBeCloseTo(58, 9); // a reversal smaller than the band: still
    expect(settle(db, 50)).toBeCloseTo(52, 9);
    const st = new StrokedValve(10, 50);
    st.faults.stictionPct = 3;
    st.command = 52.9;
    st.step(0.1);
    expect(st.position).toBe(50); // held by friction
    st.command = 53.1;
    st.step(0.1);
    expect(st.position).toBe(53.1); // slips the whole way in one step
    const slow = new StrokedValve(10, 0);
    slow.faults.strokeFactor = 4;
    slow.command = 100;
    for (let k = 0; k < 100; k++) slow.step(0.1);
    expect(slow.position).toBeCloseTo(25, 9); // 10 s at a quarter of the stroke rate
    slow.clearFaults();
    expect(settle(slow, 100)).toBe(100);
  });

  it("injects valve faults by name, isolation valves too, and clear all releases them", () => {
    const sim = new PodSim(simConfig({}));
    sim.inject({ valve: "rack-2", stictionPct: 5, strokeFactor: 3 });
    sim.inject({ valve: "rack-4.supplyIsolation", stuck: true });
    const r = sim.plant.racks;
    expect(r[1].controlValve.faults).toEqual({ stuck: false, deadbandPct: 0, stictionPct: 5, strokeFactor: 3 });
    expect(r[3].supplyIso.stuck).toBe(true);
    expect(() => sim.inject({ valve: "rack-4.bypass", stuck: true })).toThrow(/no valve "rack-4.bypass"/);
    sim.inject({ clear: "all" });
    expect(r[1].controlValve.faults.stictionPct).toBe(0);
    expect(r[3].supplyIso.stuck).toBe(false);
  });

  it("keeps a rack drawing with its power-off requested while its power is stuck on, and clear all releases it", () => {
    const sim = new PodSim(simConfig({}));
    const r = sim.plant.racks[5];
    sim.inject({ load: "rack-6", pct: 50 });
    sim.inject({ powerStuck: "rack-6" });
    r.powerOff = true;
    runS(sim.plant, 1);
    // the request is still what the agent wrote; the rack's meter says otherwise
    expect(r.powerOff).toBe(true);
    expect(r.powerKw).toBeGreaterThan(30);
    expect(sim.plant.racks[4].powerOff).toBe(false);
    expect(() => sim.inject({ powerStuck: "rack-99" })).toThrow(/no rack "rack-99"/);
    sim.inject({ clear: "all" });
    runS(sim.plant, 1);
    expect(r.powerKw).toBe(0);
  });

  it("solves the pump operating point on the pump curve", () => {
    const op = operatingPoint({ shutoffKpa: 200, resistance: 1e-4 }, 1, [10, 10]);
    expect(op.dpKpa).toBeCloseTo(200 - 1e-4 * op.totalFlowLpm ** 2, 9);
    expect(op.totalFlowLpm).toBeCloseTo(20 * Math.sqrt(op.dpKpa), 9);
  });

  it("delays a signal by the transport time", () => {
    const d = new DelayLine(0.01, 5, 0);
    for (let k = 0; k < 300; k++) d.push(k * 0.01);
    expect(d.read(1)).toBeCloseTo(1.99, 9);
    expect(d.read(0)).toBeCloseTo(2.99, 9);
  });
});
