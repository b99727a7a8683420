// A state file deleted after it was written is a loss (issue #54), handled as a damaged file is:
// its safe state and a `state:*` alarm, never a silent first start. Each agent here opens its
// state directory first, as `podwarden run` does (cli/daemon.ts); the replay guard's file is
// test/commands-auth.test.ts's, the manifest itself test/state-manifest.test.ts's.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../agent/agent.js";
import { openStateDirectory } from "../lib/state-manifest.js";
import { agentConfig, demoConfigFor, testAgent } from "./helpers/agent.js";
import { waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";

describe("a state file deleted after it was written", () => {
  let t: TestSim;
  const agents: Agent[] = [];
  const start = async (stateDir: string): Promise<Agent> => {
    expect(openStateDirectory(stateDir, { firstStart: false }).problem).toBeUndefined();
    const { agent } = testAgent(agentConfig(demoConfigFor(t.sim, (c) => (c.stateDir = stateDir))));
    agents.push(agent);
    await agent.start();
    return agent;
  };
  const stop = async (a: Agent): Promise<void> => {
    await a.stop({ driveSafe: false, reason: "restart" });
    agents.splice(agents.indexOf(a), 1);
  };
  /** the agent's alarm `id` once it is raised */
  const alarm = async (a: Agent, id: string): Promise<{ severity: string; message: string }> => {
    await waitFor(() => a.supervisor.alarms.get(id) !== undefined, id, 10_000);
    return a.supervisor.alarms.get(id)!;
  };

  beforeAll(async () => {
    t = await startTestSim();
  });
  afterEach(async () => {
    for (const a of agents.splice(0)) await a.stop({ driveSafe: false, reason: "test end" });
    t.sim.inject({ clear: "all" });
  });
  afterAll(async () => {
    await t.stop();
  });

  it("latches.json: every rack with a leak input starts isolated until reset, with a Critical alarm, and the new latches are saved", async () => {
    const dir = tempDir("pw-loss-");
    const a = await start(dir);
    t.sim.inject({ leak: "rack-2" });
    await waitFor(() => existsSync(join(dir, "latches.json")) && readFileSync(join(dir, "latches.json"), "utf8").includes("rack-2"), "latch saved", 10_000);
    await stop(a);
    t.sim.inject({ leak: "rack-2", state: "dry" });
    rmSync(join(dir, "latches.json"));
    const b = await start(dir);
    const racks = b.config.racks.map((r) => r.name);
    // from the first tick, not after a wet reading: none is wet
    expect(b.status().racks.every((r) => r.isolation !== "Normal")).toBe(true);
    const latches = await alarm(b, "state:latches");
    expect(latches.severity).toBe("Critical");
    expect(latches.message).toMatch(/latches.json is missing.*every rack with a leak input is isolated until reset/);
    await waitFor(() => t.sim.truth().racks.every((r) => r.supplyIsolationPct === 0), "every rack's valves shut", 15_000);
    await waitFor(() => existsSync(join(dir, "latches.json")), "latches saved again", 10_000);
    expect((JSON.parse(readFileSync(join(dir, "latches.json"), "utf8")) as { racks: string[] }).racks.sort()).toEqual([...racks].sort());
    // a reset takes a rack back, as after any leak
    expect(await b.commander.resetLeak(0)).toBe("accepted");
    await waitFor(() => b.status().racks[0].isolation === "Normal", "rack-1 back after its reset", 10_000);
    expect(b.status().racks[1].isolation).not.toBe("Normal");
  }, 60_000);

  it("operator.json: a Critical alarm naming the file", async () => {
    const dir = tempDir("pw-loss-");
    const a = await start(dir);
    await a.commander.isolateRack(2, true);
    expect(existsSync(join(dir, "operator.json"))).toBe(true);
    await stop(a);
    rmSync(join(dir, "operator.json"));
    const b = await start(dir);
    const lost = await alarm(b, "state:operator");
    expect(lost.severity).toBe("Critical");
    expect(lost.message).toMatch(/operator.json is missing/);
  }, 60_000);

  it("power-budget.json: an alarm, and the configured budget in force", async () => {
    const dir = tempDir("pw-loss-");
    const a = await start(dir);
    const configured = a.config.supervisor.powerBudget.podKw;
    const minSum = a.config.racks.reduce((s, r) => s + r.minPowerKw, 0);
    await a.commander.setPowerBudget(minSum + 10);
    expect(a.supervisor.powerBudgetKw).toBe(minSum + 10);
    await stop(a);
    // the budget mission control set does hold across a restart while its file is there
    const kept = await start(dir);
    expect(kept.supervisor.powerBudgetKw).toBe(minSum + 10);
    await stop(kept);
    rmSync(join(dir, "power-budget.json"));
    const b = await start(dir);
    expect((await alarm(b, "state:power-budget")).message).toMatch(/power-budget.json is missing/);
    expect(b.supervisor.powerBudgetKw).toBe(configured);
  }, 60_000);

  it("gains.json: an alarm, and the config's gains in the control thread's bank", async () => {
    const dir = tempDir("pw-loss-");
    const a = await start(dir);
    const loop = a.layout.pumpLoop;
    const configured = a.control.bankSpec.loops[loop].kp;
    const g = a.control.bankSpec.loops[loop];
    await a.commander.applyGains(loop, { kp: g.kp * 1.5, ki: g.ki, kd: g.kd ?? 0 }, "test");
    await stop(a);
    rmSync(join(dir, "gains.json"));
    const b = await start(dir);
    expect((await alarm(b, "state:gains")).message).toMatch(/gains.json is missing/);
    expect(b.control.bankSpec.loops[loop].kp).toBe(configured);
  }, 60_000);
});
