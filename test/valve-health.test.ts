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

describe("control valve health on a running agent against the simulator", () => {
  let t: TestSim;
  let agent: Agent;
  beforeAll(async () => {
    t = await startTestSim();
    const data = demoConfigData((d) => t.port(d));
    data.site = "valve-test";
    data.log = { level: "warn", modules: {} };
    data.control = { ...(data.control as object), schedFifo: false, warmupTicks: 2000 };
    data.valveHealth = { breakaways: 3, stuckS: 3 };
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
    const r = await executeCommand(agent, { command: "mode", params: { loop: `${rack}.valve`, mode: "Manual", outputPct: pct } }, "test");
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
});
