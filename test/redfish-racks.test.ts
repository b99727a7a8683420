// Racks wired through their BMCs (readRacksThroughBmcs: power reading, leak detector and power
// cap over Redfish; temperatures, flow and valves over Modbus), end to end: the agent, the real
// drivers, the simulator's BMCs over HTTP and the plant. A pod over budget caps its racks and the
// plant's total power falls under the budget; a Redfish leak event isolates its rack; a BMC that
// refuses its cap is an alarm.
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent } from "../agent/agent.js";
import { validateAgentConfig } from "../agent/config/load.js";
import { Logs } from "../agent/log.js";
import { Metrics } from "../agent/ops/metrics.js";
import { DEMO_BMC_PASSWORD_ENV, demoConfigData, readRacksThroughBmcs } from "../cli/demo-config.js";
import { waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";

describe("racks read and capped through their BMCs over Redfish", () => {
  let t: TestSim;
  let agent: Agent;
  let stateDir: string;
  const plantKw = (): number => t.sim.truth().racks.reduce((a, r) => a + r.powerKw, 0);

  beforeAll(async () => {
    process.env[DEMO_BMC_PASSWORD_ENV] = "podwarden-sim";
    t = await startTestSim({ devices: { redfish: { limitRampKwPerS: 200 } } });
    t.sim.inject({ load: "all", pct: 95 });
    stateDir = tempDir("pw-rf-racks-");
    const data = demoConfigData((d) => t.port(d));
    readRacksThroughBmcs(data, (d) => t.port(d), { pollMs: 250 });
    data.stateDir = stateDir;
    data.site = "rf-racks-test";
    data.log = { level: "warn", modules: {} };
    data.control = { ...(data.control as object), schedFifo: false, warmupTicks: 2000 };
    const config = validateAgentConfig(data, "redfish racks test");
    agent = new Agent({ config, hash: "t", path: "t" }, new Logs(config.log, { site: config.site, pod: config.pod }));
    await agent.start();
    await waitFor(() => agent.status().racks.every((r) => r.powerKw !== null), "every rack's power read over Redfish", 20_000);
  }, 40_000);
  afterAll(async () => {
    await agent?.stop({ driveSafe: false, reason: "test end" });
    await t?.stop();
    if (stateDir !== undefined) rmSync(stateDir, { recursive: true, force: true });
    delete process.env[DEMO_BMC_PASSWORD_ENV];
  });

  it("reads each rack's power from its BMC, in kW", () => {
    const truth = t.sim.truth().racks;
    for (const [i, r] of agent.status().racks.entries()) expect(r.powerKw!).toBeCloseTo(truth[i].powerKw, -1);
    expect(agent.fieldPoints().find((p) => p.id === "rack-1-bmc.powerKw")).toMatchObject({ quality: "good", unit: "kW" });
  });

  it("reports each BMC in the metrics", async () => {
    await waitFor(() => agent.redfishStats().every((d) => d.streamOpen), "every BMC's event stream open", 10_000);
    const text = await new Metrics(() => agent).registry.metrics();
    for (let i = 1; i <= 8; i++) {
      expect(text).toContain(`podwarden_redfish_device_up{device="rack-${i}-bmc"} 1`);
      expect(text).toContain(`podwarden_redfish_stream_open{device="rack-${i}-bmc"} 1`);
    }
    expect(text).toMatch(/podwarden_redfish_polls_total\{device="rack-1-bmc",outcome="ok"\} [1-9]/);
    expect(text).toContain('podwarden_redfish_logins_total{device="rack-1-bmc"} 1');
  });

  it("caps the racks through their BMCs when the pod goes over budget, until the plant's total power is under it", async () => {
    const before = plantKw();
    const budget = Math.round(before * 0.6);
    expect(before).toBeGreaterThan(budget + 100);
    await agent.commander.setPowerBudget(budget);
    await waitFor(() => plantKw() <= budget, `the plant's total power under the ${budget} kW budget`, 30_000);
    // every BMC holds the cap the supervisor decided, verified on read-back. The caps follow the
    // racks' power, so one may be on its way when looked at (the BMC took the PATCH, its answer
    // not yet read: a loaded CI run saw 111.7 held against 101.5 written): each must come to
    // hold what was written, verified
    const held = (i: number): boolean => {
      const s = agent.field.io.outputState(`rack-${i + 1}-bmc.powerLimit`)!;
      const b = t.sim.bmcs[i];
      return s.quality === "good" && b.limitW !== null && s.written !== null && Math.abs(b.limitW / 1000 - s.written) < 0.5;
    };
    await waitFor(() => t.sim.bmcs.every((_, i) => held(i)), "every BMC holding the cap written to it, verified", 10_000);
    expect(agent.activeAlarms().filter((a) => a.id.startsWith("output:"))).toEqual([]);
    await agent.commander.setPowerBudget(null);
  });

  it("isolates a rack on its BMC's leak event, as a Modbus leak would", async () => {
    t.sim.inject({ leak: "rack-3", state: "wet" });
    await waitFor(() => {
      const r = t.sim.truth().racks[2];
      return r.supplyIsolationPct === 0 && r.returnIsolationPct === 0;
    }, "rack-3's isolation valves closed in the plant", 10_000);
    expect(agent.status().racks[2].supplyIsolationOpen).toBe(false);
    // the others keep their coolant
    expect(t.sim.truth().racks[3].supplyIsolationPct).toBeGreaterThan(0);
  });

  it("alarms a cap its BMC refuses, and clears the alarm once the BMC holds it", async () => {
    t.sim.inject({ bmc: "rack-5", error500: true });
    await agent.commander.setPowerBudget(Math.round(plantKw() * 0.7));
    await waitFor(() => agent.activeAlarms().some((a) => a.id === "output:rack-5-bmc.powerLimit"), "an alarm for rack-5's unverified cap", 20_000);
    const alarm = agent.activeAlarms().find((a) => a.id === "output:rack-5-bmc.powerLimit")!;
    expect(alarm.message).toMatch(/not verified on the BMC/);
    expect(agent.activeAlarms().some((a) => a.id === "device:rack-5-bmc")).toBe(true);
    t.sim.inject({ bmc: "rack-5", error500: false });
    await waitFor(() => agent.field.io.outputState("rack-5-bmc.powerLimit")?.quality === "good", "rack-5's cap verified", 20_000);
    await waitFor(() => !agent.activeAlarms().some((a) => a.id === "output:rack-5-bmc.powerLimit" && a.conditionActive), "the alarm clear", 20_000);
  });
});
