// Control-valve health: the simulator's valve model with each fault injected, driven as a loop
// drives it, through the detector the agent runs; and a clean valve under a PI loop for 24 h of
// virtual time without one false alarm.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent } from "../agent/agent.js";
import { executeCommand } from "../agent/commands/executor.js";
import { validateAgentConfig } from "../agent/config/load.js";
import { Logs } from "../agent/log.js";
import { demoConfigData } from "../cli/demo-config.js";
import { waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { ValveHealth, type ValveHealthConfig } from "../agent/health/valve-health.js";
import { loadBank, writeSample } from "../hotpath-as/bank-config.js";
import { loadWasmHotPath } from "../hotpath-as/wasm-bank.js";
import { Fopdt } from "../sim/fopdt.js";
import { PLANT } from "../sim/fopdt-rig.js";
import { StrokedValve, type ValveFaults } from "../sim/plant/valve.js";
import { Prng } from "../sim/prng.js";

const CONFIG: ValveHealthConfig = { positionEpsPct: 0.3, stuckErrorPct: 5, stuckS: 20, stickBandWarnPct: 2, travelMaxS: 30, breakaways: 5, responseMs: 150 };
const DT = 0.1;

/** The valve (10 s stroke) driven by `command(t)` for `seconds`, its feedback quantised to 0.1 % and read 100 ms late. */
function drive(faults: Partial<ValveFaults>, command: (tS: number) => number, seconds: number): ValveHealth {
  const v = new StrokedValve(10, command(0));
  Object.assign(v.faults, faults);
  const h = new ValveHealth(CONFIG);
  for (let k = 0; k < seconds / DT; k++) {
    const t = k * DT;
    const cmd = command(t);
    h.sample(t * 1000, cmd, Math.round(v.position * 10) / 10);
    v.command = cmd;
    v.step(DT);
  }
  return h;
}

const sine = (t: number): number => 50 + 6 * Math.sin((2 * Math.PI * t) / 60);

/** A fault's figures and problems after the sine, a step down and a step up. */
function faulted(f: Partial<ValveFaults>): ValveHealth {
  return drive(f, (t) => (t < 300 ? sine(t) : t < 330 ? 20 : 80), 400);
}

describe("control valve health", () => {
  it("a clean valve: a stick band within the feedback's resolution, its stroke time, nothing wrong", () => {
    const h = faulted({});
    const f = h.figures();
    expect(f.stickBandPct).toBeLessThan(0.5);
    expect(f.kind).toBeNull();
    expect(f.travelS).toBeCloseTo(10, 0);
    expect(f.stuck).toBe(false);
    expect(h.problems()).toEqual([]);
  });

  it("stiction: the band, told apart from a dead band by the slip", () => {
    const f = faulted({ stictionPct: 4 }).figures();
    expect(f.stickBandPct).toBeGreaterThan(3.5);
    expect(f.stickBandPct).toBeLessThan(4.6);
    expect(f.kind).toBe("stiction");
    expect(faulted({ stictionPct: 4 }).problems().map((p) => p.text).join()).toMatch(/stiction \(stick-slip\) of [34]\.\d %/);
  });

  it("a dead band: its width, as a dead band", () => {
    const h = faulted({ deadbandPct: 4 });
    const f = h.figures();
    expect(f.stickBandPct).toBeGreaterThan(3.5);
    expect(f.stickBandPct).toBeLessThan(4.6);
    expect(f.kind).toBe("deadband");
    expect(h.problems().map((p) => p.text).join()).toMatch(/dead band of 4\.\d %/);
  });

  it("slow travel: the stroke time it shows", () => {
    const h = faulted({ strokeFactor: 4 });
    expect(h.figures().travelS).toBeCloseTo(40, 0);
    expect(h.problems()).toEqual([{ kind: "slow", text: "slow: a full stroke takes 40 s (limit 30 s)" }]);
  });

  it("seized: the position frozen against the command, and it clears once the valve moves", () => {
    const h = faulted({ stuck: true });
    expect(h.figures().stuck).toBe(true);
    expect(h.problems().map((p) => p.text).join()).toMatch(/^stuck: position 50\.0 % against a command of 80\.0 %/);
    // a small demand held is not a seizure
    expect(drive({ stuck: true }, () => 52, 120).problems()).toEqual([]);
  });

  it("a clean valve under a PI loop: no false alarm over 24 h of virtual time", () => {
    const r = underLoop({}, 24);
    expect(r.alarms).toBe(0);
    expect(r.worstBand).toBeLessThan(CONFIG.stickBandWarnPct);
    expect(r.h.figures().stickBandPct).not.toBeNull(); // it saw reversals: a figure, not silence
  });

  it("stiction under the same loop: the limit cycle it causes is seen within an hour", () => {
    const r = underLoop({ stictionPct: 3 }, 1);
    expect(r.h.figures().kind).toBe("stiction");
    expect(r.h.figures().stickBandPct).toBeGreaterThan(2.5);
    expect(r.h.problems().map((p) => p.text).join()).toMatch(/stiction/);
  });
});

/** The rack loop (PI + feed-forward, deadband) on the FOPDT rack, its valve modelled, for `hours` of virtual time at 10 Hz. */
function underLoop(faults: Partial<ValveFaults>, hours: number): { h: ValveHealth; alarms: number; worstBand: number } {
  const hp = loadWasmHotPath("release");
  const plant = new Fopdt({ ...PLANT, dtS: DT }, 50, 60);
  loadBank(hp, {
    points: [{ min: 0, max: 120 }, { min: 0, max: 200 }],
    loops: [{ pvPoint: 0, ffPoint: 1, action: "direct", kp: 33, ki: 33 / 24, kff: 0.4, deadband: 0.05, outMin: 10, outMax: 100, safeOnLeak: "closed", safeOnSensorFault: "open", sp: 40 }],
    racks: [],
  });
  const valve = new StrokedValve(10, 50);
  Object.assign(valve.faults, faults);
  const h = new ValveHealth(CONFIG);
  const noise = new Prng(11);
  let load = 60;
  let alarms = 0;
  let worstBand = 0;
  const steps = (hours * 3600) / DT;
  for (let k = 1; k <= steps; k++) {
    const t = k * DT * 1000;
    // the load wanders (a random walk, 20-100 kW) and steps now and then, as a rack's jobs do
    load = Math.min(100, Math.max(20, load + (noise.next() - 0.5) * 0.2 + (noise.next() < 1e-4 ? (noise.next() - 0.5) * 60 : 0)));
    writeSample(hp.views, 0, Math.round((plant.y + (noise.next() - 0.5) * 0.04) * 100) / 100, t);
    writeSample(hp.views, 1, load, t);
    hp.step(t, DT);
    const cmd = hp.views.loopF.out[0];
    h.sample(t, cmd, Math.round(valve.position * 10) / 10);
    valve.command = cmd;
    valve.step(DT);
    plant.step(valve.position, load); // the plant sees the valve's position, not its command
    if (k % 600 === 0) {
      if (h.problems().length > 0) alarms++;
      worstBand = Math.max(worstBand, h.figures().stickBandPct ?? 0);
    }
  }
  return { h, alarms, worstBand };
}

describe("control valve health and isolation valve partial-stroke tests on a running agent against the simulator", () => {
  let t: TestSim;
  let agent: Agent;
  beforeAll(async () => {
    t = await startTestSim();
    const data = demoConfigData((d) => t.port(d));
    data.site = "valve-test";
    data.log = { level: "warn", modules: {} };
    data.control = { ...(data.control as object), schedFifo: false, warmupTicks: 2000 };
    data.valveHealth = { breakaways: 3, stuckS: 3 };
    data.partialStroke = { timeoutS: 3 };
    const config = validateAgentConfig(data, "valve test");
    agent = new Agent({ config, hash: "valve-test-hash", path: "t" }, new Logs(config.log, { site: config.site, pod: config.pod }));
    await agent.start();
    await waitFor(() => agent.status().racks.every((r) => r.returnTempC !== null && r.valvePositionPct !== null), "every rack and valve read", 30_000);
  }, 60_000);
  afterAll(async () => {
    await agent?.stop({ driveSafe: false, reason: "test end" });
    await t?.stop();
  });
  const manual = async (rack: string, pct: number): Promise<void> => {
    const r = await executeCommand(agent.commander, { command: "mode", params: { loop: `${rack}.valve`, mode: "Manual", outputPct: pct } }, "test");
    expect(r.status).toBe("ok");
  };
  const alarm = (id: string) => agent.activeAlarms().find((a) => a.id === id);

  it("sees stiction injected into rack-3's valve, from its position feedback, and raises valve:rack-3", async () => {
    t.sim.inject({ valve: "rack-3", stictionPct: 4 });
    await manual("rack-3", 50);
    await new Promise((r) => setTimeout(r, 1500));
    // an operator's Manual output walked up in 1 % steps: the valve holds, then slips
    for (let k = 1; k <= 18; k++) {
      await manual("rack-3", 50 + k);
      await new Promise((r) => setTimeout(r, 400));
    }
    await waitFor(() => alarm("valve:rack-3") !== undefined, "valve:rack-3", 10_000);
    expect(alarm("valve:rack-3")).toMatchObject({ severity: "Warning", source: "rack-3" });
    expect(alarm("valve:rack-3")!.message).toMatch(/rack-3 control valve: stiction \(stick-slip\) of [3-6]\.\d %/);
    const v = agent.status().racks[2].valveHealth!;
    expect(v.kind).toBe("stiction");
    // the other racks' valves, in automatic control meanwhile, raised nothing
    expect(agent.activeAlarms().filter((a) => a.id.startsWith("valve:") && a.id !== "valve:rack-3")).toEqual([]);
  }, 40_000);

  it("sees a seized valve, and the alarm clears when it is freed and moves", async () => {
    await manual("rack-4", 50);
    await waitFor(() => Math.abs((agent.status().racks[3].valvePositionPct ?? 0) - 50) < 1, "rack-4 at 50 %", 10_000);
    t.sim.inject({ valve: "rack-4", stuck: true });
    await manual("rack-4", 70);
    await waitFor(() => alarm("valve:rack-4") !== undefined, "valve:rack-4", 10_000);
    expect(alarm("valve:rack-4")!.message).toMatch(/stuck: position 50\.\d % against a command of 70\.0 %/);
    expect(agent.status().racks[3].valveHealth!.stuck).toBe(true);
    t.sim.inject({ valve: "rack-4", stuck: false });
    await waitFor(() => alarm("valve:rack-4") === undefined || alarm("valve:rack-4")!.conditionActive === false, "the alarm clearing", 15_000);
  }, 40_000);

  const stroke = (params: Record<string, unknown>) => executeCommand(agent.commander, { command: "stroke", params }, "test engineer");
  /** the simulator's isolation valve positions of a rack, watched until the test ends */
  const watchIso = (rack: number) => {
    const seen = { minSupply: 100, minReturn: 100, powerOff: false };
    const timer = setInterval(() => {
      const r = t.sim.truth().racks[rack];
      seen.minSupply = Math.min(seen.minSupply, r.supplyIsolationPct);
      seen.minReturn = Math.min(seen.minReturn, r.returnIsolationPct);
      seen.powerOff ||= r.powerOff;
    }, 5);
    return { seen, stop: () => clearInterval(timer) };
  };

  it("a partial-stroke test over the command path: rack-5's supply valve moves about 10 %, comes back, passes; its power is untouched", async () => {
    const w = watchIso(4);
    const r = await stroke({ rack: "rack-5", valve: "supply", action: "start" });
    expect(r).toMatchObject({ status: "ok", data: { stroke: { rack: "rack-5", valve: "supply", state: "running", by: "test engineer" } } });
    await waitFor(() => agent.strokeStatus().recent !== null, "the test's end", 10_000);
    w.stop();
    const done = agent.strokeStatus().recent!;
    expect(done).toMatchObject({ rack: "rack-5", valve: "supply", state: "passed" });
    // the simulator's valve strokes in 4 s; its limit switches are read at 10 Hz (the figures'
    // precision is the unit test's: here a loaded machine may read the switches late)
    expect(done.breakawayMs).toBeLessThan(2000);
    expect(done.returnMs).toBeLessThan(3000);
    expect(w.seen.minSupply).toBeLessThan(99);
    expect(w.seen.minSupply).toBeGreaterThan(70);
    expect(w.seen.minReturn).toBe(100);
    expect(w.seen.powerOff).toBe(false);
    await waitFor(() => t.sim.truth().racks[4].supplyIsolationPct >= 99, "rack-5's supply valve fully open", 5000);
    expect(agent.activeAlarms().filter((a) => a.id.startsWith("stroke:"))).toEqual([]);
    expect(await stroke({ action: "status" })).toMatchObject({ status: "ok", data: { stroke: { running: null, last: [{ rack: "rack-5", valve: "supply", state: "passed" }] } } });
  }, 30_000);

  it("a seized isolation valve fails its test: Critical stroke:rack-6.supply, and the close is released", async () => {
    t.sim.inject({ valve: "rack-6.supplyIsolation", stuck: true });
    expect((await stroke({ rack: "rack-6", valve: "supply", action: "start" })).status).toBe("ok");
    await waitFor(() => agent.strokeStatus().recent?.rack === "rack-6", "the test's end", 10_000);
    expect(agent.strokeStatus().recent).toMatchObject({ state: "failed", critical: true });
    // released: the open command is back at the device
    await waitFor(() => agent.field.io.outputState("rack-6.supplyIsolationOpen")?.written === 1, "rack-6's supply valve commanded open again", 5000);
    await waitFor(() => alarm("stroke:rack-6.supply") !== undefined, "stroke:rack-6.supply", 5000);
    expect(alarm("stroke:rack-6.supply")).toMatchObject({ severity: "Critical", source: "rack-6" });
    t.sim.inject({ valve: "rack-6.supplyIsolation", stuck: false });
    expect(t.sim.truth().racks[5].supplyIsolationPct).toBe(100);
  }, 30_000);

  it("a leak anywhere in the pod aborts a running test and releases its valve; a test is refused while it lasts", async () => {
    const w = watchIso(4);
    expect((await stroke({ rack: "rack-5", valve: "return", action: "start" })).status).toBe("ok");
    await waitFor(() => t.sim.truth().racks[4].returnIsolationPct < 98, "rack-5's return valve on its way", 5000);
    t.sim.inject({ leak: "rack-7" });
    await waitFor(() => agent.strokeStatus().recent?.valve === "return", "the test's end", 10_000);
    expect(agent.strokeStatus().recent).toMatchObject({ rack: "rack-5", state: "aborted", reason: "a leak in the pod (rack-7)" });
    await waitFor(() => t.sim.truth().racks[4].returnIsolationPct >= 99, "rack-5's return valve open again", 5000);
    w.stop();
    expect(w.seen.minReturn).toBeGreaterThan(80);
    const refused = await stroke({ rack: "rack-5", valve: "return", action: "start" });
    expect(refused).toMatchObject({ status: "rejected", code: "refused" });
    expect(refused.status === "rejected" && refused.reason).toMatch(/a leak in the pod \(rack-7/);
    t.sim.inject({ leak: "rack-7", state: "dry" });
    await waitFor(async () => (await agent.commander.resetLeak(6)) === "accepted", "rack-7's latch reset", 10_000);
  }, 30_000);
});
