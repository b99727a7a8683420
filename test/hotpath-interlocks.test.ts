// Leak isolation, interlock priority and the declared safe values, on both implementations.
import { describe, expect, it } from "vitest";
import * as L from "../hotpath-as/assembly/layout.js";
import { loadBank, writeSample, type SafeAction, type BankSpec } from "../hotpath-as/bank-config.js";
import type { HotPath } from "../hotpath-as/views.js";
import { IMPLEMENTATIONS, analogPoint, leakPoint, rack, valveLoop } from "./helpers/hotpath.js";

// Points: 0 rack0 return temp, 1 rack0 flow, 2 rack0 leak, 3 rack1 return temp, 4 rack1 flow, 5 rack1 leak
const P_TEMP0 = 0;
const P_FLOW0 = 1;
const P_LEAK0 = 2;
const P_TEMP1 = 3;
const P_FLOW1 = 4;
const P_LEAK1 = 5;

function twoRacks(over: Partial<BankSpec> = {}): BankSpec {
  return {
    points: [analogPoint(), analogPoint(), leakPoint(0), analogPoint(), analogPoint(), leakPoint(1)],
    loops: [valveLoop(P_TEMP0, { rack: 0 }), valveLoop(P_TEMP1, { rack: 1 })],
    racks: [rack(P_FLOW0, { isolationDeadlineMs: 100 }), rack(P_FLOW1, { isolationDeadlineMs: 100 })],
    ...over,
  };
}

describe.each(IMPLEMENTATIONS)("interlocks (%s)", (_name, make) => {
  let now = 0;
  let hp: HotPath;
  const start = (spec: BankSpec = twoRacks()): void => {
    hp = make();
    now = 1000;
    loadBank(hp, spec);
    feedAll({ leak0: 0, leak1: 0 });
    hp.step(now, 0.001);
  };
  const feedAll = (s: { leak0?: number; leak1?: number; flow0?: number; flow1?: number; temp?: number } = {}): void => {
    writeSample(hp.views, P_TEMP0, s.temp ?? 40, now);
    writeSample(hp.views, P_TEMP1, s.temp ?? 40, now);
    writeSample(hp.views, P_FLOW0, s.flow0 ?? 60, now);
    writeSample(hp.views, P_FLOW1, s.flow1 ?? 60, now);
    if (s.leak0 !== undefined) writeSample(hp.views, P_LEAK0, s.leak0, now);
    if (s.leak1 !== undefined) writeSample(hp.views, P_LEAK1, s.leak1, now);
  };
  const tick = (s: Parameters<typeof feedAll>[0] = {}): void => {
    now += 1;
    feedAll(s);
    expect(hp.step(now, 0.001)).toBe(L.STEP_OK);
  };
  const rackState = (r: number): number => hp.views.rackI.state[r];
  const valvesOpen = (r: number): [number, number] => [hp.views.rackI.supplyOpen[r], hp.views.rackI.returnOpen[r]];

  it("closes both isolation valves in the tick the debounced leak goes wet", () => {
    start();
    expect(valvesOpen(0)).toEqual([1, 1]);
    tick({ leak0: 1 });
    tick();
    expect(valvesOpen(0)).toEqual([1, 1]); // debounce 3: not yet
    tick();
    expect(hp.views.pointI.wet[P_LEAK0]).toBe(1);
    expect(valvesOpen(0)).toEqual([0, 0]);
    expect(rackState(0)).toBe(L.RACK_ISOLATING);
    expect(hp.views.loopI.status[0] & L.LS_INTERLOCK_LEAK).toBeTruthy();
    expect(hp.views.loopF.out[0]).toBe(0); // rack 0 control valve: declared closed on leak
    // the other rack keeps control
    expect(valvesOpen(1)).toEqual([1, 1]);
    expect(hp.views.loopI.status[1] & L.LS_AUTOMATIC).toBeTruthy();
  });

  it("ignores a single-tick wet glitch but isolates on a chattering leak", () => {
    start();
    tick({ leak0: 1 });
    for (let k = 0; k < 10; k++) tick({ leak0: 0 });
    expect(rackState(0)).toBe(L.RACK_NORMAL);
    // wet one tick, dry one tick: dry runs never reach the clear debounce, wet ticks accumulate
    for (let k = 0; k < 6 && rackState(0) === L.RACK_NORMAL; k++) tick({ leak0: k % 2 === 0 ? 1 : 0 });
    expect(rackState(0)).not.toBe(L.RACK_NORMAL);
  });

  it("proves isolation only from a flow sample taken after the valves were told to close", () => {
    start();
    for (let k = 0; k < 3; k++) tick({ leak0: 1 });
    expect(rackState(0)).toBe(L.RACK_ISOLATING);
    // the held flow sample from before isolation reads low, but proves nothing
    const isolatedAt = hp.views.rackF.isolatedSince[0];
    writeSample(hp.views, P_FLOW0, 0.2, isolatedAt - 1);
    now += 1;
    hp.step(now, 0.001);
    expect(rackState(0)).toBe(L.RACK_ISOLATING);
    tick({ flow0: 0.2 });
    expect(rackState(0)).toBe(L.RACK_ISOLATED);
    expect(hp.views.rackI.status[0] & L.RS_PROVEN).toBeTruthy();
  });

  it("escalates when flow has not stopped by the deadline", () => {
    start();
    for (let k = 0; k < 3; k++) tick({ leak0: 1 });
    const t0 = hp.views.rackF.isolatedSince[0];
    while (now - t0 < 100) {
      expect(rackState(0)).toBe(L.RACK_ISOLATING);
      tick({ flow0: 30 });
    }
    expect(rackState(0)).toBe(L.RACK_ESCALATED);
    expect(hp.views.rackI.status[0] & L.RS_ESCALATE).toBeTruthy();
    expect(valvesOpen(0)).toEqual([0, 0]);
  });

  it("escalates when a proven isolation loses it (flow comes back)", () => {
    start();
    for (let k = 0; k < 3; k++) tick({ leak0: 1 });
    tick({ flow0: 0 });
    expect(rackState(0)).toBe(L.RACK_ISOLATED);
    tick({ flow0: 25 });
    expect(rackState(0)).toBe(L.RACK_ESCALATED);
  });

  it("escalates when there is no flow meter to prove it with", () => {
    const spec = twoRacks();
    start({ ...spec, racks: [rack(undefined, { isolationDeadlineMs: 10 }), spec.racks[1]] });
    for (let k = 0; k < 3; k++) tick({ leak0: 1 });
    for (let k = 0; k < 10; k++) tick({ flow0: 0 });
    expect(rackState(0)).toBe(L.RACK_ESCALATED);
  });

  it("latches until a reset, and refuses the reset while still wet", () => {
    start();
    for (let k = 0; k < 3; k++) tick({ leak0: 1 });
    tick({ leak0: 1, flow0: 0 });
    hp.views.rackI.reset[0] = 1;
    tick({ leak0: 1, flow0: 0 });
    expect(hp.views.rackI.resetResult[0]).toBe(L.RESET_REFUSED_WET);
    expect(hp.views.rackI.reset[0]).toBe(0);
    expect(valvesOpen(0)).toEqual([0, 0]);
    for (let k = 0; k < 20; k++) tick({ leak0: 0, flow0: 0 });
    expect(valvesOpen(0)).toEqual([0, 0]); // dry again, still latched
    expect(rackState(0)).toBe(L.RACK_ISOLATED);
    hp.views.rackI.reset[0] = 1;
    tick({ leak0: 0, flow0: 0 });
    expect(hp.views.rackI.resetResult[0]).toBe(L.RESET_ACCEPTED);
    expect(rackState(0)).toBe(L.RACK_NORMAL);
    expect(valvesOpen(0)).toEqual([1, 1]);
  });

  it("treats a leak-cable fault as a sensor fault, not a leak", () => {
    start();
    for (let k = 0; k < 5; k++) tick({ leak0: L.LEAK_CABLE_FAULT });
    expect(rackState(0)).toBe(L.RACK_NORMAL);
    expect(valvesOpen(0)).toEqual([1, 1]);
    expect(hp.views.rackI.status[0] & L.RS_LEAK_SENSOR_FAULT).toBeTruthy();
    expect(hp.views.pointI.quality[P_LEAK0]).toBe(L.Q_CABLE_FAULT);
  });

  it("isolates on a faulty leak sensor when the rack is configured to", () => {
    const spec = twoRacks();
    start({ ...spec, racks: [rack(P_FLOW0, { leakSensorFault: "isolate" }), spec.racks[1]] });
    for (let k = 0; k < 5; k++) tick({ leak0: 7 });
    expect(rackState(0)).not.toBe(L.RACK_NORMAL);
  });

  it("isolates on operator request without latching, and returns to service", () => {
    start();
    hp.views.rackI.manualIsolate[0] = 1;
    tick();
    expect(valvesOpen(0)).toEqual([0, 0]);
    expect(hp.views.loopI.status[0] & (L.LS_INTERLOCK_LEAK | L.LS_MANUAL_ISOLATE)).toBe(L.LS_INTERLOCK_LEAK | L.LS_MANUAL_ISOLATE);
    hp.views.rackI.manualIsolate[0] = 0;
    tick();
    expect(valvesOpen(0)).toEqual([1, 1]);
    expect(hp.views.loopI.status[0] & L.LS_AUTOMATIC).toBeTruthy();
  });

  it("applies the priority leak > fail-safe > manual/override > automatic", () => {
    start();
    const branch = (): number => hp.views.loopI.branch[0];
    hp.views.loopI.mode[0] = L.MODE_MANUAL;
    hp.views.loopF.manual[0] = 33;
    tick();
    expect(branch()).toBe(L.BRANCH_MANUAL);
    expect(hp.views.loopF.out[0]).toBe(33);
    writeSample(hp.views, P_TEMP0, NaN, now); // PV bad while in manual
    now += 1;
    writeSample(hp.views, P_TEMP0, NaN, now);
    hp.step(now, 0.001);
    expect(branch()).toBe(L.BRANCH_FAILSAFE);
    expect(hp.views.loopF.out[0]).toBe(100); // fail-open
    for (let k = 0; k < 3; k++) {
      now += 1;
      writeSample(hp.views, P_LEAK0, 1, now);
      writeSample(hp.views, P_TEMP0, NaN, now);
      hp.step(now, 0.001);
    }
    expect(branch()).toBe(L.BRANCH_LEAK); // leak outranks the bad sensor
    expect(hp.views.loopF.out[0]).toBe(0);
  });

  it("drives each fault class to its declared safe value", () => {
    const cases: [SafeAction, number][] = [
      ["open", 90],
      ["closed", 10],
      [{ fixed: 55 }, 55],
      [{ fixed: 500 }, 90], // a fixed value never leaves the envelope
      ["hold", -1],
    ];
    for (const [action, expected] of cases) {
      const spec = twoRacks();
      spec.loops = [valveLoop(P_TEMP0, { rack: 0, outMin: 10, outMax: 90, safeOnSensorFault: action, safeOnLeak: action, mode: "Manual" })];
      start(spec);
      hp.views.loopF.manual[0] = 42;
      tick();
      expect(hp.views.loopF.out[0]).toBe(42);
      now += 1;
      writeSample(hp.views, P_TEMP0, Infinity, now);
      hp.step(now, 0.001);
      expect(hp.views.loopI.branch[0]).toBe(L.BRANCH_FAILSAFE);
      expect(hp.views.loopF.out[0]).toBe(expected === -1 ? 42 : expected);
      for (let k = 0; k < 3; k++) tick({ leak0: 1 });
      expect(hp.views.loopI.branch[0]).toBe(L.BRANCH_LEAK);
      expect(hp.views.loopF.out[0]).toBe(expected === -1 ? 42 : expected);
    }
  });

  it("returns to the operator's Manual value once a fail-safe clears: the value is held, not replaced by the safe output", () => {
    const spec = twoRacks();
    spec.loops = [valveLoop(P_TEMP0, { rack: 0, outMin: 10, outMax: 90, safeOnSensorFault: "open", mode: "Manual" })];
    start(spec);
    hp.views.loopF.manual[0] = 42;
    now += 1;
    writeSample(hp.views, P_TEMP0, Infinity, now); // bad from the first tick, as at a start
    hp.step(now, 0.001);
    expect(hp.views.loopI.branch[0]).toBe(L.BRANCH_FAILSAFE);
    expect(hp.views.loopF.out[0]).toBe(90);
    expect(hp.views.loopF.manual[0]).toBe(42);
    tick(); // a good reading again
    expect(hp.views.loopI.branch[0]).toBe(L.BRANCH_MANUAL);
    expect(hp.views.loopF.out[0]).toBe(42);
  });

  it("fails safe on a non-finite setpoint, manual value or an unknown mode", () => {
    start();
    hp.views.loopF.sp[0] = NaN;
    tick();
    expect(hp.views.loopI.status[0] & L.LS_SP_INVALID).toBeTruthy();
    expect(hp.views.loopF.out[0]).toBe(100);
    hp.views.loopF.sp[0] = 40;
    hp.views.loopI.mode[0] = 7;
    tick();
    expect(hp.views.loopI.status[0] & L.LS_CMD_INVALID).toBeTruthy();
    hp.views.loopI.mode[0] = L.MODE_OVERRIDE;
    hp.views.loopF.override[0] = NaN;
    tick();
    expect(hp.views.loopI.status[0] & L.LS_CMD_INVALID).toBeTruthy();
  });

  it("never lets a manual or override value push the output outside the envelope", () => {
    const spec = twoRacks();
    spec.loops = [valveLoop(P_TEMP0, { outMin: 15, outMax: 85, mode: "Manual" })];
    start(spec);
    for (const [mode, field, value, expected] of [
      [L.MODE_MANUAL, "manual", 1e9, 85],
      [L.MODE_MANUAL, "manual", -1e9, 15],
      [L.MODE_OVERRIDE, "override", 200, 85],
      [L.MODE_OVERRIDE, "override", -5, 15],
    ] as const) {
      hp.views.loopI.mode[0] = mode;
      hp.views.loopF[field][0] = value;
      tick();
      expect(hp.views.loopF.out[0]).toBe(expected);
    }
  });

  it("holds the output while Disabled, but interlocks still act", () => {
    start();
    tick();
    const held = hp.views.loopF.out[0];
    hp.views.loopI.mode[0] = L.MODE_DISABLED;
    for (let k = 0; k < 10; k++) tick({ temp: 80 });
    expect(hp.views.loopF.out[0]).toBe(held);
    expect(hp.views.loopI.status[0] & L.LS_DISABLED).toBeTruthy();
    for (let k = 0; k < 3; k++) tick({ leak0: 1 });
    expect(hp.views.loopF.out[0]).toBe(0);
  });

  // The two loops form a pair in steady automatic control, the step's fast lane. A fault in
  // one loop's input must take that loop (only) out of it on the very tick it turns bad, well
  // between the step's periodic full point scans.
  it("takes only the loop with the bad input out of a steady automatic pair, on that tick", () => {
    start();
    for (let k = 0; k < 10; k++) tick();
    const auto = (i: number): boolean => (hp.views.loopI.status[i] & L.LS_AUTOMATIC) !== 0;
    expect([auto(0), auto(1)]).toEqual([true, true]);
    now += 1;
    feedAll();
    writeSample(hp.views, P_TEMP0, NaN, now);
    hp.step(now, 0.001);
    expect(hp.views.loopI.status[0] & (L.LS_INTERLOCK_FAILSAFE | L.LS_PV_BAD)).toBe(L.LS_INTERLOCK_FAILSAFE | L.LS_PV_BAD);
    expect(hp.views.loopF.out[0]).toBe(100); // fail-open
    expect(auto(1)).toBe(true);
    for (let k = 0; k < 3; k++) tick();
    expect([auto(0), auto(1)]).toEqual([true, true]);
    // the same for a rack: isolating rack 1 takes loop 1 to its leak-safe value, loop 0 stays
    hp.views.rackI.manualIsolate[1] = 1;
    tick();
    expect(hp.views.loopI.status[1] & L.LS_INTERLOCK_LEAK).toBeTruthy();
    expect(hp.views.loopF.out[1]).toBe(0); // closed
    expect(auto(0)).toBe(true);
  });

  it("fails safe on a PV binding that names no point, and drops only the feed-forward term for an FF binding that does, rebound inside a running pair", () => {
    const noSuchPoint = twoRacks().points.length;
    // each case breaks one binding of one loop of the pair; the other loop stays automatic
    for (const loop of [0, 1]) {
      start();
      for (let k = 0; k < 5; k++) tick();
      // rebound while both loops are in steady automatic control, as a config reload does
      hp.views.loopI.pvPoint[loop] = noSuchPoint;
      tick();
      expect(hp.views.loopI.status[loop] & (L.LS_INTERLOCK_FAILSAFE | L.LS_PV_BAD)).toBe(L.LS_INTERLOCK_FAILSAFE | L.LS_PV_BAD);
      expect(hp.views.loopF.out[loop]).toBe(100);
      expect(hp.views.loopI.status[1 - loop] & L.LS_AUTOMATIC).toBeTruthy();
    }
    for (const loop of [0, 1]) {
      start();
      for (let k = 0; k < 5; k++) tick();
      const before = hp.views.loopF.out[loop];
      hp.views.loopI.ffPoint[loop] = noSuchPoint;
      tick();
      // a secondary input: the loop keeps its PID on the good PV, the output does not jump
      expect(hp.views.loopI.status[loop] & (L.LS_AUTOMATIC | L.LS_FF_BAD | L.LS_INTERLOCK_FAILSAFE)).toBe(L.LS_AUTOMATIC | L.LS_FF_BAD);
      expect(Math.abs(hp.views.loopF.out[loop] - before)).toBeLessThan(0.5);
      expect(hp.views.loopI.status[1 - loop] & L.LS_AUTOMATIC).toBeTruthy();
    }
  });
});

// The isolation valves' closed limit switches join the proof where the rack has them: flow alone
// read a rack with both isolation valves seized open as isolated when its control valve, at its
// leak value, passed less than the threshold (docs/hotpath.md).
describe.each(IMPLEMENTATIONS)("isolation proof by the closed limit switches (%s)", (_name, make) => {
  const P_SUPPLY_CL = 6;
  const P_RETURN_CL = 7;
  let now = 0;
  let hp: HotPath;
  const limit = (over: Partial<Parameters<typeof analogPoint>[0]> = {}) => analogPoint({ min: 0, max: 1, ...over });
  const start = (): void => {
    hp = make();
    now = 1000;
    const base = twoRacks();
    loadBank(hp, {
      ...base,
      points: [...base.points, limit(), limit()],
      racks: [rack(P_FLOW0, { isolationDeadlineMs: 100, supplyClosedPoint: P_SUPPLY_CL, returnClosedPoint: P_RETURN_CL }), base.racks[1]],
    });
    tick({ leak: 0, supply: 0, ret: 0 });
  };
  /** one tick; a limit given NaN is an invalid reading, one left out keeps its last sample */
  const tick = (s: { leak?: number; flow?: number; supply?: number; ret?: number; limitTs?: number }): void => {
    now += 1;
    writeSample(hp.views, P_TEMP0, 40, now);
    writeSample(hp.views, P_TEMP1, 40, now);
    writeSample(hp.views, P_FLOW0, s.flow ?? 60, now);
    writeSample(hp.views, P_FLOW1, 60, now);
    writeSample(hp.views, P_LEAK1, 0, now);
    if (s.leak !== undefined) writeSample(hp.views, P_LEAK0, s.leak, now);
    if (s.supply !== undefined) writeSample(hp.views, P_SUPPLY_CL, s.supply, s.limitTs ?? now);
    if (s.ret !== undefined) writeSample(hp.views, P_RETURN_CL, s.ret, s.limitTs ?? now);
    expect(hp.step(now, 0.001)).toBe(L.STEP_OK);
  };
  const leak = (): void => {
    for (let k = 0; k < 3; k++) tick({ leak: 1, supply: 0, ret: 0 });
    expect(hp.views.rackI.state[0]).toBe(L.RACK_ISOLATING);
  };
  const limitsClosedBit = (): number => hp.views.rackI.status[0] & L.RS_LIMITS_CLOSED;

  it("does not prove an isolation while a valve is off its closed limit, however low the flow, and escalates at the deadline", () => {
    start();
    leak();
    const t0 = hp.views.rackF.isolatedSince[0];
    while (now - t0 < 100) {
      expect(hp.views.rackI.state[0]).toBe(L.RACK_ISOLATING);
      tick({ leak: 1, flow: 0.5, supply: 1, ret: 0 }); // the return valve seized open
    }
    expect(hp.views.rackI.state[0]).toBe(L.RACK_ESCALATED);
    expect(limitsClosedBit()).toBe(0);
    expect(hp.views.rackI.status[0] & L.RS_PROVEN).toBe(0);
  });

  it("proves it once both switches read closed on samples taken after isolation began", () => {
    start();
    leak();
    const t0 = hp.views.rackF.isolatedSince[0];
    // closed readings from before the isolation began prove nothing, though the flow is low
    tick({ leak: 1, flow: 0.5, supply: 1, ret: 1, limitTs: t0 - 1 });
    expect(limitsClosedBit()).toBeTruthy();
    expect(hp.views.rackI.state[0]).toBe(L.RACK_ISOLATING);
    tick({ leak: 1, flow: 0.5, supply: 1, ret: 1 });
    expect(hp.views.rackI.state[0]).toBe(L.RACK_ISOLATED);
    expect(hp.views.rackI.status[0] & L.RS_PROVEN).toBeTruthy();
  });

  it("escalates a proven isolation when a valve leaves its closed limit, with the flow still low", () => {
    start();
    leak();
    tick({ leak: 1, flow: 0.5, supply: 1, ret: 1 });
    expect(hp.views.rackI.state[0]).toBe(L.RACK_ISOLATED);
    tick({ leak: 1, flow: 0.5, supply: 0 });
    expect(hp.views.rackI.state[0]).toBe(L.RACK_ESCALATED);
  });

  it("takes a switch without a good reading as unproven, not as closed", () => {
    start();
    leak();
    const t0 = hp.views.rackF.isolatedSince[0];
    while (now - t0 < 100) tick({ leak: 1, flow: 0.5, supply: 1, ret: NaN });
    expect(hp.views.rackI.state[0]).toBe(L.RACK_ESCALATED);
    expect(limitsClosedBit()).toBe(0);
  });

  it("proves by flow alone a rack without limit switches, as before", () => {
    start();
    hp.views.rackI.supplyClosedPoint[0] = -1;
    hp.views.rackI.returnClosedPoint[0] = -1;
    leak();
    tick({ leak: 1, flow: 0.5 });
    expect(hp.views.rackI.state[0]).toBe(L.RACK_ISOLATED);
    expect(limitsClosedBit()).toBeTruthy();
  });
});
