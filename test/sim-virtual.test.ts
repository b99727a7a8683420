// Virtual time, scenarios, config validation and the `podwarden sim` command.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import * as L from "../hotpath-as/assembly/layout.js";
import { demoAgentConfig } from "../cli/demo-config.js";

/** The demo daemon's own pod config: its wiring, its Modbus map and its tuning. */
const DEMO_POD = demoAgentConfig();
import { ConfigError } from "../lib/config-file.js";
import { simConfig, loadSimConfig } from "../sim/config.js";
import { parseScenario, parseDuration, type Scenario } from "../sim/scenario.js";
import { VirtualPod } from "../sim/virtual-pod.js";
import { run, stopProcess, waitFor } from "./helpers/processes.js";
import { tempDir } from "./helpers/temp-dirs.js";

const INFERENCE = { profile: "inference" as const, basePct: 30, burstPct: 95, meanBurstS: 4, meanGapS: 10 };
const SCENARIO: Scenario = parseScenario({
  steps: [
    { at: "20s", load: "rack-2", pct: 100 },
    { at: "40s", leak: "rack-3" },
    { at: "50s", sensor: "rack-5.returnTempC", fault: "noise", sigma: 0.3 },
    { at: "70s", device: "rack-6", offline: true },
  ],
});

describe("virtual time", () => {
  it("replays a scenario identically from its seed, and differently from another seed", () => {
    const traceFor = (seed: number): string => {
      const vp = new VirtualPod(simConfig({ seed, plant: { load: INFERENCE } }), DEMO_POD, SCENARIO);
      vp.run(90);
      return JSON.stringify(vp.trace);
    };
    const a = traceFor(5);
    expect(traceFor(5)).toBe(a);
    expect(traceFor(6)).not.toBe(a);
  });

  it("runs the real hot path against the plant: leak isolated and proved, other racks keep control", () => {
    const vp = new VirtualPod(simConfig({ plant: { load: { profile: "idle", pct: 60 } } }), DEMO_POD, parseScenario({ steps: [{ at: "300s", leak: "rack-3" }] }));
    vp.run(300);
    for (const r of vp.sim.plant.racks) expect(Math.abs(r.returnTempC - 45)).toBeLessThan(0.5);
    vp.run(30);
    expect(vp.hp.views.rackI.state[2]).toBe(L.RACK_ISOLATED);
    expect(vp.sim.plant.racks[2].flowLpm).toBe(0);
    const lost = vp.sim.plant.racks[2].coolantLostL;
    vp.run(30);
    expect(vp.sim.plant.racks[2].coolantLostL).toBe(lost); // isolation stopped the loss
    for (const r of vp.sim.plant.racks) if (r.index !== 2) expect(Math.abs(r.returnTempC - 45)).toBeLessThan(0.5);
  });

  it("runs the daemon's wiring: a leak's isolation valves are written before any other write, and then the rack's valve closes", () => {
    const vp = new VirtualPod(simConfig({ plant: { load: { profile: "idle", pct: 60 } } }), DEMO_POD, undefined, { recordWrites: true });
    vp.run(30);
    vp.writes.length = 0;
    vp.sim.inject({ leak: "rack-3" });
    vp.run(1);
    expect(vp.hp.views.rackI.state[2]).not.toBe(L.RACK_NORMAL);
    // the first writes after the leak are rack-3's two isolation valves, closing
    expect(vp.writes.slice(0, 2).map((w) => [w.id, w.value])).toEqual([
      ["rack-3.supplyIsolationOpen", 0],
      ["rack-3.returnIsolationOpen", 0],
    ]);
    // in the same pass, and after them, the rack's control valve goes to its leak-safe position (closed: outMin)
    const isoAt = vp.writes[0].tMs;
    const valve = vp.writes.findIndex((w) => w.id === "rack-3.valveCommandPct");
    expect(valve).toBeGreaterThan(1);
    expect(vp.writes[valve]).toEqual({ tMs: isoAt, id: "rack-3.valveCommandPct", value: DEMO_POD.control.rackLoop.outMin });
    // and the plant got them: through the device's own register map, as a Modbus write would
    expect(vp.sim.devices.racks[2].ctx.supplyIsoOpen).toBe(false);
    expect(vp.sim.devices.racks[2].ctx.returnIsoOpen).toBe(false);
  });

  it("runs the daemon's wiring: a power cap decided for a rack reaches the plant and clips its load; the others keep theirs", () => {
    const vp = new VirtualPod(simConfig({ plant: { load: { profile: "idle", pct: 90 } } }), DEMO_POD);
    vp.run(20);
    const before = vp.sim.plant.racks.map((r) => r.powerKw);
    expect(before[1]).toBeGreaterThan(60);
    vp.decisions = { ...vp.decisions, powerCapsKw: vp.decisions.powerCapsKw.map((kw, r) => (r === 1 ? 40 : kw)) };
    vp.run(5);
    expect(vp.sim.devices.racks[1].ctx.rack.powerCapKw).toBe(40);
    expect(vp.sim.plant.racks[1].powerKw).toBeLessThanOrEqual(40 + 1e-9);
    for (const r of [0, 2, 3]) expect(vp.sim.plant.racks[r].powerKw).toBeCloseTo(before[r], 0);
    // with writeCaps off (supervisor.powerBudget.writeCaps: false) the cap output is left alone
    const noCaps = new VirtualPod(simConfig({ plant: { load: { profile: "idle", pct: 90 } } }), { ...DEMO_POD, supervisor: { ...DEMO_POD.supervisor, powerBudget: { ...DEMO_POD.supervisor.powerBudget, writeCaps: false } } });
    noCaps.decisions = { ...noCaps.decisions, powerCapsKw: noCaps.decisions.powerCapsKw.map((kw, r) => (r === 1 ? 40 : kw)) };
    noCaps.run(5);
    expect(noCaps.sim.devices.racks[1].ctx.rack.powerCapKw).toBe(Infinity);
  });

  it("runs the daemon's wiring: an escalation's power-off request and pump stop reach the devices", () => {
    const vp = new VirtualPod(simConfig({ plant: { load: { profile: "idle", pct: 60 } } }), DEMO_POD);
    vp.run(5);
    vp.decisions = { ...vp.decisions, pumpEnable: false, rackPowerOff: vp.decisions.rackPowerOff.map((_, r) => r === 4) };
    vp.run(1);
    expect(vp.sim.devices.cdu.ctx.enable).toBe(false);
    expect(vp.sim.devices.racks[4].ctx.rack.powerOff).toBe(true);
    expect(vp.sim.devices.racks[3].ctx.rack.powerOff).toBe(false);
  });

  it("couples power to coolant: a leaking loaded rack is isolated and powered off, and its return temperature stays below the over-temperature alarm", () => {
    const vp = new VirtualPod(simConfig({ plant: { load: { profile: "idle", pct: 85 } } }), DEMO_POD);
    vp.run(120);
    expect(vp.sim.plant.racks[2].powerKw).toBeGreaterThan(80);
    vp.sim.inject({ leak: "rack-3" });
    let hottest = 0;
    vp.run(120, () => (hottest = Math.max(hottest, vp.sim.plant.racks[2].returnTempC)));
    expect(vp.hp.views.rackI.state[2]).toBe(L.RACK_ISOLATED);
    expect(vp.sim.devices.racks[2].ctx.rack.powerOff).toBe(true);
    expect(vp.sim.plant.racks[2].powerKw).toBe(0);
    expect(hottest, "rack-3's hottest return temperature after the leak, °C").toBeLessThan(DEMO_POD.supervisor.overTemp.warningC);
    // the other racks keep their power and their control
    for (const r of [0, 1, 3]) expect(vp.sim.plant.racks[r].powerKw).toBeGreaterThan(80);
    expect(vp.sim.devices.racks[1].ctx.rack.powerOff).toBe(false);
  });

  it("couples power to coolant by cap where configured, and lifts it when the rack's coolant returns", () => {
    const pod = { ...DEMO_POD, racks: DEMO_POD.racks.map((r, i) => (i === 4 ? { ...r, noCoolant: { ...r.noCoolant, action: "cap" as const, capKw: 15 } } : r)) };
    const vp = new VirtualPod(simConfig({ plant: { load: { profile: "idle", pct: 85 } } }), pod);
    vp.run(60);
    // an operator's isolation (the hot path's manual isolate), not a leak
    vp.hp.views.rackI.manualIsolate[4] = 1;
    vp.run(20);
    expect(vp.sim.devices.racks[4].ctx.supplyIsoOpen).toBe(false);
    expect(vp.sim.devices.racks[4].ctx.rack.powerCapKw).toBe(15);
    expect(vp.sim.devices.racks[4].ctx.rack.powerOff).toBe(false);
    expect(vp.sim.plant.racks[4].powerKw).toBeLessThanOrEqual(15 + 1e-9);
    vp.hp.views.rackI.manualIsolate[4] = 0;
    vp.run(20);
    expect(vp.sim.devices.racks[4].ctx.supplyIsoOpen).toBe(true);
    expect(vp.sim.devices.racks[4].ctx.rack.powerCapKw).toBeGreaterThan(80); // the budget's cap again
    expect(vp.sim.plant.racks[4].powerKw).toBeGreaterThan(80);
  });

  it("refuses a plant step that is not a whole number of ticks", () => {
    expect(() => new VirtualPod(simConfig({ plant: { dtS: 0.0015 } }), DEMO_POD)).toThrow(/whole number/);
  });
});

describe("scenario files", () => {
  it("parses durations", () => {
    expect(parseDuration("5s")).toBe(5);
    expect(parseDuration("500ms")).toBe(0.5);
    expect(parseDuration("2m")).toBe(120);
    expect(parseDuration(7)).toBe(7);
  });

  it("orders steps by time, keeping file order at equal times", () => {
    const s = parseScenario({ steps: [{ at: "10s", leak: "rack-1" }, { at: "1s", pumpTrip: true }, { at: "10s", leak: "rack-2" }] });
    expect(s.steps.map((x) => x.atS)).toEqual([1, 10, 10]);
    expect(s.steps[1].action).toEqual({ leak: "rack-1" });
  });

  it.each([
    [{ steps: [{ at: "soon", leak: "rack-1" }] }, /steps\[0\]\.at/],
    [{ steps: [{ at: "1s" }] }, /steps\[0\]: needs exactly one/],
    [{ steps: [{ at: "1s", leak: "rack-1", pumpTrip: true }] }, /has leak, pumpTrip/],
    [{ steps: [{ at: "1s", explode: "rack-1" }] }, /steps\[0\]\.explode: unknown key/],
    [{ steps: [{ at: -1, leak: "rack-1" }] }, /steps\[0\]\.at/],
    [{ steps: [{ at: "1s", load: "rack-1" }] }, /steps\[0\]\.pct: required with load/],
    [{ stepz: [] }, /stepz: unknown key/],
  ])("rejects an invalid scenario with the key path (%#)", (data, reason) => {
    expect(() => parseScenario(data)).toThrow(ConfigError);
    expect(() => parseScenario(data)).toThrow(reason);
  });
});

describe("simulator config", () => {
  const write = (text: string): string => {
    const dir = tempDir("podwarden-simcfg-");
    const f = join(dir, "sim.yaml");
    writeFileSync(f, text);
    return f;
  };

  it("loads the shipped demo config", () => {
    expect(loadSimConfig("configs/sim-pod.yaml").plant.racks).toBe(8);
  });

  it.each([
    ["plant:\n  racks: 0\n", /plant\.racks: must be >= 1/],
    ["plant:\n  primarySupplyTempC: 60\n", /plant\.primarySupplyTempC: must be <= 45/],
    ["plant:\n  rackRatedKw: .nan\n", /plant\.rackRatedKw: must be number \(finite\)/],
    ["plant:\n  hx:\n    effectivness: 0.8\n", /plant\.hx\.effectivness: unknown key/],
    ["devices:\n  basePort: 70000\n", /devices\.basePort: must be <= 65535/],
    ["seed: 1\nseed: 2\n", /unique/i],
    ["plant: [\n", /.+/],
  ])("rejects %j with the key path and reason", (text, reason) => {
    expect(() => loadSimConfig(write(text))).toThrow(reason);
  });

  it("exits 2 from the CLI on a bad config, naming the key", async () => {
    const r = await run("node", ["dist/cli/podwarden.js", "sim", "-c", write("plant:\n  racks: 100\n")]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/plant\.racks: must be <= 64/);
  });

  it("runs `podwarden sim` and stops cleanly on SIGTERM", async () => {
    const cfg = write("devices:\n  basePort: 0\ncontrol:\n  port: 0\n");
    const child = spawn("node", ["dist/cli/podwarden.js", "sim", "-c", cfg], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    try {
      await waitFor(() => /control\s+http:\/\/127\.0\.0\.1:(\d+)/.test(out), "sim banner");
      const port = /control\s+http:\/\/127\.0\.0\.1:(\d+)/.exec(out)![1];
      const truth = (await (await fetch(`http://127.0.0.1:${port}/truth`)).json()) as { racks: unknown[] };
      expect(truth.racks).toHaveLength(8);
      const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    } finally {
      await stopProcess(child, "SIGKILL");
    }
  });
});
