// Per-point input validation: every check, the debounce, and what a loop is handed meanwhile.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as L from "../hotpath-as/assembly/layout.js";
import { loadBank, writeSample } from "../hotpath-as/bank-config.js";
import { wasmPath } from "../hotpath-as/wasm-bank.js";
import type { HotPath } from "../hotpath-as/views.js";
import { IMPLEMENTATIONS, analogPoint, valveLoop } from "./helpers/hotpath.js";

describe("hot path module", () => {
  it("imports nothing, so step() cannot call out of WASM", () => {
    for (const target of ["release", "scalar", "debug"] as const) {
      const mod = new WebAssembly.Module(readFileSync(wasmPath(target)));
      expect(WebAssembly.Module.imports(mod)).toEqual([]);
    }
  });
});

describe.each(IMPLEMENTATIONS)("point quality (%s)", (_name, make) => {
  let now = 0;
  const tick = (hp: HotPath): number => {
    now += 1;
    return hp.step(now, 0.001);
  };
  const bank = (over: Parameters<typeof analogPoint>[0] = {}): HotPath => {
    const hp = make();
    now = 1000;
    loadBank(hp, { points: [analogPoint({ min: 0, max: 100, ...over })], loops: [valveLoop(0)], racks: [] });
    return hp;
  };
  const q = (hp: HotPath): number => hp.views.pointI.quality[0];

  it("starts as never-updated, so loops start fail-safe", () => {
    const hp = bank();
    expect(q(hp)).toBe(L.Q_NEVER);
    tick(hp);
    expect(q(hp)).toBe(L.Q_NOT_FINITE); // no sample yet: the value slot holds NaN
    expect(hp.views.loopI.status[0] & L.LS_INTERLOCK_FAILSAFE).toBeTruthy();
    expect(hp.views.loopF.out[0]).toBe(100); // fail-open
  });

  it("accepts a clean sample and hands it to the loop", () => {
    const hp = bank();
    writeSample(hp.views, 0, 42, now);
    tick(hp);
    expect(q(hp)).toBe(0);
    expect(hp.views.pointF.held[0]).toBe(42);
    expect(hp.views.loopI.status[0] & L.LS_AUTOMATIC).toBeTruthy();
  });

  it.each([
    ["NaN", NaN, L.Q_NOT_FINITE],
    ["+Inf", Infinity, L.Q_NOT_FINITE],
    ["-Inf", -Infinity, L.Q_NOT_FINITE],
    ["above range", 100.5, L.Q_RANGE],
    ["below range", -0.1, L.Q_RANGE],
  ])("rejects %s before any loop sees it", (_what, value, bit) => {
    const hp = bank();
    writeSample(hp.views, 0, 42, now);
    tick(hp);
    writeSample(hp.views, 0, value, now);
    tick(hp);
    expect(hp.views.pointI.raw[0]).toBe(bit);
    expect(q(hp)).toBe(bit);
    expect(hp.views.pointF.held[0]).toBe(42); // the bad value never replaces the held one
    expect(hp.views.loopF.pv[0]).toBe(42);
    expect(hp.views.loopI.status[0] & L.LS_PV_BAD).toBeTruthy();
  });

  it("flags a sample that moved faster than rateMax, once per sample", () => {
    const hp = bank({ rateMax: 10, debounceClear: 1 }); // 10 units/s
    writeSample(hp.views, 0, 50, now);
    tick(hp);
    writeSample(hp.views, 0, 50.5, now + 100); // 5 units/s over 100 ms: fine
    tick(hp);
    expect(q(hp)).toBe(0);
    writeSample(hp.views, 0, 60, now + 200); // 95 units/s: spike
    tick(hp);
    expect(q(hp) & L.Q_RATE).toBeTruthy();
    tick(hp); // same (held) sample keeps its verdict
    expect(q(hp) & L.Q_RATE).toBeTruthy();
    writeSample(hp.views, 0, 60.1, now + 300); // next sample close to the last one
    tick(hp);
    expect(q(hp)).toBe(0);
  });

  it("goes stale when the source time is older than staleMs, on the tick clock", () => {
    const hp = bank({ staleMs: 50 });
    writeSample(hp.views, 0, 20, now);
    const sampleTime = now;
    while (now - sampleTime <= 50) {
      tick(hp);
      if (now - sampleTime <= 50) expect(q(hp)).toBe(0);
    }
    expect(q(hp)).toBe(L.Q_STALE);
    writeSample(hp.views, 0, 20, now);
    tick(hp);
    expect(q(hp)).toBe(0);
  });

  it("detects a stuck sensor and clears when it moves again", () => {
    const hp = bank({ stuckMs: 30, stuckEps: 0.01 });
    for (let k = 0; k < 29; k++) {
      writeSample(hp.views, 0, 20 + (k % 2) * 0.005, now); // fresh samples, within eps
      tick(hp);
    }
    expect(q(hp)).toBe(0);
    for (let k = 0; k < 3; k++) {
      writeSample(hp.views, 0, 20, now);
      tick(hp);
    }
    expect(q(hp)).toBe(L.Q_STUCK);
    writeSample(hp.views, 0, 20.5, now);
    tick(hp);
    expect(q(hp)).toBe(0);
  });

  it("judged by the plant around it: an unchanged point is not stuck while its loop's output holds, and is stuck stuckMs after that output moved with no answer", () => {
    const hp = bank({ stuckMs: 30, stuckEps: 0.01, stuckLoop: 0, stuckMove: 5 });
    const v = hp.views;
    v.loopI.mode[0] = L.MODE_MANUAL;
    v.loopF.manual[0] = 40;
    // the first sample finds the output at its never-read fail-safe value, which then moves to
    // the manual 40 %: a move a live sensor answers, as the next sample does
    writeSample(v, 0, 19.9, now);
    tick(hp);
    for (let k = 0; k < 200; k++) {
      writeSample(v, 0, 20, now); // a steady, noiseless plant: the same reading for 200 ms
      tick(hp);
    }
    expect(q(hp)).toBe(0);
    v.loopF.manual[0] = 60; // the valve moves 20 %: a live sensor would answer
    for (let k = 0; k < 25; k++) {
      writeSample(v, 0, 20, now);
      tick(hp);
    }
    expect(q(hp)).toBe(0); // not before stuckMs after the move
    for (let k = 0; k < 10; k++) {
      writeSample(v, 0, 20, now);
      tick(hp);
    }
    expect(q(hp)).toBe(L.Q_STUCK);
    // it answers: good again; the loop leaves its fail-safe output for its manual 60 % (a move
    // the live sensor answers too), and then holds: steady again, not stuck
    writeSample(v, 0, 20.5, now);
    tick(hp);
    expect(q(hp)).toBe(0);
    writeSample(v, 0, 20.6, now);
    tick(hp);
    expect(v.loopF.out[0]).toBe(60);
    for (let k = 0; k < 200; k++) {
      writeSample(v, 0, 20.6, now);
      tick(hp);
    }
    expect(q(hp)).toBe(0);
  });

  it("refuses a stuck check pointed at a loop outside the bank", () => {
    expect(() => loadBank(make(), { points: [analogPoint({ stuckMs: 30, stuckLoop: L.MAX_LOOPS, stuckMove: 5 })], loops: [valveLoop(0)], racks: [] })).toThrow(/point 0: stuckLoop 1024 is not a loop of the bank/);
  });

  it("debounces: N consecutive faulty ticks to trip, M clean ticks to clear", () => {
    const hp = bank({ debounceFault: 3, debounceClear: 4 });
    writeSample(hp.views, 0, 30, now);
    for (let k = 0; k < 4; k++) tick(hp);
    expect(q(hp)).toBe(0);
    // two bad ticks, then a good one: no trip
    writeSample(hp.views, 0, NaN, now);
    tick(hp);
    tick(hp);
    expect(q(hp)).toBe(0);
    writeSample(hp.views, 0, 31, now);
    tick(hp);
    // three bad ticks: trip on the third
    writeSample(hp.views, 0, NaN, now);
    tick(hp);
    tick(hp);
    expect(q(hp)).toBe(0);
    tick(hp);
    expect(q(hp)).toBe(L.Q_NOT_FINITE);
    // clear only after four clean ticks
    writeSample(hp.views, 0, 32, now);
    for (let k = 0; k < 3; k++) {
      tick(hp);
      expect(q(hp)).toBe(L.Q_NOT_FINITE);
    }
    tick(hp);
    expect(q(hp)).toBe(0);
    expect(hp.views.pointF.held[0]).toBe(32);
  });

  // writeSample marks the point; the step validates marked points at once and every point at
  // least every FULL_SCAN_TICKS ticks, so a host that forgets the mark is late, never ignored.
  it("takes in a sample written without its mark within FULL_SCAN_TICKS ticks", () => {
    const hp = bank();
    writeSample(hp.views, 0, 42, now);
    tick(hp);
    for (let k = 0; k < 5; k++) tick(hp); // settled and quiet
    hp.views.pointF.value[0] = 43;
    hp.views.pointF.ts[0] = now;
    let ticks = 0;
    while (hp.views.pointF.held[0] !== 43 && ticks < L.FULL_SCAN_TICKS) {
      tick(hp);
      ticks++;
    }
    expect(hp.views.pointF.held[0]).toBe(43);
    expect(hp.views.loopF.pv[0]).toBe(43);
  });

  it("refuses a tick with a bad dt and changes nothing", () => {
    const hp = bank();
    writeSample(hp.views, 0, 42, now);
    tick(hp);
    const before = hp.views.loopF.out[0];
    writeSample(hp.views, 0, NaN, now);
    for (const dt of [0, -0.001, NaN, Infinity]) expect(hp.step(now + 1, dt)).toBe(L.STEP_BAD_DT);
    expect(hp.step(NaN, 0.001)).toBe(L.STEP_BAD_DT);
    expect(q(hp)).toBe(0);
    expect(hp.views.loopF.out[0]).toBe(before);
  });

  it("refuses counts beyond capacity", () => {
    const hp = make();
    expect(hp.configure(L.MAX_LOOPS + 1, 1, 1)).toBe(L.STEP_BAD_COUNTS);
    expect(hp.configure(1, L.MAX_POINTS + 1, 1)).toBe(L.STEP_BAD_COUNTS);
    expect(hp.configure(1, 1, L.MAX_RACKS + 1)).toBe(L.STEP_BAD_COUNTS);
    expect(hp.configure(-1, 1, 1)).toBe(L.STEP_BAD_COUNTS);
    expect(hp.configure(L.MAX_LOOPS, L.MAX_POINTS, L.MAX_RACKS)).toBe(L.STEP_OK);
  });
});
