// The supervisor's pure rules on their own: the power budget and its coolant bound (on random
// pods), and the heat-balance cross-check's suspects.
import { describe, expect, it } from "vitest";
import { coolantLimitKw, limitSupplyC } from "../agent/supervisor/coolant-limit.js";
import { heatBalance } from "../agent/supervisor/heat-balance.js";
import { allocatePower, type RackPowerDemand } from "../agent/supervisor/power-budget.js";
import { leakSensorWords } from "../agent/supervisor/supervisor.js";
import { COOLANT_KJ_PER_L_K } from "../pod/coolant.js";
import { Prng } from "../sim/prng.js";

describe("power budget", () => {
  it("never exceeds the budget or the CDU's heat rejection, respects minimums, ceilings and priorities, and leaves no power unplaced (randomised)", () => {
    const rng = new Prng(77);
    for (let trial = 0; trial < 3000; trial++) {
      const n = rng.int(1, 10);
      const racks: RackPowerDemand[] = Array.from({ length: n }, (_, i) => {
        const maxKw = rng.range(20, 150);
        // two racks in three have a coolant limit, some of them below their minimum
        const coolantKw = rng.int(0, 2) === 0 ? undefined : rng.range(0, 180);
        return { name: `r${i}`, priority: rng.int(0, 3), minKw: rng.range(0, maxKw / 2), maxKw, demandKw: rng.range(0, 200), coolantKw };
      });
      const budget = rng.range(0, 1200);
      const heat = rng.int(0, 1) === 0 ? Infinity : rng.range(0, 1200);
      const { caps, minimumsScaled, coolantBound, heatBound } = allocatePower(budget, racks, heat);
      const ceil = racks.map((r) => Math.min(r.maxKw, r.coolantKw ?? Infinity));
      const floor = racks.map((r, i) => Math.min(r.minKw, ceil[i]));
      const sum = caps.reduce((x, y) => x + y, 0);
      expect(sum).toBeLessThanOrEqual(Math.min(budget, heat) + 1e-6);
      if (heatBound) expect(heat).toBeLessThan(budget);
      caps.forEach((c, i) => {
        expect(c).toBeLessThanOrEqual(ceil[i] + 1e-9);
        expect(coolantBound[i]).toBe(ceil[i] < Math.min(racks[i].demandKw, racks[i].maxKw) - 1e-9);
        if (!minimumsScaled) expect(c).toBeGreaterThanOrEqual(floor[i] - 1e-9);
      });
      if (!minimumsScaled) {
        // what a coolant-bound rack cannot take is not lost: it goes to the racks with headroom
        expect(sum).toBeCloseTo(Math.min(budget, heat, ceil.reduce((x, y) => x + y, 0)), 6);
        // a rack left short of its demand implies every lower-priority rack is at its minimum
        racks.forEach((r, i) => {
          const short = Math.min(r.demandKw, ceil[i]) - caps[i] > 1e-6;
          if (short) racks.forEach((o, j) => o.priority > r.priority && expect(caps[j]).toBeCloseTo(floor[j], 6));
        });
      }
    }
  });

  it("moves power a coolant-bound rack cannot take to the racks with cooling headroom", () => {
    const rack = (name: string, coolantKw?: number): RackPowerDemand => ({ name, priority: 0, minKw: 10, maxKw: 120, demandKw: 120, coolantKw });
    const free = allocatePower(300, [rack("a"), rack("b"), rack("c")]);
    expect(free.caps.map((c) => Math.round(c))).toEqual([100, 100, 100]);
    const bound = allocatePower(300, [rack("a", 40), rack("b"), rack("c")]);
    expect(bound.caps[0]).toBeCloseTo(40, 9);
    expect(bound.caps[1]).toBeCloseTo(120, 9);
    expect(bound.caps[2]).toBeCloseTo(120, 9);
    expect(bound.coolantBound).toEqual([true, false, false]);
    // a coolant limit below a rack's minimum wins over the minimum
    expect(allocatePower(300, [rack("a", 4), rack("b")]).caps[0]).toBeCloseTo(4, 9);
    // the CDU's heat rejection binds below the budget, and says it was the one
    const cdu = allocatePower(300, [rack("a"), rack("b"), rack("c")], 240);
    expect(cdu.caps.reduce((x, y) => x + y, 0)).toBeCloseTo(240, 9);
    expect(cdu.heatBound).toBe(true);
  });

  it("figures a rack's coolant limit from its maximum flow and the warmest good supply reading", () => {
    const q = (flow: number, dT: number): number => (COOLANT_KJ_PER_L_K / 60) * flow * dT;
    expect(coolantLimitKw(170, 38, 48)).toBeCloseTo(q(170, 10), 9);
    expect(coolantLimitKw(170, 49, 48)).toBe(0); // supply above the limit: nothing may be drawn
    const good = (value: number) => ({ value, good: true });
    const bad = (value: number) => ({ value, good: false });
    expect(limitSupplyC(good(36), good(35), 40)).toEqual({ supplyC: 36, known: true });
    expect(limitSupplyC(bad(20), good(35), 40)).toEqual({ supplyC: 35, known: true }); // a bad low reading does not raise the limit
    expect(limitSupplyC(bad(20), bad(NaN), 40)).toEqual({ supplyC: 40, known: false }); // unknown: the worst case
    expect(limitSupplyC(good(NaN), bad(30), 40)).toEqual({ supplyC: 40, known: false });
  });

  it("scales minimums down when even they do not fit", () => {
    const r = allocatePower(100, [
      { name: "a", priority: 0, minKw: 80, maxKw: 120, demandKw: 120 },
      { name: "b", priority: 1, minKw: 120, maxKw: 120, demandKw: 120 },
    ]);
    expect(r.minimumsScaled).toBe(true);
    expect(r.caps[0] + r.caps[1]).toBeCloseTo(100, 9);
  });
});

describe("heat-balance cross-check", () => {
  const q = (flow: number, dT: number): number => (COOLANT_KJ_PER_L_K / 60) * flow * dT;
  const rack = (over: object = {}) => ({ powerKw: q(100, 10), flowLpm: 100, supplyTempC: 35, returnTempC: 45, valvePct: 80, inService: true, ...over });
  const o = { tolerancePct: 20, minPowerKw: 10, supplyToleranceC: 2, flowPeerTolerancePct: 30 };

  it("agrees when the four sensors agree", () => {
    expect(heatBalance([rack(), rack(), rack()], 35, o).every((r) => !r.disagrees)).toBe(true);
  });

  it.each([
    ["supplyTempC", { supplyTempC: 39 }],
    ["flowLpm", { flowLpm: 50 }],
    ["returnTempC", { returnTempC: 30 }],
    ["powerKw", { powerKw: 2 * q(100, 10) }],
  ])("names the %s sensor when it is the one lying", (suspect, lie) => {
    const res = heatBalance([rack(lie), rack(), rack(), rack()], 35, o);
    expect(res[0].disagrees).toBe(true);
    expect(res[0].suspect).toBe(suspect);
    expect(res.slice(1).every((r) => !r.disagrees)).toBe(true);
  });
  it("without a CDU supply reading, compares the rack's supply with the median of the other racks'", () => {
    const res = heatBalance([rack({ powerKw: 2 * q(100, 10) }), rack(), rack()], NaN, o);
    expect(res[0]).toMatchObject({ disagrees: true, suspect: "powerKw", missing: [] });
    // a supply sensor 5 °C high: the CDU would have told it, and so do its peers
    expect(heatBalance([rack({ supplyTempC: 40 }), rack(), rack()], NaN, o)[0]).toMatchObject({ suspect: "supplyTempC", missing: [] });
    // one lying peer does not move the median enough to blame an honest rack
    const liar = heatBalance([rack({ powerKw: 2 * q(100, 10) }), rack({ supplyTempC: 45 }), rack(), rack()], NaN, o);
    expect(liar[0].suspect).toBe("powerKw");
    // out-of-service racks are no peers
    expect(heatBalance([rack({ supplyTempC: 40 }), rack({ inService: false, supplyTempC: 40 }), rack(), rack()], NaN, o)[0].suspect).toBe("supplyTempC");
  });

  it("says which clue was missing when there were too few peers", () => {
    const [alone] = heatBalance([rack({ supplyTempC: 40 }), rack()], NaN, o);
    expect(alone.disagrees).toBe(true);
    expect(alone.suspect).not.toBe("supplyTempC"); // one peer cannot say which of the two is off
    expect(alone.missing).toEqual([
      "the rack's supply temperature was not compared: no good CDU supply reading and fewer than 2 other racks' supply readings",
      "the flow meter was not compared: fewer than 2 other racks' flow readings in service, or this rack's valve too near shut",
    ]);
    // with the CDU's reading, only the flow clue is missing
    expect(heatBalance([rack({ supplyTempC: 40 }), rack()], 35, o)[0]).toMatchObject({ suspect: "supplyTempC", missing: [expect.stringMatching(/^the flow meter was not compared/)] });
  });
});

describe("the leak-sensor alarm's words", () => {
  it("says which fault: not read (a comms fault) before a cable fault, before a value out of range; never a leak", () => {
    const dry = { value: 0, good: true };
    const unread = { value: 0, good: false, why: "rack-6.leakState: stale, offline", comms: true };
    const cable = { value: 2, good: false, why: "rack-6.leakState: cable fault", comms: false };
    const range = { value: 9, good: false, why: "rack-6.leakState: out of range", comms: false };
    expect(leakSensorWords("rack-6", [dry, unread])).toBe("leak sensor at rack-6 not read, a comms fault (rack-6.leakState: stale, offline): leak detection impaired");
    expect(leakSensorWords("rack-6", [cable, unread])).toMatch(/^leak sensor at rack-6 not read, a comms fault/);
    expect(leakSensorWords("rack-6", [dry, cable])).toBe("leak sensor cable fault at rack-6: leak detection impaired");
    expect(leakSensorWords("rack-6", [range])).toBe("leak sensor at rack-6 has no valid reading (rack-6.leakState: out of range): leak detection impaired");
    for (const l of [[dry, unread], [cable], [range]]) expect(leakSensorWords("rack-6", l)).not.toMatch(/\bleak at\b|LEAK/);
  });
});
